"""Client memory: drain a backlog in a child process and report that process's own peak RSS.

Run as ``python -m benchmarks.rss SIDE KIND HOST PORT USER PASSWORD URL QUEUE COUNT`` by the runner. A
separate process is the only way to get numbers that are the client's own: the runner holds broker
handles, results and other clients. Peak RSS is VmHWM from /proc/self/status (``ru_maxrss`` where /proc
is missing); the baseline is VmRSS after imports and connecting, so the growth while consuming is what
prefetch must bound. Prints one JSON line.
"""

from __future__ import annotations

import json
import resource
import sys
import time


def _status_kb(field: str) -> int:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def main(argv: list[str]) -> int:
    side, kind, host, port, user, password, url, queue_name, count_text = argv
    count = int(count_text)
    if side == "raw":
        from benchmarks.raw import RawClient

        client = RawClient(kind, host, int(port), user, password)
        baseline = _status_kb("VmRSS")
        start = time.perf_counter()
        client.subscribe(f"/queue/{queue_name}", "raw-rss")
        for _ in range(count):
            client.ack(client.inbox.get(timeout=60))
        elapsed = time.perf_counter() - start
        client.close()
    else:
        from jmslike import ConnectionFactory, Session

        connection = ConnectionFactory(url).createConnection(user, password)
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        baseline = _status_kb("VmRSS")
        start = time.perf_counter()
        consumer = session.createConsumer(session.createQueue(queue_name))
        connection.start()
        for i in range(count):
            if consumer.receive(60_000) is None:
                raise SystemExit(f"backlog drained after {i} of {count}")
        elapsed = time.perf_counter() - start
        connection.close()
    peak = _status_kb("VmHWM")
    print(json.dumps({"peak_kb": peak, "baseline_kb": baseline, "elapsed_s": elapsed, "count": count}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

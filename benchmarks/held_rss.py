"""Client memory when the application is slower than the broker: the byte bound of jmslike/flow.py at work.

    python -m benchmarks.held_rss --broker activemq|rabbitmq [--messages 200] [--size 1048576] [--hold 5]

A queue holds ``--messages`` PERSISTENT messages of ``--size`` bytes. For each ``buffer_bytes`` setting (0: no
byte bound, only ``prefetch`` 1000; the 64 MiB default; 8 MiB) a child process connects, creates a consumer,
takes nothing for ``--hold`` seconds (an application busy elsewhere: what the broker pushes meanwhile is what
the client must hold), then drains the queue and checks the count and the order. It reports its peak RSS
(VmHWM) above its RSS after connecting. A separate process per setting, so each number is that client's own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
import uuid

from jmslike.conformance.brokers import launch

from . import launch_options
from .rss import _status_kb
from .workloads import Bench, fill

SETTINGS = (0, 64 * 1024 * 1024, 8 * 1024 * 1024)


def child(url: str, user: str, password: str, queue_name: str, count: int, hold_s: float) -> int:
    from jmslike import BytesMessage, ConnectionFactory, Session

    connection = ConnectionFactory(url).createConnection(user, password)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    connection.start()
    baseline = _status_kb("VmRSS")
    consumer = session.createConsumer(session.createQueue(queue_name))
    threading.Event().wait(hold_s)  # the application is busy: this is the measurement, not synchronisation
    held = connection.buffer.total
    for i in range(count):
        message = consumer.receive(60_000)
        if not isinstance(message, BytesMessage):
            raise SystemExit(f"backlog drained after {i} of {count}")
    connection.close()
    peak = _status_kb("VmHWM")
    print(json.dumps({"peak_kb": peak, "baseline_kb": baseline, "held_bytes": held, "count": count}))
    return 0


def main(argv: list[str]) -> int:
    if argv and argv[0] == "child":
        url, user, password, queue_name, count, hold = argv[1:]
        return child(url, user, password, queue_name, int(count), float(hold))
    parser = argparse.ArgumentParser(prog="python -m benchmarks.held_rss", description=__doc__.split("\n")[0])
    parser.add_argument("--broker", choices=("activemq", "rabbitmq"), required=True)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--size", type=int, default=1024 * 1024)
    parser.add_argument("--hold", type=float, default=5.0)
    args = parser.parse_args(argv)
    rows: list[str] = []
    with launch(args.broker, **launch_options(args.broker)) as broker:
        url = broker.url
        if args.broker == "rabbitmq" and broker.management_url:
            url += "?management_url=" + broker.management_url
        bench = Bench(args.broker, broker.host, broker.port, broker.user, broker.password, url, 0, 0, 0, 0)
        for limit in SETTINGS:
            queue_name = f"bench.held.{uuid.uuid4().hex[:8]}"
            fill(bench, queue_name, args.messages, b"x" * args.size)
            target = url + ("&" if "?" in url else "?") + f"buffer_bytes={limit}"
            started = time.monotonic()
            result = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.held_rss",
                    "child",
                    target,
                    broker.user,
                    broker.password,
                    queue_name,
                    str(args.messages),
                    str(args.hold),
                ],
                capture_output=True,
                text=True,
                check=False,
                timeout=600,
            )
            if result.returncode != 0:
                print(result.stderr[-3000:], file=sys.stderr)
                return 1
            data = json.loads(result.stdout.strip().splitlines()[-1])
            growth = (data["peak_kb"] - data["baseline_kb"]) / 1024
            label = "off (prefetch only)" if limit == 0 else f"{limit // (1024 * 1024)} MiB"
            held = "(not counted)" if limit == 0 else f"{data['held_bytes'] / 2**20:.1f} MiB"
            rows.append(f"| {label} | {held} | {growth:.0f} MiB | {time.monotonic() - started:.1f} s |")
    backlog = args.messages * args.size / 2**20
    print(
        f"\n{args.broker}: {args.messages} x {args.size} B ({backlog:.0f} MiB), consumer idle {args.hold:.0f} s"
    )
    print("| buffer_bytes | held when idle | peak RSS growth | run |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

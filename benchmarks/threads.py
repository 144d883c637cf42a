"""Where the client CPU goes, per thread: ``python -m benchmarks.threads --broker activemq [--workload ...]``.

``--workload fanout`` (default) runs the fan-out workload (1 publisher, 10 durable subscribers, 256 B)
through jmslike, raw stomp.py and raw stomp.py with a listener thread per connection, and reads each
thread's CPU time from ``/proc/self/task`` between the first delivery and the ``--deliveries``-th; the
publisher's share is one send per ten deliveries. ``--workload completion`` runs PERSISTENT sends with a
JMS 2.0 CompletionListener (256 B) against raw stomp.py's pipelined receipts, with and without a callback
thread, sampled between the end of the warm-up and the last completion. Threads are grouped by role: the
publisher (main thread), readers (stomp.py's receiver threads, jmslike's socket reader), jmslike's writer
(its flush thread), jmslike's session dispatch threads, and the raw controls' listener / completion
threads. Linux only. Numbers are CPU microseconds per delivery or per send. docs/performance.md explains
what they showed.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections import defaultdict

from jmslike.conformance.brokers import launch

from . import launch_options
from . import workloads as w

_TICK = os.sysconf("SC_CLK_TCK")


def _role(thread: threading.Thread | None) -> str:
    if thread is None:
        return "other"
    if thread is threading.main_thread():
        return "publisher"
    if thread.name.startswith("jmslike-session"):
        return "dispatch"
    if thread.name in ("raw-listener", "raw-completions"):
        return "listener"
    if thread.name.startswith(("Thread-", "jmslike-stomp-")):  # stomp.py's receiver loop, jmslike's reader
        return "reader"
    if thread.name.startswith("jmslike-flush"):
        return "writer"
    return "other"


def thread_cpu() -> dict[int, tuple[str, float]]:
    """Native thread id → (role, user+system CPU seconds) for every thread of this process."""
    by_id = {t.native_id: t for t in threading.enumerate()}
    out: dict[int, tuple[str, float]] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as stat:
                text = stat.read()
        except FileNotFoundError:  # ended meanwhile
            continue
        fields = text[text.rindex(")") + 2 :].split()
        out[int(tid)] = (_role(by_id.get(int(tid))), (int(fields[11]) + int(fields[12])) / _TICK)
    return out


def measure(
    bench: w.Bench, side: str, listener_thread: bool, deliveries: int
) -> tuple[float, dict[str, float]]:
    """One fan-out; returns (deliveries/s over the sampled window, CPU µs per delivery by role)."""
    marks: dict[str, tuple[dict[int, tuple[str, float]], float]] = {}

    def probe(count: int) -> None:
        if count == 1:
            marks["first"] = (thread_cpu(), time.perf_counter())
        elif count == deliveries:
            marks["last"] = (thread_cpu(), time.perf_counter())

    w.fanout(bench, 256, side, listener_thread=listener_thread, probe=probe)
    if "last" not in marks:
        raise SystemExit(f"fewer than {deliveries} deliveries: raise --duration or lower --deliveries")
    (before, t0), (after, t1) = marks["first"], marks["last"]
    per_role: defaultdict[str, float] = defaultdict(float)
    for tid, (role, cpu) in after.items():
        per_role[role] += (cpu - before.get(tid, (role, 0.0))[1]) / (deliveries - 1) * 1e6
    return (deliveries - 1) / (t1 - t0), per_role


def measure_completions(bench: w.Bench, side: str, callback_thread: bool) -> tuple[float, dict[str, float]]:
    """One run of CompletionListener sends; returns (sends/s, CPU µs per send by role)."""
    marks: dict[str, tuple[dict[int, tuple[str, float]], float]] = {}

    def mark(when: str) -> None:
        marks[when] = (thread_cpu(), time.perf_counter())

    rate = w.publish_async(bench, 256, side, callback_thread=callback_thread, mark=mark)
    (before, t0), (after, t1) = marks["start"], marks["end"]
    sends = rate * (t1 - t0)
    per_role: defaultdict[str, float] = defaultdict(float)
    for tid, (role, cpu) in after.items():
        per_role[role] += (cpu - before.get(tid, (role, 0.0))[1]) / sends * 1e6
    return rate, per_role


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.threads", description=__doc__.splitlines()[0])
    parser.add_argument("--broker", required=True, choices=("activemq", "rabbitmq"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--deliveries", type=int, default=10_000, help="sampled deliveries per run")
    parser.add_argument("--duration", type=float, default=8.0, help="seconds of publishing per run")
    parser.add_argument("--workload", choices=("fanout", "completion"), default="fanout")
    args = parser.parse_args(argv)
    with launch(args.broker, **launch_options(args.broker)) as broker:
        url = broker.url
        if args.broker == "rabbitmq" and broker.management_url:
            url += "?management_url=" + broker.management_url
        bench = w.Bench(
            args.broker, broker.host, broker.port, broker.user, broker.password, url, args.duration, 0, 0, 0
        )
        completion = args.workload == "completion"
        helper = "callback thread" if completion else "listener thread"
        sides = (("jmslike", "jmslike", False), ("raw", "raw", False), (f"raw + {helper}", "raw", True))
        roles = ("reader", "writer", "dispatch", "listener", "publisher", "other")
        what = "CompletionListener sends" if completion else "fan-out"
        unit = "sends/s" if completion else "deliveries/s"
        print(f"| {args.broker} {what}, 256 B | {unit} | " + " | ".join(roles) + " | total µs |")
        print("|---" * (len(roles) + 3) + "|")
        for r in range(args.rounds):
            for label, side, threaded in sides if r % 2 == 0 else tuple(reversed(sides)):
                if completion:
                    rate, per_role = measure_completions(bench, side, threaded)
                else:
                    rate, per_role = measure(bench, side, threaded, args.deliveries)
                cells = " | ".join(f"{per_role[role]:.0f}" if role in per_role else "—" for role in roles)
                print(f"| {label} | {rate:,.0f} | {cells} | {sum(per_role.values()):.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

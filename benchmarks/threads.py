"""Where the client CPU goes, per thread: ``python -m benchmarks.threads --broker activemq [--workload ...]``.

``--workload fanout`` (default) runs the fan-out workload (1 publisher, 10 durable subscribers)
through jmslike, raw stomp.py and raw stomp.py with a listener thread per connection, and reads each
thread's CPU time from ``/proc/self/task`` between the first delivery and the ``--deliveries``-th; the
publisher's share is one send per ten deliveries. ``--workload completion`` runs PERSISTENT sends with a
JMS 2.0 CompletionListener against raw stomp.py's pipelined receipts, with and without a callback
thread, sampled between the end of the warm-up and the last completion. Threads are grouped by role: the
publisher (main thread), readers (stomp.py's receiver threads, jmslike's socket reader), jmslike's writer
(its flush thread), jmslike's session dispatch threads, and the raw controls' listener / completion
threads. Linux only. Numbers are CPU microseconds per delivery or per send, by role, then over all threads in user
and kernel mode, and context switches per delivery or send (voluntary and not). ``--size`` sets the body bytes
(default 256). docs/performance.md explains what they showed.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections import defaultdict
from typing import NamedTuple

from jmslike.conformance.brokers import launch

from . import launch_options
from . import workloads as w
from .proc_stat import CLOCK_TICKS, stat_fields


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


class Sample(NamedTuple):
    """One thread's counters at one moment: CPU seconds in user and kernel mode, context switches."""

    role: str
    user_s: float
    system_s: float
    switches: int


def thread_cpu() -> dict[int, Sample]:
    """Native thread id → its role and counters, for every thread of this process. A switch is voluntary (the
    thread waited: a lock, a system call that blocked) or not (preempted); both are counted."""
    by_id = {t.native_id: t for t in threading.enumerate()}
    out: dict[int, Sample] = {}
    for tid in os.listdir("/proc/self/task"):
        fields = stat_fields(f"self/task/{tid}")
        try:
            with open(f"/proc/self/task/{tid}/status") as status:
                switches = sum(int(line.split()[1]) for line in status if "ctxt_switches" in line)
        except FileNotFoundError:  # ended meanwhile
            continue
        if fields is None:
            continue
        role = _role(by_id.get(int(tid)))
        out[int(tid)] = Sample(role, int(fields[11]) / CLOCK_TICKS, int(fields[12]) / CLOCK_TICKS, switches)
    return out


class Costs(NamedTuple):
    """What a sampled window cost, per delivery or per send: CPU µs by thread role, and over all threads CPU µs in
    user and kernel mode and context switches."""

    per_role: dict[str, float]
    user_us: float
    system_us: float
    switches: float


def costs(before: dict[int, Sample], after: dict[int, Sample], count: float) -> Costs:
    """The counters' growth from ``before`` to ``after`` divided by ``count`` (a thread started meanwhile counts
    from zero)."""
    per_role: defaultdict[str, float] = defaultdict(float)
    user = system = switches = 0.0
    for tid, end in after.items():
        start = before.get(tid, Sample(end.role, 0.0, 0.0, 0))
        per_role[end.role] += (end.user_s + end.system_s - start.user_s - start.system_s) / count * 1e6
        user += (end.user_s - start.user_s) / count * 1e6
        system += (end.system_s - start.system_s) / count * 1e6
        switches += (end.switches - start.switches) / count
    return Costs(dict(per_role), user, system, switches)


def measure(
    bench: w.Bench, side: str, listener_thread: bool, deliveries: int, size: int
) -> tuple[float, Costs]:
    """One fan-out; returns (deliveries/s over the sampled window, costs per delivery)."""
    marks: dict[str, tuple[dict[int, Sample], float]] = {}

    def probe(count: int) -> None:
        if count == 1:
            marks["first"] = (thread_cpu(), time.perf_counter())
        elif count == deliveries:
            marks["last"] = (thread_cpu(), time.perf_counter())

    w.fanout(bench, size, side, listener_thread=listener_thread, probe=probe)
    if "last" not in marks:
        raise SystemExit(f"fewer than {deliveries} deliveries: raise --duration or lower --deliveries")
    (before, t0), (after, t1) = marks["first"], marks["last"]
    return (deliveries - 1) / (t1 - t0), costs(before, after, deliveries - 1)


def measure_completions(bench: w.Bench, side: str, callback_thread: bool, size: int) -> tuple[float, Costs]:
    """One run of CompletionListener sends; returns (sends/s, costs per send)."""
    marks: dict[str, tuple[dict[int, Sample], float]] = {}

    def mark(when: str) -> None:
        marks[when] = (thread_cpu(), time.perf_counter())

    rate = w.publish_async(bench, size, side, callback_thread=callback_thread, mark=mark)
    (before, t0), (after, t1) = marks["start"], marks["end"]
    return rate, costs(before, after, rate * (t1 - t0))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.threads", description=__doc__.splitlines()[0])
    parser.add_argument("--broker", required=True, choices=("activemq", "rabbitmq"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--deliveries", type=int, default=10_000, help="sampled deliveries per run")
    parser.add_argument("--duration", type=float, default=8.0, help="seconds of publishing per run")
    parser.add_argument("--workload", choices=("fanout", "completion"), default="fanout")
    parser.add_argument("--size", type=int, default=256, help="message body bytes")
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
        head = " | ".join(roles)
        print(
            f"| {args.broker} {what}, {args.size} B | {unit} | {head} | total µs | user | system | switches |"
        )
        print("|---" * (len(roles) + 6) + "|")
        for r in range(args.rounds):
            for label, side, threaded in sides if r % 2 == 0 else tuple(reversed(sides)):
                if completion:
                    rate, cost = measure_completions(bench, side, threaded, args.size)
                else:
                    rate, cost = measure(bench, side, threaded, args.deliveries, args.size)
                by_role = cost.per_role
                cells = " | ".join(f"{by_role[role]:.0f}" if role in by_role else "—" for role in roles)
                print(
                    f"| {label} | {rate:,.0f} | {cells} | {sum(by_role.values()):.0f} | {cost.user_us:.0f} "
                    f"| {cost.system_us:.0f} | {cost.switches:.2f} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m benchmarks --broker activemq|rabbitmq [--quick] [--json FILE]``: jmslike against raw stomp.py.

Launches the broker with our launchers, runs every workload through jmslike and through raw stomp.py
doing the same frames (benchmarks/raw.py), alternating which side goes first each round so that a noisy
moment of the machine does not favour one side, and prints the medians and the ratio jmslike/raw.
Numbers on a shared machine are noisy: compare ratios from one run, not absolute rates across runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from jmslike import Session
from jmslike.conformance.brokers import launch
from jmslike.conformance.brokers.activemq import TransportConnector
from jmslike.conformance.brokers.ports import free_port

from . import aio_workloads as aio
from . import java as j
from . import launch_options
from . import workloads as w
from .proc_stat import wait_until_idle
from .report import (
    ASYNC_TARGET,
    DUPS_OK_TARGET,
    FIRE_AND_FORGET_TARGET,
    JAVA_NON_PERSISTENT_TARGET,
    JAVA_TARGET,
    RSS_TARGET_MB,
    SAME_WORK_TARGET,
    Row,
    document,
    format_table,
    percentile,
)
from .rounds import Compare, Measurement, run_round

PUB = "publish PERSISTENT, sync"
ASYNC = "publish PERSISTENT, async (raw: sync)"
ASYNC_RAW = "publish PERSISTENT, async (raw: pipelined)"
ASYNC_THREADED = "publish PERSISTENT, async (raw: pipelined, callback thread)"
NONPERS = "publish NON_PERSISTENT (raw: receipts pipelined)"
NONPERS_FF = "publish NON_PERSISTENT (raw: fire-and-forget)"
AUTO = "consume backlog, AUTO_ACK"
CLIENT = "consume backlog, CLIENT_ACK"
AUTO_PLAIN = "consume backlog, AUTO_ACK (raw: ack:auto)"
DUPS = "consume backlog, DUPS_OK (raw: ack:auto)"
FANOUT = "fan-out 1→10 durable (deliveries)"
FANOUT_THREADED = "fan-out 1→10 durable (raw: listener thread)"
PUB_AIO = "publish PERSISTENT, sync (asyncio API)"
ASYNC_AIO = "publish PERSISTENT, async (asyncio API; raw: pipelined, callback thread)"
NONPERS_AIO = "publish NON_PERSISTENT (asyncio API; raw: receipts pipelined)"
AUTO_AIO = "consume backlog, AUTO_ACK (asyncio API)"
P50 = "latency p50"
P99 = "latency p99"
RSS = "peak RSS draining backlog"
WORKLOADS = ("publish", "nonpersistent", "consume", "fanout", "latency", "rss")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--broker", required=True, choices=("activemq", "rabbitmq"))
    parser.add_argument("--quick", action="store_true", help="one size (256 B), small counts: < 2 min")
    parser.add_argument("--json", metavar="FILE", help="write every round's numbers as JSON")
    parser.add_argument(
        "--rounds",
        type=int,
        help="rounds per workload (default 4, quick 2; even, so that each side goes first equally often)",
    )
    parser.add_argument("--sizes", help="comma list of message sizes in bytes (default 256,4096; quick 256)")
    parser.add_argument("--duration", type=float, help="seconds per publish measurement")
    parser.add_argument("--backlog", type=int, help="backlog to consume (default 100000; quick 5000)")
    parser.add_argument(
        "--rss-backlog", type=int, help="1 KB backlog for peak RSS (default 100000; quick 20000)"
    )
    parser.add_argument("--only", help=f"comma list of workload groups: {','.join(WORKLOADS)}")
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="do not run each timed workload group (all but rss) once, untimed, before its first round "
        "(Runner says why it does)",
    )
    parser.add_argument(
        "--java",
        choices=("auto", "off", "on"),
        default="auto",
        help="ActiveMQ only: also drive ActiveMQ's Java JMS client through JPype (auto: where jpype1 and "
        "the jars are installed; on: fail when they are not)",
    )
    args = parser.parse_args(argv)
    quick = args.quick
    # Even by default, so that neither side goes first more often: which one does moves the ratio (247 paired
    # rounds of nine earlier runs: 2% higher with raw first, 9-12% in NON_PERSISTENT 4 KB and fan-out 256 B, the
    # other way for CLIENT_ACK), and three rounds put jmslike first twice (docs/performance.md).
    args.rounds = args.rounds or (2 if quick else 4)
    args.sizes = [int(s) for s in (args.sizes or ("256" if quick else "256,4096")).split(",")]
    args.duration = args.duration or (1.0 if quick else 2.0)
    args.backlog = args.backlog or (5_000 if quick else 100_000)
    args.rss_backlog = args.rss_backlog or (20_000 if quick else 100_000)
    args.only = set((args.only or ",".join(WORKLOADS)).split(","))
    unknown = args.only - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workload groups: {sorted(unknown)}")
    return args


def _progress(text: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


class Runner:
    """Collects rows, and runs a round of a workload group through :func:`rounds.run_round`, each measurement
    once the broker process ``broker_pid`` is idle (None: not watched).

    ``warm_up``: the first time a timed group runs (every group but the RSS one, which measures each side once in
    a child process of its own), it runs once more before, untimed (:meth:`first_time`). Why: the first
    measurement of a group ran slower on ActiveMQ whichever client it was, and round 1 always starts with
    jmslike's. Its first round against the median of its others, in the ActiveMQ runs of 2026-11-29 at 256 B:
    0.68-0.92 for AUTO_ACKNOWLEDGE (five runs; raw's, run second: 0.74-1.11), 0.59-0.86 for fan-out (three),
    0.79-0.94 for synchronous sends (four); the first run with the warm-up: 1.08, 1.10 and 0.85
    (docs/performance.md, "A warm-up round")."""

    def __init__(self, broker_pid: int | None = None, warm_up: bool = False) -> None:
        self.rows: dict[tuple[str, int], Row] = {}
        self.broker_pid = broker_pid
        self.warm_up = warm_up
        self._warmed: set[str] = set()

    def row(self, workload: str, size: int, unit: str = "msg/s", **extra: Any) -> Row:
        key = (workload, size)
        if key not in self.rows:
            self.rows[key] = Row(workload, size, unit, **extra)
        return self.rows[key]

    def first_time(self, group: str) -> bool:
        """Whether ``group`` is to be warmed up now: True once per group, when this run warms up at all."""
        if not self.warm_up or group in self._warmed:
            return False
        self._warmed.add(group)
        return True

    def round(
        self, group: str, size: int, round_no: int, measurements: list[Measurement], rows: list[Compare]
    ) -> None:
        def progress(name: str, rate: float, cpu_us: float) -> None:
            cpu_text = "" if math.isnan(cpu_us) else f" ({cpu_us:.1f} µs CPU/msg)"
            _progress(f"{group} {size} B round {round_no + 1} {name}: {rate:,.1f}{cpu_text}")

        def warming(name: str, rate: float, cpu_us: float) -> None:
            _progress(f"{group} {size} B warm-up (not counted) {name}: {rate:,.1f}")

        if self.first_time(group):  # reversed: the measurement round 1 starts with ran last here
            run_round(1, measurements, [], _take_cpu, warming, self._settle(f"{group} {size} B warm-up"))
        run_round(
            round_no,
            measurements,
            rows,
            _take_cpu,
            progress,
            self._settle(f"{group} {size} B round {round_no + 1}"),
        )

    def _settle(self, where: str) -> Callable[[], None]:
        """What runs before each measurement: wait for the broker to go idle, saying so when that took long."""

        def settle() -> None:
            waited = wait_until_idle(self.broker_pid)
            if waited > 2.0:
                _progress(f"{where}: the broker was busy for {waited:.1f} s")

        return settle


def _take_cpu() -> float:
    """The CPU µs per message the workload just run noted (NaN: none), forgotten once read."""
    value, w.CPU.last = w.CPU.last, math.nan
    return value


def run_size(runner: Runner, bench: w.Bench, size: int, rounds: int, only: set[str]) -> None:
    """Each round, each workload group: its measurements (in reverse in odd rounds, benchmarks/rounds.py),
    then every row of the group from the two of them it compares."""
    m, row_for = Measurement, runner.row
    for r in range(rounds):
        if "publish" in only:
            runner.round(
                "publish PERSISTENT",
                size,
                r,
                [
                    m("jmslike sync", lambda: w.publish_sync(bench, size, "jmslike")),
                    m("raw sync", lambda: w.publish_sync(bench, size, "raw")),
                    m("jmslike async", lambda: w.publish_async(bench, size, "jmslike")),
                    m("jmslike.aio sync", lambda: aio.publish(bench, size, persistent=True)),
                    m("jmslike.aio async", lambda: aio.publish_async(bench, size)),
                    m("raw pipelined", lambda: w.publish_async(bench, size, "raw")),
                    m(
                        "raw pipelined, callback thread",
                        lambda: w.publish_async(bench, size, "raw", callback_thread=True),
                    ),
                ],
                [
                    Compare(row_for(PUB, size), "jmslike sync", "raw sync"),
                    Compare(
                        row_for(ASYNC, size, target=ASYNC_TARGET, note="raw = raw synchronous persistent"),
                        "jmslike async",
                        "raw sync",
                    ),
                    Compare(
                        row_for(PUB_AIO, size, target=SAME_WORK_TARGET, note="jmslike.aio; raw as above"),
                        "jmslike.aio sync",
                        "raw sync",
                    ),
                    Compare(
                        row_for(
                            ASYNC_RAW,
                            size,
                            note=f"raw = same frames, receipts pipelined (window {w.window(size)})",
                        ),
                        "jmslike async",
                        "raw pipelined",
                    ),
                    Compare(
                        row_for(
                            ASYNC_THREADED,
                            size,
                            target=SAME_WORK_TARGET,
                            note="raw as above, each completion run on a thread of its own, as a JMS session "
                            "runs its callbacks",
                        ),
                        "jmslike async",
                        "raw pipelined, callback thread",
                    ),
                    Compare(
                        row_for(ASYNC_AIO, size, target=SAME_WORK_TARGET, note="jmslike.aio; raw as above"),
                        "jmslike.aio async",
                        "raw pipelined, callback thread",
                    ),
                ],
            )
        if "nonpersistent" in only:
            runner.round(
                "publish NON_PERSISTENT",
                size,
                r,
                [
                    m("jmslike", lambda: w.publish_non_persistent(bench, size, "jmslike")),
                    m("raw receipts pipelined", lambda: w.publish_non_persistent(bench, size, "raw")),
                    m("jmslike.aio", lambda: aio.publish(bench, size, persistent=False)),
                    m("raw fire-and-forget", lambda: w.publish_non_persistent(bench, size, "raw-ff")),
                ],
                [
                    Compare(
                        row_for(
                            NONPERS,
                            size,
                            target=SAME_WORK_TARGET,
                            note=f"jmslike unwaited, timed until confirmed; raw = receipt per send, window {w.window(size)}",
                        ),
                        "jmslike",
                        "raw receipts pipelined",
                    ),
                    Compare(
                        row_for(NONPERS_AIO, size, target=SAME_WORK_TARGET, note="jmslike.aio; raw as above"),
                        "jmslike.aio",
                        "raw receipts pipelined",
                    ),
                    Compare(
                        row_for(
                            NONPERS_FF,
                            size,
                            target=FIRE_AND_FORGET_TARGET,
                            note="raw = no receipts, one at the end (stomp.py as usually written)",
                        ),
                        "jmslike",
                        "raw fire-and-forget",
                    ),
                ],
            )
        if "consume" in only:
            backlog = f"{bench.backlog} messages"
            runner.round(
                "consume backlog",
                size,
                r,
                [
                    m("jmslike AUTO", lambda: w.consume(bench, size, "jmslike", Session.AUTO_ACKNOWLEDGE)),
                    m("raw AUTO", lambda: w.consume(bench, size, "raw", Session.AUTO_ACKNOWLEDGE)),
                    m("jmslike.aio AUTO", lambda: aio.consume_auto(bench, size)),
                    m(
                        "jmslike CLIENT",
                        lambda: w.consume(bench, size, "jmslike", Session.CLIENT_ACKNOWLEDGE),
                    ),
                    m("raw CLIENT", lambda: w.consume(bench, size, "raw", Session.CLIENT_ACKNOWLEDGE)),
                    m("raw ack:auto", lambda: w.consume(bench, size, "raw-auto", Session.AUTO_ACKNOWLEDGE)),
                    m(
                        "jmslike DUPS_OK",
                        lambda: w.consume(bench, size, "jmslike", Session.DUPS_OK_ACKNOWLEDGE),
                    ),
                ],
                [
                    Compare(
                        row_for(AUTO, size, target=SAME_WORK_TARGET, note=backlog), "jmslike AUTO", "raw AUTO"
                    ),
                    Compare(
                        row_for(
                            AUTO_AIO,
                            size,
                            target=SAME_WORK_TARGET,
                            note=f"jmslike.aio, {backlog}; raw as above",
                        ),
                        "jmslike.aio AUTO",
                        "raw AUTO",
                    ),
                    Compare(
                        row_for(CLIENT, size, target=SAME_WORK_TARGET, note=backlog),
                        "jmslike CLIENT",
                        "raw CLIENT",
                    ),
                    # The peer users would pick: raw stomp.py with ack:auto, against AUTO and DUPS_OK.
                    Compare(
                        row_for(
                            AUTO_PLAIN,
                            size,
                            target=None,
                            note="raw = ack:auto, no ACK frames (stomp.py as usually written)",
                        ),
                        "jmslike AUTO",
                        "raw ack:auto",
                    ),
                    Compare(
                        row_for(
                            DUPS,
                            size,
                            target=DUPS_OK_TARGET,
                            note="jmslike DUPS_OK (lazy cumulative ACKs on ActiveMQ); raw = ack:auto",
                        ),
                        "jmslike DUPS_OK",
                        "raw ack:auto",
                    ),
                ],
            )
        if "fanout" in only:
            runner.round(
                "fan-out 1→10 durable",
                size,
                r,
                [
                    m("jmslike", lambda: w.fanout(bench, size, "jmslike")),
                    m("raw", lambda: w.fanout(bench, size, "raw")),
                    m("raw listener thread", lambda: w.fanout(bench, size, "raw", listener_thread=True)),
                ],
                [
                    Compare(row_for(FANOUT, size), "jmslike", "raw"),
                    Compare(
                        row_for(
                            FANOUT_THREADED,
                            size,
                            note="raw = listeners on a thread per connection, as a JMS session's",
                        ),
                        "jmslike",
                        "raw listener thread",
                    ),
                ],
            )
        if "latency" in only:
            if runner.first_time("latency"):
                for side in reversed(w.SIDES):  # as the timed groups': round 1's first side runs last here
                    w.latency(bench, size, side)
                _progress(f"latency {size} B warm-up (not counted) done")
            p50 = runner.row(P50, size, "ms", target=None, note=f"{bench.latency_rate} msg/s")
            p99 = runner.row(P99, size, "ms", target=None, note=f"{bench.latency_rate} msg/s")
            for side in w.SIDES if r % 2 == 0 else tuple(reversed(w.SIDES)):
                samples = w.latency(bench, size, side)
                for row, pct in ((p50, 50.0), (p99, 99.0)):
                    getattr(row, side).append(percentile(samples, pct))
                _progress(f"latency {size} B round {r + 1} {side}: p50 {p50.__dict__[side][-1]:.2f} ms")


def run_java(
    runner: Runner,
    java_rows: dict[tuple[str, int], Row],
    java: j.JavaJms,
    bench: w.Bench,
    size: int,
    rounds: int,
    only: set[str],
    warm_up: bool = False,
) -> None:
    """The Java client's side of the second table; jmslike's side is the same run's jmslike rounds. ``warm_up``:
    first one round untimed, as jmslike's groups get (:class:`Runner`): the Java client's first round ran slower
    too (AUTO_ACKNOWLEDGE 256 B 14.9k msg/s against 19.7k-25.1k after, 2026-11-29), which flattered jmslike."""

    def add(workload: str, value: float, unit: str = "msg/s", target: float | None = JAVA_TARGET) -> None:
        if not recording:
            w.CPU.last = math.nan
            _progress(f"{workload} {size} B java warm-up (not counted): {value:,.1f}")
            return
        key = (workload, size)
        if key not in java_rows:
            java_rows[key] = Row(workload, size, unit, target=target, note="baseline = Java client via JPype")
        java_rows[key].raw.append(value)
        java_rows[key].cpu_raw.append(w.CPU.last)  # noted by the workload just measured, if it notes any
        w.CPU.last = math.nan
        _progress(f"{workload} {size} B java: {value:,.1f}")

    w.CPU.last = math.nan
    for round_no in range(-1 if warm_up else 0, rounds):
        recording = round_no >= 0
        if "publish" in only:
            add(PUB, j.publish_sync(java, bench, size))
        if "nonpersistent" in only:
            add(
                NONPERS,
                j.publish_sync(java, bench, size, persistent=False),
                target=JAVA_NON_PERSISTENT_TARGET,
            )
        if "consume" in only:
            add(AUTO, j.consume(java, bench, size, j.AUTO_ACKNOWLEDGE))
            add(CLIENT, j.consume(java, bench, size, j.CLIENT_ACKNOWLEDGE), target=None)
            add(DUPS, j.consume(java, bench, size, j.DUPS_OK_ACKNOWLEDGE), target=None)
        if "latency" in only:
            samples = j.latency(java, bench, size)
            add(P50, percentile(samples, 50.0), "ms", None)
            add(P99, percentile(samples, 99.0), "ms", None)
    for key, row in java_rows.items():
        if key[1] == size and key in runner.rows:
            row.jmslike = list(runner.rows[key].jmslike)
            row.cpu_jmslike = list(runner.rows[key].cpu_jmslike)


def run_rss(runner: Runner, bench: w.Bench, backlog: int) -> None:
    """Peak RSS of a child process draining ``backlog`` 1 KB messages (once per side)."""
    row = runner.row(RSS, 1024, "MB", target=RSS_TARGET_MB, note=f"{backlog} x 1 KB, prefetch 1000")
    for side in w.SIDES:
        queue_name = bench.name("rss")
        w.fill(bench, queue_name, backlog, w.payload(1024))
        argv = [bench.kind, bench.host, str(bench.port), bench.user, bench.password, bench.url, queue_name]
        result = subprocess.run(
            [sys.executable, "-m", "benchmarks.rss", side, *argv, str(backlog)],
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        if result.returncode != 0:
            raise RuntimeError(f"rss child ({side}) failed: {result.stderr[-2000:]}")
        data = json.loads(result.stdout.strip().splitlines()[-1])
        getattr(row, side).append(data["peak_kb"] / 1024)
        _progress(
            f"rss {side}: peak {data['peak_kb'] / 1024:.1f} MB (baseline {data['baseline_kb'] / 1024:.1f} MB, "
            f"{backlog / data['elapsed_s']:,.0f} msg/s)"
        )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    options = launch_options(args.broker)
    openwire_url: str | None = None
    if args.broker == "activemq" and args.java != "off":
        reason = j.unavailable_reason()
        if reason is None:
            openwire_url = f"tcp://127.0.0.1:{free_port()}"
            options["extra_connectors"] = (TransportConnector("openwire", openwire_url),)
        elif args.java == "on":
            print(f"--java on: {reason}", file=sys.stderr)
            return 2
        else:
            _progress(f"Java comparison skipped: {reason}")
    if args.rounds % 2:
        _progress(
            f"{args.rounds} rounds: each pair of measurements runs one way round once more than the other "
            "(an even count balances it)"
        )
    _progress(f"launching {args.broker}")
    with launch(args.broker, **options) as broker:
        url = broker.url
        if args.broker == "rabbitmq" and broker.management_url:
            url += "?management_url=" + broker.management_url
        bench = w.Bench(
            kind=args.broker,
            host=broker.host,
            port=broker.port,
            user=broker.user,
            password=broker.password,
            url=url,
            duration_s=args.duration,
            backlog=args.backlog,
            latency_rate=200 if args.quick else 500,
            latency_s=2.0 if args.quick else 4.0,
        )
        runner = Runner(broker.pid, warm_up=args.warm_up)
        java_rows: dict[tuple[str, int], Row] = {}
        java = j.JavaJms(openwire_url, broker.user, broker.password) if openwire_url else None
        for size in args.sizes:
            run_size(runner, bench, size, args.rounds, args.only)
            if java is not None:
                warm = args.warm_up and size == args.sizes[0]
                run_java(runner, java_rows, java, bench, size, args.rounds, args.only, warm_up=warm)
        if "rss" in args.only:
            run_rss(runner, bench, args.rss_backlog)
    elapsed = time.monotonic() - started
    rows = list(runner.rows.values())
    command = "python -m benchmarks " + " ".join(sys.argv[1:] if argv is None else argv)
    print()
    print(
        f"{args.broker}: median of {args.rounds} rounds, each in reverse order of the last; {elapsed:.0f} s"
    )
    if args.quick:
        print("quick mode: one message size (256 B), small counts (backlog, duration, RSS backlog)")
    print(format_table(rows))
    print(
        "ratio column: jmslike/raw (throughput: higher is better; latency: lower is better). "
        "async row: jmslike asynchronous vs raw synchronous persistent. "
        "Shared machine: load from other jobs adds noise."
    )
    if java_rows:
        print()
        print("jmslike against ActiveMQ's Java JMS client driven from Python through JPype (OpenWire):")
        print(format_table(list(java_rows.values()), baseline="Java (JPype)"))
        print(
            "jmslike column: the same run's jmslike rounds (table above); Java client with its defaults "
            "(NON_PERSISTENT sends asynchronous), prefetch 1000; targets from issue #21."
        )
    if args.json:
        meta = {
            "broker": args.broker,
            "command": command,
            "quick": args.quick,
            "rounds": args.rounds,
            "warm_up": args.warm_up,
            "sizes": args.sizes,
            "duration_s": args.duration,
            "backlog": args.backlog,
            "rss_backlog": args.rss_backlog,
            "send_window": w.WINDOW,
            "send_window_bytes": w.WINDOW_BYTES,
            "elapsed_s": round(elapsed, 1),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "loadavg": os.getloadavg(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        with open(args.json, "w") as out:
            data = document(rows, meta)
            data["java_rows"] = [r.to_json() for r in java_rows.values()]
            json.dump(data, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

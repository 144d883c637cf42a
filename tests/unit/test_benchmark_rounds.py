"""benchmarks/rounds.py: which measurement runs when, and which two each row compares (no broker)."""

from __future__ import annotations

import math
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from benchmarks.proc_stat import wait_until_idle
from benchmarks.report import Row
from benchmarks.rounds import Compare, Measurement, run_round
from benchmarks.workloads import Bench


class _Clock:
    """Measurements that return their position in the run (1, 2, ...) and note a CPU figure per name."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.cpu_noted = math.nan

    def measurement(self, name: str, cpu_us: float = math.nan) -> Measurement:
        def run() -> float:
            self.order.append(name)
            self.cpu_noted = cpu_us
            return float(len(self.order))

        return Measurement(name, run)

    def take_cpu(self) -> float:
        value, self.cpu_noted = self.cpu_noted, math.nan
        return value


def _run(
    clock: _Clock, round_no: int, measurements: list[Measurement], rows: list[Compare]
) -> dict[str, float]:
    return run_round(round_no, measurements, rows, clock.take_cpu, lambda *_: None)


def test_every_pair_runs_each_way_round_over_two_rounds() -> None:
    """The flaw this replaced: a row setting a side against a third measurement always ran that one last."""
    clock = _Clock()
    names = ["jmslike", "raw", "jmslike.aio", "raw listener thread"]
    positions: list[dict[str, int]] = []
    for round_no in range(4):
        clock.order.clear()
        _run(clock, round_no, [clock.measurement(n) for n in names], [])
        positions.append({name: i for i, name in enumerate(clock.order)})
    for a in names:
        for b in names:
            if a != b:
                first = sum(p[a] < p[b] for p in positions)
                assert first == 2, f"{a} before {b} in {first} of 4 rounds"


def test_each_row_gets_the_rates_and_cpu_of_the_two_it_compares() -> None:
    clock = _Clock()
    same, other = Row("same work", 256, "msg/s"), Row("other peer", 256, "msg/s")
    rows = [Compare(same, "jmslike", "raw"), Compare(other, "jmslike", "raw-auto")]
    measurements = [
        clock.measurement("jmslike", cpu_us=30.0),
        clock.measurement("raw", cpu_us=40.0),
        clock.measurement("raw-auto"),  # notes no CPU: NaN, not the previous measurement's 40
    ]
    assert _run(clock, 0, measurements, rows) == {"jmslike": 1.0, "raw": 2.0, "raw-auto": 3.0}
    assert _run(clock, 1, measurements, rows) == {"raw-auto": 4.0, "raw": 5.0, "jmslike": 6.0}
    assert (same.jmslike, same.raw, same.cpu_jmslike, same.cpu_raw) == (
        [1.0, 6.0],
        [2.0, 5.0],
        [30.0] * 2,
        [40.0] * 2,
    )
    assert (other.jmslike, other.raw) == ([1.0, 6.0], [3.0, 4.0])
    assert all(math.isnan(v) for v in other.cpu_raw)


def test_a_note_left_before_the_round_is_not_taken_for_its_first_measurement() -> None:
    clock = _Clock()
    clock.cpu_noted = 99.0  # left by something run before the round (a warm-up, the Java client)
    row = Row("r", 256, "msg/s")
    _run(clock, 0, [clock.measurement("jmslike"), clock.measurement("raw")], [Compare(row, "jmslike", "raw")])
    assert math.isnan(row.cpu_jmslike[0])


@pytest.mark.parametrize(
    ("names", "compare", "message"),
    [
        (["a", "a"], ("a", "a"), "repeat"),
        (["a", "b"], ("a", "c"), "does not run: ['c']"),
    ],
)
def test_a_round_that_cannot_fill_its_rows_is_refused_before_anything_runs(
    names: list[str], compare: tuple[str, str], message: str
) -> None:
    clock = _Clock()
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        _run(clock, 0, [clock.measurement(n) for n in names], [Compare(Row("r", 1, "msg/s"), *compare)])
    assert clock.order == []


def _fake_workloads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every workload benchmarks/__main__ runs, faked: each call is listed, returns its position in the list and
    notes it as its CPU; latency is listed as ``latency SIDE`` and returns its position as its one sample."""
    import benchmarks.__main__ as main
    from benchmarks import workloads as w

    calls: list[str] = []

    def fake(name: str) -> Callable[..., float]:
        def run(*args: object, **kwargs: object) -> float:
            label = " ".join(
                [name, *(str(a) for a in args[2:]), *(f"{k}={v}" for k, v in sorted(kwargs.items()))]
            )
            calls.append(label)
            w.CPU.last = float(len(calls))
            return float(len(calls))

        return run

    def latency(bench: object, size: int, side: str) -> list[float]:
        calls.append(f"latency {side}")
        return [float(len(calls))]  # one sample: the call's position, as the others' rates are

    for name in ("publish_sync", "publish_async", "publish_non_persistent", "consume", "fanout"):
        monkeypatch.setattr(main.w, name, fake(name))
    monkeypatch.setattr(main.aio, "publish", fake("aio.publish"))
    monkeypatch.setattr(main.aio, "publish_async", fake("aio.publish_async"))
    monkeypatch.setattr(main.aio, "consume_auto", fake("aio.consume_auto"))
    monkeypatch.setattr(main.w, "latency", latency)
    monkeypatch.setattr(main, "_progress", lambda text: None)
    return calls


def _fake_bench() -> Bench:
    return Bench(kind="rabbitmq", host="h", port=1, user="u", password="p", url="u", duration_s=0.0,
                 backlog=10, latency_rate=0, latency_s=0.0)  # fmt: skip


def test_the_default_run_fills_every_row_from_the_measurements_it_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """benchmarks/__main__.run_size with every workload faked (each call returns a new number and notes it as its
    CPU): a misspelt measurement name, or a row comparing the wrong two, shows here rather than in a broker run."""
    import benchmarks.__main__ as main

    calls = _fake_workloads(monkeypatch)
    runner = main.Runner()
    main.run_size(runner, _fake_bench(), 256, 2, set(main.WORKLOADS) - {"rss"})

    def label(value: float) -> str:
        return calls[int(value) - 1]

    expected = {
        main.PUB: ("publish_sync jmslike", "publish_sync raw"),
        main.ASYNC: ("publish_async jmslike", "publish_sync raw"),
        main.PUB_AIO: ("aio.publish persistent=True", "publish_sync raw"),
        main.ASYNC_RAW: ("publish_async jmslike", "publish_async raw"),
        main.ASYNC_THREADED: ("publish_async jmslike", "publish_async raw callback_thread=True"),
        main.ASYNC_AIO: ("aio.publish_async", "publish_async raw callback_thread=True"),
        main.NONPERS: ("publish_non_persistent jmslike", "publish_non_persistent raw"),
        main.NONPERS_AIO: ("aio.publish persistent=False", "publish_non_persistent raw"),
        main.NONPERS_FF: ("publish_non_persistent jmslike", "publish_non_persistent raw-ff"),
        main.AUTO: ("consume jmslike 1", "consume raw 1"),
        main.AUTO_AIO: ("aio.consume_auto", "consume raw 1"),
        main.CLIENT: ("consume jmslike 2", "consume raw 2"),
        main.AUTO_PLAIN: ("consume jmslike 1", "consume raw-auto 1"),
        main.DUPS: ("consume jmslike 3", "consume raw-auto 1"),
        main.FANOUT: ("fanout jmslike", "fanout raw"),
        main.FANOUT_THREADED: ("fanout jmslike", "fanout raw listener_thread=True"),
    }
    rate_rows = {key[0]: row for key, row in runner.rows.items() if row.unit == "msg/s"}
    assert list(rate_rows) == list(expected), "the table's rows, in the table's order"
    for workload, (ours, theirs) in expected.items():
        row = rate_rows[workload]
        assert [label(v) for v in row.jmslike] == [ours] * 2, workload
        assert [label(v) for v in row.raw] == [theirs] * 2, workload
        assert row.cpu_jmslike == row.jmslike and row.cpu_raw == row.raw, f"{workload}: CPU of another run"
    timed = [c for c in calls if not c.startswith("latency")]
    assert len(timed) == len(set(timed)) * 2 == 2 * 21, "each of the 21 measurements once per round"


def test_each_measurement_starts_after_the_settle_step() -> None:
    clock = _Clock()
    seen: list[str] = []
    measurements = [clock.measurement("a"), clock.measurement("b")]
    run_round(
        1,
        measurements,
        [],
        clock.take_cpu,
        lambda *_: None,
        settle=lambda: seen.append(f"settle {len(clock.order)}"),
    )
    assert seen == ["settle 0", "settle 1"] and clock.order == ["b", "a"]


def test_the_broker_is_waited_for_while_it_works_and_not_once_it_is_idle() -> None:
    """benchmarks/proc_stat.wait_until_idle on two child processes: one spinning, one asleep."""
    spinning = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    asleep = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert wait_until_idle(spinning.pid, window_s=0.1, limit_s=0.5) >= 0.5
        assert wait_until_idle(asleep.pid, window_s=0.1, limit_s=5.0) < 5.0
    finally:
        for child in (spinning, asleep):
            child.kill()
            child.wait()
    assert wait_until_idle(spinning.pid) < 0.1, "a process that is gone is not waited for"
    assert wait_until_idle(None) == 0.0, "no local broker process (an external one): nothing to watch"


def test_a_groups_first_round_follows_one_untimed_pass_and_later_rounds_do_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import benchmarks.__main__ as main

    monkeypatch.setattr(main, "_progress", lambda text: None)
    clock = _Clock()
    monkeypatch.setattr(main, "_take_cpu", clock.take_cpu)
    row = Row("consume", 256, "msg/s")
    measurements = [clock.measurement("jmslike"), clock.measurement("raw")]
    runner = main.Runner(warm_up=True)
    for round_no in range(2):
        runner.round("consume backlog", 256, round_no, measurements, [Compare(row, "jmslike", "raw")])
    runner.round(
        "consume backlog", 4096, 0, measurements, []
    )  # the same group at the next size: warm already
    assert clock.order == ["raw", "jmslike", "jmslike", "raw", "raw", "jmslike", "jmslike", "raw"]
    assert (row.jmslike, row.raw) == ([3.0, 6.0], [4.0, 5.0]), "the untimed pass (1, 2) is in no row"
    cold = main.Runner()
    clock.order.clear()
    cold.round("consume backlog", 256, 0, measurements, [])
    assert clock.order == ["jmslike", "raw"], "--no-warm-up: straight to round 1"


def test_a_warmed_run_adds_one_untimed_pass_per_group_and_keeps_the_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import benchmarks.__main__ as main

    calls = _fake_workloads(monkeypatch)
    runner = main.Runner(warm_up=True)
    for size in (256, 4096):
        main.run_size(runner, _fake_bench(), size, 2, set(main.WORKLOADS) - {"rss"})
    timed = [c for c in calls if not c.startswith("latency")]
    assert len(timed) == 21 * (1 + 2 + 2), "the 21 measurements once more before the first size's rounds only"
    assert calls.count("latency jmslike") == calls.count("latency raw") == 1 + 2 + 2
    for row in runner.rows.values():
        assert len(row.jmslike) == len(row.raw) == 2, row.workload
    # The warm-up's run, two rounds at 256 B, two at 4 KB: the rows hold the rounds' only.
    runs = [i + 1.0 for i, c in enumerate(calls) if c == "consume jmslike 1"]
    assert runner.rows[(main.AUTO, 256)].jmslike == runs[1:3], "the warm-up's run is in no row"
    assert runner.rows[(main.AUTO, 4096)].jmslike == runs[3:5]
    latency = [(i + 1.0, c) for i, c in enumerate(calls) if c.startswith("latency")]
    assert [c for _, c in latency[:2]] == ["latency raw", "latency jmslike"], (
        "round 1's first side warmed last"
    )
    assert runner.rows[(main.P50, 256)].jmslike == [latency[2][0], latency[5][0]], (
        "rounds 1 and 2, not the warm-up"
    )


def test_the_java_client_is_warmed_once_before_its_first_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    import benchmarks.__main__ as main

    calls: list[int] = []

    def publish_sync(java: object, bench: object, size: int, **kwargs: object) -> float:
        calls.append(size)
        return float(len(calls))

    monkeypatch.setattr(main.j, "publish_sync", publish_sync)
    monkeypatch.setattr(main, "_progress", lambda text: None)
    java_rows: dict[tuple[str, int], Row] = {}
    java: Any = object()
    for size, warm in ((256, True), (4096, False)):  # main() warms at the first size only
        main.run_java(main.Runner(), java_rows, java, _fake_bench(), size, 2, {"publish"}, warm_up=warm)
    assert calls == [256, 256, 256, 4096, 4096]
    assert java_rows[(main.PUB, 256)].raw == [2.0, 3.0], "the warm-up's run (1) is in no row"
    assert java_rows[(main.PUB, 4096)].raw == [4.0, 5.0]

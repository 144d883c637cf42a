"""The order of a round's measurements, and which two of them each table row compares.

Which of two measurements runs first moves their ratio on this machine: the broker and the page cache warm up,
queues and their files pile up, other jobs come and go. Over 247 paired rounds of nine earlier default runs
the ratio was 2% higher with raw stomp.py first, 9-12% in NON_PERSISTENT 4 KB and fan-out 256 B, and the other way
for CLIENT_ACK. Before 2026-11-29 only a row's own two sides alternated; a row that set one of them against a
third measurement (the asyncio API, raw stomp.py's listener thread) always measured that third one last.

So a round here is a list of measurements run in order, the next round runs them in reverse, and each row
names the two it compares: over an even number of rounds every pair of measurements runs each way round
equally often, whichever rows share them. Kept free of brokers and clocks (tests/unit/test_benchmark_rounds.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .report import Row


@dataclass(frozen=True)
class Measurement:
    """One timed run of one client: ``run()`` returns its rate (its CPU µs per message is what
    :func:`run_round`'s ``cpu`` then reads)."""

    name: str
    run: Callable[[], float]


@dataclass(frozen=True)
class Compare:
    """A table row's round: ``ours`` (jmslike's column) against ``theirs`` (the baseline's), by name."""

    row: Row
    ours: str
    theirs: str


def run_round(
    round_no: int,
    measurements: Sequence[Measurement],
    rows: Sequence[Compare],
    cpu: Callable[[], float],
    progress: Callable[[str, float, float], None],
    settle: Callable[[], None] = lambda: None,
) -> dict[str, float]:
    """Run ``measurements`` (in reverse in odd rounds), then add each row's pair; returns the rates by name.

    ``cpu()`` reads the CPU µs per message the measurement just run noted and forgets it, so a workload that
    notes none is NaN rather than its predecessor's. ``settle()`` runs before each measurement (the broker
    finishing what the one before left it: benchmarks/proc_stat.py)."""
    names = [m.name for m in measurements]
    if len(set(names)) != len(names):
        raise ValueError(f"measurement names repeat: {names}")
    unknown = {name for c in rows for name in (c.ours, c.theirs)} - set(names)
    if unknown:
        raise ValueError(f"rows compare measurements this round does not run: {sorted(unknown)}")
    rates: dict[str, float] = {}
    cpus: dict[str, float] = {}
    cpu()  # forget whatever the previous round left
    for measurement in measurements if round_no % 2 == 0 else reversed(measurements):
        settle()
        rates[measurement.name] = measurement.run()
        cpus[measurement.name] = cpu()
        progress(measurement.name, rates[measurement.name], cpus[measurement.name])
    for compare in rows:
        compare.row.jmslike.append(rates[compare.ours])
        compare.row.cpu_jmslike.append(cpus[compare.ours])
        compare.row.raw.append(rates[compare.theirs])
        compare.row.cpu_raw.append(cpus[compare.theirs])
    return rates

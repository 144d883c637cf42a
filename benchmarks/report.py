"""The pure half of the benchmark: statistics, the comparison table and the JSON document.

Kept free of brokers, clocks and I/O so that tests/unit/test_benchmark_report.py can check the numbers a
reader will trust (medians, ratios, percentiles) without starting anything.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# Targets from issue 9; the report prints whether each row meets its own.
RATIO_TARGET = 0.9
ASYNC_TARGET = 3.0
RSS_TARGET_MB = 150.0
JAVA_TARGET = 1.0  # stretch: jmslike at least as fast as ActiveMQ's Java client driven through JPype
JAVA_NON_PERSISTENT_TARGET = 0.9  # issue #21: unwaited NON_PERSISTENT sends against the Java client's default
SAME_WORK_TARGET = 0.95  # issue #21: never below today's same-work raw baseline
DUPS_OK_TARGET = 0.9  # issue #21: DUPS_OK against raw ack:auto
FIRE_AND_FORGET_TARGET = 0.8  # issue #21: unwaited NON_PERSISTENT against raw stomp.py without receipts


def median(values: Iterable[float]) -> float:
    """Median of the rounds; NaN when there are none (a skipped side must not look like zero)."""
    data = [v for v in values if not math.isnan(v)]
    return statistics.median(data) if data else math.nan


def ratio(ours: float, theirs: float) -> float:
    """ours / theirs, NaN when either is missing or the baseline is zero."""
    if math.isnan(ours) or math.isnan(theirs) or theirs == 0:
        return math.nan
    return ours / theirs


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (pct in 0..100): always an observed value, which is what a p99 latency
    should be, never an interpolation between two samples."""
    if not values:
        return math.nan
    if not 0 <= pct <= 100:
        raise ValueError(f"percentile must be within 0..100, got {pct}")
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Row:
    """One workload at one message size: per-round values of both sides and what they mean.

    ``unit`` is "msg/s" (higher is better) or "ms"/"MB" (lower is better); ``target`` is the minimum
    jmslike/raw ratio for throughput rows, or the ceiling for the others (None: report only)."""

    workload: str
    size: int
    unit: str
    jmslike: list[float] = field(default_factory=list)
    raw: list[float] = field(default_factory=list)
    target: float | None = RATIO_TARGET
    note: str = ""
    # This process's CPU µs per message in each round (time.process_time()), where the workload notes it.
    cpu_jmslike: list[float] = field(default_factory=list)
    cpu_raw: list[float] = field(default_factory=list)

    @property
    def higher_is_better(self) -> bool:
        return self.unit == "msg/s"

    @property
    def jmslike_median(self) -> float:
        return median(self.jmslike)

    @property
    def raw_median(self) -> float:
        return median(self.raw)

    @property
    def ratio(self) -> float:
        return ratio(self.jmslike_median, self.raw_median)

    def verdict(self) -> str:
        """ "ok"/"MISS" against the target, "" when the row has none or a side is missing."""
        if self.target is None:
            return ""
        if self.higher_is_better:
            value = self.ratio
            if math.isnan(value):
                return ""
            return "ok" if value >= self.target else "MISS"
        value = self.jmslike_median
        if math.isnan(value):
            return ""
        return "ok" if value < self.target else "MISS"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            jmslike_median=_clean(self.jmslike_median),
            raw_median=_clean(self.raw_median),
            ratio=_clean(self.ratio),
            verdict=self.verdict(),
        )
        for name in ("jmslike", "raw", "cpu_jmslike", "cpu_raw"):
            data[name] = [_clean(v) for v in getattr(self, name)]
        data["cpu_jmslike_median"] = _clean(median(self.cpu_jmslike))
        data["cpu_raw_median"] = _clean(median(self.cpu_raw))
        return data


def _clean(value: float) -> float | None:
    """JSON has no NaN: a missing value is null."""
    return None if math.isnan(value) else round(value, 3)


def _fmt(value: float) -> str:
    if math.isnan(value):
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _size(size: int) -> str:
    if size <= 0:
        return "-"
    return f"{size // 1024} KB" if size >= 1024 and size % 1024 == 0 else f"{size} B"


def _target(row: Row) -> str:
    if row.target is None:
        return ""
    return f">= {row.target:g}x" if row.higher_is_better else f"< {row.target:g} {row.unit}"


def _cpu(row: Row) -> str:
    ours, theirs = median(row.cpu_jmslike), median(row.cpu_raw)
    if math.isnan(ours) and math.isnan(theirs):
        return ""
    return f"{_fmt(ours)} / {_fmt(theirs)}"


def format_table(rows: Sequence[Row], baseline: str = "raw stomp.py") -> str:
    """A Markdown table (readable in a terminal as it is, pasteable into docs/performance.md).

    ``baseline`` names the other side (the raw stomp.py client, or the Java client)."""
    headers = (
        "workload",
        "size",
        "unit",
        "jmslike",
        baseline,
        f"jmslike/{baseline.split()[0]}",
        "target",
        "",
        "CPU µs/msg (jmslike / other)",
    )
    cells = [
        (
            r.workload,
            _size(r.size),
            r.unit,
            _fmt(r.jmslike_median),
            _fmt(r.raw_median),
            _fmt(r.ratio),
            _target(r),
            r.verdict(),
            _cpu(r),
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)) + " |"

    out = [line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out.extend(line(c) for c in cells)
    return "\n".join(out)


def document(rows: Sequence[Row], meta: dict[str, Any]) -> dict[str, Any]:
    """The ``--json`` document: run metadata plus every row with its per-round values."""
    return {"meta": meta, "rows": [r.to_json() for r in rows]}

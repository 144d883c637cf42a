"""The pure parts of the benchmark report: the statistics a reader trusts and the table they read.

No broker and no timing: these check that a median is a median, that a missing side shows as missing
(never as a zero that would look like a catastrophic ratio), and that p99 is an observed sample.
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

# benchmarks/ is not shipped (nor on pytest's path under tox): load its report module from the tree.
_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "report.py"
_SPEC = importlib.util.spec_from_file_location("benchmarks_report", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
report = importlib.util.module_from_spec(_SPEC)
sys.modules[_SPEC.name] = report  # dataclasses look their module up by name
_SPEC.loader.exec_module(report)
Row, document, format_table = report.Row, report.document, report.format_table
median, percentile, ratio = report.median, report.percentile, report.ratio


def test_median_of_odd_and_even_rounds() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 3.0, 2.0]) == 2.5


def test_median_of_nothing_is_missing_not_zero() -> None:
    assert math.isnan(median([]))
    assert median([math.nan, 5.0]) == 5.0


def test_ratio() -> None:
    assert ratio(900.0, 1000.0) == pytest.approx(0.9)
    assert math.isnan(ratio(1.0, 0.0))
    assert math.isnan(ratio(math.nan, 1.0))


def test_percentile_is_nearest_rank() -> None:
    samples = [float(v) for v in range(1, 101)]  # 1..100
    assert percentile(samples, 50) == 50.0
    assert percentile(samples, 99) == 99.0
    assert percentile(samples, 100) == 100.0
    assert percentile(samples, 0) == 1.0
    assert percentile([7.0, 1.0, 3.0], 50) == 3.0  # unsorted input, observed value
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile(samples, 101)


def test_row_verdicts() -> None:
    fast = Row("publish", 256, "msg/s", jmslike=[95.0, 90.0, 100.0], raw=[100.0, 100.0, 100.0])
    assert fast.ratio == pytest.approx(0.95)
    assert fast.verdict() == "ok"
    slow = Row("consume", 256, "msg/s", jmslike=[40.0], raw=[100.0])
    assert slow.verdict() == "MISS"
    rss = Row("rss", 1024, "MB", jmslike=[30.0], raw=[20.0], target=150.0)
    assert rss.verdict() == "ok"
    assert Row("latency", 256, "ms", jmslike=[1.0], raw=[1.0], target=None).verdict() == ""
    assert Row("publish", 256, "msg/s", jmslike=[1.0]).verdict() == ""  # raw side missing


def test_table_has_a_line_per_row_and_aligned_columns() -> None:
    rows = [
        Row("publish PERSISTENT, sync", 256, "msg/s", jmslike=[1234.0], raw=[1000.0]),
        Row("latency p99", 4096, "ms", jmslike=[2.5], raw=[2.0], target=None),
        Row("peak RSS", 1024, "MB", jmslike=[31.0], raw=[24.0], target=150.0),
    ]
    table = format_table(rows).splitlines()
    assert len(table) == 2 + len(rows)
    assert len({len(line) for line in table}) == 1  # every line padded to the same width
    assert "| publish PERSISTENT, sync | 256 B" in table[2]
    assert "1,234" in table[2] and "1.23" in table[2] and ">= 0.9x" in table[2] and "ok" in table[2]
    assert "4 KB" in table[3]
    assert "< 150 MB" in table[4]


def test_json_document_has_no_nan() -> None:
    rows = [Row("publish", 256, "msg/s", jmslike=[10.0], raw=[])]
    text = json.dumps(document(rows, {"broker": "activemq"}), allow_nan=False)
    data = json.loads(text)
    assert data["rows"][0]["raw_median"] is None
    assert data["rows"][0]["ratio"] is None
    assert data["meta"]["broker"] == "activemq"


def test_cpu_column_shows_medians_of_both_sides_and_stays_empty_without_them() -> None:
    rows = [
        Row(
            "consume", 256, "msg/s", jmslike=[9.0], raw=[10.0], cpu_jmslike=[40.0, 60.0, 50.0], cpu_raw=[45.5]
        ),
        Row("latency p50", 256, "ms", jmslike=[1.0], raw=[1.0], target=None),
    ]
    table = format_table(rows).splitlines()
    assert table[2].rstrip(" |").endswith("50.0 / 45.5")
    assert table[3].split("|")[-2].strip() == ""  # no CPU noted: an empty cell, not "- / -"
    data = document(rows, {})["rows"][0]
    assert data["cpu_jmslike_median"] == 50.0 and data["cpu_raw"] == [45.5]

"""The pure parts of ``benchmarks.instructions``: reading callgrind's total, and instructions per message.

No valgrind and no peer: these check that start-up cancels out of the difference, that two runs which sent the
same number of messages give an error instead of a division by zero or a negative count, and that the total is
read from the line callgrind writes it on (``summary:`` in callgrind 3.19, ``totals:`` in older releases).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

# benchmarks/ is not shipped (nor on pytest's path under tox): import the package from the tree.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
instructions = importlib.import_module("benchmarks.instructions")
sys.path.pop(0)
Count, parse_total, per_message = instructions.Count, instructions.parse_total, instructions.per_message

_CALLGRIND_OUT = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
events: Ir
fl=(1) ceval.c
fn=(1) _PyEval_EvalFrameDefault
16 2525
summary: 2301852325


totals: 2301852325
"""


def test_start_up_cancels_out() -> None:
    # 1.5 G instructions of start-up and warm-up in both runs, 200 k per message.
    short = Count(1_500_000_000 + 1_000 * 200_000, 1_000)
    long = Count(1_500_000_000 + 4_000 * 200_000, 4_000)
    assert per_message(short, long) == 200_000


def test_runs_with_the_same_count_are_refused() -> None:
    with pytest.raises(ValueError, match="no difference"):
        per_message(Count(10, 100), Count(20, 100))
    with pytest.raises(ValueError, match="no difference"):
        per_message(Count(10, 200), Count(20, 100))


def test_total_is_read_from_the_summary_line() -> None:
    assert parse_total(_CALLGRIND_OUT) == 2_301_852_325


def test_total_from_an_older_callgrind() -> None:
    assert parse_total("events: Ir\nfn=(1) main\n3 7\ntotals: 42\n") == 42


def test_output_without_a_total_is_an_error() -> None:
    with pytest.raises(ValueError, match="no summary or totals"):
        parse_total("events: Ir\nfn=(1) main\n3 7\n")

"""The programs in examples/ run as a user would run them, against each real broker, and succeed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_example_runs(example: Path, broker: Any, url: str) -> None:
    result = subprocess.run(
        [sys.executable, str(example), url, broker.user, broker.password],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, f"{example.name} failed:\n{result.stdout}\n{result.stderr}"

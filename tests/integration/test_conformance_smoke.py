"""The conformance CLI end to end: ``--quick`` against ActiveMQ in kill mode, the four report files, and
report.html rendered by headless Chromium (skipped, saying why, when Chromium is not installed)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.restart, pytest.mark.timeout(900)]

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[subprocess.CompletedProcess[str], Path]]:
    report = tmp_path_factory.mktemp("conformance") / "report"
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "jmslike.conformance",
            "--quick",
            "--brokers",
            "activemq",
            "--modes",
            "kill",
            "--seed",
            "1234",
            "--report",
            str(report),
        ],
        cwd=report.parent,  # outside the source tree, whose jmslike/ folder would shadow the installed one
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    yield completed, report


def test_exit_code_and_files(run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    completed, report = run
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    for name in ("results.json", "report.html", "report.md", "junit.xml"):
        assert (report / name).stat().st_size > 0, name
    assert "seed 1234" in completed.stdout
    assert "[1/" in completed.stdout, "plain progress lines when stdout is not a terminal"


def test_results_json_counts(run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, report = run
    data = json.loads((report / "results.json").read_text())
    counts = data["run"]["counts"]
    results = data["results"]
    assert sum(counts.values()) == len(results) > 10
    assert counts["fail"] == 0, [r for r in results if r["outcome"] == "fail"]
    assert counts["pass"] > 0
    assert data["run"]["seed"] == 1234 and data["run"]["quick"] is True
    assert data["run"]["broker_versions"]["activemq"].startswith("ActiveMQ/")
    assert {r["mode"] for r in results} == {None, "kill"}
    assert {r["broker"] for r in results} == {"activemq"}
    expected = [r for r in results if r["expected"] == "deviation"]
    assert all(r["outcome"] in ("deviation", "pass") for r in expected)
    root = ET.parse(report / "junit.xml").getroot()
    assert len(list(root.iter("testcase"))) == len(results)


def test_no_credentials_in_reports(run: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, report = run
    for name in ("results.json", "report.html", "report.md", "junit.xml"):
        text = (report / name).read_text()
        assert "passcode" not in text and "admin:admin" not in text


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("Chromium is not installed (apt-get install chromium): report.html rendering not checked")


def test_report_renders_in_headless_chromium(
    run: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    chromium = _chromium()
    _, report = run
    page = (report / "report.html").resolve().as_uri()
    base = [
        chromium,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=3000",
    ]
    dom = subprocess.run(
        [*base, "--dump-dom", page + "#categories=durable,faults"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    body = re.search(r"<body[^>]*>", dom)
    assert body is not None
    assert 'data-ready="1"' in body.group(0), "the inline script did not run"
    assert 'data-categories="durable,faults"' in body.group(0), (
        "the filter from the URL fragment was not applied"
    )
    rows = re.findall(r'<tr class="scenario"[^>]*>', dom)
    assert rows, "no matrix rows rendered"
    for row in rows:
        category = re.search(r'data-category="([^"]+)"', row)
        assert category is not None
        assert ("hidden" in row) == (category.group(1) not in ("durable", "faults")), row
    assert 'class="cell outcome-pass"' in dom
    assert 'class="cell outcome-deviation"' in dom  # ActiveMQ's known redelivered-flag deviation
    shot = tmp_path / "report.png"
    subprocess.run(
        [*base, f"--screenshot={shot}", "--window-size=1280,900", page],
        capture_output=True,
        timeout=120,
        check=True,
    )
    assert shot.stat().st_size > 10_000, "the screenshot is empty"

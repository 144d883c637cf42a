"""What every report writer shares: redaction of secrets, labels, and writing all four files.

Credentials never reach a report: every text field is passed through :func:`redact` with the set of
secrets the runner knew (broker passwords), and URLs in reports never carry user info.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from pathlib import Path

from jmslike.conformance.suite.model import CATEGORIES, RunReport, ScenarioResult

REDACTED = "***"
_USERINFO = re.compile(r"(\w[\w+.-]*://)[^/@\s:]+(?::[^/@\s]*)?@")


def redact_text(text: str, secrets: Iterable[str]) -> str:
    text = _USERINFO.sub(r"\1" + REDACTED + "@", text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def redact(report: RunReport, secrets: Iterable[str]) -> RunReport:
    """A copy of ``report`` with every secret (and URL user info) replaced by ``***``."""
    secrets = [s for s in secrets if s]

    def clean(result: ScenarioResult) -> ScenarioResult:
        return dataclasses.replace(
            result,
            detail=redact_text(result.detail, secrets),
            note=redact_text(result.note, secrets),
        )

    brokers = [
        dataclasses.replace(b, url=redact_text(b.url, secrets), reason=redact_text(b.reason, secrets))
        for b in report.brokers
    ]
    return dataclasses.replace(
        report,
        results=[clean(r) for r in report.results],
        brokers=brokers,
        notes=[redact_text(n, secrets) for n in report.notes],
    )


def column_label(column: tuple[str, str | None]) -> str:
    broker, mode = column
    return f"{broker} / {mode}" if mode else f"{broker} / no restart"


def category_title(category: str) -> str:
    return CATEGORIES.get(category, category)


def cell_results(report: RunReport) -> dict[tuple[str, str, str | None], ScenarioResult]:
    return {(r.id, r.broker, r.mode): r for r in report.results}


def write_all(report: RunReport, directory: Path, secrets: Iterable[str] = ()) -> dict[str, Path]:
    """Write results.json, report.html, report.md and junit.xml into ``directory``."""
    from jmslike.conformance.suite import report_html, report_json, report_junit, report_md

    directory.mkdir(parents=True, exist_ok=True)
    clean = redact(report, secrets)
    files = {
        "results.json": report_json.render(clean),
        "report.html": report_html.render(clean),
        "report.md": report_md.render(clean),
        "junit.xml": report_junit.render(clean),
    }
    paths: dict[str, Path] = {}
    for name, text in files.items():
        path = directory / name
        path.write_text(text, encoding="utf-8")
        paths[name] = path
    return paths

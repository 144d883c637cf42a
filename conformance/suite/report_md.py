"""report.md: the summary, the matrix and the explanations, as GitHub-flavoured Markdown."""

from __future__ import annotations

from jmslike.conformance.suite.model import OUTCOMES, RunReport
from jmslike.conformance.suite.report_common import category_title, cell_results, column_label

SYMBOL = {
    "pass": "pass",
    "deviation": "DEVIATION",
    "unsupported": "unsupported",
    "fail": "**FAIL**",
    "skipped": "skipped",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(report: RunReport) -> str:
    counts = report.counts()
    lines = [
        "# jmslike conformance report",
        "",
        f"Started {report.started_at}, wall time {report.wall_time_s:.1f}s, seed {report.seed}"
        + (", quick subset" if report.quick else "")
        + (f", {report.api_note()}" if report.api_note() else "")
        + ".",
        "",
        "| outcome | count |",
        "|---|---|",
        *(f"| {o} | {counts[o]} |" for o in OUTCOMES),
        "",
        "## Brokers",
        "",
        "| broker | launcher | status | server | note |",
        "|---|---|---|---|---|",
        *(
            f"| {b.kind} | {_cell(b.launched)} | {b.status} | {_cell(b.server)} | {_cell(b.reason)} |"
            for b in report.brokers
        ),
        "",
        "## Matrix",
        "",
        "An empty cell: the scenario does not run in that restart mode. Every outcome other than pass, and every"
        " pass with a note, is explained below the grid.",
        "",
    ]
    columns = [c for c in report.columns() if any(r.column == c for r in report.results)]
    cells = cell_results(report)
    lines.append("| scenario | category | strength | " + " | ".join(column_label(c) for c in columns) + " |")
    lines.append("|---|---|---|" + "---|" * len(columns))
    for row in report.scenario_rows():
        values = []
        for broker, mode in columns:
            result = cells.get((row.id, broker, mode))
            values.append(SYMBOL[result.outcome] if result else "")
        lines.append(f"| `{row.id}` | {row.category} | {row.strength} | " + " | ".join(values) + " |")
    explained = [r for r in report.results if r.outcome != "pass" or r.note]
    if explained:
        lines += ["", "## Deviations, unsupported, failures and notes", ""]
        for r in explained:
            where = column_label(r.column)
            lines.append(f"- `{r.id}` on {where}: **{r.outcome}** -- {_cell(r.detail or '')}")
            if r.note:
                lines.append(f"  - note: {_cell(r.note)}")
    lines += ["", "## Rules", ""]
    for row in report.scenario_rows():
        lines.append(
            f"- `{row.id}` ({category_title(row.category)}, {row.section}, {row.strength}): {_cell(row.rule)}"
        )
    if report.notes:
        lines += ["", "## Run notes", "", *(f"- {_cell(n)}" for n in report.notes)]
    return "\n".join(lines) + "\n"

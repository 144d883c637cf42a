"""report.html: a self-contained page (inline CSS and JS, no network) with the matrix of scenarios x
(broker, mode), coloured cells, a summary, category filters, and every deviation explained.

The filter script marks its state on ``<body>`` (``data-ready``, ``data-categories``) and honours a URL
fragment ``#categories=a,b`` so a headless browser can check the filters without clicking.
"""

from __future__ import annotations

import html
from collections import Counter

from jmslike.conformance.suite.model import CATEGORIES, OUTCOMES, RunReport, ScenarioResult
from jmslike.conformance.suite.report_common import category_title, cell_results

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em;color:#222}
h1{margin:0 0 .2em} .meta{color:#555}
.badge{display:inline-block;padding:.2em .7em;border-radius:1em;margin-right:.4em;font-weight:600}
.outcome-pass{background:#d4f4d2;color:#145214}
.outcome-deviation{background:#ffe7b3;color:#6b4500}
.outcome-unsupported{background:#dfe4ff;color:#23308a}
.outcome-fail{background:#ffc9c9;color:#8a0d0d}
.outcome-skipped{background:#eee;color:#666}
table{border-collapse:collapse;margin:.8em 0}
th,td{border:1px solid #ccc;padding:.25em .5em;vertical-align:top}
thead th{background:#f4f4f4;position:sticky;top:0}
tr.category-row th{background:#333;color:#fff;text-align:left}
td.cell{text-align:center;white-space:nowrap;min-width:5.5em}
td.cell a{color:inherit}
td.na{color:#bbb;text-align:center}
.rule{color:#555;font-size:12px;max-width:48em}
#filters{margin:1em 0;padding:.5em 1em;border:1px solid #ddd;border-radius:6px}
#filters label{margin-right:1em;white-space:nowrap}
ol#explanations li{margin-bottom:.4em}
[hidden]{display:none!important}
"""

_JS = """
(function () {
  var boxes = Array.prototype.slice.call(document.querySelectorAll('input.cat-filter'));
  var problems = document.getElementById('only-problems');
  function apply() {
    var on = {};
    boxes.forEach(function (b) { if (b.checked) { on[b.value] = true; } });
    var onlyProblems = problems.checked;
    document.querySelectorAll('#matrix [data-category], #explanations [data-category]').forEach(function (el) {
      var show = !!on[el.getAttribute('data-category')];
      if (show && onlyProblems && el.getAttribute('data-worst') === 'pass') { show = false; }
      el.hidden = !show;
    });
    document.body.setAttribute('data-categories', Object.keys(on).sort().join(','));
    document.body.setAttribute('data-only-problems', onlyProblems ? '1' : '0');
  }
  boxes.forEach(function (b) { b.addEventListener('change', apply); });
  problems.addEventListener('change', apply);
  document.getElementById('filter-all').addEventListener('click', function () {
    boxes.forEach(function (b) { b.checked = true; }); apply();
  });
  document.getElementById('filter-none').addEventListener('click', function () {
    boxes.forEach(function (b) { b.checked = false; }); apply();
  });
  var match = /categories=([^&]*)/.exec(window.location.hash);
  if (match) {
    var wanted = decodeURIComponent(match[1]).split(',');
    boxes.forEach(function (b) { b.checked = wanted.indexOf(b.value) >= 0; });
  }
  if (/problems=1/.test(window.location.hash)) { problems.checked = true; }
  apply();
  document.body.setAttribute('data-ready', '1');
})();
"""

_SEVERITY = {"fail": 4, "deviation": 3, "unsupported": 2, "skipped": 1, "pass": 0}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _worst(results: list[ScenarioResult]) -> str:
    return max((r.outcome for r in results), key=lambda o: _SEVERITY[o], default="pass")


def render(report: RunReport) -> str:
    counts = report.counts()
    cells = cell_results(report)
    brokers = [b.kind for b in report.brokers]
    modes: list[str | None] = [None, *report.modes]
    rows = report.scenario_rows()
    per_category = Counter(r.category for r in rows)
    explanations: list[tuple[int, ScenarioResult]] = []
    number = 0

    parts: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>jmslike conformance report</title>",
        f"<style>{_CSS}</style></head>",
        '<body data-ready="0">',
        "<h1>jmslike conformance report</h1>",
        f'<p class="meta">Started {_e(report.started_at)} &middot; wall time {report.wall_time_s:.1f}s '
        f"&middot; seed {report.seed}{' &middot; quick subset' if report.quick else ''}"
        f"{' &middot; ' + _e(report.api_note()) if report.api_note() else ''} &middot; "
        f"{len(rows)} scenarios, {len(report.results)} results</p>",
        '<section id="summary"><h2>Summary</h2><p>',
        *(
            f'<span class="badge outcome-{o}" data-outcome="{o}">{o}: <b class="count">{counts[o]}</b></span>'
            for o in OUTCOMES
        ),
        "</p></section>",
        '<section id="brokers"><h2>Brokers</h2><table><thead><tr><th>broker</th><th>launcher</th>'
        "<th>status</th><th>server</th><th>note</th></tr></thead><tbody>",
        *(
            f'<tr data-broker="{_e(b.kind)}"><td>{_e(b.kind)}</td><td>{_e(b.launched)}</td><td>{_e(b.status)}</td>'
            f"<td>{_e(b.server)}</td><td>{_e(b.reason)}</td></tr>"
            for b in report.brokers
        ),
        "</tbody></table></section>",
        '<section id="filters"><b>Categories:</b> ',
        *(
            f'<label><input type="checkbox" class="cat-filter" value="{_e(c)}" checked> '
            f"{_e(title)} ({per_category[c]})</label>"
            for c, title in CATEGORIES.items()
            if per_category[c]
        ),
        '<button type="button" id="filter-all">all</button> <button type="button" id="filter-none">none</button> '
        '<label><input type="checkbox" id="only-problems"> only rows that are not all pass</label>',
        "</section>",
        '<p class="meta">In the grid: <b>pass*</b> passed with a note (numbered below, e.g. the expectations '
        "table listed a deviation); &middot; the scenario does not run in that restart mode.</p>",
        '<table id="matrix"><thead><tr><th rowspan="2">scenario</th><th rowspan="2">strength</th>',
        *(f'<th colspan="{len(modes)}">{_e(b)}</th>' for b in brokers),
        "</tr><tr>",
        *(f"<th>{_e(m or 'no restart')}</th>" for _ in brokers for m in modes),
        "</tr></thead><tbody>",
    ]
    current = None
    for row in rows:
        if row.category != current:
            current = row.category
            parts.append(
                f'<tr class="category-row" data-category="{_e(current)}"><th colspan="{2 + len(brokers) * len(modes)}">'
                f"{_e(category_title(current))}</th></tr>"
            )
        row_results = [r for r in report.results if r.id == row.id]
        parts.append(
            f'<tr class="scenario" data-category="{_e(row.category)}" data-id="{_e(row.id)}" '
            f'data-worst="{_worst(row_results)}"><td><code>{_e(row.id)}</code>'
            f'<div class="rule">{_e(row.rule)} <i>({_e(row.section)})</i></div></td><td>{_e(row.strength)}</td>'
        )
        for broker in brokers:
            for mode in modes:
                result = cells.get((row.id, broker, mode))
                if result is None:
                    parts.append('<td class="na">&middot;</td>')
                    continue
                title = result.detail or result.outcome
                if result.note:
                    title += f" | note: {result.note}"
                label = _e(result.outcome)
                if result.outcome != "pass" or result.note:
                    number += 1
                    explanations.append((number, result))
                    label = f'<a href="#x{number}">{label}{"*" if result.note else ""}</a>'
                parts.append(
                    f'<td class="cell outcome-{result.outcome}" data-broker="{_e(broker)}" '
                    f'data-mode="{_e(mode or "none")}" title="{_e(title)}">{label}</td>'
                )
        parts.append("</tr>")
    parts.append("</tbody></table>")
    parts.append('<section><h2>Deviations, unsupported, failures and notes</h2><ol id="explanations">')
    for n, result in explanations:
        where = f"{result.broker} / {result.mode or 'no restart'}"
        parts.append(
            f'<li id="x{n}" value="{n}" data-category="{_e(result.category)}" data-worst="{_e(result.outcome)}">'
            f'<span class="badge outcome-{result.outcome}">{_e(result.outcome)}</span>'
            f"<code>{_e(result.id)}</code> on {_e(where)}: {_e(result.detail)}"
            + (f"<br><i>note: {_e(result.note)}</i>" if result.note else "")
            + "</li>"
        )
    parts.append("</ol></section>")
    if report.notes:
        parts.append(
            "<section><h2>Run notes</h2><ul>"
            + "".join(f"<li>{_e(n)}</li>" for n in report.notes)
            + "</ul></section>"
        )
    parts.append(
        '<p class="meta">A SIGKILL of the broker (mode "kill") does not test fsync: the page cache survives it. '
        "Outcomes: pass; deviation = the broker cannot keep the JMS promise and jmslike cannot fix it; "
        "unsupported = jmslike refuses with UnsupportedFeatureException; fail = a bug to fix.</p>"
    )
    parts.append(f"<script>{_JS}</script></body></html>")
    return "\n".join(parts) + "\n"

"""junit.xml: one testcase per result, for CI dashboards.

Mapping (documented in docs/conformance.md): ``fail`` is a ``<failure>``; ``skipped`` is ``<skipped>``;
``deviation`` and ``unsupported`` are PASSED testcases (the broker's limits are known and expected) that
carry ``<properties>`` (outcome, expected, strength, rule) and the explanation in ``<system-out>``, so a
dashboard stays green while the explanation is one click away.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict

from jmslike.conformance.suite.model import RunReport, ScenarioResult


def _case(parent: ET.Element, result: ScenarioResult) -> None:
    name = f"{result.id}[{result.broker}{'-' + result.mode if result.mode else ''}]"
    case = ET.SubElement(
        parent,
        "testcase",
        classname=f"conformance.{result.category}",
        name=name,
        time=f"{result.duration_s:.3f}",
    )
    props = ET.SubElement(case, "properties")
    for key, value in (
        ("outcome", result.outcome),
        ("expected", result.expected),
        ("strength", result.strength),
        ("rule", f"{result.rule} ({result.section})"),
        ("broker", result.broker),
        ("mode", result.mode or "none"),
    ):
        ET.SubElement(props, "property", name=key, value=value)
    if result.outcome == "fail":
        failure = ET.SubElement(case, "failure", message=result.detail[:500], type="conformance")
        failure.text = result.detail
    elif result.outcome == "skipped":
        ET.SubElement(case, "skipped", message=result.detail[:500])
    elif result.outcome in ("deviation", "unsupported"):
        out = ET.SubElement(case, "system-out")
        out.text = f"{result.outcome.upper()}: {result.detail}"
    if result.note:
        err = ET.SubElement(case, "system-err")
        err.text = f"note: {result.note}"


def render(report: RunReport) -> str:
    suites = ET.Element("testsuites", name="jmslike-conformance", time=f"{report.wall_time_s:.3f}")
    groups: dict[str, list[ScenarioResult]] = defaultdict(list)
    for result in report.results:
        groups[result.broker].append(result)
    for broker, results in groups.items():
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=f"conformance-{broker}",
            tests=str(len(results)),
            failures=str(sum(r.outcome == "fail" for r in results)),
            errors="0",
            skipped=str(sum(r.outcome == "skipped" for r in results)),
            time=f"{sum(r.duration_s for r in results):.3f}",
        )
        props = ET.SubElement(suite, "properties")
        ET.SubElement(props, "property", name="seed", value=str(report.seed))
        for info in report.brokers:
            if info.kind == broker and info.server:
                ET.SubElement(props, "property", name="server", value=info.server)
        for result in results:
            _case(suite, result)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"

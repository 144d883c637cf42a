"""The conformance report writers on a hand-made result set: results.json schema, junit.xml that
xml.etree parses, the Markdown table, and an HTML matrix without credentials."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from jmslike.conformance.suite.model import OUTCOMES, SCHEMA, BrokerInfo, RunReport, ScenarioResult
from jmslike.conformance.suite.report_common import redact_text, write_all

SECRET = "s3cr3t-pa55"


def result(
    id: str, category: str, broker: str, mode: str | None, outcome: str, detail: str = ""
) -> ScenarioResult:
    return ScenarioResult(
        id=id,
        category=category,
        rule=f"rule of {id}",
        section="JMS 1.1 §0",
        strength="MUST",
        broker=broker,
        mode=mode,
        outcome=outcome,  # type: ignore[arg-type]
        detail=detail,
        expected="deviation" if outcome == "deviation" else "pass",
        duration_s=0.25,
    )


@pytest.fixture
def report() -> RunReport:
    results = [
        result("durable.a", "durable", "activemq", None, "pass"),
        result("durable.b", "durable", "activemq", "graceful", "pass"),
        result("durable.b", "durable", "activemq", "kill", "fail", f"broke with password {SECRET}"),
        result("ack.c", "acknowledge", "activemq", "kill", "deviation", "broker drops the flag"),
        result("sel.d", "selectors", "activemq", None, "unsupported", "cannot filter queues"),
        result("durable.a", "durable", "rabbitmq", None, "skipped", "no adapter"),
    ]
    return RunReport(
        results=results,
        brokers=[
            BrokerInfo(
                "activemq", "process", "ran", "ActiveMQ/5.17.2", f"activemq://admin:{SECRET}@127.0.0.1:1"
            ),
            BrokerInfo(
                "rabbitmq",
                "docker",
                "skipped",
                reason="no adapter",
                launcher_detail="image jmslike/r:1, host network",
            ),
        ],
        modes=("graceful", "kill"),
        seed=42,
        started_at="2024-01-01T00:00:00+00:00",
        wall_time_s=12.5,
        notes=[f"note with {SECRET}"],
    )


@pytest.fixture
def written(report: RunReport, tmp_path: Path) -> Path:
    write_all(report, tmp_path, secrets={SECRET})
    return tmp_path


def test_all_four_files_are_written(written: Path) -> None:
    assert sorted(p.name for p in written.iterdir()) == [
        "junit.xml",
        "report.html",
        "report.md",
        "results.json",
    ]


def test_results_json_schema(written: Path) -> None:
    data = json.loads((written / "results.json").read_text())
    assert data["schema"] == SCHEMA
    run = data["run"]
    assert run["seed"] == 42 and run["modes"] == ["graceful", "kill"]
    assert run["counts"] == {"pass": 2, "deviation": 1, "unsupported": 1, "fail": 1, "skipped": 1}
    assert set(run["counts"]) == set(OUTCOMES)
    assert run["broker_versions"] == {"activemq": "ActiveMQ/5.17.2"}
    assert len(data["results"]) == 6
    keys = {
        "id",
        "category",
        "rule",
        "section",
        "strength",
        "broker",
        "mode",
        "outcome",
        "detail",
        "note",
        "expected",
        "duration_s",
        "faults",
    }
    assert all(set(r) == keys for r in data["results"])
    assert data["results"][0]["mode"] is None


def test_results_json_round_trips(report: RunReport, written: Path) -> None:
    again = RunReport.from_json(json.loads((written / "results.json").read_text()))
    assert again.counts() == report.counts()
    assert [r.id for r in again.results] == [r.id for r in report.results]


def test_junit_parses_and_maps_outcomes(written: Path) -> None:
    root = ET.parse(written / "junit.xml").getroot()
    assert root.tag == "testsuites"
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"conformance-activemq", "conformance-rabbitmq"}
    amq = suites["conformance-activemq"]
    assert amq.get("tests") == "5" and amq.get("failures") == "1"
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["durable.b[activemq-kill]"].find("failure") is not None
    deviation = cases["ack.c[activemq-kill]"]
    assert deviation.find("failure") is None and deviation.find("skipped") is None
    assert "DEVIATION" in (deviation.findtext("system-out") or "")
    props = {p.get("name"): p.get("value") for p in deviation.iter("property")}
    assert props["outcome"] == "deviation" and props["expected"] == "deviation"
    assert cases["durable.a[rabbitmq]"].find("skipped") is not None
    assert cases["durable.a[activemq]"].find("failure") is None


def test_markdown_has_the_matrix(written: Path) -> None:
    text = (written / "report.md").read_text()
    assert (
        "| scenario | category | strength | activemq / no restart | activemq / graceful | activemq / kill |"
        in text
    )
    assert "| `durable.b` | durable | MUST |  | pass | **FAIL** |" in text
    assert "broker drops the flag" in text
    assert "| rabbitmq | docker (image jmslike/r:1, host network) | skipped |" in text
    assert "<td>docker (image jmslike/r:1, host network)</td>" in (written / "report.html").read_text()


def test_html_has_matrix_filters_and_no_credentials(written: Path) -> None:
    text = (written / "report.html").read_text()
    assert '<table id="matrix">' in text
    assert 'data-id="durable.b"' in text
    for outcome in OUTCOMES:
        assert f"outcome-{outcome}" in text
    assert 'class="cat-filter" value="durable"' in text
    assert "<script>" in text and "http://" not in text and "https://" not in text  # self-contained
    assert SECRET not in text
    for name in ("results.json", "report.md", "junit.xml"):
        assert SECRET not in (written / name).read_text()


def test_redaction_of_url_user_info() -> None:
    assert redact_text("activemq://admin:pw@host:1", []) == "activemq://***@host:1"
    assert redact_text("password hunter2 here", ["hunter2"]) == "password *** here"


def test_outcome_rules_of_the_expectations_table() -> None:
    from jmslike import JMSException, UnsupportedFeatureException
    from jmslike.conformance.suite.classify import ScenarioTimeout, classify
    from jmslike.conformance.suite.expectations import Expectation

    passing, deviating = Expectation(), Expectation("deviation", "broker X drops it")
    refusing = Expectation("unsupported", "cannot be done")
    assert classify(None, passing).outcome == "pass"
    stale = classify(None, deviating)
    assert stale.outcome == "pass" and "broker X drops it" in stale.note and "stale" not in stale.note
    assert classify(AssertionError("lost"), deviating).outcome == "deviation"
    unexpected = classify(AssertionError("lost"), passing)
    assert unexpected.outcome == "fail" and "unexpected deviation" in unexpected.detail
    # A deviation naming its assertion covers that failure only: a missing message stays a fail.
    unflagged = Expectation("deviation", "broker Y drops the flag", assertion="JMSRedelivered is false")
    assert (
        classify(AssertionError("after the restart: JMSRedelivered is false"), unflagged).outcome
        == "deviation"
    )
    missing = classify(AssertionError("the message must come back once"), unflagged)
    assert missing.outcome == "fail" and "covers only failures saying" in missing.detail
    assert classify(UnsupportedFeatureException("X", "selectors"), refusing).outcome == "unsupported"
    assert classify(UnsupportedFeatureException("X", "selectors"), passing).outcome == "fail"
    assert classify(AssertionError("ran"), refusing).outcome == "fail"
    assert classify(JMSException("boom"), deviating).outcome == "fail"
    assert classify(ScenarioTimeout("hung"), passing).outcome == "fail"


def test_a_gap_of_jmslike_aio_is_unsupported_whatever_the_table_says_of_the_broker() -> None:
    from jmslike import NotYetInAioException
    from jmslike.conformance.suite.classify import classify
    from jmslike.conformance.suite.expectations import Expectation

    for expectation in (Expectation(), Expectation("deviation", "broker X drops it")):
        verdict = classify(NotYetInAioException("reconnecting"), expectation)
        assert verdict.outcome == "unsupported" and "not in jmslike.aio yet" in verdict.detail
    from jmslike.exceptions import runtime_exception

    unchecked = runtime_exception(NotYetInAioException("JMSProducer.setAsync"))
    unchecked.__cause__ = NotYetInAioException("JMSProducer.setAsync")
    assert classify(unchecked, Expectation()).outcome == "unsupported"
    # A scenario check that failed while aio lacked something is still the scenario's failure.
    assert classify(AssertionError("lost"), Expectation()).outcome == "fail"


def test_one_run_note_for_every_pass_the_table_expected_otherwise() -> None:
    from dataclasses import replace

    from jmslike.conformance.suite.classify import classify
    from jmslike.conformance.suite.expectations import Expectation
    from jmslike.conformance.suite.runner import stale_note

    note = classify(None, Expectation("deviation", "flags only one")).note
    results = [
        replace(result("ack.a", "acknowledge", "artemis", None, "pass"), note=note),
        replace(result("ack.a", "acknowledge", "artemis", "kill", "pass"), note=note),
        replace(result("ack.b", "acknowledge", "rabbitmq", None, "pass"), note=note),
        result("ack.c", "acknowledge", "rabbitmq", None, "pass"),
    ]
    text = stale_note(results)
    assert text is not None and text.startswith("2 scenario(s) passed")
    assert "ack.a (artemis), ack.b (rabbitmq)" in text and "ack.c" not in text and "may be stale" in text
    assert stale_note(results[3:]) is None


def test_registry_selects_by_pattern_category_and_quick() -> None:
    from jmslike.conformance.suite.expectations import stale_entries
    from jmslike.conformance.suite.model import CATEGORIES
    from jmslike.conformance.suite.registry import load_all, select

    scenarios = load_all()
    ids = {s.info.id for s in scenarios}
    assert len(ids) == len(scenarios) >= 40
    assert {s.info.category for s in scenarios} <= set(CATEGORIES)
    from jmslike.conformance.suite.soak import SOAK_ID

    assert stale_entries(ids | {SOAK_ID}) == []  # the soak runs outside the main job, with its own entry
    durable = select(scenarios, categories=["durable"])
    assert durable and all(s.info.category == "durable" for s in durable)
    assert [s.info.id for s in select(scenarios, only=["durable.survives-*"])] == ["durable.survives-restart"]
    quick = select(scenarios, quick=True)
    assert 10 < len(quick) < len(scenarios)
    with pytest.raises(ValueError, match="unknown categories"):
        select(scenarios, categories=["nope"])


@pytest.mark.parametrize(
    ("api", "note"),
    [("threaded", None), ("aio", "through jmslike.aio"), ("aio-uvloop", "through jmslike.aio on uvloop")],
)
def test_both_reports_name_the_api_and_event_loop_the_scenarios_drove(
    report: RunReport, tmp_path: Path, api: str, note: str | None
) -> None:
    report.api = api
    write_all(report, tmp_path, secrets={SECRET})
    for name in ("report.md", "report.html"):
        text = (tmp_path / name).read_text()
        if note is None:
            assert "jmslike.aio" not in text, name
        else:
            assert note in text, name
            assert ("uvloop" in text) == (api == "aio-uvloop"), name
    assert json.loads((tmp_path / "results.json").read_text())["run"]["api"] == api

"""The JMS conformance suite: scenarios written once against the jmslike API, run on every broker.

Modules: :mod:`.model` (categories, outcomes, result records), :mod:`.registry` (the ``@scenario`` and
``@restart_scenario`` decorators), :mod:`.context` (what a scenario gets), :mod:`.expectations` (the one
table of per-broker deviations), :mod:`.classify` (outcome rules), :mod:`.runner` (brokers, timeouts, the
shared restart), ``report_*`` (results.json, report.html, report.md, junit.xml), :mod:`.cli` and
:mod:`.scenarios` (one module per category). See docs/conformance.md.
"""

from __future__ import annotations

from jmslike.conformance.suite.context import Context, ScenarioSkipped
from jmslike.conformance.suite.registry import restart_scenario, scenario

__all__ = ["Context", "ScenarioSkipped", "restart_scenario", "scenario"]

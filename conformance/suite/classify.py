"""Turning what a scenario did into an outcome, given the expectations table.

Rules (the suite's contract, also in docs/conformance.md):

* no exception: ``pass``; if the table expected a deviation or unsupported, still ``pass`` with a note
  that starts with :data:`TABLE_EXPECTED` (the run report says once that the table may be stale);
* ``NotYetInAioException``, or the JMS 2.0 unchecked form caused by one (``--api aio``: the scenario needs what
  ``jmslike.aio`` has not yet):
  ``unsupported``, saying so, whatever the table says of the broker;
* ``UnsupportedFeatureException`` (or its JMS 2.0 unchecked form): ``unsupported`` when the table says
  so, else ``fail``;
* ``AssertionError`` (the scenario's own checks): ``deviation`` when the table says so, else ``fail``; a
  deviation that names behaviour classes (``Expectation.observed``) covers an invariant-checker failure
  only when every violation is of those classes (a loss never hides behind a duplicate deviation);
* anything else (an unexpected JMSException, a timeout, a crash): ``fail``.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from jmslike import NotYetInAioException, UnsupportedFeatureException, UnsupportedFeatureRuntimeException
from jmslike.conformance.suite.context import ScenarioSkipped
from jmslike.conformance.suite.expectations import Expectation
from jmslike.conformance.suite.model import Outcome

MAX_DETAIL = 1500
#: How the note of a pass that the table expected otherwise begins (runner.stale_note counts them).
TABLE_EXPECTED = "passed, though the table expects"


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    detail: str = ""
    note: str = ""


class ScenarioTimeout(Exception):
    """The scenario did not finish within its timeout."""


def describe(error: BaseException) -> str:
    """One readable paragraph: the exception, its cause chain, and where an assertion failed."""
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    cause = error.__cause__ or error.__context__
    depth = 0
    while cause is not None and depth < 3:
        text += f" (caused by {type(cause).__name__}: {cause})"
        cause = cause.__cause__ or cause.__context__
        depth += 1
    if not isinstance(error, ScenarioTimeout | ScenarioSkipped):
        frames = traceback.extract_tb(error.__traceback__)
        ours = [f for f in frames if "/conformance/suite/scenarios/" in f.filename.replace("\\", "/")]
        if ours:
            last = ours[-1]
            text += f" [at {last.filename.rsplit('/', 1)[-1]}:{last.lineno}]"
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."


def classify(error: BaseException | None, expectation: Expectation) -> Verdict:
    expected = expectation.outcome
    if error is None:
        if expected == "pass":
            return Verdict("pass")
        return Verdict(
            "pass",
            note=f"{TABLE_EXPECTED} {expected}: {expectation.reason}",
        )
    if isinstance(error, ScenarioSkipped):
        return Verdict("skipped", detail=str(error))
    observed = describe(error)
    if isinstance(
        error, NotYetInAioException
    ) or (  # a gap of the API driven (--api aio), whatever the broker
        isinstance(error, UnsupportedFeatureRuntimeException)
        and isinstance(error.__cause__, NotYetInAioException)
    ):
        return Verdict("unsupported", detail=f"not in jmslike.aio yet -- {observed}")
    if isinstance(error, UnsupportedFeatureException | UnsupportedFeatureRuntimeException):
        if expected == "unsupported":
            return Verdict("unsupported", detail=f"{expectation.reason} -- {observed}")
        return Verdict(
            "fail", detail=f"unexpected UnsupportedFeatureException (table: {expected}): {observed}"
        )
    if isinstance(error, AssertionError):
        if expected == "deviation" and expectation.observed:
            seen = getattr(error, "behaviours", None)
            if seen is None or not seen <= expectation.observed:
                outside = (
                    sorted(seen - expectation.observed) if seen is not None else ["(not an invariant check)"]
                )
                return Verdict(
                    "fail",
                    detail=f"the deviation covers only {sorted(expectation.observed)}; also seen: {outside}: {observed}",
                )
        if expected == "deviation" and expectation.assertion and expectation.assertion not in str(error):
            return Verdict(
                "fail",
                detail=f"the deviation covers only failures saying {expectation.assertion!r}: {observed}",
            )
        if expected == "deviation":
            return Verdict("deviation", detail=f"{expectation.reason} -- observed: {observed}")
        if expected == "unsupported":
            return Verdict(
                "fail",
                detail=f"table expects unsupported, but the scenario ran and its check failed: {observed}",
            )
        return Verdict("fail", detail=f"unexpected deviation (not in the expectations table): {observed}")
    if isinstance(error, ScenarioTimeout):
        return Verdict("fail", detail=observed)
    return Verdict("fail", detail=f"error: {observed}")

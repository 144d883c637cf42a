"""The bound on asynchronous error reports waiting for a slow ExceptionListener (jmslike.error_reports), which
both APIs' connections apply."""

from __future__ import annotations

import logging

import pytest

from jmslike import ConnectionLostException, JMSException
from jmslike.error_reports import MAX_QUEUED_EVENTS, ReportBacklog


def test_past_the_bound_reports_are_counted_and_logged_not_queued(caplog: pytest.LogCaptureFixture) -> None:
    backlog = ReportBacklog()
    assert all(backlog.admit(JMSException(f"e{i}")) for i in range(MAX_QUEUED_EVENTS))
    with caplog.at_level(logging.WARNING, logger="jmslike.connection"):
        for extra in ("one too many", "two too many"):
            error = JMSException(extra)
            assert not backlog.admit(error)
            backlog.log_dropped(backlog.dropped, error)
    assert (backlog.queued, backlog.dropped) == (MAX_QUEUED_EVENTS, 2)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "one too many" in warnings[0]  # the first, then every thousandth

    backlog.done()
    assert backlog.admit(JMSException("room again"))


def test_the_loss_of_the_connection_is_always_admitted() -> None:
    backlog = ReportBacklog()
    for i in range(MAX_QUEUED_EVENTS):
        backlog.admit(JMSException(f"e{i}"))
    assert backlog.admit(ConnectionLostException("lost"))
    assert backlog.queued == MAX_QUEUED_EVENTS + 1

"""The flushing barrier of a RabbitMQ SIGKILL (jmslike.conformance.suite.restarts) is deleted after the restart,
asked again while the management API is not answering yet, and a barrier still left is said, never raised."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from jmslike.conformance.suite import restarts
from jmslike.exceptions import JMSException


class _Management:
    """Answers DELETE with ``failures`` errors first (what the API says while its queues recover), then succeeds."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.deleted: list[str] = []

    def delete_queue(self, vhost: str, name: str) -> bool:
        if self.failures:
            self.failures -= 1
            raise JMSException("RabbitMQ management API DELETE /api/queues/%2F/x failed: HTTP 503")
        self.deleted.append(name)
        return True


def test_the_barrier_is_deleted_once_the_api_answers() -> None:
    management = _Management(failures=2)
    restarts._delete_barrier(management, "rabbitmq", "jmslike-barrier-1")  # type: ignore[arg-type]
    assert management.deleted == ["jmslike-barrier-1"]


def test_a_barrier_still_left_is_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(restarts, "BARRIER_DELETE_S", 0.0)
    management: Any = _Management(failures=1)
    with caplog.at_level(logging.WARNING, logger=restarts.__name__):
        restarts._delete_barrier(management, "rabbitmq", "jmslike-barrier-2")
    assert management.deleted == []
    assert ["jmslike-barrier-2 is left over" in r.getMessage() for r in caplog.records] == [True]

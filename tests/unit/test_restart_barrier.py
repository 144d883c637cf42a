"""The flushing barrier of a RabbitMQ SIGKILL (jmslike.conformance.suite.restarts) is deleted after the restart:
asked again while the management API is unreachable, not when it refuses; a barrier still left is said, never
raised."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from jmslike.adapters.rabbitmq_management import ManagementUnavailable
from jmslike.conformance.suite import restarts
from jmslike.exceptions import JMSException, JMSSecurityException


class _Management:
    """Answers DELETE with the ``failures`` given, one per call, then succeeds."""

    def __init__(self, *failures: JMSException) -> None:
        self.failures = list(failures)
        self.calls = 0
        self.deleted: list[str] = []

    def delete_queue(self, vhost: str, name: str) -> bool:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        self.deleted.append(name)
        return True


def _unreachable() -> JMSException:
    return ManagementUnavailable("RabbitMQ management API not reachable at http://127.0.0.1:1")


def test_the_barrier_is_deleted_once_the_api_answers() -> None:
    management: Any = _Management(_unreachable(), _unreachable())
    restarts._delete_barrier(management, "rabbitmq", "jmslike-barrier-1")
    assert management.deleted == ["jmslike-barrier-1"]


def test_a_refusal_is_not_asked_again(caplog: pytest.LogCaptureFixture) -> None:
    management: Any = _Management(JMSSecurityException("refused the credentials (HTTP 401)"))
    with caplog.at_level(logging.WARNING, logger=restarts.__name__):
        restarts._delete_barrier(management, "rabbitmq", "jmslike-barrier-2")
    assert management.calls == 1 and management.deleted == []
    assert ["jmslike-barrier-2 is left over" in r.getMessage() for r in caplog.records] == [True]


def test_a_barrier_still_left_is_logged_not_raised(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(restarts, "BARRIER_DELETE_S", 0.0)
    management: Any = _Management(_unreachable())
    with caplog.at_level(logging.WARNING, logger=restarts.__name__):
        restarts._delete_barrier(management, "rabbitmq", "jmslike-barrier-3")
    assert management.calls == 1 and management.deleted == []
    assert ["jmslike-barrier-3 is left over" in r.getMessage() for r in caplog.records] == [True]


def test_a_server_error_is_asked_again() -> None:
    import urllib.error

    refused = JMSException("RabbitMQ management API DELETE /api/queues/%2F/x failed: HTTP 503")
    refused.__cause__ = urllib.error.HTTPError("http://127.0.0.1/api", 503, "Service Unavailable", {}, None)  # type: ignore[arg-type]
    management: Any = _Management(refused)
    restarts._delete_barrier(management, "rabbitmq", "jmslike-barrier-4")
    assert management.calls == 2 and management.deleted == ["jmslike-barrier-4"]


def test_after_a_failed_declaration_the_barrier_is_asked_for_once() -> None:
    management: Any = _Management(_unreachable(), _unreachable())
    restarts._delete_barrier(management, "rabbitmq", "jmslike-barrier-5", patient=False)
    assert management.calls == 1 and management.deleted == []

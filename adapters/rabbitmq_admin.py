"""RabbitMQ's record of jmslike durable subscriptions: the subscription queue itself.

A durable subscription on RabbitMQ is a queue (see :mod:`adapters.rabbitmq`). Before the STOMP SUBSCRIBE
declares it, jmslike declares it through the management API with two extra arguments:

- ``x-jmslike-definition``: the :class:`~jmslike.subscriptions.DurableDefinition` JSON (topic, the
  application's selector, inactive selector, noLocal, expiry). RabbitMQ keeps unknown ``x-`` arguments
  and does not compare them when STOMP re-declares the queue, so the record lives and dies with the
  subscription: no separate catalogue to drift from the truth.
- ``x-expires`` when the subscription has an expiry: RabbitMQ deletes a queue unused (no consumer, not
  re-declared) for that long, and a resume re-declares it, which restarts the clock from the original
  value. The STOMP SUBSCRIBE carries the same ``x-expires`` (RabbitMQ refuses a re-declare that differs).

Listing reads the queues' management records: consumers (active), messages (pending), idle_since (last
active). These statistics are refreshed by RabbitMQ every few seconds (``collect_statistics_interval``,
5 s by default), so "active" and "pending" may lag by that much.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from jmslike.subscriptions import DurableDefinition, SubscriptionInfo, subscription_info

from .rabbitmq_management import RabbitMQManagement

DEFINITION_ARGUMENT = "x-jmslike-definition"
EXPIRES_ARGUMENT = "x-expires"
DURABLE_PREFIX = "jmslike.durable."

_log = logging.getLogger(__name__)


def queue_arguments(definition: DurableDefinition) -> dict[str, Any]:
    arguments: dict[str, Any] = {DEFINITION_ARGUMENT: definition.to_json()}
    if definition.expiry_ms:
        arguments[EXPIRES_ARGUMENT] = definition.expiry_ms
    return arguments


def definition_of(queue: dict[str, Any]) -> DurableDefinition | None:
    text = (queue.get("arguments") or {}).get(DEFINITION_ARGUMENT)
    if not isinstance(text, str):
        return None
    try:
        return DurableDefinition.from_json(text)
    except Exception:  # a foreign or damaged argument: not a jmslike record we can use
        _log.warning("queue %s has an unreadable %s argument", queue.get("name"), DEFINITION_ARGUMENT)
        return None


def info_of(queue: dict[str, Any]) -> SubscriptionInfo | None:
    """One admin row from a management queue record (None for a queue without a jmslike record)."""
    definition = definition_of(queue)
    if definition is None:
        return None
    consumers = queue.get("consumers")
    messages = queue.get("messages")
    active = None if consumers is None else consumers > 0
    return subscription_info(
        definition,
        active=active,
        pending=messages if isinstance(messages, int) else None,
        last_active=None if active else _parse_time(queue.get("idle_since")),
    )


def _parse_time(text: object) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        # 3.10: "2026-11-21 12:36:37" (UTC) or ISO 8601 with offset in newer versions
        parsed = datetime.datetime.fromisoformat(text.replace(" ", "T"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed.timestamp()


class RabbitMQRegistry:
    """The :class:`~jmslike.contract.SubscriptionRegistry` for RabbitMQ (management API)."""

    broker_expiry = True

    def __init__(self, management: RabbitMQManagement, vhost: str, prefix_of: Any) -> None:
        self._management = management
        self._vhost = vhost
        self._prefix_of = prefix_of  # (client_id, name) -> queue name prefix of that subscription

    def __repr__(self) -> str:
        return f"RabbitMQRegistry({self._management!r})"

    def lookup(self, client_id: str, name: str) -> DurableDefinition | None:
        for queue in self._management.queues(self._vhost, self._prefix_of(client_id, name)):
            definition = definition_of(queue)
            if definition is not None and (definition.client_id, definition.name) == (client_id, name):
                return definition
        return None

    def attached(self, definition: DurableDefinition) -> None:
        """Nothing to write: the queue is the record, and RabbitMQ tracks its consumers."""

    def detached(self, definition: DurableDefinition) -> None:
        """Nothing to write: RabbitMQ records idle_since and runs x-expires itself."""

    def removed(self, client_id: str, name: str) -> None:
        """Nothing to write: deleting the queue deleted the record."""

    def expiry_state(self, client_id: str, name: str) -> tuple[int, int | None]:
        """Nothing for jmslike to enforce: RabbitMQ expires the queue itself (x-expires)."""
        return 0, None

    def list(self) -> list[SubscriptionInfo]:
        rows = [info_of(q) for q in self._management.queues(self._vhost, DURABLE_PREFIX)]
        return sorted((r for r in rows if r is not None), key=lambda r: (r.clientId, r.name))

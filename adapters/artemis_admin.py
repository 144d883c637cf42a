"""ActiveMQ Artemis: listing durable subscriptions through the management address (mapping only).

Artemis keeps a durable subscription as a MULTICAST queue named ``<client ID>.<name>`` on the topic's
address, with the subscription's filter (see :mod:`adapters.artemis`). ``ActiveMQServerControl.listQueues``
(invoked on the ``broker`` resource over the management address, as the adapter already does for
``createQueue``) returns every queue with its address, filter, durability, consumer and message counts:
enough for ``Admin.subscriptions()``.

Status: written from Artemis's source and unit-tested on canned replies only; no Artemis broker can run
here, so it is **not wired into the adapter** (``ArtemisAdapter.subscription_registry()`` still returns
None, and resume / expiry / administration raise ``UnsupportedFeatureException`` on Artemis). Known
limits of the mapping: a client ID containing a dot cannot be told from the name (split at the first
dot); the selector is Artemis's core filter (``AMQPriority`` for ``JMSPriority``...); Artemis reports no
"last active" time.
"""

from __future__ import annotations

import json
from typing import Any

from jmslike.exceptions import JMSException
from jmslike.subscriptions import SubscriptionInfo

from .artemis import BROKER_RESOURCE, CLIENT_ID_LOCK_PREFIX, ManagementSession, management_failure

PAGE_SIZE = 1000
#: listQueues filter: MULTICAST queues (topic subscriptions) only.
MULTICAST_ONLY = json.dumps({"field": "routingType", "operation": "EQUALS", "value": "MULTICAST"})


def parse_queue_list(value: object) -> list[dict[str, Any]]:
    """``listQueues`` answers a JSON text ``{"data": [...], "count": N}``; anything else is an error."""
    try:
        decoded = json.loads(value) if isinstance(value, str) else value
        rows = decoded["data"] if isinstance(decoded, dict) else None
    except (ValueError, KeyError, TypeError) as exc:
        raise JMSException(f"ActiveMQ Artemis listQueues gave an unreadable answer: {exc}") from exc
    if not isinstance(rows, list):
        raise JMSException("ActiveMQ Artemis listQueues gave no 'data' list")
    return [row for row in rows if isinstance(row, dict)]


def _flag(value: object) -> bool:
    return value is True or str(value).lower() == "true"


def _count(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def info_of(row: dict[str, Any]) -> SubscriptionInfo | None:
    """One admin row from a ``listQueues`` entry, or None for a queue that is not a durable subscription
    (non-durable, temporary, internal, jmslike's client-ID locks, or a name without ``client.name``)."""
    name = str(row.get("name", ""))
    if (
        not _flag(row.get("durable"))
        or _flag(row.get("temporary"))
        or _flag(row.get("internalQueue"))
        or str(row.get("routingType", "MULTICAST")).upper() != "MULTICAST"
        or name.startswith(CLIENT_ID_LOCK_PREFIX)
        or "." not in name
    ):
        return None
    client_id, _, subscription = name.partition(".")
    if not client_id or not subscription:
        return None
    consumers = _count(row.get("consumerCount"))
    filter_text = str(row.get("filter") or "").strip() or None
    return SubscriptionInfo(
        clientId=client_id,
        name=subscription,
        topic=str(row.get("address", "")),
        selector=filter_text,
        durable=True,
        active=None if consumers is None else consumers > 0,
        pending=_count(row.get("messageCount")),
        lastActive=None,
    )


def list_subscriptions(session: ManagementSession) -> list[SubscriptionInfo]:
    """Every durable subscription on the broker, page by page."""
    rows: list[SubscriptionInfo] = []
    page = 1
    while True:
        reply = session.invoke(BROKER_RESOURCE, "listQueues", MULTICAST_ONLY, page, PAGE_SIZE)
        if not reply.succeeded:
            raise management_failure(reply, "listQueues")
        entries = parse_queue_list(reply.value)
        rows += [info for info in map(info_of, entries) if info is not None]
        if len(entries) < PAGE_SIZE:
            return sorted(rows, key=lambda r: (r.clientId, r.name))
        page += 1

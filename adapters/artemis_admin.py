"""ActiveMQ Artemis: jmslike's record of durable subscriptions, kept on the broker through its management address.

Artemis keeps a durable subscription as a MULTICAST queue named ``<client ID>.<name>`` on the topic's address,
with the subscription's filter (see :mod:`adapters.artemis`). That queue says which subscriptions exist, with
their consumer and message counts (``ActiveMQServerControl.listQueues``), but not what jmslike needs to resume
one by name, expire it, or persistence-filter it: the application's selector apart from the inactive one,
noLocal, the expiry, when it was last active. Those live in a record per subscription:

- one durable ANYCAST *last-value queue*, ``jmslike.subscriptions``, keyed by ``jmslike_sub_key`` (a hash of
  client ID and name, :func:`jmslike.catalogue.key_of`): Artemis keeps only the newest record of a key, so
  an attach or detach replaces the record atomically, with nothing to compact;
- a record is a message whose properties hold a :class:`jmslike.catalogue.Entry` as JSON, cut into parts of
  at most ``PART_CHARS`` characters: the management reads (``QueueControl.listMessagesAsJSON``) truncate
  every property value at ``management-message-attribute-size-limit`` (256 characters by default) and leave
  the body out;
- records are written by a STOMP SEND (persistent, with a receipt) on the management connection, read with
  ``listMessagesAsJSON(filter)``, and removed with ``removeMessages(filter)``.

Only the holder of a client ID writes its records (jmslike's client-ID lock queue admits one connection), as
with the ActiveMQ catalogue. ``active`` and ``pending`` come from the broker (exact, no statistics lag);
``lastActive`` from the record. A subscription made by another client (a Java JMS client uses the same
queue name) is listed from its queue alone: its core filter as the selector, the name split at the first dot.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Final

from jmslike.catalogue import Entry, key_of
from jmslike.exceptions import InvalidDestinationException, JMSException
from jmslike.subscriptions import DurableDefinition, SubscriptionInfo, subscription_info

from .artemis_management import (
    ANYCAST,
    BROKER_RESOURCE,
    CLIENT_ID_LOCK_PREFIX,
    DESTINATION_TYPE_HEADER,
    QUEUE_RESOURCE_PREFIX,
    ManagementSession,
    create_queue,
    durable_queue_name,
    management_failure,
    queue_configuration,
    shared_queue_name,
)

PAGE_SIZE = 1000
RECORD_QUEUE: Final = "jmslike.subscriptions"
KEY_PROPERTY: Final = "jmslike_sub_key"
PART_PROPERTY_PREFIX: Final = "jmslike_sub_rec_"
# Below Artemis's default management-message-attribute-size-limit (256), which truncates longer values.
PART_CHARS: Final = 200
# The prefix every jmslike-made shared subscription queue has (never an unshared durable subscription).
_SHARED_PREFIX: Final = shared_queue_name(None, "", True).split(".", 1)[0] + ".shared"
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
        or name.startswith((CLIENT_ID_LOCK_PREFIX, _SHARED_PREFIX))
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


def list_queue_rows(session: ManagementSession, query: str = MULTICAST_ONLY) -> list[dict[str, Any]]:
    """Every queue ``listQueues`` finds for ``query`` (a JSON filter; default: MULTICAST ones), page by page."""
    rows: list[dict[str, Any]] = []
    page = 1
    while True:
        reply = session.invoke(BROKER_RESOURCE, "listQueues", query, page, PAGE_SIZE)
        if not reply.succeeded:
            raise management_failure(reply, "listQueues")
        entries = parse_queue_list(reply.value)
        rows += entries
        if len(entries) < PAGE_SIZE:
            return rows
        page += 1


def list_subscriptions(session: ManagementSession) -> list[SubscriptionInfo]:
    """Every durable subscription on the broker from its queues alone (no records), sorted."""
    rows = [info for info in map(info_of, list_queue_rows(session)) if info is not None]
    return sorted(rows, key=lambda r: (r.clientId, r.name))


# -- jmslike's records ----------------------------------------------------------------------------------


def record_queue_configuration() -> str:
    """The last-value queue of records: the newest record per key is all Artemis keeps."""
    return queue_configuration(RECORD_QUEUE, RECORD_QUEUE, ANYCAST, durable=True, last_value_key=KEY_PROPERTY)


def split_value(prefix: str, text: str) -> dict[str, str]:
    """``text`` as message properties that ``listMessagesAsJSON`` gives back whole: ``<prefix>n`` parts of
    at most ``PART_CHARS`` characters, ``<prefix>0``, ``<prefix>1``..., and their count in ``<prefix>n``."""
    parts = [text[i : i + PART_CHARS] for i in range(0, len(text), PART_CHARS)] or [""]
    return {f"{prefix}n": str(len(parts)), **{f"{prefix}{n}": part for n, part in enumerate(parts)}}


def join_value(prefix: str, properties: Mapping[str, object]) -> str | None:
    """The text :func:`split_value` wrote, from a listed message's properties; None if parts are missing."""
    try:
        count = int(str(properties[f"{prefix}n"]))
        return "".join(str(properties[f"{prefix}{n}"]) for n in range(count))
    except (KeyError, ValueError):
        return None


def record_headers(key: str, entry: Entry) -> dict[str, str]:
    """The SEND headers of one record: the key, and the entry's JSON in parts short enough to read back."""
    return {
        "destination": RECORD_QUEUE,
        DESTINATION_TYPE_HEADER: ANYCAST,
        "persistent": "true",
        KEY_PROPERTY: key,
        **split_value(PART_PROPERTY_PREFIX, entry.to_json()),
    }


def entry_of(properties: Mapping[str, object]) -> Entry | None:
    """The entry a listed record holds, or None when it is unreadable (a foreign or damaged message)."""
    text = join_value(PART_PROPERTY_PREFIX, properties)
    try:
        return Entry.from_json(text, str(properties.get("messageID", ""))) if text is not None else None
    except (KeyError, ValueError, TypeError, JMSException):
        return None


def list_messages(session: ManagementSession, queue: str, filter_text: str) -> list[dict[str, Any]] | None:
    """``listMessagesAsJSON(filter)`` on ``queue``: each message's properties (no body); None if there is no
    such queue."""
    reply = session.invoke(QUEUE_RESOURCE_PREFIX + queue, "listMessagesAsJSON", filter_text)
    if not reply.succeeded:
        error = management_failure(reply, f"listMessagesAsJSON on {queue}")
        if isinstance(error, InvalidDestinationException):
            return None
        raise error
    try:
        rows = json.loads(reply.value) if isinstance(reply.value, str) else reply.value
    except ValueError as exc:
        raise JMSException(f"ActiveMQ Artemis listMessagesAsJSON gave an unreadable answer: {exc}") from exc
    return [row for row in rows if isinstance(row, dict)] if isinstance(rows, list) else []


def key_filter(key: str | None) -> str:
    return f"{KEY_PROPERTY} = '{key}'" if key is not None else f"{KEY_PROPERTY} IS NOT NULL"


def read_records(session: ManagementSession, key: str | None) -> dict[str, Entry]:
    """The record of ``key`` (or of every key), by key. A missing record queue means no records yet."""
    records: dict[str, Entry] = {}
    for row in list_messages(session, RECORD_QUEUE, key_filter(key)) or []:
        entry = entry_of(row)
        if entry is not None:
            records[str(row[KEY_PROPERTY])] = entry
    return records


def merged_row(row: dict[str, Any], records: Mapping[str, Entry]) -> SubscriptionInfo | None:
    """One admin row: the broker's queue (existence, active, pending) with jmslike's record where it has one."""
    info = info_of(row)
    if info is None:
        return None
    name = str(row.get("name", ""))
    for entry in records.values():
        definition = entry.definition
        if definition is None or durable_queue_name(definition.client_id, definition.name) != name:
            continue
        last_active = None if info.active else entry.at_ms / 1000
        return subscription_info(
            definition, active=info.active, pending=info.pending, last_active=last_active
        )
    return info


class ArtemisRegistry:
    """The :class:`~jmslike.contract.SubscriptionRegistry` for Artemis: records in a last-value queue."""

    broker_expiry = False

    def __init__(self, management: Callable[[], AbstractContextManager[ManagementSession]]) -> None:
        self._management = management

    def __repr__(self) -> str:
        return "ArtemisRegistry()"

    def _entry(self, client_id: str, name: str) -> Entry | None:
        key = key_of(client_id, name)
        with self._management() as session:
            return read_records(session, key).get(key)

    def _write(self, state: str, definition: DurableDefinition) -> None:
        key = key_of(definition.client_id, definition.name)
        entry = Entry(definition, state, int(time.time() * 1000), 1)
        with self._management() as session:
            create_queue(session, record_queue_configuration(), ignore_if_exists=True)
            session.send(record_headers(key, entry))

    def lookup(self, client_id: str, name: str) -> DurableDefinition | None:
        entry = self._entry(client_id, name)
        return entry.definition if entry is not None else None

    def attached(self, definition: DurableDefinition) -> None:
        self._write("attached", definition)

    def detached(self, definition: DurableDefinition) -> None:
        self._write("detached", definition)

    def removed(self, client_id: str, name: str) -> None:
        with self._management() as session:
            reply = session.invoke(
                QUEUE_RESOURCE_PREFIX + RECORD_QUEUE, "removeMessages", key_filter(key_of(client_id, name))
            )
        if not reply.succeeded:
            error = management_failure(reply, f"removeMessages on {RECORD_QUEUE}")
            if not isinstance(error, InvalidDestinationException):
                raise error

    def expiry_state(self, client_id: str, name: str) -> tuple[int, int | None]:
        entry = self._entry(client_id, name)
        if entry is None or entry.definition is None:
            return 0, None
        # "attached" means its owner (the caller, who holds the client ID now) went away while attached: the
        # attach time is the last activity known.
        return entry.definition.expiry_ms, entry.at_ms

    def list(self) -> list[SubscriptionInfo]:
        with self._management() as session:
            records = read_records(session, None)
            queues = list_queue_rows(session)
        rows = [merged_row(row, records) for row in queues]
        return sorted((r for r in rows if r is not None), key=lambda r: (r.clientId, r.name))

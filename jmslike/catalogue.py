"""A catalogue of durable subscriptions kept on the broker by jmslike, for brokers with no management
interface Python can reach (ActiveMQ Classic as packaged here: no Jolokia, JMX off).

The catalogue is one persistent queue, ``jmslike.subscriptions``. Each durable subscription has records
(persistent TextMessages, JSON body) keyed by a property holding a hash of (client ID, name); the newest
record (highest ``seq``) says what the subscription is (its :class:`DurableDefinition`) and whether it
was last seen attached or detached, and when. Writers append, then consume the superseded records of
their key with a queue selector; readers browse. Only one writer per key exists at a time, because only
the owner of the client ID writes (ActiveMQ refuses a second live connection with that ID, and
:mod:`jmslike.admin` deletes a subscription only while holding its client ID).

Every operation runs on a short-lived private connection (no client ID) made from the application
connection's configuration, so it works whatever state the application's connection is in (stopped,
transacted session...).

What the catalogue cannot see: subscriptions created by other clients (Java, other STOMP clients, jmslike
before this feature); a subscription deleted behind jmslike's back (the record stays until deleted);
pending message counts; a crashed client's last activity (the record says "attached" with the attach
time; ``active`` comes from probing the client ID, which tells whether the owner is connected).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jmslike.constants import AcknowledgeMode
from jmslike.contract import SubscriptionRegistry
from jmslike.destinations import Queue
from jmslike.exceptions import InvalidClientIDException, JMSException, UnsupportedFeatureException
from jmslike.messages import TextMessage
from jmslike.subscriptions import DurableDefinition, SubscriptionInfo

if TYPE_CHECKING:
    from jmslike.config import ConnectionConfig
    from jmslike.connection import Connection

log = logging.getLogger(__name__)

CATALOGUE_QUEUE = "jmslike.subscriptions"
KEY_PROPERTY = "jmslike_sub_key"
RECORD_PROPERTY = "jmslike_sub_rec"
_RECEIVE_MS = 10_000

_registries: weakref.WeakKeyDictionary[Connection, SubscriptionRegistry] = weakref.WeakKeyDictionary()


def key_of(client_id: str, name: str) -> str:
    return hashlib.sha256(f"{client_id}\x00{name}".encode()).hexdigest()[:40]


@dataclass(frozen=True)
class Entry:
    """One catalogue record: a definition, its state, when, and its order among its key's records."""

    definition: DurableDefinition | None  # None: the subscription was removed
    state: str  # "attached" | "detached" | "removed"
    at_ms: int
    seq: int
    record_id: str = ""

    def to_json(self) -> str:
        return json.dumps(
            {
                "definition": self.definition.to_json() if self.definition is not None else None,
                "state": self.state,
                "at_ms": self.at_ms,
                "seq": self.seq,
            }
        )

    @classmethod
    def from_json(cls, text: str, record_id: str) -> Entry:
        data = json.loads(text)
        definition = data.get("definition")
        return cls(
            DurableDefinition.from_json(definition) if definition else None,
            str(data["state"]),
            int(data["at_ms"]),
            int(data["seq"]),
            record_id,
        )


def newest(entries: list[Entry]) -> Entry | None:
    return max(entries, key=lambda e: (e.seq, e.at_ms), default=None)


def registry_for(connection: Connection) -> SubscriptionRegistry:
    """The connection's registry: the broker's own where the adapter has one, else the catalogue queue."""
    registry = _registries.get(connection)
    if registry is None:
        registry = connection.adapter.subscription_registry()
        if registry is None:
            capabilities = connection.adapter.capabilities
            if not (capabilities.browsing and capabilities.selectors == "broker"):
                raise UnsupportedFeatureException(
                    connection.adapter.display_name,
                    "subscription records (resume by name, expiry, administration)",
                    "the broker has no management interface and cannot browse and select on queues",
                )
            registry = QueueCatalogue(connection.config)
        _registries[connection] = registry
    return registry


def optional_registry(connection: Connection) -> SubscriptionRegistry | None:
    """The registry, or None where the broker offers no way to keep one (plain JMS still works)."""
    try:
        return registry_for(connection)
    except UnsupportedFeatureException:
        return None


class QueueCatalogue:
    """:class:`~jmslike.contract.SubscriptionRegistry` kept in the ``jmslike.subscriptions`` queue."""

    broker_expiry = False

    def __init__(self, config: ConnectionConfig) -> None:
        self._config = config

    def __repr__(self) -> str:
        return f"QueueCatalogue({self._config.describe()!r})"

    def _open(self, client_id: str | None = None) -> Connection:
        from jmslike.connection import Connection
        from jmslike.registry import load_adapter
        from jmslike.serializers import SerializerRegistry

        connection = Connection(self._config, load_adapter(self._config.scheme), SerializerRegistry())
        try:
            if client_id is not None:
                connection.setClientID(client_id)
            connection.start()
        except BaseException:
            connection.close()
            raise
        return connection

    def owner_connected(self, client_id: str) -> bool:
        """Whether a live connection holds ``client_id`` (the broker refuses a second one)."""
        try:
            probe = self._open(client_id)
        except InvalidClientIDException:
            return True
        probe.close()
        return False

    # -- reading --------------------------------------------------------------------------------------

    def _entries(self, connection: Connection, key: str | None) -> list[tuple[str, Entry]]:
        session = connection.createSession(False, AcknowledgeMode.AUTO_ACKNOWLEDGE)
        try:
            selector = f"{KEY_PROPERTY} = '{key}'" if key is not None else f"{KEY_PROPERTY} IS NOT NULL"
            result: list[tuple[str, Entry]] = []
            for message in session.createBrowser(Queue(CATALOGUE_QUEUE), selector).getEnumeration():
                if not isinstance(message, TextMessage):
                    continue
                record_key = message.getStringProperty(KEY_PROPERTY) or ""
                record_id = message.getStringProperty(RECORD_PROPERTY) or ""
                try:
                    result.append((record_key, Entry.from_json(message.getText() or "", record_id)))
                except (ValueError, KeyError, TypeError, JMSException):
                    log.warning("skipping an unreadable record in %s", CATALOGUE_QUEUE)
            return result
        finally:
            session.close()

    def lookup(self, client_id: str, name: str) -> DurableDefinition | None:
        connection = self._open()
        try:
            entry = newest([e for _, e in self._entries(connection, key_of(client_id, name))])
        finally:
            connection.close()
        return entry.definition if entry is not None and entry.state != "removed" else None

    def entries(self) -> dict[str, Entry]:
        """The newest record of every key, removed ones left out."""
        connection = self._open()
        try:
            grouped: dict[str, list[Entry]] = {}
            for key, entry in self._entries(connection, None):
                grouped.setdefault(key, []).append(entry)
        finally:
            connection.close()
        latest = {key: newest(items) for key, items in grouped.items()}
        return {k: e for k, e in latest.items() if e is not None and e.state != "removed"}

    def list(self) -> list[SubscriptionInfo]:
        rows = []
        for entry in self.entries().values():
            definition = entry.definition
            assert definition is not None
            attached = entry.state == "attached" and self.owner_connected(definition.client_id)
            rows.append(
                SubscriptionInfo(
                    clientId=definition.client_id,
                    name=definition.name,
                    topic=definition.topic,
                    selector=definition.selector,
                    durable=True,
                    active=attached,
                    pending=None,
                    lastActive=None if attached else entry.at_ms / 1000,
                    inactiveSelector=definition.inactive_selector,
                    expiryMs=definition.expiry_ms,
                    noLocal=definition.no_local,
                )
            )
        return sorted(rows, key=lambda r: (r.clientId, r.name))

    # -- writing --------------------------------------------------------------------------------------

    def _write(self, client_id: str, name: str, state: str, definition: DurableDefinition | None) -> None:
        key = key_of(client_id, name)
        connection = self._open()
        try:
            old = self._entries(connection, key)
            latest = newest([e for _, e in old])
            session = connection.createSession(False, AcknowledgeMode.CLIENT_ACKNOWLEDGE)
            record_id = uuid.uuid4().hex
            if state != "removed":
                entry = Entry(definition, state, int(time.time() * 1000), (latest.seq + 1) if latest else 1)
                message = session.createTextMessage(entry.to_json())
                message.setStringProperty(KEY_PROPERTY, key)
                message.setStringProperty(RECORD_PROPERTY, record_id)
                session.createProducer(Queue(CATALOGUE_QUEUE)).send(message)
            superseded = {e.record_id for _, e in old}
            if superseded:
                self._consume(session, key, record_id, len(superseded))
            session.close()
        finally:
            connection.close()

    def _consume(self, session: object, key: str, keep: str, count: int) -> None:
        """Consume ``count`` records of ``key`` other than ``keep`` (the writer is alone on its key)."""
        from jmslike.session import Session

        assert isinstance(session, Session)
        selector = f"{KEY_PROPERTY} = '{key}' AND {RECORD_PROPERTY} <> '{keep}'"
        consumer = session.createConsumer(Queue(CATALOGUE_QUEUE), selector)
        taken = 0
        last = None
        while taken < count:
            message = consumer.receive(_RECEIVE_MS)
            if message is None:
                log.warning("catalogue: %d superseded record(s) of %s not found; left", count - taken, key)
                break
            last = message
            taken += 1
        if last is not None:
            last.acknowledge()
        consumer.close()

    def attached(self, definition: DurableDefinition) -> None:
        self._write(definition.client_id, definition.name, "attached", definition)

    def detached(self, definition: DurableDefinition) -> None:
        self._write(definition.client_id, definition.name, "detached", definition)

    def removed(self, client_id: str, name: str) -> None:
        self._write(client_id, name, "removed", None)

    def last_active_ms(self, client_id: str, name: str) -> int | None:
        connection = self._open()
        try:
            entry = newest([e for _, e in self._entries(connection, key_of(client_id, name))])
        finally:
            connection.close()
        return entry.at_ms if entry is not None and entry.state != "removed" else None

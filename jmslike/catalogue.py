"""A catalogue of durable subscriptions kept on the broker by jmslike, for brokers with no management
interface Python can reach (ActiveMQ Classic as packaged here: no Jolokia, JMX off).

The catalogue is one persistent queue, ``jmslike.subscriptions``. Each durable subscription has records
(persistent TextMessages, JSON body) keyed by a property holding a hash of (client ID, name); the newest
record (highest ``seq``) says what the subscription is (its :class:`DurableDefinition`) and whether it
was last seen attached or detached, and when; a "removed" record (tombstone) says it is gone. Readers
browse and take the newest. A writer appends its record synchronously, then consumes the superseded
records by id (``IN`` selector) on a background thread (a selective consume costs ~50 ms on ActiveMQ),
and for a removal the tombstone last; leftovers of an interrupted compaction are harmless (never the
newest) and are consumed by the key's next writer. Only one writer per key exists at a time, because
only the holder of the client ID writes (ActiveMQ refuses a second live connection with that ID, and
:mod:`jmslike.admin` deletes a subscription only while holding its client ID), so a writer may remember
its keys' records instead of browsing again.

Every operation runs on a short-lived private connection (no client ID) made from the application
connection's configuration, so it works whatever state the application's connection is in (stopped,
transacted session...).

What the catalogue cannot see: subscriptions created by other clients (Java, other STOMP clients, jmslike
before this feature); a subscription deleted behind jmslike's back (the record stays until deleted);
pending message counts; a crashed client's last activity (the record says "attached" with the attach
time; ``active`` comes from probing the client ID, which tells whether the owner is connected).
"""

from __future__ import annotations

import atexit
import builtins
import hashlib
import json
import logging
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from jmslike.constants import AcknowledgeMode
from jmslike.contract import Adapter, SubscriptionRegistry
from jmslike.destinations import Queue
from jmslike.exceptions import (
    IllegalStateException,
    InvalidClientIDException,
    JMSException,
    UnsupportedFeatureException,
)
from jmslike.messages import Message, TextMessage
from jmslike.subscriptions import DurableDefinition, SubscriptionInfo, subscription_info

if TYPE_CHECKING:
    from jmslike.config import ConnectionConfig
    from jmslike.connection import Connection

log = logging.getLogger(__name__)

CATALOGUE_QUEUE = "jmslike.subscriptions"
KEY_PROPERTY = "jmslike_sub_key"
RECORD_PROPERTY = "jmslike_sub_rec"
_RECEIVE_MS = 5_000

_pending: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


@atexit.register
def _finish_compactions(timeout_s: float = 5.0) -> None:
    """At interpreter exit, give running compactions a bounded moment (leftovers are harmless anyway)."""
    deadline = time.monotonic() + timeout_s
    for worker in list(_pending):
        worker.join(max(0.0, deadline - time.monotonic()))


class RegistryOwner(Protocol):
    """What a registry is kept for: an application connection of either API (``jmslike`` or ``jmslike.aio``)."""

    @property
    def adapter(self) -> Adapter: ...

    @property
    def config(self) -> ConnectionConfig: ...

    @property
    def generation(self) -> int:
        """Advances on every reconnect (a client ID that was free for a while may have lost subscriptions)."""
        ...

    def open_private(self) -> Connection:
        """A new threaded connection, not yet started, to the same broker with the same credentials."""
        ...


_registries: weakref.WeakKeyDictionary[RegistryOwner, SubscriptionRegistry] = weakref.WeakKeyDictionary()


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


def registry_for(connection: RegistryOwner) -> SubscriptionRegistry:
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
            owner = weakref.ref(connection)  # the registry is kept per owner: it must not keep it alive

            def generation() -> int:
                alive = owner()
                return alive.generation if alive is not None else -1

            def open_private() -> Connection:
                alive = owner()
                if alive is None:
                    raise IllegalStateException("the connection this subscription registry served is gone")
                return alive.open_private()

            registry = QueueCatalogue(connection.config, open_private, generation)
        _registries[connection] = registry
    return registry


def optional_registry(connection: RegistryOwner) -> SubscriptionRegistry | None:
    """The registry, or None where the broker offers no way to keep one (plain JMS still works)."""
    try:
        return registry_for(connection)
    except UnsupportedFeatureException:
        return None


class QueueCatalogue:
    """:class:`~jmslike.contract.SubscriptionRegistry` kept in the ``jmslike.subscriptions`` queue."""

    broker_expiry = False

    def __init__(
        self,
        config: ConnectionConfig,
        open_connection: Callable[[], Connection],
        generation: Callable[[], int] | None = None,
    ) -> None:
        """``open_connection``: a new threaded connection to ``config``'s broker, not yet started (the owner's
        ``open_private``; passed in because jmslike.connection builds on this module)."""
        self._config = config
        self._open_connection = open_connection
        # The live records of the keys this process has read or written. Only the holder of a client ID
        # writes its records (the broker allows one holder at a time), so what this connection knows of its
        # own keys stays true while it holds the ID; it saves a browse (~50 ms on ActiveMQ) per operation.
        self._known: dict[str, list[Entry]] = {}
        self._lock = threading.Lock()
        self._workers: list[threading.Thread] = []
        # The owner's connection generation: after a reconnect the client ID was free for a while (an admin
        # may have deleted a subscription meanwhile), so what was remembered is forgotten.
        self._generation = generation
        self._known_generation = generation() if generation is not None else 0

    def __repr__(self) -> str:
        return f"QueueCatalogue({self._config.describe()!r})"

    def _open(self, client_id: str | None = None) -> Connection:
        connection = self._open_connection()
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

    def _records(self, key: str, connection: Connection | None = None) -> list[Entry]:
        """The live records of ``key``: remembered, or browsed (on ``connection`` or a private one)."""
        with self._lock:
            if self._generation is not None and self._generation() != self._known_generation:
                self._known.clear()
                self._known_generation = self._generation()
            known = self._known.get(key)
        if known is not None:
            return list(known)
        own = connection is None
        used = self._open() if connection is None else connection
        try:
            records = [e for _, e in self._entries(used, key)]
        finally:
            if own:
                used.close()
        with self._lock:
            self._known[key] = records
        return list(records)

    def lookup(self, client_id: str, name: str) -> DurableDefinition | None:
        entry = newest(self._records(key_of(client_id, name)))
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
            last_active = None if attached else entry.at_ms / 1000
            rows.append(subscription_info(definition, active=attached, pending=None, last_active=last_active))
        return sorted(rows, key=lambda r: (r.clientId, r.name))

    # -- writing --------------------------------------------------------------------------------------

    def _write(self, client_id: str, name: str, state: str, definition: DurableDefinition | None) -> None:
        """Append the new newest record of (client ID, name) now; consume the superseded ones (and, for a
        removal, then the removal record itself) in the background: readers always take the newest, so the
        leftovers only cost space until then (and are found and consumed by the next process otherwise)."""
        key = key_of(client_id, name)
        connection = self._open()
        try:
            old = self._records(key, connection)
            latest = newest(old)
            record_id = uuid.uuid4().hex
            entry = Entry(
                definition, state, int(time.time() * 1000), (latest.seq + 1) if latest else 1, record_id
            )
            session = connection.createSession(False, AcknowledgeMode.AUTO_ACKNOWLEDGE)
            message = session.createTextMessage(entry.to_json())
            message.setStringProperty(KEY_PROPERTY, key)
            message.setStringProperty(RECORD_PROPERTY, record_id)
            session.createProducer(Queue(CATALOGUE_QUEUE)).send(message)
        finally:
            connection.close()
        removed = state == "removed"
        with self._lock:
            self._known[key] = [] if removed else [entry]
        steps = [[e.record_id for e in old if e.record_id]] + ([[record_id]] if removed else [])
        steps = [ids for ids in steps if ids]
        if steps:
            worker = threading.Thread(
                target=self._compact, args=(key, steps), name="jmslike-catalogue-compact", daemon=True
            )
            worker.start()
            self._workers.append(worker)
            _pending.add(worker)

    def _compact(self, key: str, steps: builtins.list[builtins.list[str]]) -> None:
        """Consume the named records, step by step (the records of one step are all there to take)."""
        try:
            connection = self._open()
        except JMSException as exc:
            log.info("catalogue: compaction of %s postponed (%s)", key, exc)
            return
        try:
            session = connection.createSession(False, AcknowledgeMode.CLIENT_ACKNOWLEDGE)
            for ids in steps:
                listed = ", ".join(f"'{record}'" for record in ids)
                consumer = session.createConsumer(Queue(CATALOGUE_QUEUE), f"{RECORD_PROPERTY} IN ({listed})")
                taken: builtins.list[Message] = []
                while len(taken) < len(ids):
                    message = consumer.receive(_RECEIVE_MS)
                    if message is None:
                        log.info("catalogue: %d record(s) of %s already gone", len(ids) - len(taken), key)
                        break
                    taken.append(message)
                if taken:
                    taken[-1].acknowledge()
                consumer.close()
        except JMSException as exc:
            log.info("catalogue: compaction of %s left for later (%s)", key, exc)
        finally:
            connection.close()

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait for background compactions (tests, orderly shutdown)."""
        deadline = time.monotonic() + timeout_s
        for worker in list(self._workers):
            worker.join(max(0.0, deadline - time.monotonic()))
        self._workers = [w for w in self._workers if w.is_alive()]

    def attached(self, definition: DurableDefinition) -> None:
        self._write(definition.client_id, definition.name, "attached", definition)

    def detached(self, definition: DurableDefinition) -> None:
        self._write(definition.client_id, definition.name, "detached", definition)

    def removed(self, client_id: str, name: str) -> None:
        self._write(client_id, name, "removed", None)  # a tombstone, consumed after what it supersedes

    def expiry_state(self, client_id: str, name: str) -> tuple[int, int | None]:
        entry = newest(self._records(key_of(client_id, name)))
        if entry is None or entry.definition is None or entry.state == "removed":
            return 0, None
        # "attached" here means its owner (the caller, who holds the client ID now) crashed while attached:
        # the attach time is the last activity known.
        return entry.definition.expiry_ms, entry.at_ms

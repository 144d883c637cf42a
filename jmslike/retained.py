"""Retained publications, subscriptions "on request only", and request update, the same on every broker.

What this module owns (the design, its guarantees and its races are in docs/retained.md):

- **The store.** The latest retained publication of topic T lives ON THE BROKER, in the queue
  ``jmslike.retained.<T in the broker's topic syntax>``, as one *copy*: a bytes message whose body is an
  :class:`Envelope` (the live publication's exact SEND headers and body, its canonical topic, the sending
  connection, and whether it clears the topic). The copy has the publication's delivery mode, so a
  PERSISTENT one survives a broker restart and a NON_PERSISTENT one does not, and its time to live.
- **A retained send** (``producer.send(message, retain=True)``) publishes the live message to the topic and
  stores the copy, in ONE STOMP transaction: the session's own when it is transacted (both commit or roll
  back with it), else a private BEGIN/COMMIT around the two SENDs, so the broker applies both or neither.
  A publication whose body is empty clears the topic: its copy is a *tombstone* that replaces the older
  copy like any newer one, so clearing obeys the same ordering as replacing.
- **Only the latest** is kept by the broker itself where it can (``Capabilities.retained == "broker"``:
  RabbitMQ's queue with ``x-max-length=1`` drops the older copy, in its own arrival order). Elsewhere
  (``"jmslike"``: ActiveMQ) the send's private transaction also consumes the copies committed before it
  (browse, then a subscription selecting exactly those, ACKed in the transaction), so the old copy goes
  exactly when the new one comes; in a transacted session, whose transaction the application owns, every
  copy that has a later one behind it is removed after its COMMIT. Readers in any case take the LAST copy
  of each topic in queue order, so a copy left behind by a race is never delivered instead of a newer one.
- **Request update** reads the copies of every topic the subscription matches (the adapter resolves the
  wildcard: a broker-side wildcard browse on ActiveMQ, the management API's queue list on RabbitMQ),
  without consuming them, filters them by the subscription's selector and noLocal, marks each with the
  boolean property ``JMS_jmslike_Retained`` and hands them to that subscriber's inbox (receive or
  listener). None -> :class:`~jmslike.exceptions.NoRetainedMessageException`.
- **On request only.** Such a subscription exists on the broker (so a durable one keeps its identity,
  client ID and name, its one-consumer rule and survives restarts) but is bound to the parking topic
  ``jmslike.on-request.<T>``, to which nothing is ever published: it gets no live traffic and builds
  nothing up. Its consumer still answers ``getTopic()`` with T.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import functools
import itertools
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jmslike import topics
from jmslike.body_codec import OWN_PREFIX, PTYPES_HEADER
from jmslike.consumer import selector_value
from jmslike.contract import (
    RETAINED_STORE_PREFIX,
    Adapter,
    Frame,
    IncomingMessage,
    OutgoingMessage,
    PendingReceipt,
    SubscriptionSpec,
)
from jmslike.destinations import Destination, Queue, TemporaryTopic, Topic
from jmslike.exceptions import (
    ConnectionLostException,
    InvalidDestinationException,
    JMSException,
    JMSSecurityException,
    NoRetainedMessageException,
    UnsupportedFeatureException,
)
from jmslike.flow import BufferGauge

if TYPE_CHECKING:
    from jmslike.connection import Connection
    from jmslike.consumer import MessageConsumer
    from jmslike.selector import Selector
    from jmslike.session import Session

log = logging.getLogger(__name__)

#: Boolean property set on every message requestUpdate delivers (JMS reserves ``JMS_<vendor>_`` names for
#: provider-specific properties). Live publications never carry it.
RETAINED_PROPERTY = "JMS_jmslike_Retained"
#: Prefix of the parking topics on-request-only subscriptions are bound to (nothing is published there).
ON_REQUEST_PREFIX = "jmslike.on-request."
#: Property of each stored copy naming it, for the selector that removes older copies (a JMS identifier).
COPY_ID_PROPERTY = "jmslike_rid"
# Names of headers the dialect base64-encoded (adapters.dialect.ENCODED_HEADER; the API cannot import it).
ENCODED_HEADER = OWN_PREFIX + "encoded"
#: Longest store-queue name accepted (RabbitMQ's limit is 255 bytes; a longer one would kill the connection).
MAX_STORE_NAME_BYTES = 255
ENVELOPE_VERSION = 1
# How long pruning waits for the stale copies it asked for; another pruner may have taken them already.
PRUNE_WAIT_S = 2.0
PRUNE_SETTLE_S = 0.1  # then a browse tells whether the missing copies are still there to wait for
BROWSE_WAIT_S = 30.0

_transaction_ids = itertools.count(1)
#: A private retained-send transaction whose COMMIT got no answer before the connection was lost.
COMMIT_LOST = (
    "the connection was lost while committing a retained publication: the outcome is unknown (the live "
    "publication and its retained copy were applied together or not at all); publish it again"
)
_sub_ids = itertools.count(1)


# -- the stored copy ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Envelope:
    """The body of a stored copy: enough to rebuild the live publication exactly as a subscriber gets it."""

    topic: str  # canonical topic name (jmslike.topics)
    origin: str  # the publishing connection, for noLocal
    clear: bool  # a tombstone: the topic has no retained publication any more
    headers: dict[str, str]  # the live SEND frame's headers
    body: bytes

    def encode(self) -> bytes:
        return json.dumps(
            {
                "v": ENVELOPE_VERSION,
                "topic": self.topic,
                "origin": self.origin,
                "clear": self.clear,
                "headers": self.headers,
                "body": base64.b64encode(self.body).decode("ascii"),
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def decode(cls, data: bytes) -> Envelope | None:
        """The envelope in ``data``, or None (logged) when it is not one: never raises on broker input."""
        try:
            raw = json.loads(data)
            if not isinstance(raw, dict) or raw.get("v") != ENVELOPE_VERSION:
                raise ValueError(f"not a version {ENVELOPE_VERSION} envelope")
            headers = raw["headers"]
            if not isinstance(headers, dict):
                raise ValueError("headers are not an object")
            return cls(
                topic=str(raw["topic"]),
                origin=str(raw.get("origin", "")),
                clear=bool(raw.get("clear", False)),
                headers={str(k): str(v) for k, v in headers.items()},
                body=base64.b64decode(str(raw["body"]), validate=True),
            )
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:
            log.warning("ignoring a malformed retained-publication copy (%s)", exc)
            return None


def store_queue(topic: Topic, adapter: Adapter) -> Queue:
    """The queue holding ``topic``'s retained copy; with a wildcard topic, the broker pattern of queues."""
    name = RETAINED_STORE_PREFIX + topics.to_broker(topics.canonical(topic.name), adapter.topic_syntax)
    if len(name.encode()) > MAX_STORE_NAME_BYTES:
        raise InvalidDestinationException(
            f"topic {topic.name!r} is too long for retained publications: its store queue name would be "
            f"{len(name.encode())} bytes, the limit is {MAX_STORE_NAME_BYTES}; use a shorter topic"
        )
    return Queue(name)


def _require(adapter: Adapter, feature: str) -> None:
    if adapter.capabilities.retained == "none":
        raise UnsupportedFeatureException(
            adapter.display_name, feature, "see docs/retained.md for the brokers that keep them"
        )


def _check_concrete_topic(destination: Destination, adapter: Adapter) -> Topic:
    if not isinstance(destination, Topic) or isinstance(destination, TemporaryTopic):
        raise InvalidDestinationException(
            f"only a (non-temporary) Topic can carry retained publications, got {destination}"
        )
    syntax = adapter.topic_syntax
    broker_levels = topics.to_broker(destination.name, syntax).split(syntax.separator)
    if topics.is_wildcard(destination.name) or any(
        level in (syntax.single, syntax.multi) for level in broker_levels
    ):
        raise InvalidDestinationException(
            f"cannot publish to the wildcard topic {destination.name!r}; publish to one concrete topic"
        )
    return destination


# -- retained send -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Publication:
    """A retained send, planned: the live publication, its stored copy and where the copy goes (no I/O, so
    both APIs send the same two frames)."""

    topic: Topic
    store: Queue
    live: OutgoingMessage
    copy: OutgoingMessage

    def frames(self, adapter: Adapter, transaction: str) -> list[Frame]:
        """The two SENDs, live first, in ``transaction`` (the broker applies both or neither)."""
        return [adapter.send_frame(self.live, transaction), adapter.send_frame(self.copy, transaction)]


def plan_publication(adapter: Adapter, origin: str, outgoing: OutgoingMessage) -> Publication:
    """Check a retained send of ``outgoing`` by the connection ``origin`` (for noLocal) and build its copy."""
    _require(adapter, "retained publications")
    topic = _check_concrete_topic(outgoing.destination, adapter)
    store = store_queue(topic, adapter)
    live = adapter.send_frame(outgoing, None)  # the exact frame subscribers get; also checks limits
    copy_id = outgoing.message_id or f"ID:{uuid.uuid4().hex}"
    envelope = Envelope(
        topic=topics.canonical(topic.name),
        origin=origin,
        clear=not outgoing.body,
        headers=dict(live.headers),
        body=outgoing.body,
    )
    copy = OutgoingMessage(
        destination=store,
        message_id=copy_id,
        timestamp=outgoing.timestamp,
        delivery_mode=outgoing.delivery_mode,  # PERSISTENT copies survive a restart, others do not
        priority=4,  # one priority: the queue's order stays the arrival order
        expiration=outgoing.expiration,
        time_to_live=outgoing.time_to_live,
        correlation_id=None,
        reply_to=None,
        jms_type=None,
        type_tag="bytes",
        body=envelope.encode(),
        property_headers={COPY_ID_PROPERTY: copy_id},
        origin=origin,
    )
    return Publication(topic, store, outgoing, copy)


def publish(session: Session, outgoing: OutgoingMessage) -> None:
    """Publish ``outgoing`` live and store it as its topic's retained publication, atomically."""
    connection = session.connection
    adapter = connection.adapter
    publication = plan_publication(adapter, connection.connection_id, outgoing)
    store, topic = publication.store, publication.topic
    transaction = session.transaction_for_send()
    if transaction is not None:
        wire = connection.wire_for_use()
        try:
            for frame in publication.frames(adapter, transaction):
                if adapter.transactional_send_receipts:
                    wire.request(frame)
                else:
                    session.defer_receipt(wire.submit(frame, None))  # commit() waits for these
        except JMSException as exc:
            session.mark_rollback_only(half_sent(exc))
            raise
        if adapter.capabilities.retained == "jmslike":
            session.after_commit(lambda: remove_older(connection, store, topic))  # new copy first
    else:
        publish_atomically(connection, publication)


def half_sent(error: JMSException) -> str:
    """Why a transaction holding part of a failed retained send can only roll back."""
    return (
        f"a retained send in it failed ({error}), so it may hold the live message without its stored copy, "
        "or the copy without the message"
    )


def publish_atomically(connection: Connection, publication: Publication) -> None:
    """A retained send outside the application's transactions: in a private one, replacing the older copy
    where jmslike keeps only the latest (``jmslike.aio`` runs this on a private connection)."""
    adapter = connection.adapter
    replacing = publication.store if adapter.capabilities.retained == "jmslike" else None
    _send_atomically(connection, lambda tx: publication.frames(adapter, tx), replacing)


def remove_older(connection: Connection, store: Queue, topic: Topic) -> None:
    """After a transacted retained send committed: consume the copies it replaced (failure only logged)."""
    try:
        prune(connection, store)
    except JMSException as exc:
        # The publication is stored; an older copy left behind is never delivered (readers take the
        # last one) and the next retained send to this topic removes it.
        log.warning("could not remove older retained copies of %s: %s", topic.name, exc)


def _send_atomically(
    connection: Connection, frames: Callable[[str], list[Frame]], replacing: Queue | None = None
) -> None:
    """Both SENDs in a private STOMP transaction: the broker applies both or neither. With ``replacing``
    (brokers where jmslike keeps only the latest), the copies already in that store queue are consumed in
    the same transaction, so the replacement is atomic too."""
    adapter = connection.adapter
    wire = connection.wire_for_use()
    transaction = private_transaction_id(connection.connection_id)
    wire.request(adapter.transaction_frame("BEGIN", transaction))
    waiting: list[PendingReceipt] = []
    taken: tuple[SubscriptionSpec, list[IncomingMessage]] | None = None
    try:
        try:
            if replacing is not None:
                # Every copy committed so far is older than this one.
                taken = _take(connection, replacing, browse(connection, replacing))
                for incoming in taken[1] if taken is not None else []:
                    wire.request(adapter.ack_frame(incoming, transaction))
            for frame in frames(transaction):
                if adapter.transactional_send_receipts:
                    wire.request(frame)
                else:
                    waiting.append(wire.submit(frame, None))  # answered only after COMMIT
        except ConnectionLostException:
            raise  # an uncommitted transaction dies with its connection: nothing was published
        except JMSException:
            try:
                wire.request(adapter.transaction_frame("ABORT", transaction))
            except JMSException:
                log.debug("ABORT of a failed retained send failed", exc_info=True)
            finally:
                wire.discard(waiting)  # never answered once aborted (Wire.discard)
            raise
        try:
            wire.request(adapter.transaction_frame("COMMIT", transaction))
        except ConnectionLostException as exc:
            raise ConnectionLostException(COMMIT_LOST) from exc
    finally:
        if taken is not None:  # after COMMIT or ABORT: what was not acknowledged goes back to the queue
            _unsubscribe(connection, taken[0])
    deadline = time.monotonic() + connection.config.receipt_timeout_ms / 1000
    for item in waiting:
        check_confirmed(item.wait(max(0.0, deadline - time.monotonic())), item.error)


def private_transaction_id(connection_id: str) -> str:
    """The STOMP transaction of a retained send outside the application's transactions."""
    return f"{connection_id}-retain{next(_transaction_ids)}"


def check_confirmed(answered: bool, error: JMSException | None) -> None:
    """A SEND of a committed private transaction that the broker answers only after COMMIT (RabbitMQ)."""
    if not answered:
        raise JMSException("the broker did not confirm the retained publication in time")
    if error is not None:
        raise JMSException(f"the broker refused the retained publication: {error}") from error


# -- browsing and consuming the store, below the consumer API ---------------------------------------------


class _Sink:
    """Routed to by the connection like a consumer: collects a store subscription's messages."""

    def __init__(self, spec: SubscriptionSpec, buffer: BufferGauge) -> None:
        self.spec = spec
        self._buffer = buffer  # no consumer's messages: while it waits, the wire reads on (jmslike.flow)
        self._cond = threading.Condition()
        self._items: list[IncomingMessage] = []
        self._ended = False
        self.closed = False  # read by the connection (active_durable_names, re-subscription)

    @property
    def ended(self) -> bool:
        """The broker said the browse is complete."""
        return self._ended

    @property
    def received(self) -> int:
        """How many messages arrived so far."""
        return len(self._items)

    def enqueue(self, incoming: IncomingMessage) -> None:  # receiver thread
        with self._cond:
            if incoming.browser_end:
                self._ended = True
            else:
                self._items.append(incoming)
            self._cond.notify_all()

    def wait(self, done: Callable[[], bool], deadline: float) -> list[IncomingMessage]:
        with self._cond, self._buffer.reading():
            while not done() and time.monotonic() < deadline:
                self._cond.wait(max(0.0, deadline - time.monotonic()))
            return list(self._items)


def _subscribe(connection: Connection, spec: SubscriptionSpec) -> _Sink:
    sink = _Sink(spec, connection.buffer)
    connection.register_consumer(sink)  # type: ignore[arg-type]
    try:
        connection.adapter.subscribe(connection.wire_for_use(), spec)
    except BaseException:
        connection.unregister_consumer_id(spec.sub_id)
        raise
    return sink


def _unsubscribe(connection: Connection, spec: SubscriptionSpec) -> None:
    connection.unregister_consumer_id(spec.sub_id)
    try:
        connection.adapter.detach(connection.wire_for_use(), spec, list)
    except JMSException:
        log.debug("detaching a retained-store subscription failed", exc_info=True)


def browse(connection: Connection, store: Queue) -> list[IncomingMessage]:
    """A STOMP browse of ``store`` (a broker wildcard allowed), in queue order; consumes nothing."""
    spec = SubscriptionSpec(
        sub_id=f"{connection.connection_id}-retained-{next(_sub_ids)}",
        destination=store,
        browser=True,
        prefetch=connection.config.prefetch,
    )
    sink = _subscribe(connection, spec)
    try:
        items = sink.wait(lambda: sink.ended, time.monotonic() + BROWSE_WAIT_S)
        if not sink.ended:
            raise JMSException(f"the broker did not finish browsing {store.name} within {BROWSE_WAIT_S:.0f}s")
        return items
    finally:
        _unsubscribe(connection, spec)


def prune(connection: Connection, store: Queue) -> int:
    """Consume every copy in ``store`` that has a later copy behind it; returns how many went."""
    copies = browse(connection, store)
    taken = _take(connection, store, copies[:-1])
    if taken is None:
        return 0
    spec, got = taken
    try:
        wire = connection.wire_for_use()
        for incoming in got:
            wire.request(connection.adapter.ack_frame(incoming, None))
        return len(got)
    finally:
        _unsubscribe(connection, spec)


def _take(
    connection: Connection, store: Queue, copies: list[IncomingMessage]
) -> tuple[SubscriptionSpec, list[IncomingMessage]] | None:
    """Subscribe to ``store`` for exactly the browsed ``copies`` (selector on their ids) and return the
    subscription with those that arrived, unacknowledged; None when there is nothing to take. The caller
    acknowledges (in its transaction or not) and then unsubscribes, which gives back what it did not ack."""
    wanted = [c.headers.get(COPY_ID_PROPERTY, "") for c in copies]
    wanted = [rid for rid in wanted if rid and "'" not in rid][:100]
    if not wanted:
        return None
    quoted = ", ".join(f"'{rid}'" for rid in wanted)
    spec = SubscriptionSpec(
        sub_id=f"{connection.connection_id}-retained-{next(_sub_ids)}",
        destination=store,
        selector=f"{COPY_ID_PROPERTY} IN ({quoted})",
        prefetch=len(wanted),
    )
    sink = _subscribe(connection, spec)
    try:
        deadline = time.monotonic() + PRUNE_WAIT_S
        complete = lambda: sink.received >= len(wanted)  # noqa: E731
        got = sink.wait(complete, min(deadline, time.monotonic() + PRUNE_SETTLE_S))
        while len(got) < len(wanted) and time.monotonic() < deadline:
            # Missing ones are most likely being taken by a concurrent publisher: wait on only while
            # they are still in the queue.
            missing = set(wanted) - {c.headers.get(COPY_ID_PROPERTY) for c in got}
            if not missing & {c.headers.get(COPY_ID_PROPERTY) for c in browse(connection, store)}:
                break
            got = sink.wait(complete, min(deadline, time.monotonic() + PRUNE_SETTLE_S))
    except BaseException:
        _unsubscribe(connection, spec)
        raise
    return spec, got


# -- on-request-only subscriptions and request update -------------------------------------------------------


def park(adapter: Adapter, spec: SubscriptionSpec) -> tuple[Topic, SubscriptionSpec]:
    """A subscription on request only: the topic it asks for, and its spec bound to that topic's parking
    topic instead (the consumer of either API answers ``getTopic()`` with the first)."""
    _require(adapter, "subscriptions on request only")
    topic = spec.destination
    if not isinstance(topic, Topic) or isinstance(topic, TemporaryTopic):
        raise InvalidDestinationException(
            f"a subscription on request only needs a (non-temporary) Topic, got {topic}"
        )
    store_queue(topic, adapter)  # refuses a topic too long for a store, now rather than on request
    parking = Topic(ON_REQUEST_PREFIX + topics.canonical(topic.name))
    return topic, dataclasses.replace(spec, destination=parking)


class OnRequestTopic:
    """What an on-request-only consumer of either API answers: the topic it asked for, not the parking topic
    its subscription is bound to (:func:`park`)."""

    _requested: Topic
    check_open: Callable[[], None]  # the consumer's (this class comes first in its bases)

    def getDestination(self) -> Destination:
        return self._requested

    def getTopic(self) -> Topic:
        """The topic asked for; IllegalStateException once closed, as a TopicSubscriber's getTopic."""
        self.check_open()
        return self._requested

    @property
    def onRequestOnly(self) -> bool:
        return True


def request_update(consumer: MessageConsumer, correlation_id: str | None = None) -> int:
    """Deliver to ``consumer`` the current retained publication of every topic it matches; see module doc.
    ``correlation_id`` replaces the publications' JMSCorrelationID (the subscriber's own tag)."""
    consumer.check_open()
    connection = consumer.session.connection
    topic = check_update_request(
        connection.adapter,
        consumer.getDestination(),
        consumer.spec.client_id,
        connection.getClientID(),
        correlation_id,
    )
    chosen = choose_updates(
        connection.adapter,
        consumer.spec,
        consumer.selector,
        consumer.getMessageSelector(),
        topic,
        read_bodies(connection, topic),
        connection.connection_id,
        correlation_id,
    )
    for incoming in chosen:
        consumer.enqueue(incoming)
    return len(chosen)


def check_update_request(
    adapter: Adapter,
    topic: Destination,
    owner: str | None,
    client_id: str | None,
    correlation_id: str | None,
) -> Topic:
    """The topic a ``requestUpdate`` reads (the consumer's ``getDestination()``), once the request is allowed:
    the broker keeps retained publications, the subscription is to a topic, this connection (``client_id``)
    is its ``owner``."""
    if correlation_id is not None and (
        not isinstance(correlation_id, str) or any(ord(ch) < 32 for ch in correlation_id)
    ):
        raise JMSException(
            f"a correlation ID must be a string without control characters, got {correlation_id!r}"
        )
    _require(adapter, "request update (retained publications)")
    if not isinstance(topic, Topic) or isinstance(topic, TemporaryTopic):
        raise InvalidDestinationException(
            f"requestUpdate() needs a subscription to a (non-temporary) Topic; this consumer reads {topic}"
        )
    if owner != client_id:
        raise JMSSecurityException(
            f"only the owner of a subscription may request an update for it: it belongs to client ID "
            f"{owner!r}, this connection is {client_id!r}"
        )
    return topic


def read_bodies(connection: Connection, topic: Topic) -> list[bytes]:
    """The stored copies of every topic ``topic`` matches, in each store's order (``jmslike.aio`` reads them
    on a private connection)."""
    adapter = connection.adapter
    store = store_queue(topic, adapter)
    return adapter.read_retained(connection.wire_for_use(), store, lambda q: browse(connection, q))


def choose_updates(
    adapter: Adapter,
    spec: SubscriptionSpec,
    selector: Selector | None,
    selector_text: str | None,
    topic: Topic,
    bodies: list[bytes],
    own_origin: str,
    correlation_id: str | None,
) -> list[IncomingMessage]:
    """What a ``requestUpdate`` delivers: per matched topic its latest copy, unless that clears the topic,
    has expired, is the subscriber's own under noLocal or fails ``selector``; NoRetainedMessageException,
    naming the application's ``selector_text``, when nothing is left."""
    syntax = adapter.topic_syntax
    pattern = topics.from_broker(topics.to_broker(topic.name, syntax), syntax)
    latest: dict[str, Envelope] = {}
    for body in bodies:  # in each store queue's order: the last copy of a topic is its latest
        envelope = Envelope.decode(body)
        if envelope is not None and topics.matches(pattern, envelope.topic):
            latest[envelope.topic] = envelope
    now = int(time.time() * 1000)
    chosen: list[IncomingMessage] = []
    for name in sorted(latest):
        envelope = latest[name]
        if envelope.clear:
            continue
        if spec.no_local and envelope.origin == own_origin:
            continue
        incoming = _incoming(adapter, spec.sub_id, envelope, correlation_id)
        if incoming.expired(now):
            continue
        if selector is not None and not selector.matches(functools.partial(selector_value, incoming)):
            continue
        chosen.append(incoming)
    if not chosen:
        raise NoRetainedMessageException(
            f"no retained publication for topic {topic.name!r}"
            + (f" passes the selector {selector_text!r}" if selector_text else "")
            + " (none was published with retain=True, or it was cleared or has expired)"
        )
    return chosen


def _incoming(
    adapter: Adapter, sub_id: str, envelope: Envelope, correlation_id: str | None = None
) -> IncomingMessage:
    """The stored publication as a delivery to ``sub_id``, marked retained, with nothing to acknowledge."""
    headers = dict(envelope.headers)
    headers["subscription"] = sub_id
    if correlation_id is not None:
        headers["correlation-id"] = correlation_id
        encoded = [n for n in headers.get(ENCODED_HEADER, "").split(",") if n and n != "correlation-id"]
        headers.pop(ENCODED_HEADER, None)
        if encoded:
            headers[ENCODED_HEADER] = ",".join(encoded)
    headers[RETAINED_PROPERTY] = "true"
    sidecar = headers.get(PTYPES_HEADER, "")
    headers[PTYPES_HEADER] = (
        f"{sidecar};{RETAINED_PROPERTY}=boolean" if sidecar else f"{RETAINED_PROPERTY}=boolean"
    )
    incoming = adapter.decode_message(Frame("MESSAGE", headers, envelope.body))
    return dataclasses.replace(incoming, sub_id=sub_id, ack_id="", redelivered=False, local=True)

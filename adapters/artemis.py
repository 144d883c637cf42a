"""ActiveMQ Artemis (2.x) over STOMP: the dialect, and the management calls that make it keep JMS rules.

Facts this adapter relies on, read in ``apache/activemq-artemis`` (``artemis-protocols/artemis-stomp-protocol``
unless another module is named) and in ``docs/user-manual/stomp.adoc`` / ``management.adoc``:

- Addresses carry no ``/queue/`` ``/topic/`` prefix unless the acceptor defines ``anycastPrefix`` /
  ``multicastPrefix``. The routing type comes from ``destination-type`` on SEND and ``subscription-type``
  on SUBSCRIBE (``VersionedStompFrameHandler.onSend/onSubscribe`` -> ``getRoutingType``); jmslike always sends
  them, so it works with and without acceptor prefixes. A SUBSCRIBE is a topic subscription only when the
  address has the MULTICAST routing type alone (``StompSession.addSubscription``): a name must be either a
  queue or a topic, not both.
- A durable subscription is the queue ``<client-id>.<name>`` (``StompSession.addSubscription``), named by
  ``durable-subscription-name`` (newer 2.x), ``durable-subscriber-name`` (deprecated, every version) or
  ``activemq.subscriptionName``; jmslike sends the first two. An existing queue is reused as it is: Artemis
  never compares topic or selector, and lets any number of consumers attach. jmslike therefore manages the
  queue itself through the management address (compare, destroy, create with ``max-consumers=1``), so the
  broker refuses a second consumer atomically ("Maximum Consumer Limit Reached").
- ACK ignores ``transaction`` and is applied at once (``StompFrameHandlerV12.onAck`` logs
  ``stompTXAckNorSupported``; ``StompSession.acknowledge`` commits). NACK is ACK (``StompFrameHandlerV11.onNack``):
  the message is discarded. jmslike never sends NACK; see docs/artemis.md for the transacted-receive guarantee.
- ``consumer-window-size`` is in bytes of encoded frames; credits come back on ACK; 0 means one message in
  flight (``StompSession.addSubscription``/``acknowledge``).
- ``message-id`` is ``consumerID,messageID`` in the source read (``VersionedStompFrameHandler.createMessageFrame``)
  and the core messageID alone on 2.21 (seen: ``25``); jmslike's own ``jmslike-id`` is the JMSMessageID, and a
  foreign message (a Java client's: its JMSMessageID is the core userID, which STOMP never carries) gets
  ``ID:artemis-<messageID>``, stable across redeliveries.
- Every non-empty MESSAGE carries ``content-length`` on STOMP 1.1/1.2 (``StompFrame.toActiveMQBuffer``), so
  text and bytes cannot be told apart from the frame; on SEND, ``content-length`` makes a core BytesMessage and
  its absence a TextMessage (``onSend``).
- Every SEND header that is not a known field becomes a message property and comes back as a header, and
  core-internal properties (``_AMQ_*``, ``__AMQ_CID``) are sent to STOMP consumers
  (``StompUtils.copyStandardHeadersFromFrameToMessage`` / ``copyStandardHeadersFromMessageToFrame``).
- Selectors are core filters (``FilterImpl``): ``AMQPriority``, ``AMQTimestamp``, ``AMQExpiration``,
  ``AMQDurable`` ('DURABLE' / 'NON_DURABLE'), ``AMQUserID``; ``JMSCorrelationID`` and ``JMSType`` are plain
  properties. The native ``no-local`` header is broken (``StompProtocolManager.subscribe`` resets the flag
  that stamps sends on every SUBSCRIBE), so jmslike stamps its sends and filters itself.
- Client IDs are not checked for uniqueness. jmslike claims one by consuming from a ``max-consumers=1`` lock
  queue for the connection's lifetime.
- Connections that send nothing for ``connection-ttl`` (60 s by default) are closed; with a client heart-beat
  the TTL becomes heart-beat x ``heartBeatToConnectionTtlModifier`` (2.0) (``StompFrameHandlerV11.HeartBeater``,
  ``StompProtocolManager.createConnectionEntry``).
- Management: queues are created, compared and destroyed through the ``activemq.management`` address, on a
  short-lived STOMP connection of its own; :mod:`jmslike.adapters.artemis_management` holds those calls and says how
  Artemis reads them.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Final

from jmslike import selector as selectors
from jmslike.adapters.stomp_core import Version
from jmslike.config import ConnectionConfig
from jmslike.contract import (
    RETAINED_STORE_PREFIX,
    Browse,
    Capabilities,
    Frame,
    IncomingMessage,
    OutgoingMessage,
    SelectorSupport,
    SubscriptionRegistry,
    SubscriptionSpec,
    Wire,
)
from jmslike.destinations import TEMPORARY_PREFIX, Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.exceptions import (
    IllegalStateException,
    InvalidClientIDException,
    InvalidDestinationException,
    JMSException,
    UnsupportedFeatureException,
)
from jmslike.selector import And, Comparison, Constant, Expression, Identifier, In, IsNull, Not, Or
from jmslike.topics import to_broker

from . import artemis_retained
from .artemis_admin import ArtemisRegistry
from .artemis_management import (
    ANYCAST,
    BROKER_RESOURCE,
    CLIENT_ID_LOCK_PREFIX,
    DESTINATION_TYPE_HEADER,
    ERROR_RULES,
    MULTICAST,
    STOMP_VERSION,
    SUBSCRIPTION_TYPE_HEADER,
    ManagementClient,
    ManagementFactory,
    ManagementSession,
    QueueInfo,
    client_id_lock_queue,
    create_queue,
    destroy_queue,
    durable_queue_name,
    lookup_queue,
    management_failure,
    normal_filter,
    queue_configuration,
    shared_queue_name,
)
from .dialect import DELIVERY_TIME_HEADER, ID_HEADER, STANDARD_HEADERS, StompDialect

# Artemis's STOMP header for scheduled delivery after a delay, in ms (StompUtils).
SCHEDULED_DELAY_HEADER = "AMQ_SCHEDULED_DELAY"

log = logging.getLogger(__name__)

WINDOW_HEADER: Final = "consumer-window-size"
DURABLE_NAME_HEADERS: Final = ("durable-subscription-name", "durable-subscriber-name")

# Stamps on every SEND, so that noLocal can be a broker-side filter (selector identifiers: no '-').
CONNECTION_HEADER: Final = "jmslike_conn"
CLIENT_ID_HEADER: Final = "jmslike_cid"
# The producer's JMSTimestamp: Artemis replaces STOMP's ``timestamp`` with its own arrival time (seen on
# 2.21: the received timestamp was 1 ms after the sender's), and JMS says it is the time of the send call.
SENT_AT_HEADER: Final = "jmslike-timestamp"

# Artemis's STOMP window is bytes of encoded frames; jmslike's prefetch is messages. A frame of a small
# jmslike message (headers included) is about this size; prefetch <= 1 means one message in flight.
ASSUMED_FRAME_BYTES: Final = 2048
_MAX_WINDOW: Final = 2**31 - 1

LOCK_SUBSCRIPTION_ID: Final = "jmslike-client-id-lock"

# Temporary destinations: jmslike names its own ``jmslike-tmp-<hex>`` (jmslike.destinations.TEMPORARY_PREFIX)
# and the broker uses that name as a global address, so another connection may send to it by name.

# Core-internal properties that Artemis hands to STOMP consumers; never user properties.
INTERNAL_PROPERTY_PREFIXES: Final = ("_AMQ_", "__AMQ_", "_HQ_")
GROUP_ID_PROPERTY: Final = "_AMQ_GROUP_ID"

# JMS header fields in selectors -> Artemis core filter identifiers (FilterConstants / FilterImpl).
SELECTOR_RENAMES: Final[Mapping[str, str]] = {
    "JMSPriority": "AMQPriority",
    "JMSTimestamp": "AMQTimestamp",
    "JMSExpiration": "AMQExpiration",
    "JMSDeliveryMode": "AMQDurable",
    "JMSMessageID": "AMQUserID",
    "JMSXGroupID": GROUP_ID_PROPERTY,
}
# Header fields every core message has, so a selector never finds them missing.
ALWAYS_PRESENT: Final = frozenset({"JMSPriority", "JMSTimestamp", "JMSExpiration", "JMSDeliveryMode"})
DELIVERY_MODE_LITERALS: Final[Mapping[str, str]] = {"PERSISTENT": "DURABLE", "NON_PERSISTENT": "NON_DURABLE"}

_MAX_CONSUMERS = re.compile(r"Maximum Consumer Limit Reached", re.I)


# -- pure mappings ------------------------------------------------------------------------------------


def routing_type(destination: Destination) -> str:
    """ANYCAST for queues, MULTICAST for topics (temporary ones included)."""
    if isinstance(destination, Topic):
        return MULTICAST
    if isinstance(destination, Queue):
        return ANYCAST
    raise InvalidDestinationException(f"ActiveMQ Artemis cannot address {destination!r}")


def consumer_window_size(prefetch: int) -> int:
    """``consumer-window-size`` (bytes) for a prefetch in messages: 0 (one message in flight) for
    prefetch <= 1, else ``prefetch`` frames of :data:`ASSUMED_FRAME_BYTES`."""
    if prefetch <= 1:
        return 0
    return min(prefetch * ASSUMED_FRAME_BYTES, _MAX_WINDOW)


def _map_delivery_mode_literals(node: Expression) -> Expression:
    """``JMSDeliveryMode = 'PERSISTENT'`` compares AMQDurable with 'DURABLE' on Artemis: map the literals."""

    def literal(value: Expression) -> Expression:
        if isinstance(value, Constant) and isinstance(value.value, str):
            return Constant(DELIVERY_MODE_LITERALS.get(value.value, value.value))
        return value

    def is_mode(value: Expression) -> bool:
        return isinstance(value, Identifier) and value.name == "JMSDeliveryMode"

    match node:
        case Comparison(operator, left, right):
            if is_mode(left):
                return Comparison(operator, left, literal(right))
            if is_mode(right):
                return Comparison(operator, literal(left), right)
            return node
        case In(operand, values, negated) if operand.name == "JMSDeliveryMode":
            return In(operand, tuple(DELIVERY_MODE_LITERALS.get(v, v) for v in values), negated)
        case Not(operand):
            return Not(_map_delivery_mode_literals(operand))
        case And(operands):
            return And(tuple(_map_delivery_mode_literals(o) for o in operands))
        case Or(operands):
            return Or(tuple(_map_delivery_mode_literals(o) for o in operands))
        case _:
            return node


def _null_safe(node: Expression, negated: bool = False) -> Expression:
    """``node`` (negated if asked) with every ``=`` / ``<>`` on a value that may be missing made exact.

    Artemis's core filter makes ``p = 'x'`` FALSE and ``p <> 'x'`` TRUE for a message without ``p``, where
    JMS says UNKNOWN: ``NOT (color = 'red')`` and ``color <> 'red'`` matched a message without ``color``
    (raw STOMP control on 2.21; NOT IN and NOT LIKE were right). So NOT is pushed down to the leaves (De
    Morgan: ``NOT (p = 'x')`` becomes ``p <> 'x'``), and each ``<>`` gets ``IS NOT NULL`` guards for its
    identifiers that may be missing. Without NOT above it, a leaf that is FALSE where JMS says UNKNOWN
    changes no outcome: AND and OR are TRUE in the same cases either way."""
    match node:
        case Not(operand):
            return _null_safe(operand, not negated)
        case And(operands):
            parts = tuple(_null_safe(o, negated) for o in operands)
            return Or(parts) if negated else And(parts)
        case Or(operands):
            parts = tuple(_null_safe(o, negated) for o in operands)
            return And(parts) if negated else Or(parts)
        case Comparison(operator, left, right) if operator in ("=", "<>"):
            if negated:
                operator = "<>" if operator == "=" else "="
            guards = tuple(
                IsNull(side, True)
                for side in (left, right)
                if operator == "<>" and isinstance(side, Identifier) and side.name not in ALWAYS_PRESENT
            )
            comparison = Comparison(operator, left, right)
            return And((comparison, *guards)) if guards else comparison
        case _:
            return Not(node) if negated else node


def artemis_selector(text: str | None) -> str | None:
    """A JMS selector as an Artemis core filter: header names renamed (:data:`SELECTOR_RENAMES`), the
    JMSDeliveryMode literals mapped (:data:`DELIVERY_MODE_LITERALS`), and comparisons with missing values
    made exact (:func:`_null_safe`). ``text`` is already valid (the session parsed it); None or blank stays
    None."""
    if text is None or not text.strip():
        return None
    parsed = selectors.parse(text)
    # render() renames identifiers only; the rewrites need the tree (see docs/artemis.md).
    mapped = selectors.Selector(parsed.text, _null_safe(_map_delivery_mode_literals(parsed.expression)))
    return mapped.render(lambda name: SELECTOR_RENAMES.get(name, name))


def client_side_filter(text: str) -> str:
    """The core filter of a topic subscription whose selector jmslike evaluates (``selector_placement``
    "client"): every jmslike message passes (it carries :data:`CONNECTION_HEADER`; jmslike knows its property
    types from ``jmslike-ptypes`` and evaluates the selector itself), and the broker evaluates the selector on
    every other message, whose properties are still typed in the core message (a Java peer's ``int`` becomes
    the string "42" only on its way to STOMP). The jmslike test comes first: Artemis's OR stops at TRUE, so the
    selector is never computed on a jmslike message's string properties. Deterministic (it is compared with an
    existing durable subscription's filter) and it names the selector, so a changed selector is seen."""
    return f"{CONNECTION_HEADER} IS NOT NULL OR ({artemis_selector(text)})"


def no_local_clause(header: str, value: str) -> str:
    """Filter text that drops messages stamped with ``header = value`` and keeps unstamped ones."""
    return f"{header} IS NULL OR {header} <> {selectors.quote_string(value)}"


def combine_filters(*parts: str | None) -> str | None:
    """AND of the non-empty parts, each parenthesised; None if there are none."""
    present = [p for p in parts if p]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    return " AND ".join(f"({p})" for p in present)


def untagged_type(headers: Mapping[str, str], body: bytes) -> str:
    """The message type of a message without ``jmslike-type`` (a Java or foreign STOMP peer's).

    Artemis does not say: every MESSAGE frame has ``content-length``. A ``content-type`` of ``text/*`` means
    text; otherwise a body that is valid UTF-8 without NUL characters is taken for a TextMessage (what Java
    TextMessages always are) and anything else for a BytesMessage (so the payload is never lost).
    """
    content_type = headers.get("content-type", "").lower()
    if content_type.startswith("text/"):
        return "text"
    if b"\x00" in body:
        return "bytes"
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return "bytes"
    return "text"


def stable_message_id(message_id: str | None) -> str | None:
    """A JMSMessageID for a foreign message: ``ID:`` (JMS requires the prefix) and the core messageID, without
    the consumer part some versions put before it, which changes on redelivery to another consumer."""
    if not message_id:
        return None
    _, sep, core_id = message_id.partition(",")
    return f"ID:artemis-{core_id if sep else message_id}"


# -- subscription queues, through the management address (jmslike.adapters.artemis_management) ----------------


@dataclass(frozen=True)
class DurablePlan:
    """What to do with a durable subscription's queue before subscribing."""

    destroy: bool
    create: bool
    limit_consumers: bool
    in_use: bool


def plan_durable(existing: QueueInfo | None, address: str, filter_string: str | None) -> DurablePlan:
    """Pure decision: reuse an identical subscription, recreate a changed one (JMS: change = delete +
    create), refuse while in use, or restrict an existing unrestricted queue to one consumer."""
    if existing is None:
        return DurablePlan(destroy=False, create=True, limit_consumers=False, in_use=False)
    changed = existing.address != address or normal_filter(existing.filter_string) != normal_filter(
        filter_string
    )
    in_use = existing.consumer_count > 0
    if changed:
        return DurablePlan(destroy=not in_use, create=not in_use, limit_consumers=False, in_use=in_use)
    if existing.max_consumers != 1:
        return DurablePlan(destroy=False, create=False, limit_consumers=not in_use, in_use=in_use)
    return DurablePlan(destroy=False, create=False, limit_consumers=False, in_use=False)


def prepare_shared(
    session: ManagementSession, spec: SubscriptionSpec, address: str, filter_string: str | None
) -> str:
    """Make the shared subscription's queue exist with ``filter_string`` on ``address``, any number of
    consumers; a changed definition replaces it only without consumers (JMS 2.0 §8.3). Returns its name."""
    assert spec.shared_name is not None
    name = shared_queue_name(spec.client_id, spec.shared_name, spec.shared_durable)
    kind = "shared durable" if spec.shared_durable else "shared"
    unshared = durable_queue_name(spec.client_id, spec.shared_name) if spec.client_id is not None else None
    if spec.shared_durable and unshared is not None and lookup_queue(session, unshared) is not None:
        raise JMSException(
            f"an unshared durable subscription {spec.shared_name!r} of client ID {spec.client_id!r} exists, "
            "so a shared one cannot have that name (JMS 2.0 §8.3.4); unsubscribe it first or pick another"
        )
    existing = lookup_queue(session, name)
    if existing is not None:
        changed = existing.address != address or existing.filter_string != normal_filter(filter_string)
        if not changed:
            return name
        if existing.consumer_count > 0:
            raise JMSException(
                f"{kind} subscription {spec.shared_name!r} exists with another topic or selector and has active "
                "consumers; close them (and unsubscribe a durable one) before changing it"
            )
        destroy_queue(session, name)
    config = json.loads(
        queue_configuration(
            name, address, MULTICAST, durable=spec.shared_durable, filter_string=filter_string
        )
    )
    if not spec.shared_durable:  # lives while it has consumers (JMS 2.0 §8.3.2)
        config.update({"auto-delete": True, "auto-delete-delay": 0, "auto-delete-message-count": -1})
    create_queue(session, json.dumps(config, separators=(",", ":"), sort_keys=True), ignore_if_exists=True)
    return name


def prepare_durable(
    session: ManagementSession, client_id: str, name: str, address: str, filter_string: str | None
) -> None:
    """Make ``<client_id>.<name>`` a queue on ``address`` with ``filter_string`` and at most one consumer."""
    queue_name = durable_queue_name(client_id, name)
    existing = lookup_queue(session, queue_name)
    plan = plan_durable(existing, address, filter_string)
    if plan.in_use:
        raise JMSException(
            f"durable subscription {name!r} of client {client_id!r} already has an active consumer "
            "(on another connection); close it first (a durable subscription has one consumer at a time)"
        )
    if plan.destroy:
        log.info("durable subscription %r changed topic or selector: deleting and recreating it", queue_name)
        destroy_queue(session, queue_name)
    if plan.create:
        config = queue_configuration(
            queue_name, address, MULTICAST, durable=True, filter_string=filter_string, max_consumers=1
        )
        create_queue(session, config, ignore_if_exists=True)
    if plan.limit_consumers:
        update = json.dumps({"name": queue_name, "max-consumers": 1}, separators=(",", ":"))
        reply = session.invoke(BROKER_RESOURCE, "updateQueue", update)
        if not reply.succeeded:
            log.warning(
                "could not limit durable subscription queue %r to one consumer (%s); a second consumer on "
                "another connection would not be refused",
                queue_name,
                reply.text,
            )


# -- the adapter --------------------------------------------------------------------------------------


class ArtemisAdapter(StompDialect):
    """ActiveMQ Artemis. One instance per jmslike connection (the registry makes a fresh one each time)."""

    name = "artemis"
    display_name = "ActiveMQ Artemis"
    stomp_version: Version = STOMP_VERSION
    capabilities = Capabilities(
        durable_subscriptions=True,
        selectors="broker",
        no_local=True,
        browsing=False,  # no STOMP browser on Artemis
        transactions=True,
        temporary_destinations=True,  # emulated: see docs/artemis.md for their lifetime
        priorities=True,
        expiry=True,
        map_messages=False,  # no MapMessage conversion for STOMP peers
        client_id_enforced=True,  # by a max-consumers=1 lock queue, through management
        single_durable_consumer=True,  # subscription queues are created with max-consumers=1
        # Only after a connection failure: a message handed back by closing its consumer comes back
        # redelivered:false (Artemis decrements the delivery count on a clean close; docs/artemis.md).
        broker_redelivery_flag=False,
        admin=True,  # records in a last-value queue, read and removed through management (artemis_admin)
        transactional_acks=False,  # Artemis applies an ACK at once, even inside a transaction
        # A last-value, non-destructive queue per topic, created through management (artemis_retained).
        retained="broker",
        # The STOMP protocol manager turns AMQ_SCHEDULED_DELAY into the core scheduled delivery time.
        delivery_delay=True,
        # A queue per subscription that every consumer attaches to by its fully qualified name, managed
        # through the management address (prepare_shared).
        shared_subscriptions=True,
        verified_with="2.21.0",
    )
    reserved_headers = STANDARD_HEADERS | {
        SCHEDULED_DELAY_HEADER,
        "_AMQ_SCHED_DELIVERY",
        DESTINATION_TYPE_HEADER,
        SUBSCRIPTION_TYPE_HEADER,
        WINDOW_HEADER,
        *DURABLE_NAME_HEADERS,
        "activemq.subscriptionName",
        "no-local",
        "JMSXUserID",
        "ingress-timestamp",
        "amqMessageId",
        CONNECTION_HEADER,
        CLIENT_ID_HEADER,
        SENT_AT_HEADER,
    }
    # An Artemis address is global: a temporary destination's name may be used by other connections (they
    # get it through JMSReplyTo); only consuming is reserved to the owner, which the session checks.
    temporary_names_are_local = False

    def delay_headers(self, delay_ms: int) -> dict[str, str]:
        return {SCHEDULED_DELAY_HEADER: str(delay_ms)}

    def __init__(self, management: ManagementFactory | None = None) -> None:
        self._management_factory = management
        self._config: ConnectionConfig | None = None
        self._host: tuple[str, int] | None = None
        self._client_id: str | None = None
        self._origin = uuid.uuid4().hex
        self._sub_kinds: dict[str, type[Destination]] = {}
        # Non-durable topic subscriptions: ``ack:auto``, so their messages are never acknowledged by jmslike.
        # Artemis gives every copy of a message the same ``ack`` id on one connection, and keeps one pending
        # ACK per id: the second subscription's ACK of that id is an ERROR that closes the connection
        # (AMQ339025, seen with a raw STOMP client on 2.21). A non-durable subscription's queue dies with
        # its consumer, so acknowledging on delivery loses nothing JMS keeps; jmslike still redelivers
        # locally on recover() and rollback.
        self._acked_on_delivery: set[str] = set()
        self._stores: set[str] = set()  # retained-publication stores this connection made sure exist
        self._warned_heartbeat = False

    # -- connection -----------------------------------------------------------------------------------

    def connect_headers(self, config: ConnectionConfig, client_id: str | None) -> dict[str, str]:
        self._config = config
        if config.heartbeat_ms == 0 and not self._warned_heartbeat:
            self._warned_heartbeat = True
            log.warning(
                "heartbeat_ms=0 on Artemis: the broker closes a STOMP connection that sends nothing for its "
                "connection-ttl (60 s by default); keep heart-beats on or raise connectionTtl on the acceptor"
            )
        return super().connect_headers(config, client_id)

    def on_connected(self, wire: Wire, connected: Mapping[str, str], client_id: str | None) -> None:
        self._host = wire.host
        server = connected.get("server", "")
        if server and "Artemis" not in server:
            log.warning("artemis:// URL, but the broker says it is %r", server)
        if client_id is not None:
            self._claim_client_id(wire, client_id)
        self._client_id = client_id

    def _claim_client_id(self, wire: Wire, client_id: str) -> None:
        """Consume from a one-consumer queue named after the client ID for as long as this connection
        lives; a second live connection with the same ID is refused by the broker."""
        lock = client_id_lock_queue(client_id)
        with self._management() as session:
            create_queue(
                session,
                queue_configuration(lock, lock, ANYCAST, durable=False, max_consumers=1),
                ignore_if_exists=True,
            )
        try:
            wire.request(
                Frame(
                    "SUBSCRIBE",
                    {
                        "id": LOCK_SUBSCRIPTION_ID,
                        "destination": lock,
                        SUBSCRIPTION_TYPE_HEADER: ANYCAST,
                        "ack": "client-individual",
                        WINDOW_HEADER: "0",
                    },
                )
            )
        except JMSException as exc:
            if _MAX_CONSUMERS.search(str(exc)):
                raise InvalidClientIDException(
                    f"client ID {client_id!r} is in use by another live connection (Artemis lock queue "
                    f"{lock!r} already has its consumer); use another ID or close the other connection"
                ) from exc
            raise

    def _management(self) -> AbstractContextManager[ManagementSession]:
        if self._management_factory is not None:
            return self._management_factory()
        if self._config is None:
            raise IllegalStateException("the Artemis adapter is not connected")
        hosts = list(self._config.hosts)
        if self._host is not None:
            hosts = [self._host, *(h for h in hosts if h != self._host)]
        return ManagementClient(self._config, hosts, self.error_for)

    def read_retained(self, wire: Wire, store: Queue, browse: Browse) -> list[bytes]:
        """No STOMP browser: the stores' copies are listed through the management address."""
        with self._management() as session:
            return artemis_retained.read_retained(session, store.name, self.topic_syntax)

    def subscription_registry(self) -> SubscriptionRegistry:
        return ArtemisRegistry(self._management)

    # -- destinations ---------------------------------------------------------------------------------

    def destination_name(self, destination: Destination) -> str:
        routing_type(destination)  # refuses kinds Artemis cannot address
        if type(destination) is Topic:  # the portable notation (jmslike.topics) in Artemis's syntax
            return to_broker(destination.name, self.topic_syntax)
        return destination.name

    def reply_to_name(self, destination: Destination) -> str:
        """JMSReplyTo as the Artemis JMS client writes it (``ActiveMQDestination.toPrefixedName``)."""
        return f"{destination.kind}://{self.destination_name(destination)}"

    def parse_destination(self, name: str) -> Destination | None:
        """A JMSReplyTo value: ``queue://``, ``topic://``, ``temp-queue://``, ``temp-topic://`` (Artemis JMS
        and jmslike), or a plain address (foreign STOMP clients), taken for a queue."""
        kind, sep, rest = name.partition("://")
        try:
            if not sep:
                return Queue(name) if name else None
            if kind == "queue":
                return Queue(rest)
            if kind == "topic":
                return Topic(rest)
            if kind == "temp-queue":
                return TemporaryQueue(rest)
            if kind == "temp-topic":
                return TemporaryTopic(rest)
            return Queue(name)
        except InvalidDestinationException:
            log.debug("unusable destination %r in a message header", name)
            return None

    def _incoming_destination(self, headers: Mapping[str, str]) -> Destination | None:
        """JMSDestination of a MESSAGE: the address, typed by ``destination-type`` if the sender gave one,
        else by the subscription it arrived on."""
        name = headers.get("destination", "").partition("::")[0]  # a shared subscription's queue: FQQN
        if not name:
            return None
        sub_kind = self._sub_kinds.get(headers.get("subscription", ""))
        declared = headers.get(DESTINATION_TYPE_HEADER)
        if declared == MULTICAST:
            topic = True
        elif declared == ANYCAST:
            topic = False
        else:
            topic = sub_kind is not None and issubclass(sub_kind, Topic)
        temporary = name.startswith(TEMPORARY_PREFIX) or (
            sub_kind is not None and issubclass(sub_kind, TemporaryQueue | TemporaryTopic)
        )
        kinds: dict[tuple[bool, bool], type[Destination]] = {
            (False, False): Queue,
            (False, True): Topic,
            (True, False): TemporaryQueue,
            (True, True): TemporaryTopic,
        }
        kind = kinds[temporary, topic]
        try:
            return kind(name)
        except InvalidDestinationException:
            return None

    # -- subscriptions --------------------------------------------------------------------------------

    def broker_selector(self, spec: SubscriptionSpec) -> str | None:
        """The core filter for ``spec``: the renamed selector AND the noLocal clause. Deterministic, because
        it is compared with the filter of an existing durable subscription."""
        clause = None
        if spec.no_local:
            if spec.durable_name is not None:
                client_id = spec.client_id or self._client_id
                if client_id is None:
                    raise IllegalStateException("a durable subscription needs a client ID")
                clause = no_local_clause(CLIENT_ID_HEADER, client_id)
            else:
                clause = no_local_clause(CONNECTION_HEADER, self._origin)
        if spec.selector and self.selector_placement(selectors.parse(spec.selector)) == "client":
            return combine_filters(client_side_filter(spec.selector), clause)
        return combine_filters(artemis_selector(spec.selector), clause)

    def selector_placement(self, selector: selectors.Selector) -> SelectorSupport:
        """Artemis's core filter cannot compute on STOMP's string properties (seen on 2.21: a topic subscriber
        with ``price * qty BETWEEN 10 AND 20`` got nothing), nor compare them with numbers or booleans
        (``weight > 2`` never matches a STOMP message with ``weight:10``: the property is the string "10",
        and the filter does not convert): jmslike evaluates such selectors on topics and refuses them on
        queues."""
        return "client" if selector.computes or selector.compares_typed else "broker"

    def subscribe_headers(self, spec: SubscriptionSpec) -> dict[str, str]:
        if spec.browser:
            raise UnsupportedFeatureException(self.display_name, "queue browsing")
        routing = routing_type(spec.destination)
        acked_on_delivery = routing == MULTICAST and spec.durable_name is None and spec.shared_name is None
        headers = {
            "id": spec.sub_id,
            "destination": self.destination_name(spec.destination),
            "ack": "auto" if acked_on_delivery else "client-individual",
            SUBSCRIPTION_TYPE_HEADER: routing,
            WINDOW_HEADER: str(consumer_window_size(spec.prefetch)),
        }
        selector = self.broker_selector(spec)
        if selector:
            headers["selector"] = selector
        if spec.durable_name is not None:
            for header in DURABLE_NAME_HEADERS:
                headers[header] = spec.durable_name
        return headers

    def subscribe(self, wire: Wire, spec: SubscriptionSpec) -> None:
        headers = self.subscribe_headers(spec)
        client_id = spec.client_id or self._client_id
        if spec.shared_name is not None:
            # The queue carries the filter; its consumers attach by its fully qualified name.
            address = self.destination_name(spec.destination)
            with self._management() as session:
                queue_name = prepare_shared(session, spec, address, headers.pop("selector", None))
            headers["destination"] = f"{address}::{queue_name}"
        if spec.durable_name is not None:
            if client_id is None:
                raise IllegalStateException("a durable subscription needs a client ID")
            with self._management() as session:
                if lookup_queue(session, shared_queue_name(client_id, spec.durable_name, True)) is not None:
                    raise JMSException(
                        f"a shared durable subscription {spec.durable_name!r} of client ID {client_id!r} exists, "
                        "so an unshared one cannot have that name (JMS 2.0 §8.3.4); unsubscribe it first"
                    )
                prepare_durable(
                    session,
                    client_id,
                    spec.durable_name,
                    self.destination_name(spec.destination),
                    headers.get("selector"),
                )
        self._sub_kinds[spec.sub_id] = type(spec.destination)
        if headers["ack"] == "auto":
            self._acked_on_delivery.add(spec.sub_id)
        try:
            wire.request(Frame("SUBSCRIBE", headers))
        except JMSException as exc:
            self._sub_kinds.pop(spec.sub_id, None)
            self._acked_on_delivery.discard(spec.sub_id)
            if spec.durable_name is not None and _MAX_CONSUMERS.search(str(exc)):
                raise JMSException(
                    f"durable subscription {spec.durable_name!r} of client {client_id!r} already has an active "
                    "consumer; close it first (a durable subscription has one consumer at a time)"
                ) from exc
            raise

    def detach(self, wire: Wire, spec: SubscriptionSpec, held: Callable[[], list[IncomingMessage]]) -> None:
        # UNSUBSCRIBE closes the core consumer, which hands its unacknowledged deliveries (``held``) back to
        # the queue by itself: nothing to add here.
        try:
            super().detach(wire, spec, held)
        finally:
            self._sub_kinds.pop(spec.sub_id, None)
            self._acked_on_delivery.discard(spec.sub_id)

    def delete_shared_durable(self, wire: Wire, client_id: str | None, name: str) -> None:
        queue_name = shared_queue_name(client_id, name, True)
        with self._management() as session:
            reply = session.invoke(BROKER_RESOURCE, "destroyQueue", queue_name)
        if reply.succeeded:
            return
        error = management_failure(reply, f"unsubscribe {name!r}")
        if isinstance(error, InvalidDestinationException):
            owner = "without a client ID" if client_id is None else f"for client ID {client_id!r}"
            raise InvalidDestinationException(
                f"no shared durable subscription named {name!r} {owner}"
            ) from error
        if isinstance(error, IllegalStateException):
            raise IllegalStateException(
                f"shared durable subscription {name!r} has active consumers (possibly on another connection); "
                "close them before unsubscribe"
            ) from error
        raise error

    def delete_durable(self, wire: Wire, client_id: str, name: str) -> None:
        queue_name = durable_queue_name(client_id, name)
        with self._management() as session:
            reply = session.invoke(BROKER_RESOURCE, "destroyQueue", queue_name)
        if reply.succeeded:
            return
        error = management_failure(reply, f"unsubscribe {name!r}")
        if isinstance(error, InvalidDestinationException):
            raise InvalidDestinationException(
                f"no durable subscription named {name!r} for client ID {client_id!r}"
            ) from error
        if isinstance(error, IllegalStateException):
            raise IllegalStateException(
                f"durable subscription {name!r} of client {client_id!r} has an active consumer (possibly on "
                "another connection); close it before unsubscribe"
            ) from error
        raise error

    # -- messages -------------------------------------------------------------------------------------

    def fixed_send_headers(self, message: OutgoingMessage) -> dict[str, str]:
        headers = super().fixed_send_headers(message)
        headers[DESTINATION_TYPE_HEADER] = routing_type(message.destination)
        headers[CONNECTION_HEADER] = self._origin
        return headers

    def varying_send_headers(self, message: OutgoingMessage) -> dict[str, str]:
        headers = super().varying_send_headers(message)
        if message.reply_to is not None:
            headers["reply-to"] = self.reply_to_name(message.reply_to)
        if message.timestamp:
            headers[SENT_AT_HEADER] = str(message.timestamp)
        # Per send: the connection's client ID may be set after a first send.
        if self._client_id is not None:
            headers[CLIENT_ID_HEADER] = self._client_id
        return headers

    def send_frame(self, message: OutgoingMessage, transaction: str | None) -> Frame:
        store = message.destination.name if type(message.destination) is Queue else ""
        if store.startswith(RETAINED_STORE_PREFIX):
            properties = artemis_retained.copy_properties(message.body)  # refuses a copy too large first
            if store not in self._stores:  # STOMP cannot declare a last-value queue: management does
                with self._management() as session:
                    artemis_retained.ensure_store(session, store)
                self._stores.add(store)
            message = dataclasses.replace(
                message,
                body=b"",  # read back from the properties (no STOMP browser, management reads no bodies)
                property_headers={**message.property_headers, **properties},
            )
        frame = super().send_frame(message, transaction)
        if message.type_tag == "text" and b"\x00" not in message.body:
            # Without content-length Artemis stores a core TextMessage, which Java peers read as one.
            changes: dict[str, Any] = {"content_length": False}
            frame = dataclasses.replace(frame, **changes)
        return frame

    def decode_message(self, frame: Frame) -> IncomingMessage:
        incoming = super().decode_message(frame)
        headers = frame.headers
        properties = {
            k: v for k, v in incoming.property_headers.items() if not k.startswith(INTERNAL_PROPERTY_PREFIXES)
        }
        group_id = headers.get(GROUP_ID_PROPERTY)
        if group_id is not None:
            properties.setdefault("JMSXGroupID", group_id)
        sent_at = headers.get(SENT_AT_HEADER, "")
        timestamp = int(sent_at) if sent_at.isdigit() else incoming.timestamp
        return dataclasses.replace(
            incoming,
            timestamp=timestamp,
            delivery_time=incoming.delivery_time if DELIVERY_TIME_HEADER in headers else timestamp,
            message_id=headers.get(ID_HEADER) or stable_message_id(headers.get("message-id")),
            destination=self._incoming_destination(headers),
            type_tag=incoming.type_tag or untagged_type(headers, frame.body),
            property_headers=properties,
            local=incoming.sub_id in self._acked_on_delivery,
            # Not from jmslike: a client-side selector's subscription let it through only if the broker's
            # evaluation on its typed properties matched (client_side_filter).
            selected_by_broker=CONNECTION_HEADER not in headers,
        )

    def ack_frame(self, incoming: IncomingMessage, transaction: str | None) -> Frame:
        # Artemis ignores (and logs) a transaction on ACK; the session sends ACKs only when they may apply.
        return Frame("ACK", {"id": incoming.ack_id})

    # -- errors ---------------------------------------------------------------------------------------

    def error_for(self, message: str, frame: Frame | None) -> type[JMSException]:
        if _MAX_CONSUMERS.search(message):
            return InvalidClientIDException if CLIENT_ID_LOCK_PREFIX in message else JMSException
        for pattern, error_class in ERROR_RULES:
            if pattern.search(message):
                return error_class
        return super().error_for(message, frame)

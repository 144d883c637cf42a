"""The adapter contract: what the JMS API layer needs from a broker dialect, and nothing more.

The API enforces JMS (client ID rules, sessions, acknowledgement, transactions) the same way on every
broker; an adapter only says how that maps onto its broker's STOMP. The API branches on
:class:`Capabilities`, never on adapter class names, so a third-party adapter (found through the
``jmslike.adapters`` entry-point group) gets the same treatment as ours.

The values made for every message (:class:`Frame`, :class:`OutgoingMessage`, :class:`IncomingMessage`, and
the STOMP core's per-frame events) are ``slots=True`` dataclasses, not frozen ones: a frozen dataclass's
``__init__`` sets each field through ``object.__setattr__``, which cost ~2 µs of a ~20 µs unwaited send
(docs/performance.md). They are read-only all the same: nothing assigns to their fields, and a changed copy
is made with ``dataclasses.replace``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Literal, Protocol

from jmslike.destinations import Destination, Queue
from jmslike.exceptions import ConnectionLostException, JMSException
from jmslike.topics import TopicSyntax

if TYPE_CHECKING:
    from jmslike.config import ConnectionConfig
    from jmslike.selector import Selector
    from jmslike.subscriptions import DurableDefinition, SubscriptionInfo

SelectorSupport = Literal["broker", "client", "none"]
# The STOMP versions jmslike speaks (an adapter names the one its broker speaks best).
StompVersion = Literal["1.1", "1.2"]
# Who keeps only the latest retained publication per topic: the broker itself (a queue limited to one
# message), jmslike (it removes older copies after each retained send), or nobody (unsupported).
RetainedSupport = Literal["broker", "jmslike", "none"]
# Queues holding retained publications are named this prefix + the topic in the broker's syntax.
RETAINED_STORE_PREFIX = "jmslike.retained."
# A browse of one store queue (possibly a broker wildcard), done by the API for the adapter.
Browse = Callable[[Queue], "list[IncomingMessage]"]


@dataclass(frozen=True)
class Capabilities:
    """What a broker can do through its adapter; each field is one row of the README's matrix."""

    durable_subscriptions: bool = True
    selectors: SelectorSupport = "broker"
    no_local: bool = True
    browsing: bool = True
    transactions: bool = True
    temporary_destinations: bool = True
    priorities: bool = True
    expiry: bool = True
    map_messages: bool = True
    client_id_enforced: bool = True
    single_durable_consumer: bool = True
    broker_redelivery_flag: bool = True
    # False where the broker applies an ACK at once even inside a transaction (Artemis): jmslike then
    # sends a transaction's ACKs only after its COMMIT succeeded.
    transactional_acks: bool = True
    admin: bool = False
    retained: RetainedSupport = "none"
    # JMS 2.0 delivery delay, held back by the broker until its time (ActiveMQ's scheduler, Artemis's
    # scheduled delivery); jmslike checks once per connection that the broker honours it (delivery_delay.py).
    delivery_delay: bool = False
    # JMS 2.0 shared subscriptions (durable and not), mapped onto a broker queue all consumers share.
    shared_subscriptions: bool = False
    # The byte bound on what consumers hold (jmslike.flow): the broker tolerates a client that stops reading
    # for a while. RabbitMQ 3.10 resets it (python -m jmslike.conformance.held_reader).
    byte_bound: bool = True
    # The broker release jmslike's integration and conformance suites last passed on (docs name the date).
    verified_with: str = "not verified"

    @classmethod
    def describe(cls) -> dict[str, str]:
        """Human names for the matrix rows, in declaration order."""
        names = {
            "durable_subscriptions": "Durable subscriptions",
            "selectors": "Message selectors evaluated by (broker / client = jmslike, topics only)",
            "no_local": "noLocal filtered by the broker (no = by jmslike)",
            "browsing": "Queue browsing",
            "transactions": "Transacted sessions",
            "temporary_destinations": "Temporary queues and topics",
            "priorities": "Priorities",
            "expiry": "Time to live / expiry",
            "map_messages": "MapMessage interop with Java peers",
            "client_id_enforced": "Unique client ID enforced across processes",
            "single_durable_consumer": "One consumer per durable subscription, enforced",
            "broker_redelivery_flag": "Broker sets redelivered on redelivery",
            "transactional_acks": "Acknowledgements inside broker transactions",
            "admin": "Subscription administration",
            "retained": "Retained publications: latest per topic kept by (broker / jmslike)",
            "delivery_delay": "Delivery delay (JMS 2.0)",
            "shared_subscriptions": "Shared subscriptions (JMS 2.0)",
            "byte_bound": "Consumers bounded in bytes (`buffer_bytes`; no = by `prefetch` only)",
            "verified_with": "Verified against (the release the test suites pass on)",
        }
        return {f.name: names.get(f.name, f.name) for f in fields(cls)}


class HeaderTemplate:
    """Headers that many frames start with, encoded once: the SEND headers a producer's sends share (destination,
    delivery mode, priority, ...), made by the adapter (``StompDialect.send_frame``). Encoding a SEND's headers
    was a fifth of the client's CPU per CompletionListener send on RabbitMQ, most of it for headers that never
    change between a producer's sends (docs/performance.md).

    A frame carrying one starts its ``headers`` with exactly these, unchanged and in this order; the encoder
    writes the text encoded the first time instead of encoding them again. Never the headers the STOMP core
    adds or replaces itself (``CORE_HEADERS``), nor a value STOMP cannot carry (an adapter encodes those per
    frame). Immutable once made; ``encoded`` is the encoder's, one text per STOMP version."""

    __slots__ = ("encoded", "headers")

    CORE_HEADERS = frozenset({"receipt", "content-length", "transaction"})

    def __init__(self, headers: Mapping[str, str]) -> None:
        if core := HeaderTemplate.CORE_HEADERS & headers.keys():
            raise ValueError(
                f"a header template cannot hold {sorted(core)}: the STOMP core sets them per frame"
            )
        self.headers: Mapping[str, str] = dict(headers)
        self.encoded: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"HeaderTemplate({list(self.headers)})"  # names only: values may be an application's


@dataclass(slots=True)  # read-only, not frozen: see the module docstring
class Frame:
    """A STOMP frame as the API and adapters exchange it: pure data, no socket."""

    command: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    # SEND frames carry content-length unless the adapter says otherwise (Artemis reads a frame without
    # it as text for Java peers; a body with a NUL always needs it).
    content_length: bool = True
    # ``headers`` starts with this template's headers, encoded once for all the frames that share it. A copy with
    # other headers is made with ``template=None`` too: the encoder writes the template's text, not its headers.
    template: HeaderTemplate | None = None


@dataclass(frozen=True)
class SubscriptionSpec:
    """One consumer's subscription, in JMS terms; the adapter turns it into SUBSCRIBE headers."""

    sub_id: str
    destination: Destination
    selector: str | None = None
    no_local: bool = False
    durable_name: str | None = None
    client_id: str | None = None
    browser: bool = False
    prefetch: int = 1000
    # CLIENT_ACKNOWLEDGE on a broker whose STOMP ``ack:client`` is cumulative (Adapter.cumulative_client_ack):
    # one ACK of the newest consumed message acknowledges everything delivered before it on this
    # subscription, as the Java client's acknowledge() does, instead of one ACK per message.
    cumulative_ack: bool = False
    # Durable only: removed by the broker after this long without a consumer (0 = never), where the
    # broker can (RabbitMQ x-expires); and the jmslike record (DurableDefinition JSON) for brokers that
    # keep it with the subscription itself.
    expiry_ms: int = 0
    definition: str | None = None
    # JMS 2.0 shared subscription: its name (identity: name and client ID, which may be None) and whether it
    # is durable. Several consumers, in any connections, share its messages.
    shared_name: str | None = None
    shared_durable: bool = False


@dataclass(slots=True)  # read-only, not frozen: see the module docstring
class OutgoingMessage:
    """A message ready for the wire: JMS header values resolved by the producer, body and properties
    already encoded by the broker-neutral codec."""

    destination: Destination
    message_id: str | None
    timestamp: int
    delivery_mode: int
    priority: int
    expiration: int
    time_to_live: int
    correlation_id: str | None
    reply_to: Destination | None
    jms_type: str | None
    type_tag: str
    body: bytes
    property_headers: Mapping[str, str]
    origin: str = ""  # the sending connection, for client-side noLocal
    # JMS 2.0 delivery delay in ms (0 = none) and JMSDeliveryTime (send time + delay), absolute ms.
    delivery_delay: int = 0
    delivery_time: int = 0


@dataclass(slots=True)  # read-only, not frozen: see the module docstring
class IncomingMessage:
    """A MESSAGE frame decoded into JMS terms by the adapter; the API builds the Message from it."""

    sub_id: str
    ack_id: str
    broker_message_id: str | None
    message_id: str | None
    destination: Destination | None
    timestamp: int
    delivery_mode: int
    priority: int
    expiration: int
    correlation_id: str | None
    reply_to: Destination | None
    jms_type: str | None
    redelivered: bool
    type_tag: str | None
    body: bytes
    headers: Mapping[str, str]
    property_headers: Mapping[str, str]
    browser_end: bool = False
    # JMSDeliveryTime: when the message became deliverable (its timestamp unless it was delayed).
    delivery_time: int = 0
    # Nothing to acknowledge on the broker: delivered by jmslike itself (a retained publication handed out by
    # requestUpdate), or by a subscription the broker acknowledges on delivery (Artemis's non-durable topic
    # subscriptions, see adapters/artemis.py).
    local: bool = False
    # The broker already applied the subscription's selector to this message's own typed properties (a Java
    # peer's message on Artemis, whose types STOMP turns into strings): jmslike does not evaluate it again.
    selected_by_broker: bool = False

    def expired(self, now_ms: int | None = None) -> bool:
        """Past its JMSExpiration (0: never expires). JMS 1.1 §3.4.9: an expired message is never delivered;
        every delivery path (consumers, browsers, retained publications) asks here."""
        if not self.expiration:
            return False
        return self.expiration <= (int(time.time() * 1000) if now_ms is None else now_ms)


class WireEvents(Protocol):
    """What a wire tells the connection above; called on the receiver thread, so it must only enqueue."""

    def on_message(self, frame: Frame) -> None: ...

    def on_error(self, error: JMSException) -> None: ...

    def on_lost(self, error: ConnectionLostException) -> None: ...

    # Optional: ``buffer``, a jmslike.flow.BufferGauge of the bytes the connection's consumers hold
    # undelivered; a wire stops reading while it is over its bound. Events without one (a management
    # connection's, a test's) never hold a wire back.


class SilentConnectRefusal(JMSException):
    """The broker closed the connection during CONNECT without an ERROR frame saying why.

    ActiveMQ 5.17 does this for about 7 in 1000 CONNECTs it refuses for bad credentials (raw STOMP control:
    ``python -m jmslike.conformance.activemq_connect_refusal``): its ERROR frame races the close. Asking once
    more gets the reason, so the connection retries once before it raises this.
    """


class PendingReceipt(Protocol):
    """A frame sent with a receipt that is not awaited at once (an asynchronous send, or one whose receipt
    the broker holds until COMMIT): answered exactly once, by its RECEIPT, by an ERROR naming it, or by the
    loss of the connection (``error`` then holds a ConnectionLostException)."""

    error: JMSException | None

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the answer; False when none came in time (``error`` is then None)."""


TransactionCommand = Literal["BEGIN", "COMMIT", "ABORT"]


class Wire(Protocol):
    """The transport as adapters see it: frames out, receipts awaited."""

    @property
    def host(self) -> tuple[str, int]:
        """The broker host and port this wire is connected to."""

    def request(self, frame: Frame, timeout_s: float | None = None) -> None:
        """Send with a receipt and wait for it; an ERROR answering it raises the mapped exception."""

    def post(self, frame: Frame) -> None:
        """Send without a receipt (acks in AUTO mode, heart-beat-insensitive traffic)."""

    @property
    def is_open(self) -> bool:
        """Connected, and neither closed nor lost."""

    def close(self, timeout_s: float = 5.0) -> None:
        """DISCONNECT (waiting up to ``timeout_s`` for its receipt), then close the socket."""

    def submit(self, frame: Frame, callback: Callable[[JMSException | None], None] | None) -> PendingReceipt:
        """Send with a receipt and return at once; ``callback`` (receiver thread) gets the answer too."""

    def discard(self, pending: Sequence[PendingReceipt]) -> None:
        """The broker will never answer ``pending`` (submits of a transaction it dropped at ABORT, when it
        answers transactional sends only at COMMIT): forget them unanswered."""

    def awaiting_answers(self) -> AbstractContextManager[None]:
        """Around a wait for answers to earlier submits that the wire does not see (a session's full send
        window, or its sends draining at commit or close): the wire writes at once what it holds back to write
        with later frames (``send_coalesce_us``)."""


class AsyncPendingReceipt(Protocol):
    """:class:`PendingReceipt` on the event loop (``jmslike.aio``): answered exactly once, awaited."""

    error: JMSException | None

    async def answered(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the answer; False when none came in time (``error`` is then None)."""
        ...


class AsyncWire(Protocol):
    """The transport as ``jmslike.aio`` sees it, on the running loop: :class:`Wire`'s calls, awaited. The
    adapter builds it (:meth:`Adapter.new_async_wire`); the API never names the class."""

    @property
    def host(self) -> tuple[str, int]:
        """The broker host and port this wire is connected to."""
        ...

    @property
    def is_open(self) -> bool:
        """Connected, and neither closed nor lost."""
        ...

    async def open(self, headers: Mapping[str, str]) -> dict[str, str]:
        """CONNECT with ``headers`` and wait for CONNECTED; its headers. Errors are mapped, never hang."""
        ...

    async def request(self, frame: Frame, timeout_s: float | None = None) -> None:
        """Send with a receipt and wait for it; an ERROR answering it raises the mapped exception."""
        ...

    async def post(self, frame: Frame) -> None:
        """Send without a receipt."""
        ...

    def post_nowait(self, frame: Frame) -> None:
        """Send without a receipt and without waiting for the transport to drain."""
        ...

    async def submit(
        self, frame: Frame, callback: Callable[[JMSException | None], None] | None
    ) -> AsyncPendingReceipt:
        """Send with a receipt and return once written; ``callback`` (on the loop) gets the answer too."""
        ...

    def submit_nowait(
        self, frame: Frame, callback: Callable[[JMSException | None], None] | None
    ) -> AsyncPendingReceipt | None:
        """:meth:`submit` without an await, when the transport takes the frame without waiting: None (and
        nothing written) when it is backed up, and the caller then awaits :meth:`submit`."""
        ...

    def discard(self, pending: Sequence[AsyncPendingReceipt]) -> None:
        """:meth:`Wire.discard`, on the loop."""
        ...

    async def close(self, timeout_s: float = 5.0) -> None:
        """DISCONNECT (waiting up to ``timeout_s`` for its receipt), then close the socket."""
        ...

    def blocking(self, timeout_s: float) -> Wire:
        """A blocking :class:`Wire` over this one, for adapter hooks run in a worker thread while the loop
        serves the wire; a call waits at most ``timeout_s`` for the loop beyond the receipt timeout."""
        ...


@dataclass(frozen=True)
class AdapterOption:
    """A URL option an adapter declares for its own scheme (``Adapter.url_options``): a third-party adapter
    gets options of its own without :mod:`jmslike.config` knowing them. ``parse`` raises ValueError saying
    what is allowed. Part of the contract (not of the config module, which still exports it) so the registry
    can read adapters' options without importing the config module that asks it for them."""

    parse: Callable[[str], object]
    default: object
    meaning: str


class Adapter(Protocol):
    """One broker dialect. Implementations live in ``jmslike.adapters``."""

    name: str
    display_name: str
    capabilities: Capabilities
    stomp_version: StompVersion
    reserved_headers: frozenset[str]
    default_vhost: str | None
    # False where the broker holds SEND receipts inside a transaction until COMMIT (RabbitMQ).
    transactional_send_receipts: bool
    # True where STOMP ``ack:client`` acknowledges everything delivered before the named message on its
    # subscription, in delivery order, so CLIENT_ACKNOWLEDGE sessions send one ACK per consumer and
    # DUPS_OK sessions one per batch.
    cumulative_client_ack: bool
    # True where the broker writes small frames with Nagle's algorithm on (ActiveMQ Classic), so the client
    # socket acknowledges at once while a receipt is awaited, once the broker has delivered on the connection
    # (stomp_socket.StompSocket.waiting_begins).
    tcp_quick_ack: bool
    # True where a temporary destination's jmslike name means "ours" to the broker (ActiveMQ), so another
    # connection must not use that name; False where the name is global (RabbitMQ).
    temporary_names_are_local: bool
    # How the broker spells hierarchical topics (jmslike.topics maps the portable notation onto it).
    topic_syntax: TopicSyntax
    # URL options of this adapter's own (name -> parser, default, meaning), read from the class before any
    # instance exists; values reach the adapter as ``config.option(name)``.
    url_options: Mapping[str, AdapterOption]

    def connect_headers(self, config: ConnectionConfig, client_id: str | None) -> dict[str, str]: ...

    def on_connected(self, wire: Wire, connected: Mapping[str, str], client_id: str | None) -> None: ...

    def destination_name(self, destination: Destination) -> str: ...

    def parse_destination(self, name: str) -> Destination | None: ...

    def subscribe(self, wire: Wire, spec: SubscriptionSpec) -> None: ...

    def detach(self, wire: Wire, spec: SubscriptionSpec, held: Callable[[], list[IncomingMessage]]) -> None:
        """End the subscription; ``held()`` collects its delivered, unacknowledged messages, which must go
        back to the broker (some brokers do that on their own, others must be told). It is a function so
        an adapter can first let in-flight deliveries arrive."""

    def create_temporary(self, wire: Wire, destination: Destination) -> None: ...

    def origin_of(self, incoming: IncomingMessage) -> str | None:
        """The sending connection's id, where the adapter carries it (client-side noLocal)."""

    def delete_durable(self, wire: Wire, client_id: str, name: str) -> None: ...

    def delete_shared_durable(self, wire: Wire, client_id: str | None, name: str) -> None:
        """Delete a shared durable subscription with its backlog: InvalidDestinationException when there is
        none, IllegalStateException while it has consumers (in any connection). Only adapters with
        ``capabilities.shared_subscriptions`` are asked."""

    def send_frame(self, message: OutgoingMessage, transaction: str | None) -> Frame: ...

    def decode_message(self, frame: Frame) -> IncomingMessage: ...

    def ack_frame(self, incoming: IncomingMessage, transaction: str | None) -> Frame: ...

    def open_wire(
        self, config: ConnectionConfig, host: tuple[str, int], client_id: str | None, events: WireEvents
    ) -> tuple[Wire, Mapping[str, str]]:
        """CONNECT to ``host`` (claiming ``client_id`` where given): the open wire, which tells ``events``
        what arrives, and the CONNECTED frame's headers. Raises the broker's refusal as its JMS exception,
        and SilentConnectRefusal when the broker closed without saying why (the connection asks once more)."""
        ...

    def new_async_wire(
        self, config: ConnectionConfig, host: tuple[str, int], events: WireEvents
    ) -> AsyncWire:
        """``jmslike.aio``'s wire to ``host``, not yet open (called on the running loop): the connection opens
        it with :meth:`connect_headers`, then runs :meth:`on_connected` on its blocking view."""
        ...

    def transaction_frame(self, command: TransactionCommand, transaction: str) -> Frame:
        """BEGIN, COMMIT or ABORT of a local transaction (sessions and the retained store use them)."""
        ...

    def poison_frame(self, incoming: IncomingMessage) -> Frame:
        """Take ``incoming`` off a cumulative (``ack:client``) subscription without acknowledging anything
        delivered before or after it: a DUPS_OK listener failed it too often (ActiveMQ: NACK, which moves it
        to the dead-letter queue, as the Java client's redelivery policy does). Only asked where
        ``cumulative_client_ack``."""

    def error_for(self, message: str, frame: Frame | None) -> type[JMSException]: ...

    def selector_placement(self, selector: Selector) -> SelectorSupport:
        """Where ``selector`` is evaluated: ``capabilities.selectors`` unless this selector is one the broker
        cannot evaluate right (then "client": jmslike filters, on topics only)."""

    def read_retained(self, wire: Wire, store: Queue, browse: Browse) -> list[bytes]:
        """The bodies of the retained-publication copies in the store queue(s) ``store`` names (a broker
        wildcard when the subscription has one), in each queue's order; see docs/retained.md."""

    def subscription_registry(self) -> SubscriptionRegistry | None:
        """The broker's own record of durable subscriptions, or None: jmslike then keeps a catalogue
        queue on the broker (jmslike.catalogue), where the broker can browse and select on queues."""


class SubscriptionRegistry(Protocol):
    """Where jmslike's durable subscription records live, per broker (see jmslike.subscriptions)."""

    # True where the broker itself removes a subscription inactive for its expiry (RabbitMQ x-expires).
    broker_expiry: bool

    def lookup(self, client_id: str, name: str) -> DurableDefinition | None: ...

    def attached(self, definition: DurableDefinition) -> None: ...

    def detached(self, definition: DurableDefinition) -> None: ...

    def removed(self, client_id: str, name: str) -> None: ...

    def expiry_state(self, client_id: str, name: str) -> tuple[int, int | None]:
        """Where jmslike enforces expiry: the recorded expiry (0 = none or unknown subscription) and when
        the subscription was last seen active (None = never inactive). Brokers that expire: (0, None)."""

    def list(self) -> list[SubscriptionInfo]: ...


AdapterFactory = Callable[[], Adapter]

"""What every STOMP broker shares: the base dialect the broker adapters specialise.

The defaults here follow the STOMP 1.1/1.2 specifications and the header names all three brokers use
for JMS fields (``persistent``, ``priority``, ``correlation-id``, ``reply-to``, ``type``). A broker
adapter overrides only where its broker departs from that, which keeps each adapter short enough to be
read next to its broker's STOMP documentation.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from jmslike.adapters.stomp_core import Version
from jmslike.body_codec import TYPE_HEADER
from jmslike.config import ConnectionConfig
from jmslike.constants import DeliveryMode
from jmslike.contract import (
    AdapterOption,
    AsyncWire,
    Browse,
    Capabilities,
    Frame,
    HeaderTemplate,
    IncomingMessage,
    OutgoingMessage,
    SelectorSupport,
    SubscriptionRegistry,
    SubscriptionSpec,
    TransactionCommand,
    Wire,
    WireEvents,
)
from jmslike.destinations import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.exceptions import (
    IllegalStateException,
    InvalidClientIDException,
    InvalidDestinationException,
    InvalidSelectorException,
    JMSException,
    JMSSecurityException,
    MessageFormatException,
    ResourceAllocationException,
)
from jmslike.selector import Selector
from jmslike.topics import TopicSyntax, to_broker

# jmslike's own headers: a stable message ID (brokers' message-id changes on redelivery on some brokers
# and is unknown to the sender on all); the message type and the property type sidecar are body_codec's.
ID_HEADER = "jmslike-id"
# Names of headers whose values were base64-encoded because STOMP cannot carry them: a NUL ends the frame
# (the broker reads garbage and the connection dies) and STOMP 1.1 has no escape for a carriage return.
ENCODED_HEADER = "jmslike-encoded"
# The sending connection, on brokers without noLocal: jmslike filters a noLocal subscriber's own messages.
ORIGIN_HEADER = "jmslike-origin"
# JMSDeliveryTime of a delayed message: brokers keep no such header, receivers need it (JMS 2.0 §3.4.13).
DELIVERY_TIME_HEADER = "jmslike-delivery-time"
# Prefix of the stand-in broker selector for a selector jmslike evaluates itself (client_selector_stand_in).
CLIENT_SELECTOR_TAG = "jmslike-client-selector:"


def client_selector_stand_in(selector: str) -> str:
    """What the broker gets for a selector jmslike evaluates itself (``selector_placement`` "client" on a
    broker that filters): always TRUE, yet naming the selector, so a broker that re-creates a durable
    subscription when its selector changes (JMS: change = delete + create) still sees the change."""
    tag = CLIENT_SELECTOR_TAG + hashlib.sha256(selector.encode()).hexdigest()[:16]
    return f"'{tag}' = '{tag}'"


# Headers that carry STOMP protocol or JMS header fields: never user properties.
STANDARD_HEADERS = frozenset(
    {
        "destination",
        "message-id",
        "subscription",
        "ack",
        "receipt",
        "receipt-id",
        "content-length",
        "content-type",
        "transaction",
        "persistent",
        "priority",
        "expires",
        "timestamp",
        "correlation-id",
        "reply-to",
        "type",
        "redelivered",
        "selector",
        "id",
        "browser",
        ID_HEADER,
        ENCODED_HEADER,
        ORIGIN_HEADER,
        TYPE_HEADER,
        DELIVERY_TIME_HEADER,
    }
)

_ERROR_RULES: tuple[tuple[re.Pattern[str], type[JMSException]], ...] = (
    (re.compile(r"password|authenticat|credential|login", re.I), JMSSecurityException),
    (re.compile(r"not authori[sz]ed|access.*refused|permission", re.I), JMSSecurityException),
    (re.compile(r"already connected|client ?id.*(in use|taken)", re.I), InvalidClientIDException),
    (re.compile(r"selector|filter", re.I), InvalidSelectorException),
    (
        re.compile(r"no durable subscription|illegal destination|invalid destination|does ?not ?exist", re.I),
        InvalidDestinationException,
    ),
    (re.compile(r"memory|quota|limit|resource", re.I), ResourceAllocationException),
)


class StompDialect:
    """A STOMP broker with JMS-style headers; subclasses set the broker's quirks."""

    name = "stomp"
    display_name = "STOMP broker"
    capabilities = Capabilities()
    stomp_version: Version = "1.2"
    reserved_headers: frozenset[str] = STANDARD_HEADERS
    default_vhost: str | None = None
    transactional_send_receipts = True
    cumulative_client_ack = False
    tcp_quick_ack = False
    _parsed_destinations: dict[str, Destination | None]
    _templates: dict[tuple[object, ...], HeaderTemplate | None]
    temporary_names_are_local = True
    url_options: Mapping[str, AdapterOption] = {}
    topic_syntax = TopicSyntax(separator=".", single="*", multi="#")
    # The broker's frame limits; exceeding one makes brokers drop the whole connection, so jmslike
    # refuses such a message before sending it. None = no known limit.
    max_header_line_bytes: int | None = None
    max_headers: int | None = None
    max_body_bytes: int | None = None

    _prefixes: Mapping[str, type[Destination]] = {
        "/queue/": Queue,
        "/topic/": Topic,
        "/temp-queue/": TemporaryQueue,
        "/temp-topic/": TemporaryTopic,
    }

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "send_headers" in vars(cls):
            # The hook was split (2026-11-28); an override of the old name would never be called, and its
            # headers would be dropped without a word.
            raise TypeError(
                f"{cls.__name__} overrides send_headers, which jmslike no longer calls: put headers that depend only "
                "on the destination, delivery mode, priority, time to live, body type and origin in "
                "fixed_send_headers, and the others in varying_send_headers"
            )

    def __new__(cls, *args: object, **kwargs: object) -> StompDialect:
        # In __new__, not __init__, so adapters with their own __init__ need not remember to call super.
        instance = super().__new__(cls)
        instance._parsed_destinations = {}
        instance._templates = {}
        return instance

    # -- connection -----------------------------------------------------------------------------------

    def connect_headers(self, config: ConnectionConfig, client_id: str | None) -> dict[str, str]:
        return {"client-id": client_id} if client_id else {}

    def open_wire(
        self, config: ConnectionConfig, host: tuple[str, int], client_id: str | None, events: WireEvents
    ) -> tuple[Wire, Mapping[str, str]]:
        """The threaded STOMP wire (adapters/transport.py), CONNECTed with this dialect's headers, then
        :meth:`on_connected`; closed again if either fails."""
        from jmslike.adapters.transport import StompWire

        wire = StompWire(
            config,
            host,
            self.stomp_version,
            events,
            self.error_for,
            self.default_vhost,
            quick_ack=self.tcp_quick_ack,
            tx_sends_answered_at_commit=not self.transactional_send_receipts,
        )
        try:
            connected = wire.open(self.connect_headers(config, client_id))
            self.on_connected(wire, connected, client_id)
        except BaseException:
            wire.close(timeout_s=0.5)
            raise
        return wire, connected

    def new_async_wire(
        self, config: ConnectionConfig, host: tuple[str, int], events: WireEvents
    ) -> AsyncWire:
        """jmslike.aio's STOMP wire (adapters/async_wire.py) with this dialect's version and error mapping.
        Imported here, not at module level, so threaded applications never load asyncio for it (~30 ms)."""
        from jmslike.adapters.async_wire import AsyncStompWire

        return AsyncStompWire(
            config,
            host,
            self.stomp_version,
            events,
            self.error_for,
            self.default_vhost,
            tx_sends_answered_at_commit=not self.transactional_send_receipts,
        )

    def on_connected(self, wire: Wire, connected: Mapping[str, str], client_id: str | None) -> None:
        """Hook for brokers that need a round trip after CONNECT (e.g. to claim a client ID)."""

    # -- destinations ---------------------------------------------------------------------------------

    def destination_name(self, destination: Destination) -> str:
        for prefix, kind in self._prefixes.items():
            if type(destination) is kind:
                if kind is Topic:  # the portable notation (jmslike.topics) in this broker's syntax
                    return prefix + to_broker(destination.name, self.topic_syntax)
                return prefix + destination.name
        raise InvalidDestinationException(f"{self.display_name} cannot address {destination}")

    def parse_destination(self, name: str) -> Destination | None:
        # On the receiver thread for every message: destinations are frozen, so parsed ones are shared
        # (a profile showed building and re-validating them as 3.6% of that thread).
        cache = self._parsed_destinations
        if name not in cache:
            if len(cache) > 10_000:
                cache.clear()
            cache[name] = next(
                (
                    kind(name[len(prefix) :])
                    for prefix, kind in self._prefixes.items()
                    if name.startswith(prefix)
                ),
                None,
            )
        return cache[name]

    # -- subscriptions --------------------------------------------------------------------------------

    def subscribe_headers(self, spec: SubscriptionSpec) -> dict[str, str]:
        headers = {
            "id": spec.sub_id,
            "destination": self.destination_name(spec.destination),
            # Browsing consumes nothing, so its messages need no acknowledgement.
            "ack": "auto" if spec.browser else "client" if spec.cumulative_ack else "client-individual",
        }
        if spec.selector:
            headers["selector"] = spec.selector
        return headers

    def subscribe(self, wire: Wire, spec: SubscriptionSpec) -> None:
        wire.request(Frame("SUBSCRIBE", self.subscribe_headers(spec)))

    def detach(self, wire: Wire, spec: SubscriptionSpec, held: Callable[[], list[IncomingMessage]]) -> None:
        """Default: UNSUBSCRIBE, and the broker takes back what the subscription held unacknowledged."""
        wire.request(Frame("UNSUBSCRIBE", {"id": spec.sub_id}))

    def delete_durable(self, wire: Wire, client_id: str, name: str) -> None:
        raise NotImplementedError

    def delete_shared_durable(self, wire: Wire, client_id: str | None, name: str) -> None:
        raise NotImplementedError(f"{self.display_name} has no shared subscriptions")

    def subscription_registry(self) -> SubscriptionRegistry | None:
        """None: jmslike keeps its catalogue queue on the broker (see jmslike.catalogue)."""
        return None

    def create_temporary(self, wire: Wire, destination: Destination) -> None:
        """Default: the broker creates temporary destinations on first use."""

    def origin_of(self, incoming: IncomingMessage) -> str | None:
        return incoming.headers.get(ORIGIN_HEADER)

    def read_retained(self, wire: Wire, store: Queue, browse: Browse) -> list[bytes]:
        """Default: a STOMP browse of the store queue; the broker resolves a wildcard in its name."""
        return [incoming.body for incoming in browse(store)]

    # -- messages -------------------------------------------------------------------------------------

    def fixed_send_headers(self, message: OutgoingMessage) -> dict[str, str]:
        """The SEND headers that depend on nothing but the parts of ``message`` in :func:`template_key` (its
        destination, delivery mode, priority, time to live, body type and origin) and on settings of this adapter
        fixed before its first send. A producer's sends share them, so :meth:`send_frame` makes them once per key
        and the encoder encodes them once (HeaderTemplate). An adapter adds its own such headers here; a header
        that depends on anything else belongs in :meth:`varying_send_headers`."""
        return {
            "destination": self.destination_name(message.destination),
            "persistent": "true" if message.delivery_mode == DeliveryMode.PERSISTENT else "false",
            "priority": str(message.priority),
            TYPE_HEADER: message.type_tag,
        }

    def varying_send_headers(self, message: OutgoingMessage) -> dict[str, str]:
        """The SEND headers that may change from one send to the next: the application's properties, then the JMS
        headers set per send (a reserved header wins over a property of the same name, as in :meth:`send_frame`)."""
        headers = dict(message.property_headers)
        headers["timestamp"] = str(message.timestamp)
        if message.expiration:
            headers["expires"] = str(message.expiration)
        if message.message_id is not None:
            headers[ID_HEADER] = message.message_id
        if message.correlation_id is not None:
            headers["correlation-id"] = message.correlation_id
        if message.reply_to is not None:
            headers["reply-to"] = self.destination_name(message.reply_to)
        if message.jms_type is not None:
            headers["type"] = message.jms_type
        if message.delivery_delay:
            headers[DELIVERY_TIME_HEADER] = str(message.delivery_time)
            headers.update(self.delay_headers(message.delivery_delay))
        return headers

    def selector_placement(self, selector: Selector) -> SelectorSupport:
        """Default: where the capability says, for every selector."""
        return self.capabilities.selectors

    def delay_headers(self, delay_ms: int) -> dict[str, str]:
        """The headers that make the broker hold a message back ``delay_ms``; brokers with
        ``capabilities.delivery_delay`` override this."""
        raise NotImplementedError(f"{self.display_name} has no delivery delay")

    def send_frame(self, message: OutgoingMessage, transaction: str | None) -> Frame:
        varying = self.varying_send_headers(message)
        if transaction is not None:
            varying["transaction"] = transaction
        template = self._send_template(message)
        if template is not None:
            headers = {**template.headers, **varying}
            if len(headers) != len(template.headers) + len(varying):
                # A property named like one of the fixed headers (one this adapter does not reserve): the
                # header wins, as it always has, and this frame is encoded without the template.
                headers, template = {**varying, **template.headers}, None
        else:
            headers = {**varying, **self.fixed_send_headers(message)}
        encode_uncarriable(headers)  # a template's values are carriable (_send_template): only others change
        self.check_limits(headers, message.body)
        return Frame("SEND", headers, message.body, template=template)

    def _send_template(self, message: OutgoingMessage) -> HeaderTemplate | None:
        """The template of :meth:`fixed_send_headers` for ``message``'s key, made on first use; None when a value
        needs encode_uncarriable (then each frame encodes it). Kept per connection, at most
        :data:`TEMPLATES_KEPT`: past that the cache starts again, so ever new destinations hold no memory."""
        key = template_key(message)
        template = self._templates.get(key, _NO_TEMPLATE)
        if template is not _NO_TEMPLATE:
            return template  # type: ignore[return-value]
        fixed = self.fixed_send_headers(message)
        made = None if _uncarriable("".join(fixed.values())) else HeaderTemplate(fixed)
        if len(self._templates) >= TEMPLATES_KEPT:
            self._templates.clear()
        self._templates[key] = made
        return made

    def check_limits(self, headers: Mapping[str, str], body: bytes) -> None:
        """Refuse a frame the broker would answer by closing the connection."""
        if self.max_headers is not None and len(headers) > self.max_headers:
            raise MessageFormatException(
                f"the message has {len(headers)} headers and properties; {self.display_name} accepts at most "
                f"{self.max_headers} per STOMP frame"
            )
        limit = self.max_header_line_bytes
        # The usual frame: all its names and values together are too short for any one line to pass the limit
        # (escaped and UTF-8 encoded, a character takes at most 4 bytes), found by two C-level joins instead of a
        # Python loop over the headers.
        if limit is not None and 4 * (len("".join(headers)) + len("".join(headers.values()))) >= limit:
            for key, value in headers.items():
                if 4 * (len(key) + len(value)) < limit:
                    continue  # escaped and UTF-8 encoded, a character takes at most 4 bytes
                size = len(key.encode()) + 1 + len(_escape(value).encode())
                if size > limit:
                    raise MessageFormatException(
                        f"header or property {key!r} is {size} bytes on the wire; {self.display_name} accepts "
                        f"at most {limit} per header: put large values in the body"
                    )
        if self.max_body_bytes is not None and len(body) > self.max_body_bytes:
            raise ResourceAllocationException(
                f"the message body is {len(body)} bytes; {self.display_name} accepts at most {self.max_body_bytes}"
            )

    def decode_message(self, frame: Frame) -> IncomingMessage:
        headers = decode_uncarriable(frame.headers)
        reply_to = headers.get("reply-to")
        destination = headers.get("destination")
        property_headers = {k: v for k, v in headers.items() if k not in self.reserved_headers}
        return IncomingMessage(
            sub_id=headers.get("subscription", ""),
            ack_id=self.ack_id(headers),
            broker_message_id=headers.get("message-id"),
            message_id=headers.get(ID_HEADER) or headers.get("message-id"),
            destination=self.parse_destination(destination) if destination else None,
            timestamp=_int(headers.get("timestamp"), 0),
            delivery_time=_int(headers.get(DELIVERY_TIME_HEADER), 0) or _int(headers.get("timestamp"), 0),
            delivery_mode=self.delivery_mode(headers),
            priority=_int(headers.get("priority"), 4),
            expiration=self.expiration(headers),
            correlation_id=headers.get("correlation-id"),
            reply_to=self.parse_destination(reply_to) if reply_to else None,
            jms_type=headers.get("type"),
            redelivered=headers.get("redelivered", "false").lower() == "true",
            type_tag=headers.get(TYPE_HEADER),
            body=frame.body,
            headers=headers,
            property_headers=property_headers,
            browser_end=headers.get("browser") == "end",
        )

    def delivery_mode(self, headers: Mapping[str, str]) -> int:
        persistent = headers.get("persistent", "false").lower() == "true"
        return DeliveryMode.PERSISTENT if persistent else DeliveryMode.NON_PERSISTENT

    def expiration(self, headers: Mapping[str, str]) -> int:
        return _int(headers.get("expires"), 0)

    def ack_id(self, headers: Mapping[str, str]) -> str:
        return headers.get("ack", "") if self.stomp_version == "1.2" else headers.get("message-id", "")

    def ack_frame(self, incoming: IncomingMessage, transaction: str | None) -> Frame:
        if self.stomp_version == "1.2":
            headers = {"id": incoming.ack_id}
        else:
            headers = {"message-id": incoming.ack_id, "subscription": incoming.sub_id}
        if transaction is not None:
            headers["transaction"] = transaction
        return Frame("ACK", headers)

    def poison_frame(self, incoming: IncomingMessage) -> Frame:
        return dataclasses.replace(self.ack_frame(incoming, None), command="NACK")

    def transaction_frame(self, command: TransactionCommand, transaction: str) -> Frame:
        return Frame(command, {"transaction": transaction})

    # -- errors ---------------------------------------------------------------------------------------

    def error_for(self, message: str, frame: Frame | None) -> type[JMSException]:
        for pattern, error_class in _ERROR_RULES:
            if pattern.search(message):
                return error_class
        if (
            frame is not None
            and frame.command == "UNSUBSCRIBE"
            and re.search(r"in use|active", message, re.I)
        ):
            return IllegalStateException
        return JMSException


#: SEND header templates kept per connection (:meth:`StompDialect._send_template`).
TEMPLATES_KEPT: Final = 256

_NO_TEMPLATE: Final = object()


def template_key(message: OutgoingMessage) -> tuple[object, ...]:
    """What :meth:`StompDialect.fixed_send_headers` may depend on in ``message``. The destination's type and name,
    not the destination: its dataclass hash is a Python call, this one is not."""
    destination = message.destination
    return (
        type(destination),
        destination.name,
        message.delivery_mode,
        message.priority,
        message.time_to_live,
        message.type_tag,
        message.origin,
    )


def encode_uncarriable(headers: dict[str, str]) -> None:
    """Base64 the values STOMP cannot carry, in place, and list them in ENCODED_HEADER."""
    joined = "".join(headers.values())
    if not _uncarriable(joined):
        return  # the usual case, in one scan
    names = [name for name, value in headers.items() if _uncarriable(value)]
    for name in names:
        headers[name] = base64.b64encode(headers[name].encode("utf-8", "surrogatepass")).decode("ascii")
    if names:
        headers[ENCODED_HEADER] = ",".join(names)


def _uncarriable(value: str) -> bool:
    """Whether STOMP cannot carry ``value`` in a header: NUL ends a frame, and a CR before a line's LF is lost."""
    return "\x00" in value or "\r" in value


def decode_uncarriable(headers: Mapping[str, str]) -> Mapping[str, str]:
    """Undo :func:`encode_uncarriable`; a malformed entry from the network is left as it came."""
    listed = headers.get(ENCODED_HEADER)
    if not listed:
        return headers
    decoded = dict(headers)
    for name in listed.split(","):
        if name in decoded:
            with contextlib.suppress(ValueError):  # UnicodeDecodeError is a ValueError
                decoded[name] = base64.b64decode(decoded[name], validate=True).decode("utf-8")
    return decoded


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c")


def _int(value: str | None, default: int) -> int:
    """Parse an integer header from the network; a malformed one falls back rather than crashing."""
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        return default

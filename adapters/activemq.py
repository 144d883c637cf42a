"""ActiveMQ Classic (5.x) over STOMP: the dialect and the workarounds it needs.

Facts this adapter relies on (read in ``activemq-stomp``: ProtocolConverter, LegacyFrameTranslator,
StompSubscription; confirmed by the integration tests):

- STOMP 1.1, not 1.2: ActiveMQ's UNSUBSCRIBE takes the client ID from the connection only on 1.1; on 1.2
  it uses the subscription name as the client ID, so deleting a durable subscription would miss it.
- ``client-id`` on CONNECT, refused when another live connection holds it ("already connected").
- A durable subscription is ``activemq.subscriptionName`` on SUBSCRIBE; UNSUBSCRIBE with that header
  deletes it (refused while a consumer is active); UNSUBSCRIBE with only ``id`` detaches.
- ``amq-msg-type: text|bytes`` decides the Java message type, so jmslike can always send
  ``content-length`` (safe for any body) and still reach Java peers as TextMessage.
- ABORT does not redeliver and NACK sends to the DLQ: jmslike redelivers locally instead.
- Temporary destinations created by another connection arrive as ``/remote-temp-queue/ID:...``.
- Browsing a queue whose name has wildcards (``/queue/jmslike.retained.Sport.>``) browses every matching
  queue and ends with one ``browser:end``; ``>`` also matches zero levels. Retained publications rely on
  it: the broker resolves a request update's wildcard (docs/retained.md).
- Java MapMessages cross only through the broker's XStream ``JmsFrameTranslator``: opt-in with the URL
  option ``activemq_map_transformation=true`` (see :mod:`adapters.activemq_map` and docs/interop.md).
  Off by default because a broker without XStream on its classpath drops the STOMP connection as soon as
  it delivers anything to a subscription that asked for a transformation.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping

from jmslike import selector as selectors
from jmslike.adapters.stomp_core import Version
from jmslike.body_codec import decode_body, encode_body
from jmslike.config import ConnectionConfig, parse_bool
from jmslike.contract import (
    AdapterOption,
    Capabilities,
    Frame,
    IncomingMessage,
    OutgoingMessage,
    SelectorSupport,
    SubscriptionSpec,
    Wire,
)
from jmslike.destinations import Destination, TemporaryQueue, TemporaryTopic
from jmslike.exceptions import IllegalStateException, InvalidDestinationException, JMSException
from jmslike.messages import MapMessage
from jmslike.properties import TypedValue
from jmslike.selector import Selector
from jmslike.serializers import SerializerRegistry
from jmslike.topics import TopicSyntax

from . import activemq_map
from .dialect import STANDARD_HEADERS, StompDialect, client_selector_stand_in

# ActiveMQ's scheduled-delivery property (ScheduledMessage.AMQ_SCHEDULED_DELAY), in ms.
SCHEDULED_DELAY_HEADER = "AMQ_SCHEDULED_DELAY"

AMQ_TYPE_HEADER = "amq-msg-type"
TRANSFORMATION_HEADER = "transformation"
#: Asked for on SUBSCRIBE: Java MapMessages then arrive as XStream JSON marked MAP_TRANSFORMATION; text
#: arrives marked ``jms-json`` with its body unchanged, bytes unchanged and unmarked.
SUBSCRIBE_TRANSFORMATION = "jms-json"
MAP_TRANSFORMATION = "jms-map-json"
#: URL option: MapMessages as Java MapMessages through that transformation (opt-in: needs XStream on the broker).
MAP_TRANSFORMATION_OPTION = "activemq_map_transformation"
_REMOTE_PREFIX = "ID:"

_log = logging.getLogger(__name__)


class ActiveMQAdapter(StompDialect):
    name = "activemq"
    display_name = "ActiveMQ Classic"
    stomp_version: Version = "1.1"
    capabilities = Capabilities(
        durable_subscriptions=True,
        selectors="broker",
        no_local=True,
        browsing=True,
        transactions=True,
        temporary_destinations=True,
        priorities=True,
        expiry=True,
        map_messages=False,
        client_id_enforced=True,
        single_durable_consumer=True,
        broker_redelivery_flag=True,
        admin=True,
        # No broker feature keeps the latest message durably (ActiveMQ.Retain is memory only): jmslike
        # stores copies in queues and removes older ones; the broker resolves wildcards when browsing.
        retained="jmslike",
        # AMQ_SCHEDULED_DELAY, honoured only with schedulerSupport="true" (our launchers set it; a broker
        # without it is detected per connection and refused, jmslike.delivery_delay).
        delivery_delay=True,
        verified_with="5.17.2",
    )
    topic_syntax = TopicSyntax(separator=".", single="*", multi=">")
    # ActiveMQ's StompSubscription in ``client`` mode acknowledges every message dispatched to the
    # subscription up to and including the named one (its dispatched map is in delivery order).
    cumulative_client_ack = True
    url_options: Mapping[str, AdapterOption] = {
        MAP_TRANSFORMATION_OPTION: AdapterOption(
            parse_bool,
            False,
            "ActiveMQ only: MapMessages as Java MapMessages (needs XStream on the broker's classpath)",
        )
    }
    # Its TCP transport leaves Nagle on by default (transport.tcpNoDelay=false): a receipt written behind an
    # unacknowledged frame waits for the client's delayed TCP ACK. Quick ACKs from our side avoid the wait.
    tcp_quick_ack = True
    # StompWireFormat: MAX_HEADER_LENGTH, MAX_HEADERS, MAX_DATA_LENGTH (fatal protocol errors if exceeded).
    max_header_line_bytes = 10 * 1024
    max_headers = 1000
    max_body_bytes = 100 * 1024 * 1024
    reserved_headers = STANDARD_HEADERS | {
        AMQ_TYPE_HEADER,
        TRANSFORMATION_HEADER,
        "JMSXUserID",
        "original-destination",
        SCHEDULED_DELAY_HEADER,
        "scheduledJobId",
    }

    def __init__(self) -> None:
        # Set from the URL in connect_headers (a fresh adapter serves each connection).
        self._map_transformation = False

    def selector_placement(self, selector: Selector) -> SelectorSupport:
        """ActiveMQ evaluates a selector on STOMP's string properties: comparisons convert, arithmetic does
        not ("Cannot call multiply operation on: 5 and: 2"). On a topic that fails the *publisher's* SEND,
        on a queue it silently matches nothing. Such selectors are jmslike's to evaluate (topics), or
        refused (queues: a client-side filter would consume other consumers' messages)."""
        return "client" if selector.computes else "broker"

    def delay_headers(self, delay_ms: int) -> dict[str, str]:
        """The scheduler's property; STOMP carries it as a string, which the scheduler converts."""
        return {SCHEDULED_DELAY_HEADER: str(delay_ms)}

    def connect_headers(self, config: ConnectionConfig, client_id: str | None) -> dict[str, str]:
        self._map_transformation = bool(config.option(MAP_TRANSFORMATION_OPTION))
        return super().connect_headers(config, client_id)

    def destination_name(self, destination: Destination) -> str:
        # A temporary destination made by another connection has a broker-assigned "ID:..." name and must
        # be addressed as remote, or ActiveMQ would create a new temporary destination of ours instead.
        if isinstance(destination, TemporaryQueue | TemporaryTopic) and destination.name.startswith(
            _REMOTE_PREFIX
        ):
            kind = "queue" if isinstance(destination, TemporaryQueue) else "topic"
            return f"/remote-temp-{kind}/{destination.name}"
        if "," in destination.name:
            # ActiveMQ reads a comma as a composite destination: "a,b" would silently go to two queues.
            raise InvalidDestinationException(
                f"{destination} names several destinations for ActiveMQ Classic (a comma makes a composite "
                "destination); use a name without a comma, or one producer per destination"
            )
        return super().destination_name(destination)

    def parse_destination(self, name: str) -> Destination | None:
        if name.startswith("/remote-temp-queue/"):
            return TemporaryQueue(name[len("/remote-temp-queue/") :])
        if name.startswith("/remote-temp-topic/"):
            return TemporaryTopic(name[len("/remote-temp-topic/") :])
        return super().parse_destination(name)

    def subscribe_headers(self, spec: SubscriptionSpec) -> dict[str, str]:
        headers = super().subscribe_headers(spec)
        if spec.selector and selectors.parse(spec.selector).computes:
            headers["selector"] = client_selector_stand_in(spec.selector)  # jmslike evaluates it
        headers["activemq.prefetchSize"] = str(max(1, spec.prefetch))
        if spec.durable_name is not None:
            headers["activemq.subscriptionName"] = spec.durable_name
        if spec.no_local:
            headers["activemq.noLocal"] = "true"
        if spec.browser:
            headers["browser"] = "true"
        if self._map_transformation:
            headers[TRANSFORMATION_HEADER] = SUBSCRIBE_TRANSFORMATION
        return headers

    def delete_durable(self, wire: Wire, client_id: str, name: str) -> None:
        # STOMP 1.1 requires an id on UNSUBSCRIBE; with activemq.subscriptionName present ActiveMQ removes
        # the subscription (key: this connection's client ID + name) and ignores the id.
        wire.request(Frame("UNSUBSCRIBE", {"id": f"unsubscribe-{name}", "activemq.subscriptionName": name}))

    def fixed_send_headers(self, message: OutgoingMessage) -> dict[str, str]:
        headers = super().fixed_send_headers(message)
        if self._sends_java_map(message):
            # The transformation header alone picks ActiveMQ's XStream translator (amq-msg-type is unused).
            headers[TRANSFORMATION_HEADER] = MAP_TRANSFORMATION
        else:
            headers[AMQ_TYPE_HEADER] = "text" if message.type_tag == "text" else "bytes"
        return headers

    def send_frame(self, message: OutgoingMessage, transaction: str | None) -> Frame:
        if not self._sends_java_map(message):
            return super().send_frame(message, transaction)
        # Re-encode jmslike's JSON map body in XStream's form (byte[] fields raise MessageFormatException
        # here, before anything is sent). No content-length: with one, ActiveMQ builds a BytesMessage.
        items = _map_items(message.body)
        frame = super().send_frame(dataclasses.replace(message, body=activemq_map.encode(items)), transaction)
        return dataclasses.replace(frame, content_length=False)

    def _sends_java_map(self, message: OutgoingMessage) -> bool:
        return self._map_transformation and message.type_tag == "map"

    def decode_message(self, frame: Frame) -> IncomingMessage:
        incoming = super().decode_message(frame)
        if incoming.headers.get(TRANSFORMATION_HEADER) == MAP_TRANSFORMATION:
            # A MapMessage in the broker (a Java peer's, or a jmslike one sent with the option): checked
            # before the jmslike type tag, because the body is XStream's whatever the sender was.
            return self._decode_java_map(incoming)
        if incoming.type_tag is None:
            # A Java peer's message (or a foreign STOMP client's): ActiveMQ marks a BytesMessage with
            # content-length and sends a TextMessage without it.
            tag = "bytes" if "content-length" in frame.headers else "text"
            return dataclasses.replace(incoming, type_tag=tag)
        return incoming

    def _decode_java_map(self, incoming: IncomingMessage) -> IncomingMessage:
        """Hand the consumer jmslike's own map encoding, so the broker-neutral codec decodes it."""
        try:
            items = activemq_map.decode(incoming.body)
        except JMSException as error:
            # Never lose a message to a parse error: the consumer gets the raw body as a BytesMessage.
            _log.warning(
                "a %s body does not parse (%s); delivering it as a BytesMessage", MAP_TRANSFORMATION, error
            )
            return dataclasses.replace(incoming, type_tag="bytes")
        _, body, _ = encode_body(MapMessage.from_typed_items(items))
        return dataclasses.replace(incoming, type_tag="map", body=body)

    def error_for(self, message: str, frame: Frame | None) -> type[JMSException]:
        if "Durable consumer is in use" in message:
            return (
                IllegalStateException
                if frame is not None and frame.command == "UNSUBSCRIBE"
                else JMSException
            )
        if "cannot durably subscribe to a Queue" in message:
            return InvalidDestinationException
        return super().error_for(message, frame)


def _map_items(body: bytes) -> dict[str, TypedValue | None]:
    """The typed fields of a body jmslike's codec encoded (it came from a MapMessage, so it parses)."""
    message = decode_body("map", body, {}, _NO_SERIALIZERS)
    if not isinstance(message, MapMessage):  # decode_body("map", ...) returns a MapMessage or raises
        raise TypeError(f"decode_body gave a {type(message).__name__} for a map body")
    return dict(message.typed_items())


# Map bodies never name a serializer; decode_body only asks for a registry.
_NO_SERIALIZERS = SerializerRegistry()

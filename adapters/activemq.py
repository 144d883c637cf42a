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
"""

from __future__ import annotations

import dataclasses

from jmslike.contract import Capabilities, Frame, IncomingMessage, OutgoingMessage, SubscriptionSpec, Wire
from jmslike.destinations import Destination, TemporaryQueue, TemporaryTopic
from jmslike.exceptions import IllegalStateException, InvalidDestinationException, JMSException

from .dialect import STANDARD_HEADERS, StompDialect

AMQ_TYPE_HEADER = "amq-msg-type"
_REMOTE_PREFIX = "ID:"


class ActiveMQAdapter(StompDialect):
    name = "activemq"
    display_name = "ActiveMQ Classic"
    stomp_version = "1.1"
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
        admin=False,
    )
    # StompWireFormat: MAX_HEADER_LENGTH, MAX_HEADERS, MAX_DATA_LENGTH (fatal protocol errors if exceeded).
    max_header_line_bytes = 10 * 1024
    max_headers = 1000
    max_body_bytes = 100 * 1024 * 1024
    reserved_headers = STANDARD_HEADERS | {
        AMQ_TYPE_HEADER,
        "transformation",
        "JMSXUserID",
        "original-destination",
    }

    def destination_name(self, destination: Destination) -> str:
        # A temporary destination made by another connection has a broker-assigned "ID:..." name and must
        # be addressed as remote, or ActiveMQ would create a new temporary destination of ours instead.
        if isinstance(destination, TemporaryQueue | TemporaryTopic) and destination.name.startswith(
            _REMOTE_PREFIX
        ):
            kind = "queue" if isinstance(destination, TemporaryQueue) else "topic"
            return f"/remote-temp-{kind}/{destination.name}"
        return super().destination_name(destination)

    def parse_destination(self, name: str) -> Destination | None:
        if name.startswith("/remote-temp-queue/"):
            return TemporaryQueue(name[len("/remote-temp-queue/") :])
        if name.startswith("/remote-temp-topic/"):
            return TemporaryTopic(name[len("/remote-temp-topic/") :])
        return super().parse_destination(name)

    def subscribe_headers(self, spec: SubscriptionSpec) -> dict[str, str]:
        headers = super().subscribe_headers(spec)
        headers["activemq.prefetchSize"] = str(max(1, spec.prefetch))
        if spec.durable_name is not None:
            headers["activemq.subscriptionName"] = spec.durable_name
        if spec.no_local:
            headers["activemq.noLocal"] = "true"
        if spec.browser:
            headers["browser"] = "true"
        return headers

    def delete_durable(self, wire: Wire, client_id: str, name: str) -> None:
        # STOMP 1.1 requires an id on UNSUBSCRIBE; with activemq.subscriptionName present ActiveMQ removes
        # the subscription (key: this connection's client ID + name) and ignores the id.
        wire.request(Frame("UNSUBSCRIBE", {"id": f"unsubscribe-{name}", "activemq.subscriptionName": name}))

    def send_headers(self, message: OutgoingMessage) -> dict[str, str]:
        headers = super().send_headers(message)
        headers[AMQ_TYPE_HEADER] = "text" if message.type_tag == "text" else "bytes"
        return headers

    def decode_message(self, frame: Frame) -> IncomingMessage:
        incoming = super().decode_message(frame)
        if incoming.type_tag is None:
            # A Java peer's message (or a foreign STOMP client's): ActiveMQ marks a BytesMessage with
            # content-length and sends a TextMessage without it.
            tag = "bytes" if "content-length" in frame.headers else "text"
            return dataclasses.replace(incoming, type_tag=tag)
        return incoming

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

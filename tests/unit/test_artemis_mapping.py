"""The Artemis dialect as pure functions: JMS intents in, STOMP frames out, and back.

Sample MESSAGE frames follow what Artemis builds (apache/activemq-artemis, artemis-stomp-protocol):
``VersionedStompFrameHandler.createMessageFrame`` (``subscription``, ``message-id`` = ``consumerID,messageID``,
body and ``content-length`` for bytes), ``StompUtils.copyStandardHeadersFromMessageToFrame`` (``destination``,
``expires`` always, ``redelivered``, ``priority``, ``persistent``, ``timestamp``, ``destination-type``, then every
message property, core-internal ones included), ``StompFrameHandlerV12.createMessageFrame`` (``ack`` = the
message-id) and ``StompFrame.toActiveMQBuffer`` (``content-length`` added to every non-empty body). The SEND side
of the round trip follows ``StompUtils.copyStandardHeadersFromFrameToMessage`` (unknown headers become
properties). Error texts come from ``ActiveMQStompProtocolMessageBundle`` (AMQ339xxx; the STOMP exception
drops ':' from its message when it wraps a cause) and ``ActiveMQMessageBundle`` (AMQ229xxx).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from typing import Any

import pytest

from jmslike.adapters import artemis, artemis_management
from jmslike.adapters.artemis import (
    CLIENT_ID_HEADER,
    CONNECTION_HEADER,
    ArtemisAdapter,
    artemis_selector,
    client_side_filter,
    consumer_window_size,
    plan_durable,
    prepare_durable,
    stable_message_id,
    untagged_type,
)
from jmslike.adapters.artemis_management import (
    ManagementReply,
    QueueInfo,
    client_id_lock_queue,
    create_queue,
    durable_queue_name,
    lookup_queue,
    management_failure,
    management_request,
    parse_management_reply,
    queue_configuration,
)
from jmslike.adapters.dialect import ID_HEADER, TYPE_HEADER
from jmslike.constants import DeliveryMode
from jmslike.consumer import build_message
from jmslike.contract import Frame, OutgoingMessage, SubscriptionSpec
from jmslike.destinations import TEMPORARY_PREFIX, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.exceptions import (
    IllegalStateException,
    InvalidClientIDException,
    InvalidDestinationException,
    InvalidSelectorException,
    JMSException,
    JMSSecurityException,
    ResourceAllocationException,
    UnsupportedFeatureException,
)
from jmslike.messages import BytesMessage, TextMessage
from jmslike.serializers import SerializerRegistry

# -- helpers ------------------------------------------------------------------------------------------


def outgoing(**overrides: object) -> OutgoingMessage:
    fields: dict[str, object] = dict(
        destination=Queue("orders"),
        message_id="ID:abc",
        timestamp=1000,
        delivery_mode=DeliveryMode.PERSISTENT,
        priority=4,
        expiration=0,
        time_to_live=0,
        correlation_id=None,
        reply_to=None,
        jms_type=None,
        type_tag="text",
        body=b"hi",
        property_headers={"color": "red"},
    )
    fields.update(overrides)
    return OutgoingMessage(**fields)  # type: ignore[arg-type]


class RecordingWire:
    """Records frames; answers SUBSCRIBE with an error when told to (a broker ERROR for that receipt)."""

    def __init__(self, fail_subscribe: str | None = None) -> None:
        self.frames: list[Frame] = []
        self.fail_subscribe = fail_subscribe
        self.host = ("broker.example", 61613)

    def request(self, frame: Frame, timeout_s: float | None = None) -> None:
        self.frames.append(frame)
        if frame.command == "SUBSCRIBE" and self.fail_subscribe is not None:
            raise JMSException(f"broker refused SUBSCRIBE frame: {self.fail_subscribe}")

    def post(self, frame: Frame) -> None:
        self.frames.append(frame)


def ok(value: object = None) -> ManagementReply:
    return ManagementReply(True, value, json.dumps([value]) if value is not None else "")


def failed(text: str) -> ManagementReply:
    return ManagementReply(False, text, json.dumps([text]))


class ScriptedManagement:
    """A management session answering from a script keyed by (resource, operation); records the calls."""

    def __init__(self, script: Mapping[tuple[str, str], ManagementReply | list[ManagementReply]]) -> None:
        self.script = {k: list(v) if isinstance(v, list) else [v] for k, v in script.items()}
        self.calls: list[tuple[str, str, tuple[object, ...]]] = []

    def invoke(self, resource: str, operation: str, *params: object) -> ManagementReply:
        self.calls.append((resource, operation, params))
        replies = self.script.get((resource, operation))
        if not replies:
            raise AssertionError(f"unexpected management call {resource} {operation} {params}")
        return replies.pop(0) if len(replies) > 1 else replies[0]

    def operations(self) -> list[str]:
        return [operation for _, operation, _ in self.calls]


def with_management(session: ScriptedManagement) -> ArtemisAdapter:
    return ArtemisAdapter(management=lambda: contextlib.nullcontext(session))


NOT_FOUND = failed("AMQ229067: Cannot find resource with name queue.c1.sub")


def existing_queue(
    address: str = "news", filter_string: str | None = None, max_consumers: int = 1, consumers: int = 0
) -> dict[tuple[str, str], ManagementReply | list[ManagementReply]]:
    resource = "queue.c1.sub"
    return {
        (resource, "getAddress"): ok(address),
        (resource, "getFilter"): ok(filter_string),
        (resource, "getMaxConsumers"): ok(max_consumers),
        (resource, "getConsumerCount"): ok(consumers),
    }


def artemis_delivers(
    send: Frame, *, subscription: str, consumer_id: int = 7, message_id: int = 4242, delivery_count: int = 1
) -> Frame:
    """The MESSAGE Artemis makes of ``send`` (see the module docstring for the source it follows)."""
    properties = dict(send.headers)
    removed = {
        name: properties.pop(name, None)
        for name in (
            "priority",
            "persistent",
            "correlation-id",
            "type",
            "reply-to",
            "expires",
            "content-type",
        )
    }
    group_id = properties.pop("JMSXGroupID", None)
    if group_id is not None:
        properties["_AMQ_GROUP_ID"] = group_id
    properties.pop("destination", None)  # stored as a property but skipped on the way out
    stomp_id = f"{consumer_id},{message_id}"
    headers: dict[str, str] = {"subscription": subscription}
    if send.body:
        headers["content-length"] = str(len(send.body))
    headers["message-id"] = stomp_id
    headers["destination"] = send.headers["destination"]
    if removed["correlation-id"] is not None:
        headers["correlation-id"] = removed["correlation-id"]
    headers["expires"] = removed["expires"] or "0"
    headers["redelivered"] = str(delivery_count > 1).lower()
    headers["priority"] = removed["priority"] or "4"
    headers["persistent"] = removed["persistent"] or "false"
    if removed["reply-to"] is not None:
        headers["reply-to"] = removed["reply-to"]
    headers["timestamp"] = "1700000000999"  # broker receive time; overwritten below by the sent property
    if removed["type"] is not None:
        headers["type"] = removed["type"]
    if removed["content-type"] is not None:
        headers["content-type"] = removed["content-type"]
    if "destination-type" in send.headers:
        headers["destination-type"] = send.headers["destination-type"]
    headers.update(properties)
    headers["ack"] = stomp_id
    return Frame("MESSAGE", headers, send.body)


def deliver(adapter: ArtemisAdapter, frame: Frame) -> Any:
    incoming = adapter.decode_message(frame)
    return build_message(incoming, adapter.reserved_headers, SerializerRegistry(), False, 1)


def user_properties(message: Any) -> list[str]:
    return sorted(n for n in message.getPropertyNames() if n != "JMSXDeliveryCount")


# -- identity and capabilities ------------------------------------------------------------------------


def test_speaks_stomp_12_and_declares_what_artemis_can_do() -> None:
    adapter = ArtemisAdapter()
    assert adapter.name == "artemis"
    assert adapter.stomp_version == "1.2"
    caps = adapter.capabilities
    assert caps.durable_subscriptions and caps.selectors == "broker" and caps.no_local
    assert not caps.browsing  # no STOMP queue browser on Artemis
    assert not caps.map_messages  # no MapMessage conversion for STOMP
    assert caps.temporary_destinations and caps.transactions and caps.priorities and caps.expiry
    assert caps.client_id_enforced and caps.single_durable_consumer and caps.admin
    assert not caps.broker_redelivery_flag  # only after a connection failure, not after a clean close
    if hasattr(caps, "transactional_acks"):
        assert caps.transactional_acks is False


def test_reserved_headers_cover_artemis_extras() -> None:
    reserved = ArtemisAdapter.reserved_headers
    for header in ("destination-type", "subscription-type", "receipt", "transaction", "content-length"):
        assert header in reserved
    assert CONNECTION_HEADER in reserved and CLIENT_ID_HEADER in reserved


# -- destinations and sends ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("destination", "routing"),
    [
        (Queue("orders"), "ANYCAST"),
        (Topic("news"), "MULTICAST"),
        (TemporaryQueue("jmslike-tmp-1"), "ANYCAST"),
        (TemporaryTopic("jmslike-tmp-2"), "MULTICAST"),
    ],
)
def test_send_names_the_address_and_its_routing_type(destination: Any, routing: str) -> None:
    frame = ArtemisAdapter().send_frame(outgoing(destination=destination), None)
    assert frame.command == "SEND"
    assert frame.headers["destination"] == destination.name  # no prefix: works with or without acceptor ones
    assert frame.headers["destination-type"] == routing


def test_send_headers_carry_jms_fields_and_origin_stamps() -> None:
    adapter = ArtemisAdapter()
    frame = adapter.send_frame(
        outgoing(
            delivery_mode=DeliveryMode.NON_PERSISTENT,
            priority=7,
            expiration=99_000,
            correlation_id="corr",
            jms_type="Order",
            reply_to=Queue("replies"),
        ),
        "tx-1",
    )
    headers = frame.headers
    assert headers["persistent"] == "false"
    assert headers["priority"] == "7"
    assert headers["expires"] == "99000"
    assert headers["correlation-id"] == "corr"
    assert headers["type"] == "Order"
    assert headers["reply-to"] == "queue://replies"  # the Artemis JMS client's JMSReplyTo form
    assert headers["transaction"] == "tx-1"
    assert headers[ID_HEADER] == "ID:abc" and headers[TYPE_HEADER] == "text"
    assert headers["color"] == "red"
    assert headers[CONNECTION_HEADER]  # for noLocal
    assert CLIENT_ID_HEADER not in headers  # no client ID on this connection


def test_reply_to_temporary_destinations() -> None:
    adapter = ArtemisAdapter()
    own = TemporaryQueue(TEMPORARY_PREFIX + "abc")
    frame = adapter.send_frame(outgoing(reply_to=own), None)
    assert frame.headers["reply-to"] == f"temp-queue://{TEMPORARY_PREFIX}abc"
    # The address is global: another connection gets the same destination back and may send to it.
    assert adapter.parse_destination(frame.headers["reply-to"]) == own
    assert adapter.temporary_names_are_local is False
    assert adapter.parse_destination("temp-topic://0b5d-uuid") == TemporaryTopic("0b5d-uuid")  # a Java peer's


def test_parse_reply_to_forms() -> None:
    adapter = ArtemisAdapter()
    assert adapter.parse_destination("queue://a.b") == Queue("a.b")
    assert adapter.parse_destination("topic://news") == Topic("news")
    assert adapter.parse_destination("plain-address") == Queue("plain-address")
    assert adapter.parse_destination("queue://") is None  # unusable, never a crash on the receiver thread


def test_text_travels_without_content_length_so_java_peers_see_text() -> None:
    frame = ArtemisAdapter().send_frame(outgoing(), None)
    assert frame.content_length is False
    binary = ArtemisAdapter().send_frame(outgoing(type_tag="bytes", body=b"\x00\x01"), None)
    assert binary.content_length is True


def test_ack_never_carries_the_transaction_artemis_ignores() -> None:
    adapter = ArtemisAdapter()
    incoming = adapter.decode_message(
        Frame("MESSAGE", {"subscription": "s1", "message-id": "7,42", "ack": "7,42", "destination": "q"}, b"")
    )
    assert adapter.ack_frame(incoming, "tx-9") == Frame("ACK", {"id": "7,42"})
    assert adapter.ack_frame(incoming, None) == Frame("ACK", {"id": "7,42"})


# -- subscriptions ------------------------------------------------------------------------------------


def test_consumer_window_maps_prefetch_to_bytes() -> None:
    assert consumer_window_size(0) == 0
    assert consumer_window_size(1) == 0  # Artemis: one message in flight
    assert consumer_window_size(1000) == 1000 * artemis.ASSUMED_FRAME_BYTES
    assert consumer_window_size(10**9) == 2**31 - 1


def test_queue_subscription_headers() -> None:
    spec = SubscriptionSpec("s1", Queue("orders"), selector="JMSPriority > 4", prefetch=10)
    headers = ArtemisAdapter().subscribe_headers(spec)
    assert headers == {
        "id": "s1",
        "destination": "orders",
        "ack": "client-individual",
        "subscription-type": "ANYCAST",
        "consumer-window-size": str(10 * artemis.ASSUMED_FRAME_BYTES),
        "selector": "AMQPriority > 4",
    }


def test_topic_subscription_with_no_local_filters_this_connections_stamp() -> None:
    adapter = ArtemisAdapter()
    spec = SubscriptionSpec("s2", Topic("news"), no_local=True)
    headers = adapter.subscribe_headers(spec)
    assert headers["subscription-type"] == "MULTICAST"
    stamp = adapter.send_frame(outgoing(destination=Topic("news")), None).headers[CONNECTION_HEADER]
    assert headers["selector"] == f"{CONNECTION_HEADER} IS NULL OR {CONNECTION_HEADER} <> '{stamp}'"
    assert "no-local" not in headers  # Artemis's own noLocal is reset by every SUBSCRIBE


def test_durable_subscription_headers() -> None:
    spec = SubscriptionSpec(
        "s3", Topic("news"), selector="region = 'EU'", no_local=True, durable_name="sub", client_id="c1"
    )
    headers = ArtemisAdapter().subscribe_headers(spec)
    assert headers["durable-subscription-name"] == "sub"  # newer 2.x
    assert headers["durable-subscriber-name"] == "sub"  # older versions (deprecated name)
    assert headers["subscription-type"] == "MULTICAST"
    # noLocal by client ID: the filter is stored with the queue and must hold for every connection
    assert headers["selector"] == (
        f"(region = 'EU') AND ({CLIENT_ID_HEADER} IS NULL OR {CLIENT_ID_HEADER} <> 'c1')"
    )


def test_browsing_is_refused() -> None:
    with pytest.raises(UnsupportedFeatureException):
        ArtemisAdapter().subscribe_headers(SubscriptionSpec("s4", Queue("q"), browser=True))


def test_plain_subscribe_and_detach_frames() -> None:
    adapter = ArtemisAdapter()
    wire = RecordingWire()
    spec = SubscriptionSpec("s5", Queue("orders"))
    adapter.subscribe(wire, spec)
    adapter.detach(wire, spec, list)
    assert [f.command for f in wire.frames] == ["SUBSCRIBE", "UNSUBSCRIBE"]
    assert wire.frames[1].headers == {"id": "s5"}


# -- selectors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jms", "core"),
    [
        # Artemis: p = 'x' is FALSE and p <> 'x' TRUE for a message without p (JMS: UNKNOWN).
        ("color = 'red'", "color = 'red'"),
        ("NOT (color = 'red')", "color <> 'red' AND color IS NOT NULL"),
        ("color <> 'red'", "color <> 'red' AND color IS NOT NULL"),
        ("NOT (a = 'x' AND b <> 'y')", "a <> 'x' AND a IS NOT NULL OR b = 'y'"),
        ("NOT (a = 'x' OR NOT b = c)", "(a <> 'x' AND a IS NOT NULL) AND b = c"),
        (
            "NOT (color IN ('red')) AND NOT color LIKE 'r%'",
            "NOT (color IN ('red')) AND NOT (color LIKE 'r%')",
        ),
        ("NOT (JMSPriority = 4)", "AMQPriority <> 4"),  # always present: no guard
        ("JMSCorrelationID <> 'c'", "JMSCorrelationID <> 'c' AND JMSCorrelationID IS NOT NULL"),
    ],
)
def test_comparisons_with_missing_values_are_exact(jms: str, core: str) -> None:
    assert artemis_selector(jms) == core


@pytest.mark.parametrize(
    ("jms", "core"),
    [
        ("JMSPriority > 4", "AMQPriority > 4"),
        ("JMSTimestamp < 100 AND JMSExpiration = 0", "AMQTimestamp < 100 AND AMQExpiration = 0"),
        ("JMSDeliveryMode = 'PERSISTENT'", "AMQDurable = 'DURABLE'"),
        ("'NON_PERSISTENT' = JMSDeliveryMode", "'NON_DURABLE' = AMQDurable"),
        ("JMSDeliveryMode IN ('PERSISTENT', 'NON_PERSISTENT')", "AMQDurable IN ('DURABLE', 'NON_DURABLE')"),
        ("NOT JMSDeliveryMode = 'PERSISTENT' OR x = 1", "AMQDurable <> 'DURABLE' OR x = 1"),
        ("JMSMessageID = 'ID:1'", "AMQUserID = 'ID:1'"),
        ("JMSXGroupID = 'g'", "_AMQ_GROUP_ID = 'g'"),
        ("JMSCorrelationID = 'c' AND JMSType = 't'", "JMSCorrelationID = 'c' AND JMSType = 't'"),
        ("mode = 'PERSISTENT'", "mode = 'PERSISTENT'"),  # only JMSDeliveryMode's literals change
    ],
)
def test_selector_uses_core_filter_names(jms: str, core: str) -> None:
    assert artemis_selector(jms) == core


def test_no_selector_stays_none() -> None:
    assert artemis_selector(None) is None
    assert artemis_selector("  ") is None


# -- decoding MESSAGE frames --------------------------------------------------------------------------


def test_round_trip_of_a_jmslike_text_message_through_artemis() -> None:
    adapter = ArtemisAdapter()
    spec = SubscriptionSpec("sub-1", Queue("orders"))
    adapter.subscribe(RecordingWire(), spec)
    send = adapter.send_frame(
        outgoing(
            correlation_id="c-1", property_headers={"color": "red", "jmslike-ptypes": "n=int", "n": "5"}
        ),
        "tx-3",
    )
    send = Frame("SEND", {**send.headers, "receipt": "r1-17", "content-length": "2"}, send.body)
    frame = artemis_delivers(send, subscription="sub-1")
    incoming = adapter.decode_message(frame)
    assert incoming.message_id == "ID:abc"  # jmslike-id, not Artemis's consumer-dependent "7,4242"
    assert incoming.broker_message_id == "7,4242"
    assert incoming.ack_id == "7,4242"
    assert incoming.destination == Queue("orders")
    assert incoming.timestamp == 1000  # the sent value wins over the broker's
    assert incoming.delivery_mode == DeliveryMode.PERSISTENT
    assert incoming.expiration == 0
    assert incoming.correlation_id == "c-1"
    message = deliver(adapter, frame)
    assert isinstance(message, TextMessage) and message.getText() == "hi"
    # Leaked SEND headers (receipt, transaction, destination-type, stamps) are not user properties.
    assert user_properties(message) == ["color", "n"]
    assert message.getIntProperty("n") == 5


def test_redelivered_and_priority_and_expiry_from_artemis() -> None:
    adapter = ArtemisAdapter()
    send = adapter.send_frame(outgoing(priority=9, expiration=5_000_000_000_000), None)
    frame = artemis_delivers(send, subscription="s", delivery_count=2)
    incoming = adapter.decode_message(frame)
    assert incoming.redelivered is True
    assert incoming.priority == 9
    assert incoming.expiration == 5_000_000_000_000


def test_java_text_message_is_a_text_message_although_it_has_content_length() -> None:
    # A core TextMessage from the Artemis JMS client: no jmslike headers, content-length from StompFrame.
    frame = Frame(
        "MESSAGE",
        {
            "subscription": "s1",
            "content-length": "11",
            "message-id": "12,345",
            "destination": "orders",
            "expires": "0",
            "redelivered": "false",
            "priority": "4",
            "persistent": "true",
            "timestamp": "1700000000000",
            "destination-type": "ANYCAST",
            "__AMQ_CID": "3f2a",
            "_AMQ_DUPL_ID": "dup",
            "region": "EU",
            "ack": "12,345",
        },
        "héllo wörl".encode(),
    )
    adapter = ArtemisAdapter()
    incoming = adapter.decode_message(frame)
    assert incoming.type_tag == "text"
    assert incoming.message_id == "ID:artemis-345"
    assert incoming.destination == Queue("orders")
    message = deliver(adapter, frame)
    assert isinstance(message, TextMessage) and message.getText() == "héllo wörl"
    assert user_properties(message) == ["region"]  # _AMQ_* / __AMQ_* are internal


def test_binary_foreign_message_is_a_bytes_message() -> None:
    frame = Frame(
        "MESSAGE",
        {"subscription": "s1", "content-length": "3", "message-id": "1,2", "destination": "q", "ack": "1,2"},
        b"\xff\x00\x01",
    )
    adapter = ArtemisAdapter()
    assert adapter.decode_message(frame).type_tag == "bytes"
    message = deliver(adapter, frame)
    assert isinstance(message, BytesMessage)


def test_untagged_type_rules() -> None:
    assert untagged_type({"content-type": "text/plain"}, b"\xff") == "text"
    assert untagged_type({"content-length": "2"}, b"ok") == "text"
    assert untagged_type({}, b"a\x00b") == "bytes"
    assert untagged_type({}, b"\xc3") == "bytes"


def test_destination_typed_by_header_then_by_subscription() -> None:
    adapter = ArtemisAdapter()
    adapter.subscribe(RecordingWire(), SubscriptionSpec("t-sub", Topic("news.*")))
    by_header = {"subscription": "x", "destination": "news", "destination-type": "MULTICAST"}
    assert adapter.decode_message(Frame("MESSAGE", by_header)).destination == Topic("news")
    by_subscription = {"subscription": "t-sub", "destination": "news.eu"}
    assert adapter.decode_message(Frame("MESSAGE", by_subscription)).destination == Topic("news.eu")
    unknown = {"subscription": "other", "destination": "orders"}
    assert adapter.decode_message(Frame("MESSAGE", unknown)).destination == Queue("orders")
    own_temporary = {
        "subscription": "other",
        "destination": TEMPORARY_PREFIX + "1",
        "destination-type": "ANYCAST",
    }
    assert adapter.decode_message(Frame("MESSAGE", own_temporary)).destination == TemporaryQueue(
        TEMPORARY_PREFIX + "1"
    )


def test_group_id_comes_back_as_jmsx_group_id() -> None:
    adapter = ArtemisAdapter()
    send = adapter.send_frame(outgoing(property_headers={"JMSXGroupID": "g1"}), None)
    message = deliver(adapter, artemis_delivers(send, subscription="s"))
    assert message.getStringProperty("JMSXGroupID") == "g1"


def test_stable_message_id() -> None:
    assert stable_message_id("17,99") == "ID:artemis-99"
    assert stable_message_id("25") == "ID:artemis-25"  # Artemis 2.21: the core messageID alone
    assert stable_message_id(None) is None


# -- management messages ------------------------------------------------------------------------------


def test_management_request_frame() -> None:
    frame = management_request(
        "broker",
        "createQueue",
        ['{"name":"q"}', True],
        reply_to="jmslike.management.reply.1",
        correlation_id="c9",
    )
    assert frame.command == "SEND"
    assert frame.headers == {
        "destination": "activemq.management",
        "reply-to": "jmslike.management.reply.1",
        "correlation-id": "c9",
        "_AMQ_ResourceName": "broker",
        "_AMQ_OperationName": "createQueue",
    }
    assert (
        "destination-type" not in frame.headers
    )  # ANYCAST would auto-create a queue named activemq.management
    assert json.loads(frame.body) == ['{"name":"q"}', True]


def test_parse_management_replies() -> None:
    success = Frame("MESSAGE", {"_AMQ_OperationSucceeded": "true", "correlation-id": "c1"}, b"[3]")
    assert parse_management_reply(success) == ManagementReply(True, 3, "[3]", "c1")
    text = Frame("MESSAGE", {"_AMQ_OperationSucceeded": "true"}, b'["news"]')
    assert parse_management_reply(text).value == "news"
    void = Frame("MESSAGE", {"_AMQ_OperationSucceeded": "true"}, b"")
    assert parse_management_reply(void).value is None and parse_management_reply(void).succeeded
    failure = Frame(
        "MESSAGE", {"_AMQ_OperationSucceeded": "false"}, b'["AMQ229017: Queue c1.sub does not exist"]'
    )
    reply = parse_management_reply(failure)
    assert not reply.succeeded and reply.value == "AMQ229017: Queue c1.sub does not exist"
    garbage = Frame("MESSAGE", {}, b"not json")
    assert parse_management_reply(garbage) == ManagementReply(False, "not json", "not json", None)


def test_queue_configuration_json() -> None:
    config = json.loads(
        queue_configuration(
            "c1.sub", "news", "MULTICAST", durable=True, filter_string="a = 1", max_consumers=1
        )
    )
    assert config == {
        "name": "c1.sub",
        "address": "news",
        "routing-type": "MULTICAST",
        "durable": True,
        "filter-string": "a = 1",
        "max-consumers": 1,
        "auto-create-address": True,
        "purge-on-no-consumers": False,
    }


@pytest.mark.parametrize(
    ("text", "error_class"),
    [
        ("AMQ229017: Queue c1.sub does not exist", InvalidDestinationException),
        ("AMQ229067: Cannot find resource with name queue.c1.sub", InvalidDestinationException),
        (
            "AMQ229025: Cannot delete queue c1.sub on binding c1.sub - it has consumers = 1",
            IllegalStateException,
        ),
        (
            "AMQ229032: User: bob does not have permission='MANAGE' on address activemq.management",
            JMSSecurityException,
        ),
        ("AMQ229069: no operation createQueue/2", JMSException),
    ],
)
def test_management_failures_are_classified(text: str, error_class: type[JMSException]) -> None:
    error = management_failure(failed(text), "x")
    assert type(error) is error_class
    assert text in str(error)


def test_lookup_missing_queue_is_none() -> None:
    session = ScriptedManagement({("queue.c1.sub", "getAddress"): NOT_FOUND})
    assert lookup_queue(session, "c1.sub") is None


def test_lookup_existing_queue() -> None:
    session = ScriptedManagement(existing_queue(filter_string="a = 1", max_consumers=-1, consumers=2))
    assert lookup_queue(session, "c1.sub") == QueueInfo("c1.sub", "news", "a = 1", -1, 2)


def test_create_queue_falls_back_to_the_one_argument_operation() -> None:
    session = ScriptedManagement(
        {
            ("broker", "createQueue"): [
                failed("AMQ229069: no operation createQueue/2"),
                failed("AMQ229019: Queue q already exists on address q"),
            ]
        }
    )
    create_queue(session, "{}", ignore_if_exists=True)
    assert [params for _, _, params in session.calls] == [("{}", True), ("{}",)]


@pytest.mark.parametrize(
    ("existing", "expected"),
    [
        (None, (False, True, False, False)),
        (QueueInfo("c1.sub", "news", "a = 1", 1, 0), (False, False, False, False)),
        (QueueInfo("c1.sub", "news", " a = 1 ", 1, 1), (False, False, False, False)),  # active: reuse
        (QueueInfo("c1.sub", "news", "a = 2", 1, 0), (True, True, False, False)),  # selector changed
        (QueueInfo("c1.sub", "sports", "a = 1", 1, 0), (True, True, False, False)),  # topic changed
        (QueueInfo("c1.sub", "news", "a = 2", 1, 1), (False, False, False, True)),  # changed while in use
        (QueueInfo("c1.sub", "news", "a = 1", -1, 0), (False, False, True, False)),  # made by plain STOMP
        (QueueInfo("c1.sub", "news", "a = 1", -1, 1), (False, False, False, True)),  # ... and in use
    ],
)
def test_plan_durable(existing: QueueInfo | None, expected: tuple[bool, bool, bool, bool]) -> None:
    plan = plan_durable(existing, "news", "a = 1")
    assert (plan.destroy, plan.create, plan.limit_consumers, plan.in_use) == expected


def test_prepare_durable_creates_a_one_consumer_queue() -> None:
    session = ScriptedManagement(
        {("queue.c1.sub", "getAddress"): NOT_FOUND, ("broker", "createQueue"): ok("{}")}
    )
    prepare_durable(session, "c1", "sub", "news", "a = 1")
    resource, operation, params = session.calls[-1]
    assert (resource, operation) == ("broker", "createQueue")
    config = json.loads(str(params[0]))
    assert config["name"] == durable_queue_name("c1", "sub") == "c1.sub"
    assert config["max-consumers"] == 1 and config["durable"] is True and config["filter-string"] == "a = 1"
    assert params[1] is True


def test_prepare_durable_recreates_a_changed_subscription() -> None:
    script = existing_queue(filter_string="a = 2")
    script[("broker", "destroyQueue")] = ok()
    script[("broker", "createQueue")] = ok("{}")
    session = ScriptedManagement(script)
    prepare_durable(session, "c1", "sub", "news", "a = 1")
    assert session.operations()[-2:] == ["destroyQueue", "createQueue"]


def test_prepare_durable_refuses_while_another_connection_consumes() -> None:
    session = ScriptedManagement(existing_queue(max_consumers=-1, consumers=1))
    with pytest.raises(JMSException, match="already has an active consumer"):
        prepare_durable(session, "c1", "sub", "news", None)


NO_SHARED = {("queue.jmslike.shared-durable.c1.sub", "getAddress"): NOT_FOUND}


def test_durable_subscribe_prepares_the_queue_then_subscribes() -> None:
    session = ScriptedManagement(existing_queue() | NO_SHARED)
    adapter = with_management(session)
    wire = RecordingWire()
    adapter.subscribe(wire, SubscriptionSpec("s1", Topic("news"), durable_name="sub", client_id="c1"))
    # first: no shared durable subscription of that name and client ID (JMS 2.0 §8.3.4)
    assert session.operations() == [
        "getAddress",
        "getAddress",
        "getFilter",
        "getMaxConsumers",
        "getConsumerCount",
    ]
    assert wire.frames[0].headers["durable-subscription-name"] == "sub"


def test_second_consumer_refused_by_the_broker_is_a_jms_exception() -> None:
    adapter = with_management(ScriptedManagement(existing_queue() | NO_SHARED))
    wire = RecordingWire(
        fail_subscribe="AMQ339016 Error creating subscription s1 (AMQ229200: Maximum Consumer Limit Reached on "
        "Queue:(address=news,queue=c1.sub))"
    )
    with pytest.raises(JMSException, match="already has an active consumer") as info:
        adapter.subscribe(wire, SubscriptionSpec("s1", Topic("news"), durable_name="sub", client_id="c1"))
    assert type(info.value) is JMSException


def test_unsubscribe_destroys_the_queue() -> None:
    session = ScriptedManagement({("broker", "destroyQueue"): ok()})
    with_management(session).delete_durable(RecordingWire(), "c1", "sub")
    assert session.calls == [("broker", "destroyQueue", ("c1.sub",))]


def test_unsubscribe_unknown_and_active() -> None:
    unknown = ScriptedManagement(
        {("broker", "destroyQueue"): failed("AMQ229017: Queue c1.sub does not exist")}
    )
    with pytest.raises(InvalidDestinationException, match="no durable subscription"):
        with_management(unknown).delete_durable(RecordingWire(), "c1", "sub")
    active = ScriptedManagement(
        {
            ("broker", "destroyQueue"): failed(
                "AMQ229025: Cannot delete queue c1.sub on binding c1.sub - it has consumers = 1"
            )
        }
    )
    with pytest.raises(IllegalStateException, match="active consumer"):
        with_management(active).delete_durable(RecordingWire(), "c1", "sub")


# -- client ID ----------------------------------------------------------------------------------------


def test_client_id_is_claimed_with_a_lock_queue() -> None:
    session = ScriptedManagement({("broker", "createQueue"): ok("{}")})
    adapter = with_management(session)
    wire = RecordingWire()
    adapter.on_connected(wire, {"server": "ActiveMQ-Artemis/2.40.0 ActiveMQ Artemis Messaging Engine"}, "c1")
    config = json.loads(str(session.calls[0][2][0]))
    lock = client_id_lock_queue("c1")
    assert config == {
        "name": lock,
        "address": lock,
        "routing-type": "ANYCAST",
        "durable": False,
        "max-consumers": 1,
        "auto-create-address": True,
        "purge-on-no-consumers": False,
    }
    assert wire.frames[0].command == "SUBSCRIBE"
    assert wire.frames[0].headers["destination"] == lock
    # From now on, sends carry the client ID for noLocal on durable subscriptions.
    assert adapter.send_frame(outgoing(), None).headers[CLIENT_ID_HEADER] == "c1"


def test_sends_before_and_after_the_client_id_share_a_template_but_not_the_client_id_header() -> None:
    adapter = with_management(ScriptedManagement({("broker", "createQueue"): ok("{}")}))
    before = adapter.send_frame(outgoing(), None)
    adapter.on_connected(RecordingWire(), {}, "c1")
    after = adapter.send_frame(outgoing(), None)
    assert CLIENT_ID_HEADER not in before.headers and after.headers[CLIENT_ID_HEADER] == "c1"
    assert after.template is not None and after.template is before.template


def test_client_id_in_use_is_refused() -> None:
    adapter = with_management(ScriptedManagement({("broker", "createQueue"): ok("{}")}))
    wire = RecordingWire(
        fail_subscribe="AMQ339016 Error creating subscription jmslike-client-id-lock (AMQ229200: Maximum "
        "Consumer Limit Reached on Queue:(address=jmslike.clientid.c1,queue=jmslike.clientid.c1))"
    )
    with pytest.raises(InvalidClientIDException, match="in use"):
        adapter.on_connected(wire, {}, "c1")
    assert CLIENT_ID_HEADER not in adapter.send_frame(outgoing(), None).headers  # state unchanged


def test_no_client_id_no_management() -> None:
    adapter = with_management(ScriptedManagement({}))
    wire = RecordingWire()
    adapter.on_connected(wire, {}, None)
    assert wire.frames == []


# -- the management wire ------------------------------------------------------------------------------


def test_management_sends_go_without_content_length() -> None:
    from jmslike.adapters.stomp_core import wire_headers
    from jmslike.config import parse_url

    wire = artemis_management._ManagementWire(
        parse_url("artemis://127.0.0.1:1"),
        ("127.0.0.1", 1),
        "1.2",
        artemis_management._ReplySink(),
        ArtemisAdapter().error_for,
    )
    prepared = wire._prepare(management_request("broker", "op", [], reply_to="r", correlation_id="c"))
    headers = wire_headers(prepared, "r1-1")
    assert prepared.command == "SEND" and "content-length" not in headers and headers["receipt"] == "r1-1"


# -- errors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "error_class"),
    [
        ("Security Error occurred: User name [bob] or password is invalid", JMSSecurityException),
        (
            "AMQ339011 Error sending message CoreMessage[messageID=5] (AMQ229032: User: bob does not have "
            "permission='SEND' on address orders)",
            JMSSecurityException,
        ),
        ("AMQ339001 Destination does not exist orders", InvalidDestinationException),
        ("AMQ339001: Destination does not exist: orders", InvalidDestinationException),
        (
            "AMQ339041 Not allowed to specify MULTICAST semantics on [ANYCAST] address.",
            InvalidDestinationException,
        ),
        (
            "AMQ339016 Error creating subscription s1 (AMQ229020: Invalid filter: a =)",
            InvalidSelectorException,
        ),
        (
            "AMQ339016 Error creating subscription s1 (AMQ229200: Maximum Consumer Limit Reached on "
            "Queue:(address=news,queue=c1.sub))",
            JMSException,
        ),
        (
            "AMQ339016 Error creating subscription x (AMQ229200: Maximum Consumer Limit Reached on "
            "Queue:(address=jmslike.clientid.c1,queue=jmslike.clientid.c1))",
            InvalidClientIDException,
        ),
        (
            "AMQ339027: Cannot create a subscriber on the durable subscription if the client-id of the "
            "connection is not set",
            IllegalStateException,
        ),
        (
            "AMQ339017 Error unsubscribing s1 (AMQ229025: Cannot delete queue c1.sub on binding c1.sub - it "
            "has consumers = 1)",
            IllegalStateException,
        ),
        (
            'AMQ339011 Error sending message x (AMQ219058: Address "orders" is full. Message encode size = 9B)',
            ResourceAllocationException,
        ),
        ("AMQ339025 failed to ack because no message with id 7,42", JMSException),
    ],
)
def test_error_classification(text: str, error_class: type[JMSException]) -> None:
    assert ArtemisAdapter().error_for(text, Frame("SEND", {})) is error_class


def test_a_shared_subscription_gets_its_own_queue_and_consumers_attach_by_fqqn() -> None:
    from jmslike.adapters.artemis_management import shared_queue_name

    session = ScriptedManagement(
        {
            ("queue.jmslike.shared.~none.all", "getAddress"): failed(
                "AMQ229067: Cannot find resource with name queue.jmslike.shared.~none.all"
            ),
            ("broker", "createQueue"): ok(),
        }
    )
    wire = RecordingWire()
    spec = SubscriptionSpec("s1", Topic("news"), selector="region = 'EU'", shared_name="all")
    with_management(session).subscribe(wire, spec)
    created = json.loads(session.calls[-1][2][0])
    assert created["name"] == shared_queue_name(None, "all", False) == "jmslike.shared.~none.all"
    assert created["auto-delete"] is True and created["durable"] is False and "max-consumers" not in created
    assert created["filter-string"] == "region = 'EU'"
    headers = wire.frames[0].headers
    assert headers["destination"] == "news::jmslike.shared.~none.all" and "selector" not in headers


def test_a_changed_shared_subscription_with_consumers_is_refused() -> None:
    resource = "queue.jmslike.shared-durable.c1.all"
    session = ScriptedManagement(
        {
            ("queue.c1.all", "getAddress"): failed("AMQ229067: Cannot find resource with name queue.c1.all"),
            (resource, "getAddress"): ok("news"),
            (resource, "getFilter"): ok("n = 1"),
            (resource, "getMaxConsumers"): ok(-1),
            (resource, "getConsumerCount"): ok(2),
        }
    )
    spec = SubscriptionSpec("s1", Topic("news"), client_id="c1", shared_name="all", shared_durable=True)
    with pytest.raises(JMSException, match="active consumers"):
        with_management(session).subscribe(RecordingWire(), spec)
    assert "destroyQueue" not in session.operations()


def test_client_side_filter_passes_jmslike_messages_and_lets_the_broker_select_the_others() -> None:
    """A Java int property is typed in the core message: the broker, not jmslike, can compare it."""
    assert client_side_filter("weight > 10") == f"{CONNECTION_HEADER} IS NOT NULL OR (weight > 10)"
    assert client_side_filter("JMSPriority > 4") == f"{CONNECTION_HEADER} IS NOT NULL OR (AMQPriority > 4)"
    assert client_side_filter("a > 1") != client_side_filter("a > 2")  # a changed selector is seen


def test_only_foreign_messages_count_as_selected_by_the_broker() -> None:
    adapter = ArtemisAdapter()
    own = adapter.decode_message(
        Frame("MESSAGE", {"subscription": "1", "ack": "1", CONNECTION_HEADER: "c1"}, b"")
    )
    foreign = adapter.decode_message(Frame("MESSAGE", {"subscription": "1", "ack": "2", "weight": "42"}, b""))
    assert not own.selected_by_broker
    assert foreign.selected_by_broker

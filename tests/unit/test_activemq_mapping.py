"""The ActiveMQ dialect as pure functions: JMS intents in, STOMP frames out, and back."""

from __future__ import annotations

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from jmslike.adapters import activemq_map
from jmslike.adapters.activemq import ActiveMQAdapter
from jmslike.adapters.artemis import ArtemisAdapter
from jmslike.adapters.dialect import ID_HEADER, TYPE_HEADER
from jmslike.adapters.rabbitmq import RabbitMQAdapter
from jmslike.body_codec import decode_body, encode_body
from jmslike.config import ConfigurationError, parse_url
from jmslike.constants import DeliveryMode
from jmslike.contract import Frame, OutgoingMessage, SubscriptionSpec
from jmslike.destinations import Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.exceptions import (
    IllegalStateException,
    InvalidClientIDException,
    InvalidDestinationException,
    JMSException,
    JMSSecurityException,
    MessageFormatException,
)
from jmslike.messages import MapMessage
from jmslike.properties import TypedValue
from jmslike.serializers import SerializerRegistry

adapter = ActiveMQAdapter()


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


def test_speaks_stomp_11_because_unsubscribe_needs_it() -> None:
    # On 1.2 ActiveMQ takes the subscription name as the client ID when deleting a durable subscription.
    assert adapter.stomp_version == "1.1"


def test_asks_for_quick_tcp_acks_because_the_broker_leaves_nagle_on() -> None:
    # ActiveMQ's TCP transport defaults to tcpNoDelay=false; the other adapters' brokers send with
    # TCP_NODELAY (RabbitMQ's default listener options, Artemis' Netty acceptor), so they do not ask.
    assert adapter.tcp_quick_ack is True
    assert RabbitMQAdapter().tcp_quick_ack is False
    assert ArtemisAdapter().tcp_quick_ack is False


def test_destinations_round_trip() -> None:
    for destination in (Queue("a.b"), Topic("t"), TemporaryQueue("x"), TemporaryTopic("y")):
        assert adapter.parse_destination(adapter.destination_name(destination)) == destination
    assert adapter.destination_name(Queue("q")) == "/queue/q"
    assert adapter.destination_name(Topic("t")) == "/topic/t"


def test_remote_temporary_destinations_stay_remote() -> None:
    remote = adapter.parse_destination("/remote-temp-queue/ID:host-1:2:1")
    assert remote == TemporaryQueue("ID:host-1:2:1")
    assert adapter.destination_name(remote) == "/remote-temp-queue/ID:host-1:2:1"


def test_send_frame_persistent_by_default_and_text_typed_for_java() -> None:
    frame = adapter.send_frame(outgoing(), None)
    assert frame.command == "SEND"
    assert frame.headers["persistent"] == "true"
    assert frame.headers["amq-msg-type"] == "text"
    assert frame.headers[ID_HEADER] == "ID:abc"
    assert frame.headers[TYPE_HEADER] == "text"
    assert frame.headers["color"] == "red"
    assert "expires" not in frame.headers
    assert "transaction" not in frame.headers


def test_send_frame_non_persistent_expiry_and_transaction() -> None:
    frame = adapter.send_frame(
        outgoing(
            delivery_mode=DeliveryMode.NON_PERSISTENT,
            expiration=5000,
            type_tag="bytes",
            reply_to=Topic("replies"),
            correlation_id="c1",
            jms_type="T",
        ),
        "tx1",
    )
    assert frame.headers["persistent"] == "false"
    assert frame.headers["expires"] == "5000"
    assert frame.headers["amq-msg-type"] == "bytes"
    assert frame.headers["transaction"] == "tx1"
    assert frame.headers["reply-to"] == "/topic/replies"
    assert frame.headers["correlation-id"] == "c1"
    assert frame.headers["type"] == "T"


def test_durable_subscribe_headers() -> None:
    spec = SubscriptionSpec(
        sub_id="s1",
        destination=Topic("news"),
        selector="a = 1",
        no_local=True,
        durable_name="sub",
        prefetch=10,
    )
    headers = adapter.subscribe_headers(spec)
    assert headers["activemq.subscriptionName"] == "sub"
    assert headers["activemq.noLocal"] == "true"
    assert headers["selector"] == "a = 1"
    assert headers["ack"] == "client-individual"
    assert headers["activemq.prefetchSize"] == "10"


def test_browser_subscribe_does_not_hold_acks() -> None:
    headers = adapter.subscribe_headers(SubscriptionSpec(sub_id="b", destination=Queue("q"), browser=True))
    assert headers["browser"] == "true"
    assert headers["ack"] == "auto"


def test_decode_message_maps_headers_and_keeps_properties_apart() -> None:
    frame = Frame(
        "MESSAGE",
        {
            "message-id": "ID:broker-1",
            "subscription": "s1",
            "destination": "/queue/orders",
            "persistent": "true",
            "priority": "7",
            "expires": "0",
            "timestamp": "123",
            "redelivered": "true",
            ID_HEADER: "ID:ours",
            TYPE_HEADER: "text",
            "amq-msg-type": "text",
            "color": "red",
        },
        b"hello",
    )
    incoming = adapter.decode_message(frame)
    assert incoming.message_id == "ID:ours"
    assert incoming.broker_message_id == "ID:broker-1"
    assert incoming.ack_id == "ID:broker-1"
    assert incoming.destination == Queue("orders")
    assert incoming.delivery_mode == DeliveryMode.PERSISTENT
    assert incoming.priority == 7
    assert incoming.redelivered
    assert incoming.timestamp == 123
    assert dict(incoming.property_headers) == {"color": "red"}


def test_java_messages_typed_by_content_length() -> None:
    text = adapter.decode_message(Frame("MESSAGE", {"message-id": "1", "subscription": "s"}, b"x"))
    data = adapter.decode_message(
        Frame("MESSAGE", {"message-id": "1", "subscription": "s", "content-length": "1"}, b"x")
    )
    assert text.type_tag == "text"
    assert data.type_tag == "bytes"


def test_malformed_numeric_headers_do_not_crash() -> None:
    incoming = adapter.decode_message(
        Frame("MESSAGE", {"message-id": "1", "subscription": "s", "priority": "high", "timestamp": "x"}, b"")
    )
    assert incoming.priority == 4
    assert incoming.timestamp == 0


def test_ack_frame_uses_stomp_11_headers() -> None:
    incoming = adapter.decode_message(Frame("MESSAGE", {"message-id": "ID:1", "subscription": "s9"}, b""))
    frame = adapter.ack_frame(incoming, "tx")
    assert frame.headers == {"message-id": "ID:1", "subscription": "s9", "transaction": "tx"}


def test_error_classification() -> None:
    unsubscribe = Frame("UNSUBSCRIBE", {})
    subscribe = Frame("SUBSCRIBE", {})
    assert adapter.error_for("Broker: localhost - Client: c1 already connected from tcp://x", None) is (
        InvalidClientIDException
    )
    assert adapter.error_for("User name [x] or password is invalid.", None) is JMSSecurityException
    assert adapter.error_for("Durable consumer is in use for client: c", unsubscribe) is IllegalStateException
    assert adapter.error_for("Durable consumer is in use for client: c", subscribe) is JMSException
    assert adapter.error_for("No durable subscription exists for clientID: c", unsubscribe) is (
        InvalidDestinationException
    )


# -- opt-in Java MapMessage interop (URL option activemq_map_transformation) ------------------------------


def _map_adapter(url: str = "activemq://h:61613?activemq_map_transformation=true") -> ActiveMQAdapter:
    fresh = ActiveMQAdapter()
    fresh.connect_headers(parse_url(url), None)
    return fresh


def _map_body(**fields: object) -> bytes:
    _, body, _ = encode_body(MapMessage(fields))
    return body


def test_without_the_option_nothing_asks_for_a_transformation() -> None:
    """A broker without XStream drops the connection on any delivery to a transforming subscription."""
    plain = _map_adapter("activemq://h:61613")
    assert "transformation" not in plain.subscribe_headers(SubscriptionSpec("s1", Queue("q")))
    frame = plain.send_frame(outgoing(type_tag="map", body=_map_body(count=3)), None)
    assert frame.headers["amq-msg-type"] == "bytes" and "transformation" not in frame.headers
    assert frame.content_length


def test_with_the_option_subscriptions_ask_for_jms_json() -> None:
    assert (
        _map_adapter().subscribe_headers(SubscriptionSpec("s1", Queue("q")))["transformation"] == "jms-json"
    )


def test_with_the_option_maps_are_sent_as_xstream_json_without_content_length() -> None:
    frame = _map_adapter().send_frame(outgoing(type_tag="map", body=_map_body(count=3, name="x")), None)
    assert frame.headers["transformation"] == "jms-map-json"
    assert "amq-msg-type" not in frame.headers
    assert not frame.content_length
    assert activemq_map.decode(frame.body) == {
        "count": TypedValue("int", 3),
        "name": TypedValue("String", "x"),
    }
    # Other bodies are untouched by the option.
    text = _map_adapter().send_frame(outgoing(), None)
    assert text.headers["amq-msg-type"] == "text" and "transformation" not in text.headers


def test_with_the_option_byte_array_map_fields_are_refused_before_sending() -> None:
    with pytest.raises(MessageFormatException, match="byte"):
        _map_adapter().send_frame(outgoing(type_tag="map", body=_map_body(raw=b"\x01")), None)


def test_jms_map_json_message_becomes_a_map_even_when_jmslike_sent_it() -> None:
    headers = {
        "destination": "/queue/q",
        "message-id": "ID:1",
        "subscription": "s1",
        "transformation": "jms-map-json",
        TYPE_HEADER: "map",
    }
    body = b'{"map":{"entry":[{"string":"count","int":3},{"string":["name","x"]}]}}'
    incoming = _map_adapter().decode_message(Frame("MESSAGE", headers, body))
    assert incoming.type_tag == "map"
    assert "transformation" not in incoming.property_headers
    message = decode_body(incoming.type_tag, incoming.body, incoming.headers, SerializerRegistry())
    assert isinstance(message, MapMessage)
    assert message.getInt("count") == 3 and message.getString("name") == "x"


def test_malformed_jms_map_json_is_delivered_as_bytes() -> None:
    headers = {"destination": "/queue/q", "message-id": "ID:1", "transformation": "jms-map-json"}
    incoming = _map_adapter().decode_message(Frame("MESSAGE", headers, b"{broken"))
    assert incoming.type_tag == "bytes" and incoming.body == b"{broken"


def test_java_text_marked_jms_json_is_still_text() -> None:
    headers = {"destination": "/queue/q", "message-id": "ID:1", "transformation": "jms-json"}
    assert _map_adapter().decode_message(Frame("MESSAGE", headers, b"hello")).type_tag == "text"


def test_the_option_is_for_activemq_urls_only() -> None:
    assert parse_url("activemq://h:1?activemq_map_transformation=yes").option("activemq_map_transformation")
    assert not parse_url("activemq://h:1").option("activemq_map_transformation")
    with pytest.raises(ConfigurationError, match="activemq:// URLs only"):
        parse_url("rabbitmq://h:1?activemq_map_transformation=true")
    with pytest.raises(ConfigurationError, match="invalid"):
        parse_url("activemq://h:1?activemq_map_transformation=maybe")


# -- frame limits ---------------------------------------------------------------------------------------


def _wire_line_bytes(key: str, value: str) -> int:
    escaped = value.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c")
    return len(key.encode()) + 1 + len(escaped.encode())


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        ("x" * 10_000, False),  # 10,004 bytes: under 10 KiB
        ("x" * 10_300, True),
        (":" * 5_000, False),  # escaped to 10,000 bytes
        (":" * 5_200, True),  # escaped to 10,400 bytes
        ("€" * 3_400, False),  # 10,200 bytes of UTF-8
        ("€" * 3_500, True),
    ],
)
def test_header_line_limit_counts_escaped_utf8_bytes(value: str, refused: bool) -> None:
    assert (_wire_line_bytes("k", value) > 10 * 1024) is refused
    if refused:
        with pytest.raises(MessageFormatException, match="put large values in the body"):
            adapter.check_limits({"k": value}, b"")
    else:
        adapter.check_limits({"k": value}, b"")


@seed(20261121)
@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab:\\\n€😀"), max_size=40),
    st.text(alphabet=st.sampled_from("k€"), min_size=1, max_size=5),
)
def test_header_line_limit_shortcut_never_passes_a_long_line(value: str, key: str) -> None:
    small = ActiveMQAdapter()
    small.max_header_line_bytes = 48  # the shortcut skips lines too short to reach the limit
    too_long = _wire_line_bytes(key, value) > 48
    try:
        small.check_limits({key: value}, b"")
    except MessageFormatException:
        assert too_long
    else:
        assert not too_long


@seed(20261129)
@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.text(alphabet=st.sampled_from("k€x"), min_size=1, max_size=5),
        st.text(alphabet=st.sampled_from("ab:\\\n€😀"), max_size=30),
        min_size=1,
        max_size=5,
    )
)
def test_header_line_limit_shortcut_over_the_whole_frame_never_passes_a_long_line(
    headers: dict[str, str],
) -> None:
    # check_limits first asks whether all names and values together could reach the limit; only then each line.
    small = ActiveMQAdapter()
    small.max_header_line_bytes = 48
    too_long = any(_wire_line_bytes(key, value) > 48 for key, value in headers.items())
    try:
        small.check_limits(headers, b"")
    except MessageFormatException:
        assert too_long
    else:
        assert not too_long


def test_a_delayed_send_carries_the_schedulers_header_and_its_delivery_time() -> None:
    frame = adapter.send_frame(outgoing(delivery_delay=1500, delivery_time=2500), None)
    assert frame.headers["AMQ_SCHEDULED_DELAY"] == "1500"
    assert frame.headers["jmslike-delivery-time"] == "2500"
    received = adapter.decode_message(
        Frame("MESSAGE", {**frame.headers, "subscription": "s", "message-id": "m"})
    )
    assert received.delivery_time == 2500
    assert "AMQ_SCHEDULED_DELAY" not in received.property_headers  # the broker's, not an application property


def test_an_undelayed_send_has_no_delay_header_and_its_delivery_time_is_its_timestamp() -> None:
    frame = adapter.send_frame(outgoing(), None)
    assert "AMQ_SCHEDULED_DELAY" not in frame.headers and "jmslike-delivery-time" not in frame.headers
    received = adapter.decode_message(
        Frame("MESSAGE", {**frame.headers, "subscription": "s", "message-id": "m"})
    )
    assert received.delivery_time == 1000


def test_rabbitmq_has_no_delivery_delay_to_map_onto() -> None:
    rabbit = RabbitMQAdapter()
    assert rabbit.capabilities.delivery_delay is False
    with pytest.raises(NotImplementedError):
        rabbit.delay_headers(1000)
    assert ArtemisAdapter().delay_headers(10) == {"AMQ_SCHEDULED_DELAY": "10"}


def test_a_computing_selector_is_evaluated_by_jmslike_and_the_broker_gets_a_named_stand_in() -> None:
    from jmslike.selector import parse

    assert adapter.selector_placement(parse("price * qty > 10")) == "client"
    assert adapter.selector_placement(parse("price > 10")) == "broker"
    spec = SubscriptionSpec(sub_id="s", destination=Topic("t"), selector="price * qty > 10")
    stand_in = adapter.subscribe_headers(spec)["selector"]
    left, _, right = stand_in.partition(" = ")
    assert left == right and left.startswith("'jmslike-client-selector:")
    other = adapter.subscribe_headers(
        SubscriptionSpec(sub_id="s", destination=Topic("t"), selector="qty * 2 > 1")
    )
    assert other["selector"] != stand_in  # a changed selector changes what the broker compares
    plain = adapter.subscribe_headers(
        SubscriptionSpec(sub_id="s", destination=Topic("t"), selector="price > 10")
    )
    assert plain["selector"] == "price > 10"


def test_a_comma_in_a_destination_name_is_refused_not_sent_to_two_queues() -> None:
    with pytest.raises(InvalidDestinationException, match="composite"):
        adapter.destination_name(Queue("a,b"))
    with pytest.raises(InvalidDestinationException, match="composite"):
        adapter.destination_name(Topic("prices,news"))

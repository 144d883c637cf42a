"""Property-based tests of the frame path: what the dialect builds must come back identical after the
real STOMP wire encoding (stomp.py's escaping, framing and parsing), for any values the API allows."""

from __future__ import annotations

import stomp.utils
from hypothesis import given, settings
from hypothesis import strategies as st
from stomp.protocol import Protocol11

from jmslike.adapters.activemq import ActiveMQAdapter
from jmslike.adapters.dialect import ENCODED_HEADER, decode_uncarriable, encode_uncarriable
from jmslike.constants import DeliveryMode
from jmslike.contract import Frame, OutgoingMessage
from jmslike.destinations import Queue, Topic

adapter = ActiveMQAdapter()
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,20}", fullmatch=True)
# Any text Python can encode as UTF-8 (lone surrogates are refused earlier, by the message model).
values = st.text(st.characters(exclude_categories=["Cs"]), max_size=60)


def over_the_wire(frame: Frame) -> Frame:
    """Encode a frame as stomp.py sends it on STOMP 1.1, then parse it as stomp.py receives it."""
    headers = dict(frame.headers)
    Protocol11._escape_headers(None, headers)  # what send_frame does before framing
    packed = b"".join(
        part if isinstance(part, bytes) else part.encode()
        for part in stomp.utils.convert_frame(stomp.utils.Frame(frame.command, headers, frame.body))
    )
    parsed = stomp.utils.parse_frame(packed[:-1])  # the receiver strips the terminating NUL
    return Frame(parsed.cmd, parsed.headers, parsed.body)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(names, values, max_size=8))
def test_any_header_value_survives_the_wire(headers: dict[str, str]) -> None:
    encoded = dict(headers)
    encode_uncarriable(encoded)
    received = over_the_wire(Frame("SEND", encoded))
    decoded = dict(decode_uncarriable(received.headers))
    decoded.pop(ENCODED_HEADER, None)
    assert decoded == headers


@settings(max_examples=200, deadline=None)
@given(
    properties=st.dictionaries(names.filter(lambda n: n not in adapter.reserved_headers), values, max_size=6),
    correlation=st.one_of(st.none(), values),
    jms_type=st.one_of(st.none(), values),
    mode=st.sampled_from([DeliveryMode.PERSISTENT, DeliveryMode.NON_PERSISTENT]),
    priority=st.integers(0, 9),
    expiration=st.integers(0, 2**62),
    topic=st.booleans(),
    body=st.binary(max_size=200),
)
def test_send_frame_decodes_to_the_same_message(
    properties: dict[str, str],
    correlation: str | None,
    jms_type: str | None,
    mode: int,
    priority: int,
    expiration: int,
    topic: bool,
    body: bytes,
) -> None:
    destination = Topic("t.x") if topic else Queue("q.x")
    outgoing = OutgoingMessage(
        destination=destination,
        message_id="ID:m1",
        timestamp=123,
        delivery_mode=mode,
        priority=priority,
        expiration=expiration,
        time_to_live=0,
        correlation_id=correlation,
        reply_to=Queue("replies"),
        jms_type=jms_type,
        type_tag="bytes",
        body=body,
        property_headers=properties,
    )
    sent = adapter.send_frame(outgoing, None)
    # The broker turns SEND into MESSAGE, adding its own id and the subscription.
    message = dict(sent.headers)
    message.update({"message-id": "ID:broker-1", "subscription": "s1", "content-length": str(len(body))})
    if mode == DeliveryMode.NON_PERSISTENT:
        message.pop("persistent")  # ActiveMQ omits it for non-persistent messages
    incoming = adapter.decode_message(over_the_wire(Frame("MESSAGE", message, body)))
    assert incoming.message_id == "ID:m1"
    assert incoming.destination == destination
    assert incoming.delivery_mode == mode
    assert incoming.priority == priority
    assert incoming.expiration == expiration
    assert incoming.correlation_id == correlation
    assert incoming.jms_type == jms_type
    assert incoming.reply_to == Queue("replies")
    assert incoming.body == body
    user = {k: v for k, v in incoming.property_headers.items() if not k.startswith("jmslike-")}
    user.pop("amq-msg-type", None)
    assert user == properties

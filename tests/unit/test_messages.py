"""Messages: headers, properties, read-only rules, and each body type's API as JMS defines it."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jmslike.constants import DeliveryMode
from jmslike.destinations import Queue, Topic
from jmslike.exceptions import (
    MessageEOFException,
    MessageFormatException,
    MessageNotReadableException,
    MessageNotWriteableException,
    NumberFormatException,
)
from jmslike.messages import (
    BytesMessage,
    MapMessage,
    Message,
    ObjectMessage,
    StreamMessage,
    TextMessage,
    decode_modified_utf8,
    encode_modified_utf8,
)
from jmslike.properties import TypedValue
from jmslike.serializers import JSON, JsonSerializer, SerializerRegistry


def received(message: Message) -> Message:
    message.mark_received()
    return message


# -- headers ---------------------------------------------------------------------------------------------


def test_header_defaults_are_jms_defaults() -> None:
    m = Message()
    assert m.getJMSMessageID() is None
    assert m.getJMSTimestamp() == 0
    assert m.getJMSCorrelationID() is None
    assert m.getJMSReplyTo() is None
    assert m.getJMSDestination() is None
    assert m.getJMSDeliveryMode() == DeliveryMode.PERSISTENT
    assert m.getJMSRedelivered() is False
    assert m.getJMSType() is None
    assert m.getJMSExpiration() == 0
    assert m.getJMSPriority() == 4
    assert m.getJMSDeliveryTime() == 0


def test_header_setters_work_even_on_received_messages() -> None:
    m = received(TextMessage("x"))
    m.setJMSMessageID("ID:1")
    m.setJMSTimestamp(123)
    m.setJMSCorrelationID("c")
    m.setJMSReplyTo(Queue("replies"))
    m.setJMSDestination(Topic("t"))
    m.setJMSDeliveryMode(DeliveryMode.NON_PERSISTENT)
    m.setJMSRedelivered(True)
    m.setJMSType("order")
    m.setJMSExpiration(99)
    m.setJMSPriority(9)
    m.setJMSDeliveryTime(5)
    assert (m.getJMSMessageID(), m.getJMSTimestamp(), m.getJMSCorrelationID()) == ("ID:1", 123, "c")
    assert m.getJMSReplyTo() == Queue("replies")
    assert m.getJMSDestination() == Topic("t")
    assert m.getJMSDeliveryMode() == DeliveryMode.NON_PERSISTENT
    assert m.getJMSRedelivered() is True
    assert (m.getJMSType(), m.getJMSExpiration(), m.getJMSPriority(), m.getJMSDeliveryTime()) == (
        "order",
        99,
        9,
        5,
    )


@pytest.mark.parametrize(
    ("setter", "value"),
    [
        ("setJMSPriority", "4"),
        ("setJMSPriority", True),
        ("setJMSTimestamp", 1.5),
        ("setJMSRedelivered", 1),
        ("setJMSMessageID", 5),
        ("setJMSReplyTo", "queue://x"),
        ("setJMSDestination", "queue://x"),
    ],
)
def test_header_setters_check_types(setter: str, value: object) -> None:
    with pytest.raises(MessageFormatException):
        getattr(Message(), setter)(value)


def test_correlation_id_as_bytes() -> None:
    m = Message()
    m.setJMSCorrelationIDAsBytes("caf\u00e9".encode())
    assert m.getJMSCorrelationID() == "caf\u00e9"
    assert m.getJMSCorrelationIDAsBytes() == "caf\u00e9".encode()
    m.setJMSCorrelationIDAsBytes(None)
    assert m.getJMSCorrelationIDAsBytes() is None
    with pytest.raises(MessageFormatException, match="UTF-8"):
        m.setJMSCorrelationIDAsBytes(b"\xff\xfe")


# -- properties ------------------------------------------------------------------------------------------

SETTERS: list[tuple[str, str, object]] = [
    ("setBooleanProperty", "getBooleanProperty", True),
    ("setByteProperty", "getByteProperty", -5),
    ("setShortProperty", "getShortProperty", 1000),
    ("setIntProperty", "getIntProperty", 70000),
    ("setLongProperty", "getLongProperty", 2**50),
    ("setFloatProperty", "getFloatProperty", 0.5),
    ("setDoubleProperty", "getDoubleProperty", 0.1),
    ("setStringProperty", "getStringProperty", "hello"),
]


@pytest.mark.parametrize(("setter", "getter", "value"), SETTERS)
def test_property_set_and_get(setter: str, getter: str, value: object) -> None:
    m = Message()
    getattr(m, setter)("p", value)
    assert getattr(m, getter)("p") == value
    assert m.getObjectProperty("p") == value
    assert m.propertyExists("p")
    assert m.getPropertyNames() == ["p"]
    assert m.properties["p"] == value


def test_property_conversions_through_the_message() -> None:
    m = Message()
    m.setIntProperty("n", 5)
    m.setFloatProperty("f", 1.0)
    m.setBooleanProperty("b", True)
    m.setStringProperty("s", "42")
    assert m.getLongProperty("n") == 5
    assert m.getStringProperty("n") == "5"
    assert m.getStringProperty("f") == "1.0"
    assert m.getDoubleProperty("f") == 1.0
    assert m.getStringProperty("b") == "true"
    assert m.getShortProperty("s") == 42
    with pytest.raises(MessageFormatException, match="property 'n' is a int; it cannot be read as short"):
        m.getShortProperty("n")
    with pytest.raises(MessageFormatException, match="boolean"):
        m.getIntProperty("b")
    m.setStringProperty("s", "4x")
    with pytest.raises(NumberFormatException):
        m.getIntProperty("s")


def test_missing_properties() -> None:
    m = Message()
    assert m.getBooleanProperty("nope") is False
    assert m.getStringProperty("nope") is None
    assert m.getObjectProperty("nope") is None
    assert not m.propertyExists("nope")
    for getter in ("getByteProperty", "getShortProperty", "getIntProperty", "getLongProperty"):
        with pytest.raises(NumberFormatException):
            getattr(m, getter)("nope")
    for getter in ("getFloatProperty", "getDoubleProperty"):
        with pytest.raises(NumberFormatException):
            getattr(m, getter)("nope")


@pytest.mark.parametrize(
    ("value", "jms_type"),
    [
        (True, "boolean"),
        (1, "int"),
        (2**40, "long"),
        (1.5, "double"),
        ("s", "String"),
        (TypedValue("byte", 1), "byte"),
    ],
)
def test_set_object_property_picks_the_jms_type(value: object, jms_type: str) -> None:
    m = Message()
    m.setObjectProperty("x", value)
    assert m.typed_properties()["x"].jms_type == jms_type


@pytest.mark.parametrize("value", [None, b"x", [1], 2**64, {"a": 1}])
def test_set_object_property_rejects_other_values(value: object) -> None:
    with pytest.raises(MessageFormatException):
        Message().setObjectProperty("x", value)


def test_property_setters_check_values_and_names() -> None:
    m = Message()
    with pytest.raises(MessageFormatException, match="range"):
        m.setByteProperty("b", 128)
    with pytest.raises(MessageFormatException):
        m.setIntProperty("i", "1")  # type: ignore[arg-type]
    with pytest.raises(MessageFormatException):
        m.setStringProperty("s", None)  # type: ignore[arg-type]
    with pytest.raises(MessageFormatException, match="selector keyword"):
        m.setIntProperty("between", 1)
    with pytest.raises(MessageFormatException, match="reserved"):
        m.setStringProperty("JMSCorrelationID", "x")
    assert m.getPropertyNames() == []


def test_jmsx_group_properties_have_fixed_types() -> None:
    m = Message()
    m.setStringProperty("JMSXGroupID", "g")
    m.setIntProperty("JMSXGroupSeq", 3)
    m.setObjectProperty("JMSXGroupSeq", 4)
    with pytest.raises(MessageFormatException, match="JMSXGroupSeq must be set as a int"):
        m.setLongProperty("JMSXGroupSeq", 3)
    with pytest.raises(MessageFormatException):
        m.setIntProperty("JMSXGroupID", 3)


def test_delivery_count_is_the_providers() -> None:
    m = TextMessage("x")
    with pytest.raises(MessageNotWriteableException, match="provider"):
        m.setIntProperty("JMSXDeliveryCount", 2)
    assert not m.propertyExists("JMSXDeliveryCount")
    m.set_delivery_count(2)
    received(m)
    assert m.getIntProperty("JMSXDeliveryCount") == 2
    assert m.getLongProperty("JMSXDeliveryCount") == 2
    assert m.getStringProperty("JMSXDeliveryCount") == "2"
    assert m.getObjectProperty("JMSXDeliveryCount") == 2
    assert m.propertyExists("JMSXDeliveryCount")
    assert "JMSXDeliveryCount" in m.getPropertyNames()
    m.clearProperties()
    assert m.getIntProperty("JMSXDeliveryCount") == 2
    with pytest.raises(MessageNotWriteableException):
        m.setIntProperty("JMSXDeliveryCount", 1)


def test_provider_jmsx_properties_are_not_settable_on_received_messages() -> None:
    fresh = Message()
    fresh.setStringProperty("JMSXUserID", "me")
    m = Message()
    m.load_properties({"JMSXUserID": TypedValue("String", "broker-said")})
    received(m)
    m.clearProperties()
    with pytest.raises(MessageNotWriteableException, match="JMSXUserID"):
        m.setStringProperty("JMSXUserID", "me")
    m.setStringProperty("JMSXGroupID", "g")


def test_received_properties_are_read_only_until_cleared() -> None:
    m = Message()
    m.setIntProperty("a", 1)
    received(m)
    assert m.getIntProperty("a") == 1
    for setter, _, value in SETTERS:
        with pytest.raises(MessageNotWriteableException, match=r"call clearProperties\(\) first"):
            getattr(m, setter)("b", value)
    with pytest.raises(MessageNotWriteableException):
        m.setObjectProperty("b", 1)
    m.clearProperties()
    assert m.getPropertyNames() == []
    m.setIntProperty("b", 2)
    assert m.getIntProperty("b") == 2


def test_properties_view_is_live_and_read_only() -> None:
    m = Message()
    view = m.properties
    assert dict(view) == {}
    m.setIntProperty("a", 1)
    m.set_delivery_count(1)
    assert dict(view) == {"a": 1, "JMSXDeliveryCount": 1}
    assert len(view) == 2
    with pytest.raises(KeyError):
        view["missing"]
    with pytest.raises(TypeError):
        view["a"] = 2  # type: ignore[index]


def test_load_properties_bypasses_checks_but_not_delivery_count() -> None:
    m = received(Message())
    m.load_properties({"odd-name": TypedValue("String", "x"), "JMSXDeliveryCount": TypedValue("int", 9)})
    assert m.getStringProperty("odd-name") == "x"
    assert not m.propertyExists("JMSXDeliveryCount")


# -- acknowledge ------------------------------------------------------------------------------------------


def test_acknowledge_calls_the_providers_acknowledger() -> None:
    m = Message()
    m.acknowledge()  # no session: nothing happens, as JMS says
    calls: list[int] = []
    m._acknowledger = lambda: calls.append(1)
    m.acknowledge()
    assert calls == [1]


# -- getBody / isBodyAssignableTo ------------------------------------------------------------------------

BODIES: list[tuple[Callable[[], Message], type[Any], object]] = [
    (lambda: TextMessage("t"), str, "t"),
    (lambda: BytesMessage(b"b"), bytes, b"b"),
    (lambda: MapMessage({"a": 1}), dict, {"a": 1}),
    (lambda: ObjectMessage([1, 2]), list, [1, 2]),
]


@pytest.mark.parametrize(("make", "cls", "body"), BODIES)
def test_get_body(make: Callable[[], Message], cls: type[Any], body: object) -> None:
    m = make()
    assert m.isBodyAssignableTo(cls)
    assert m.isBodyAssignableTo(object)
    assert m.getBody(cls) == body
    assert m.getBody(object) == body
    assert not m.isBodyAssignableTo(int)
    with pytest.raises(MessageFormatException, match="not assignable to int"):
        m.getBody(int)


def test_get_body_accepts_abstract_classes() -> None:
    assert MapMessage({"a": 1}).getBody(Mapping) == {"a": 1}  # type: ignore[type-abstract]


@pytest.mark.parametrize("make", [Message, TextMessage, BytesMessage, MapMessage, ObjectMessage])
def test_no_body_is_none_and_assignable_to_anything(make: Callable[[], Message]) -> None:
    m = make()
    assert m.getBody(int) is None
    assert m.isBodyAssignableTo(int)


def test_stream_message_has_no_get_body() -> None:
    m = StreamMessage()
    assert not m.isBodyAssignableTo(object)
    with pytest.raises(MessageFormatException, match="StreamMessage"):
        m.getBody(object)


def test_get_body_needs_a_plain_class() -> None:
    with pytest.raises(MessageFormatException, match="plain class"):
        TextMessage("x").getBody(list[int])


# -- clearBody and read-only bodies ---------------------------------------------------------------------


def test_text_message() -> None:
    m = TextMessage()
    assert m.getText() is None
    m.setText("a")
    assert m.text == "a"
    m.text = "b"
    assert m.getText() == "b"
    with pytest.raises(MessageFormatException):
        m.setText(b"bytes")  # type: ignore[arg-type]
    received(m)
    with pytest.raises(MessageNotWriteableException, match=r"call clearBody\(\) first"):
        m.setText("c")
    with pytest.raises(MessageNotWriteableException):
        m.text = "c"
    m.clearBody()
    assert m.getText() is None
    m.setText("c")


def test_clear_body_leaves_properties_and_clear_properties_leaves_body() -> None:
    m = TextMessage("x")
    m.setIntProperty("a", 1)
    m.clearBody()
    assert m.getIntProperty("a") == 1
    m.setText("y")
    m.clearProperties()
    assert m.getText() == "y"


def test_received_map_and_object_bodies_are_read_only() -> None:
    mm = received(MapMessage({"a": 1}))
    assert isinstance(mm, MapMessage)
    assert mm.getInt("a") == 1
    with pytest.raises(MessageNotWriteableException):
        mm.setInt("b", 2)
    mm.clearBody()
    assert mm.getMapNames() == []
    mm.setInt("b", 2)
    om = received(ObjectMessage({"k": 1}))
    assert isinstance(om, ObjectMessage)
    with pytest.raises(MessageNotWriteableException):
        om.setObject(1)
    om.clearBody()
    assert om.getObject() is None
    om.setObject(2)


def test_repr_is_short_and_safe() -> None:
    m = TextMessage("secret" * 10_000)
    m.setJMSMessageID("ID:7")
    m.setJMSDestination(Queue("orders"))
    text = repr(m)
    assert text == "<TextMessage id='ID:7' destination=queue://orders>"
    assert repr(Message()) == "<Message id=None destination=None>"


# -- BytesMessage ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("write", "value", "wire"),
    [
        ("writeBoolean", True, b"\x01"),
        ("writeBoolean", False, b"\x00"),
        ("writeByte", -1, b"\xff"),
        ("writeShort", -2, b"\xff\xfe"),
        ("writeChar", "A", b"\x00A"),
        ("writeChar", "\u20ac", b"\x20\xac"),
        ("writeInt", 1, b"\x00\x00\x00\x01"),
        ("writeLong", -(2**63), b"\x80" + b"\x00" * 7),
        ("writeFloat", 1.0, b"\x3f\x80\x00\x00"),
        ("writeDouble", -2.0, b"\xc0\x00\x00\x00\x00\x00\x00\x00"),
        ("writeUTF", "A", b"\x00\x01A"),
        ("writeUTF", "\u00e9", b"\x00\x02\xc3\xa9"),
        ("writeUTF", "\x00", b"\x00\x02\xc0\x80"),
        ("writeUTF", "\U0001f600", b"\x00\x06\xed\xa0\xbd\xed\xb8\x80"),
        ("writeUTF", "", b"\x00\x00"),
        ("writeBytes", b"\x01\x02", b"\x01\x02"),
    ],
)
def test_bytes_message_writes_java_data_output_bytes(write: str, value: object, wire: bytes) -> None:
    m = BytesMessage()
    getattr(m, write)(value)
    assert m.body_bytes() == wire


def test_bytes_message_reads_back_everything() -> None:
    m = BytesMessage()
    m.writeBoolean(True)
    m.writeByte(-128)
    m.writeShort(-32768)
    m.writeChar("\uffff")
    m.writeInt(2**31 - 1)
    m.writeLong(2**63 - 1)
    m.writeFloat(0.1)
    m.writeDouble(0.1)
    m.writeUTF("h\u00e9llo \U0001f600\x00")
    m.writeBytes(b"xyz", 1, 1)
    m.writeObject(300)
    m.writeObject("s")
    m.reset()
    assert m.readBoolean() is True
    assert m.readByte() == -128
    assert m.readShort() == -32768
    assert m.readChar() == "\uffff"
    assert m.readInt() == 2**31 - 1
    assert m.readLong() == 2**63 - 1
    assert m.readFloat() == TypedValue("float", 0.1).value
    assert m.readDouble() == 0.1
    assert m.readUTF() == "h\u00e9llo \U0001f600\x00"
    assert m.readUnsignedByte() == ord("y")
    assert m.readInt() == 300
    assert m.readUTF() == "s"
    with pytest.raises(MessageEOFException):
        m.readByte()


def test_bytes_message_unsigned_reads() -> None:
    m = BytesMessage(b"\xff\xff\xfe")
    m.reset()
    assert m.readUnsignedByte() == 255
    assert m.readUnsignedShort() == 0xFFFE


def test_bytes_message_eof_leaves_the_position() -> None:
    m = BytesMessage(b"\x00\x07")
    m.reset()
    with pytest.raises(MessageEOFException, match="2 left"):
        m.readInt()
    assert m.readShort() == 7
    with pytest.raises(MessageEOFException):
        m.readBoolean()


def test_bytes_message_read_utf_past_end_or_malformed_leaves_the_position() -> None:
    m = BytesMessage(b"\x00\x05ab")
    m.reset()
    with pytest.raises(MessageEOFException):
        m.readUTF()
    assert m.readUnsignedShort() == 5
    bad = BytesMessage(b"\x00\x02\xff\xfe")
    bad.reset()
    with pytest.raises(MessageFormatException):
        bad.readUTF()
    assert bad.readUnsignedShort() == 2


def test_bytes_message_read_bytes() -> None:
    m = BytesMessage(b"abcde")
    m.reset()
    buffer = bytearray(3)
    assert m.readBytes(buffer) == 3
    assert buffer == b"abc"
    assert m.readBytes(buffer, 1) == 1
    assert buffer == b"dbc"
    assert m.readBytes(buffer) == 1
    assert buffer[:1] == b"e"
    assert m.readBytes(buffer) == -1
    assert m.readBytes(bytearray(0)) == 0  # as ActiveMQ: -1 only when bytes were asked for
    with pytest.raises(MessageFormatException):
        m.readBytes(buffer, 4)


def test_bytes_message_modes() -> None:
    m = BytesMessage()
    m.writeInt(1)
    with pytest.raises(MessageNotReadableException, match=r"call reset\(\)"):
        m.readInt()
    with pytest.raises(MessageNotReadableException):
        m.getBodyLength()
    with pytest.raises(MessageNotReadableException):
        m.readBytes(bytearray(1))
    m.reset()
    assert m.getBodyLength() == 4
    with pytest.raises(MessageNotWriteableException, match=r"call clearBody\(\)"):
        m.writeInt(2)
    with pytest.raises(MessageNotWriteableException):
        m.writeObject(2)
    assert m.readInt() == 1
    m.reset()
    assert m.readInt() == 1
    m.clearBody()
    with pytest.raises(MessageNotReadableException):
        m.readInt()
    m.writeByte(1)
    m.reset()
    assert m.getBodyLength() == 1


def test_bytes_message_keeps_written_bytes_uncopied_and_appends_after_them() -> None:
    body = bytes(range(256)) * 16
    m = BytesMessage()
    m.writeBytes(body)
    assert m.body_bytes() is body  # one whole writeBytes: sent as it is, no copy
    m.writeBytes(b"!")
    m.writeShort(2)
    assert m.body_bytes() == body + b"!\x00\x02"
    assert body == bytes(range(256)) * 16  # the caller's bytes are untouched by the appends
    m.clearBody()
    m.writeInt(7)
    m.writeBytes(b"x")
    assert m.body_bytes() == b"\x00\x00\x00\x07x"


def test_bytes_message_copies_a_bytearray_so_later_changes_to_it_do_not_reach_the_body() -> None:
    data = bytearray(b"abc")
    m = BytesMessage()
    m.writeBytes(data)
    data[0:1] = b"z"
    assert m.body_bytes() == b"abc"
    received = BytesMessage(data)
    data[0:1] = b"q"
    assert received.body_bytes() == b"zbc"


def test_received_bytes_message_is_in_read_mode_at_the_start() -> None:
    m = BytesMessage(b"\x00\x00\x00\x09")
    received(m)
    assert m.readInt() == 9
    with pytest.raises(MessageNotWriteableException):
        m.writeInt(1)


@pytest.mark.parametrize(
    ("write", "value"),
    [
        ("writeByte", 128),
        ("writeShort", 2**15),
        ("writeInt", 2**31),
        ("writeLong", 2**63),
        ("writeChar", "ab"),
        ("writeChar", "\U0001f600"),
        ("writeBoolean", 1),
        ("writeUTF", None),
        ("writeObject", None),
        ("writeObject", [1]),
        ("writeBytes", "x"),
    ],
)
def test_bytes_message_rejects_bad_values(write: str, value: object) -> None:
    m = BytesMessage()
    with pytest.raises(MessageFormatException):
        getattr(m, write)(value)
    assert m.body_bytes() == b""


@pytest.mark.parametrize(("offset", "length"), [(-1, 1), (0, 4), (2, 2), (1, -1)])
def test_write_bytes_checks_bounds(offset: int, length: int) -> None:
    with pytest.raises(MessageFormatException, match="do not fit"):
        BytesMessage().writeBytes(b"abc", offset, length)


def test_write_utf_length_limit() -> None:
    m = BytesMessage()
    m.writeUTF("a" * 65535)
    m.writeUTF("\u20ac" * 21845)  # 3 bytes each: 65535
    with pytest.raises(MessageFormatException, match="65535"):
        m.writeUTF("a" * 65536)
    with pytest.raises(MessageFormatException, match="65535"):
        m.writeUTF("\x00" * 32768)  # NUL takes 2 bytes
    m.reset()
    assert m.readUTF() == "a" * 65535
    assert m.readUTF() == "\u20ac" * 21845


def test_modified_utf8_lone_surrogates_and_rejections() -> None:
    assert encode_modified_utf8("\ud800") == b"\xed\xa0\x80"
    assert decode_modified_utf8(b"\xed\xa0\x80") == "\ud800"
    assert decode_modified_utf8(b"a\x00b") == "a\x00b"  # Java reads a raw 0 byte too
    with pytest.raises(MessageFormatException):
        decode_modified_utf8("\U0001f600".encode())  # 4-byte form is standard UTF-8, not modified
    with pytest.raises(MessageFormatException):
        decode_modified_utf8(b"\xc3")


@given(st.text())
def test_modified_utf8_round_trip(text: str) -> None:
    encoded = encode_modified_utf8(text)
    assert b"\x00" not in encoded
    assert not any(byte >= 0xF0 for byte in encoded)
    assert decode_modified_utf8(encoded) == text


@given(st.text(max_size=200))
def test_write_utf_read_utf_round_trip(text: str) -> None:
    m = BytesMessage()
    m.writeUTF(text)
    m.writeInt(-1)
    m.reset()
    assert m.readUTF() == text
    assert m.readInt() == -1


# -- StreamMessage ---------------------------------------------------------------------------------------

READERS: dict[str, str] = {
    "boolean": "readBoolean",
    "byte": "readByte",
    "short": "readShort",
    "char": "readChar",
    "int": "readInt",
    "long": "readLong",
    "float": "readFloat",
    "double": "readDouble",
    "String": "readString",
}

STREAM_SAMPLES: dict[str, TypedValue] = {
    "boolean": TypedValue("boolean", False),
    "byte": TypedValue("byte", 1),
    "short": TypedValue("short", 2),
    "char": TypedValue("char", "c"),
    "int": TypedValue("int", 3),
    "long": TypedValue("long", 4),
    "float": TypedValue("float", 5.5),
    "double": TypedValue("double", 6.5),
    "String": TypedValue("String", "7"),
    "byte[]": TypedValue("byte[]", b"8"),
}

STREAM_ALLOWED: dict[str, set[str]] = {
    "boolean": {"boolean", "String"},
    "byte": {"byte", "short", "int", "long", "String"},
    "short": {"short", "int", "long", "String"},
    "char": {"char", "String"},
    "int": {"int", "long", "String"},
    "long": {"long", "String"},
    "float": {"float", "double", "String"},
    "double": {"double", "String"},
    "String": {"boolean", "byte", "short", "int", "long", "float", "double", "String"},
    "byte[]": set(),
}


@pytest.mark.parametrize("source", list(STREAM_SAMPLES))
@pytest.mark.parametrize("target", list(READERS))
def test_stream_conversion_table(source: str, target: str) -> None:
    m = StreamMessage()
    m.writeObject(STREAM_SAMPLES[source])
    m.writeInt(99)
    m.reset()
    read = getattr(m, READERS[target])
    if target in STREAM_ALLOWED[source]:
        read()
    else:
        with pytest.raises(MessageFormatException, match=re.escape(f"stream field 0 is a {source};")):
            read()
        assert m.readObject() == STREAM_SAMPLES[source].value  # the failed read did not move on
    assert m.readInt() == 99


def test_stream_number_format_error_leaves_the_position() -> None:
    m = StreamMessage()
    m.writeString("x1")
    m.reset()
    with pytest.raises(NumberFormatException):
        m.readInt()
    assert m.readString() == "x1"


def test_stream_nulls() -> None:
    m = StreamMessage()
    for _ in range(5):
        m.writeObject(None)
    m.writeString(None)
    m.reset()
    assert m.readString() is None
    assert m.readBoolean() is False
    with pytest.raises(NumberFormatException):
        m.readInt()
    assert m.readObject() is None
    with pytest.raises(MessageFormatException):
        m.readChar()
    assert m.readBytes(bytearray(2)) == -1
    assert m.readObject() is None
    assert m.readObject() is None
    with pytest.raises(MessageEOFException):
        m.readObject()


def test_stream_read_bytes_in_pieces() -> None:
    m = StreamMessage()
    m.writeBytes(b"abcdef")
    m.writeBytes(b"abcd")
    m.writeBytes(b"")
    m.writeBytes(b"xyz", 1, 2)
    m.writeInt(1)
    m.reset()
    buffer = bytearray(4)
    assert m.readBytes(buffer) == 4
    with pytest.raises(MessageFormatException, match="read it to the end"):
        m.readInt()
    assert m.readBytes(buffer) == 2  # fewer than the buffer: the field is done
    assert buffer[:2] == b"ef"
    assert m.readBytes(buffer) == 4  # exactly the buffer: one more call ...
    assert m.readBytes(buffer) == -1  # ... says the field is exhausted
    assert m.readBytes(buffer) == 0  # an empty byte[]
    assert m.readObject() == b"yz"
    with pytest.raises(MessageFormatException, match="cannot be read as byte"):
        m.readBytes(buffer)
    assert m.readInt() == 1
    with pytest.raises(MessageEOFException):
        m.readBytes(buffer)


def test_stream_modes_and_reset() -> None:
    m = StreamMessage()
    m.writeInt(1)
    with pytest.raises(MessageNotReadableException):
        m.readInt()
    m.reset()
    with pytest.raises(MessageNotWriteableException):
        m.writeInt(2)
    assert m.readInt() == 1
    with pytest.raises(MessageEOFException):
        m.readInt()
    m.reset()
    assert m.readLong() == 1
    m.clearBody()
    with pytest.raises(MessageNotReadableException):
        m.readInt()
    m.writeString("s")
    received(m)
    assert m.readString() == "s"


def test_stream_write_checks_values() -> None:
    m = StreamMessage()
    with pytest.raises(MessageFormatException):
        m.writeShort(2**15)
    with pytest.raises(MessageFormatException):
        m.writeObject([1])
    with pytest.raises(MessageFormatException):
        m.writeBytes(b"ab", 1, 5)
    m.reset()
    with pytest.raises(MessageEOFException):
        m.readObject()


# -- MapMessage -----------------------------------------------------------------------------------------

MAP_SETTERS: list[tuple[str, str, object]] = [
    ("setBoolean", "getBoolean", True),
    ("setByte", "getByte", 1),
    ("setShort", "getShort", 2),
    ("setChar", "getChar", "c"),
    ("setInt", "getInt", 3),
    ("setLong", "getLong", 2**40),
    ("setFloat", "getFloat", 0.5),
    ("setDouble", "getDouble", 0.1),
    ("setString", "getString", "s"),
    ("setBytes", "getBytes", b"\x00\xff"),
]


@pytest.mark.parametrize(("setter", "getter", "value"), MAP_SETTERS)
def test_map_set_and_get(setter: str, getter: str, value: object) -> None:
    m = MapMessage()
    getattr(m, setter)("k", value)
    assert getattr(m, getter)("k") == value
    assert m.getObject("k") == value
    assert m.itemExists("k")
    assert m.getMapNames() == ["k"]


def test_map_conversions_and_missing_names() -> None:
    m = MapMessage()
    m.setShort("s", 7)
    m.setString("n", "12")
    m.setBytes("b", b"abcd", 1, 2)
    assert m.getLong("s") == 7
    assert m.getString("s") == "7"
    assert m.getDouble("n") == 12.0
    assert m.getBytes("b") == b"bc"
    with pytest.raises(MessageFormatException, match="map field 's' is a short; it cannot be read as byte"):
        m.getByte("s")
    with pytest.raises(MessageFormatException):
        m.getString("b")
    assert m.getBoolean("missing") is False
    assert m.getString("missing") is None
    assert m.getBytes("missing") is None
    assert m.getObject("missing") is None
    assert not m.itemExists("missing")
    with pytest.raises(NumberFormatException):
        m.getInt("missing")
    with pytest.raises(MessageFormatException):
        m.getChar("missing")


def test_map_null_values() -> None:
    m = MapMessage()
    m.setString("s", None)
    m.setBytes("b", None)
    m.setObject("o", None)
    assert all(m.itemExists(name) for name in ("s", "b", "o"))
    assert m.getString("s") is None
    assert m.getBytes("b") is None
    assert m.getObject("o") is None
    assert m.getBody(dict) == {"s": None, "b": None, "o": None}


def test_map_set_object_and_names() -> None:
    m = MapMessage(
        {"i": 1, "l": 2**40, "d": 1.5, "s": "x", "b": b"y", "t": True, "c": TypedValue("char", "z")}
    )
    assert m.getChar("c") == "z"
    assert m.typed_items()["l"] == TypedValue("long", 2**40)
    with pytest.raises(MessageFormatException):
        m.setObject("bad", [1])
    for name in ("", None):
        with pytest.raises(MessageFormatException, match="non-empty"):
            m.setInt(name, 1)  # type: ignore[arg-type]
    with pytest.raises(MessageFormatException):
        m.setByte("x", 200)


# -- ObjectMessage ---------------------------------------------------------------------------------------


def test_object_message_copies_at_set_time() -> None:
    obj = {"items": [1, 2]}
    m = ObjectMessage(obj)
    obj["items"].append(3)
    assert m.getObject() == {"items": [1, 2]}
    first = m.getObject()
    assert isinstance(first, dict)
    first["x"] = 1
    assert m.getObject() == {"items": [1, 2]}
    assert m.serializer is JSON


def test_object_message_refuses_what_json_cannot_say() -> None:
    with pytest.raises(MessageFormatException, match="register another serializer"):
        ObjectMessage(object())
    with pytest.raises(MessageFormatException):
        ObjectMessage(math.nan)


class _Reversing:
    name = "rev"

    def dumps(self, obj: object) -> bytes:
        return str(obj)[::-1].encode()

    def loads(self, data: bytes) -> object:
        return data.decode()[::-1]


class _Broken:
    name = "broken"

    def dumps(self, obj: object) -> bytes:
        raise RuntimeError("boom")

    def loads(self, data: bytes) -> object:
        raise KeyError("nope")


def test_object_message_custom_and_failing_serializers() -> None:
    m = ObjectMessage("abc", serializer=_Reversing())
    assert m.serialized_body() == b"cba"
    assert m.getObject() == "abc"
    with pytest.raises(MessageFormatException, match="'broken' failed"):
        ObjectMessage("x", serializer=_Broken())
    failing = ObjectMessage.from_serialized(b"x", _Broken())
    with pytest.raises(MessageFormatException, match="'broken' failed"):
        failing.getObject()
    with pytest.raises(MessageFormatException):
        failing.getBody(object)


def test_serializer_registry() -> None:
    registry = SerializerRegistry()
    assert registry.default is JSON
    assert "json" in registry
    with pytest.raises(MessageFormatException, match=r"'msgpack'.*register\(\)"):
        registry.get("msgpack")
    stand_in = registry.resolve("msgpack")
    with pytest.raises(MessageFormatException, match="msgpack"):
        stand_in.loads(b"")
    registry.register(_Reversing())
    assert registry.get("rev").name == "rev"
    assert registry.names() == ["json", "rev"]
    assert SerializerRegistry([_Reversing()], default="rev").default.name == "rev"
    bad = _Reversing()
    bad.name = "has space"
    with pytest.raises(MessageFormatException, match="header"):
        registry.register(bad)


def test_json_serializer_rejects_bad_json() -> None:
    with pytest.raises(MessageFormatException, match="not valid JSON"):
        JsonSerializer().loads(b"{")

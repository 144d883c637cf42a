"""The body codec: bodies and properties to (headers, bytes) and back, and hostile input from the network."""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from jmslike.body_codec import (
    NULL_BODY_HEADER,
    PTYPES_HEADER,
    TYPE_HEADER,
    decode_body,
    decode_properties,
    encode_body,
    encode_properties,
)
from jmslike.exceptions import MessageFormatException
from jmslike.messages import BytesMessage, MapMessage, Message, ObjectMessage, StreamMessage, TextMessage
from jmslike.properties import TypedValue, check_property_name, convert
from jmslike.serializers import SERIALIZER_HEADER, SerializerRegistry

REGISTRY = SerializerRegistry()
RESERVED = frozenset({"destination", "priority", "expires", "persistent", "type", "content-length"})


def same(a: object, b: object) -> bool:
    """Equal in value and type, NaN equal to NaN (floats nested in lists and dicts too)."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, TypedValue) and isinstance(b, TypedValue):
        return a.jms_type == b.jms_type and same(a.value, b.value)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b and type(a) is type(b)


def wire_trip(message: Message) -> Message:
    """What an adapter does: body and property headers out, the same headers back in."""
    tag, body, extra = encode_body(message)
    headers = {**encode_properties(message, RESERVED), **extra, TYPE_HEADER: tag}
    decoded = decode_body(headers[TYPE_HEADER], body, headers, REGISTRY)
    decoded.load_properties(decode_properties(headers, RESERVED, ignore={"subscription", "message-id"}))
    return decoded


# -- bodies ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "hello", "caf\u00e9 \U0001f600", None])
def test_text_round_trip(text: str | None) -> None:
    tag, body, extra = encode_body(TextMessage(text))
    assert tag == "text"
    decoded = decode_body(tag, body, extra, REGISTRY)
    assert isinstance(decoded, TextMessage)
    assert decoded.getText() == text


def test_text_encoding_is_plain_utf8() -> None:
    assert encode_body(TextMessage("\u00e9")) == ("text", b"\xc3\xa9", {})
    assert encode_body(TextMessage(None)) == ("text", b"", {NULL_BODY_HEADER: "true"})


def test_text_with_a_lone_surrogate_cannot_be_sent() -> None:
    with pytest.raises(MessageFormatException, match="surrogate"):
        encode_body(TextMessage("a\ud800"))


def test_bytes_body_is_raw_in_either_mode() -> None:
    m = BytesMessage()
    m.writeInt(1)
    assert encode_body(m) == ("bytes", b"\x00\x00\x00\x01", {})
    m.reset()
    m.readInt()
    assert encode_body(m)[1] == b"\x00\x00\x00\x01"


def test_map_and_stream_body_format() -> None:
    mm = MapMessage({"i": 1, "b": b"\x00", "f": TypedValue("float", math.inf), "n": None})
    tag, body, _ = encode_body(mm)
    assert tag == "map"
    assert json.loads(body) == {
        "i": ["int", 1],
        "b": ["byte[]", "AA=="],
        "f": ["float", "Infinity"],
        "n": ["null", None],
    }
    sm = StreamMessage()
    sm.writeChar("c")
    sm.writeObject(None)
    assert encode_body(sm) == ("stream", b'[["char","c"],["null",null]]', {})


def test_object_body_names_its_serializer() -> None:
    assert encode_body(ObjectMessage({"a": 1})) == ("object", b'{"a":1}', {SERIALIZER_HEADER: "json"})
    assert encode_body(ObjectMessage(None))[2] == {SERIALIZER_HEADER: "json", NULL_BODY_HEADER: "true"}
    decoded = decode_body("object", b"", {SERIALIZER_HEADER: "json", NULL_BODY_HEADER: "true"}, REGISTRY)
    assert isinstance(decoded, ObjectMessage)
    assert decoded.getObject() is None


def test_object_with_an_unknown_serializer_is_delivered_and_fails_on_read() -> None:
    decoded = decode_body("object", b"\x93\x01", {SERIALIZER_HEADER: "msgpack"}, REGISTRY)
    assert isinstance(decoded, ObjectMessage)
    with pytest.raises(MessageFormatException, match="'msgpack'"):
        decoded.getObject()
    assert encode_body(decoded) == ("object", b"\x93\x01", {SERIALIZER_HEADER: "msgpack"})


def test_object_without_serializer_header_is_json() -> None:
    decoded = decode_body("object", b"[1]", {}, REGISTRY)
    assert isinstance(decoded, ObjectMessage)
    assert decoded.getObject() == [1]


def test_plain_message() -> None:
    assert encode_body(Message()) == ("message", b"", {})
    assert type(decode_body("message", b"ignored", {}, REGISTRY)) is Message


@pytest.mark.parametrize(
    ("headers", "body", "kind"),
    [
        ({}, b"hi", TextMessage),
        ({"content-length": "2"}, b"hi", BytesMessage),
        ({"content-length": "2", "content-type": "text/plain;charset=utf-8"}, b"hi", TextMessage),
        ({"content-length": "2", "content-type": "TEXT/plain"}, b"hi", TextMessage),
        ({"content-length": "2", "content-type": "application/json"}, b"{}", BytesMessage),
        ({"content-type": "application/octet-stream"}, b"hi", TextMessage),
        ({}, b"\xff\xfe", BytesMessage),
        ({"content-type": "text/plain"}, b"\xc3", BytesMessage),
    ],
)
def test_untagged_messages(headers: Mapping[str, str], body: bytes, kind: type[Message]) -> None:
    decoded = decode_body(None, body, headers, REGISTRY)
    assert type(decoded) is kind
    assert decoded.getBody(object) in (body, body.decode("utf-8", "replace"))


def test_tagged_text_that_is_not_utf8_keeps_its_payload() -> None:
    decoded = decode_body("text", b"\xff", {}, REGISTRY)
    assert isinstance(decoded, BytesMessage)
    assert decoded.getBody(bytes) == b"\xff"


def test_unknown_tag_decodes_like_an_untagged_message() -> None:
    assert isinstance(decode_body("hologram", b"hi", {}, REGISTRY), TextMessage)
    assert isinstance(decode_body("hologram", b"hi", {"content-length": "2"}, REGISTRY), BytesMessage)


@pytest.mark.parametrize(
    ("tag", "body", "reason"),
    [
        ("map", b"", "not valid JSON"),
        ("map", b"{", "not valid JSON"),
        ("map", b"\xff\xfe\x00", "not valid JSON"),
        ("map", b"[]", "not an object"),
        ("map", b'{"a": 1}', r"expected \[type, value\]"),
        ("map", b'{"a": ["int"]}', r"expected \[type, value\]"),
        ("map", b'{"a": [1, 1]}', r"expected \[type, value\]"),
        ("map", b'{"a": ["integer", 1]}', "not one of the types"),
        ("map", b'{"a": ["int", 2147483648]}', "range"),
        ("map", b'{"a": ["int", true]}', "must be an int"),
        ("map", b'{"a": ["int", 1.0]}', "must be an int"),
        ("map", b'{"a": ["byte[]", "***"]}', "base64"),
        ("map", b'{"a": ["byte[]", 5]}', "must be bytes"),
        ("map", b'{"a": ["double", "nan"]}', "must be a float"),
        ("map", b'{"a": ["char", "ab"]}', "one character"),
        ("map", b'{"a": ["null", 1]}', "not one of the types"),
        ("stream", b"{}", "not a list"),
        ("stream", b"[null]", r"stream field 0: expected \[type, value\]"),
        ("stream", b'[["String", "a"], ["String", 1]]', "stream field 1"),
        ("stream", b"[" * 100_000, "not valid JSON"),
    ],
)
def test_malformed_bodies_are_format_errors(tag: str, body: bytes, reason: str) -> None:
    with pytest.raises(MessageFormatException, match=reason):
        decode_body(tag, body, {}, REGISTRY)


@given(st.sampled_from(["map", "stream"]), st.binary())
def test_random_map_and_stream_bytes_raise_only_format_errors(tag: str, body: bytes) -> None:
    with contextlib.suppress(MessageFormatException):
        decode_body(tag, body, {}, REGISTRY)


json_documents = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)
type_names = st.sampled_from(["boolean", "byte", "short", "char", "int", "long", "float", "double", "String"])
elements = st.tuples(type_names | st.sampled_from(["byte[]", "null", "x"]), json_documents).map(list)


@given(
    st.sampled_from(["map", "stream"]),
    json_documents
    | st.lists(elements, max_size=4)
    | st.dictionaries(st.text(max_size=4), elements | json_documents, max_size=4),
)
@example(
    "stream", [["byte[]", "\x80"]]
)  # non-ASCII "base64": b64decode raises ValueError, not binascii.Error
def test_json_shaped_garbage_raises_only_format_errors(tag: str, document: object) -> None:
    with contextlib.suppress(MessageFormatException):
        decode_body(tag, json.dumps(document).encode(), {}, REGISTRY)


# -- properties ------------------------------------------------------------------------------------------


def test_encode_properties_format() -> None:
    m = Message()
    m.setIntProperty("count", 3)
    m.setBooleanProperty("flag", True)
    m.setDoubleProperty("ratio", 1e10)
    m.setFloatProperty("f", 0.1)
    m.setStringProperty("name", "x")
    m.setLongProperty("priority", 7)
    m.set_delivery_count(3)
    assert encode_properties(m, RESERVED) == {
        "count": "3",
        "flag": "true",
        "ratio": "1.0E10",
        "f": "0.1",
        "name": "x",
        "jmslike-p-priority": "7",
        PTYPES_HEADER: "count=int;flag=boolean;ratio=double;f=float;priority=long",
    }


def test_only_strings_means_no_sidecar() -> None:
    m = Message()
    m.setStringProperty("a", "1")
    assert encode_properties(m, RESERVED) == {"a": "1"}


def test_decode_properties_types_and_skips() -> None:
    headers = {
        "count": "3",
        "flag": "true",
        "plain": "3",
        "jmslike-p-priority": "7",
        "priority": "4",
        "message-id": "m1",
        "jmslike-id": "x",
        TYPE_HEADER: "text",
        PTYPES_HEADER: "count=int;flag=boolean;priority=long;ghost=int;weird=decimal;;=int;noequals",
    }
    assert decode_properties(headers, RESERVED, ignore={"message-id"}) == {
        "count": TypedValue("int", 3),
        "flag": TypedValue("boolean", True),
        "plain": TypedValue("String", "3"),
        "priority": TypedValue("long", 7),
    }


@pytest.mark.parametrize(
    ("jms_type", "text"),
    [("int", "x"), ("int", "2147483648"), ("boolean", "yes"), ("double", "many"), ("byte", "1.5")],
)
def test_sidecar_mismatch_keeps_the_string(jms_type: str, text: str) -> None:
    headers = {"p": text, PTYPES_HEADER: f"p={jms_type}"}
    assert decode_properties(headers, RESERVED, ()) == {"p": TypedValue("String", text)}


def test_java_peers_convert_our_strings_by_jms_rules() -> None:
    """A Java peer sees only strings; JMS String conversion gives it the value we sent."""
    m = Message()
    m.setFloatProperty("f", 0.1)
    m.setLongProperty("big", -(2**63))
    m.setDoubleProperty("tiny", 5e-324)
    headers = encode_properties(m, RESERVED)
    assert convert(TypedValue("String", headers["f"]), "float") == m.getFloatProperty("f")
    assert convert(TypedValue("String", headers["big"]), "long") == -(2**63)
    assert convert(TypedValue("String", headers["tiny"]), "double") == 5e-324


@given(st.dictionaries(st.text(), st.text()), st.text(), st.frozensets(st.text(max_size=3)))
def test_decode_properties_never_raises(
    headers: dict[str, str], sidecar: str, ignore: frozenset[str]
) -> None:
    with_sidecar = {**headers, PTYPES_HEADER: sidecar}
    decode_properties(with_sidecar, RESERVED, ignore)


@given(st.dictionaries(st.text(min_size=1), st.text()), type_names)
def test_decode_properties_never_raises_with_every_header_typed(
    headers: dict[str, str], jms_type: str
) -> None:
    sidecar = ";".join(f"{name}={jms_type}" for name in headers)
    properties = decode_properties({**headers, PTYPES_HEADER: sidecar}, RESERVED, ())
    assert set(properties) <= set(headers) | {name[len("jmslike-p-") :] for name in headers}


# -- round trips ------------------------------------------------------------------------------------------


def _is_property_name(name: str) -> bool:
    try:
        check_property_name(name)
    except MessageFormatException:
        return False
    return True


property_names = st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$]{0,8}", fullmatch=True).filter(_is_property_name) | (
    st.sampled_from(sorted(RESERVED - {"content-length"}))
)

field_values = st.one_of(
    st.booleans().map(lambda v: TypedValue("boolean", v)),
    st.integers(-(2**7), 2**7 - 1).map(lambda v: TypedValue("byte", v)),
    st.integers(-(2**15), 2**15 - 1).map(lambda v: TypedValue("short", v)),
    st.integers(-(2**31), 2**31 - 1).map(lambda v: TypedValue("int", v)),
    st.integers(-(2**63), 2**63 - 1).map(lambda v: TypedValue("long", v)),
    st.floats(width=32).map(lambda v: TypedValue("float", v)),
    st.floats().map(lambda v: TypedValue("double", v)),
    st.text().map(lambda v: TypedValue("String", v)),
)
map_and_stream_values = (
    field_values
    | st.integers(0, 0xFFFF).map(lambda c: TypedValue("char", chr(c)))
    | st.binary().map(lambda v: TypedValue("byte[]", v))
    | st.none()
)


def _with_properties(message: Message, properties: dict[str, TypedValue]) -> Message:
    for name, typed in properties.items():
        message.setObjectProperty(name, typed)
    return message


@given(st.dictionaries(property_names, field_values, max_size=8))
def test_properties_round_trip_with_exact_types(properties: dict[str, TypedValue]) -> None:
    decoded = wire_trip(_with_properties(Message(), properties))
    assert same(dict(decoded.typed_properties()), properties)


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"])) | st.none())
def test_text_bodies_round_trip(text: str | None) -> None:
    decoded = wire_trip(TextMessage(text))
    assert isinstance(decoded, TextMessage)
    assert decoded.getText() == text


@given(st.binary())
def test_bytes_bodies_round_trip(data: bytes) -> None:
    decoded = wire_trip(BytesMessage(data))
    assert isinstance(decoded, BytesMessage)
    assert decoded.body_bytes() == data
    decoded.mark_received()
    assert decoded.getBodyLength() == len(data)


@given(st.dictionaries(st.text(min_size=1), map_and_stream_values, max_size=8))
def test_map_bodies_round_trip(values: dict[str, TypedValue | None]) -> None:
    m = MapMessage()
    for name, typed in values.items():
        m.setObject(name, typed)
    decoded = wire_trip(m)
    assert isinstance(decoded, MapMessage)
    assert same(dict(decoded.typed_items()), values)


@given(st.lists(map_and_stream_values, max_size=8))
def test_stream_bodies_round_trip(values: list[TypedValue | None]) -> None:
    m = StreamMessage()
    for typed in values:
        m.writeObject(typed)
    decoded = wire_trip(m)
    assert isinstance(decoded, StreamMessage)
    assert same(list(decoded.typed_items()), values)


@given(json_documents.filter(lambda d: "NaN" not in json.dumps(d) and "Infinity" not in json.dumps(d)))
def test_object_bodies_round_trip(document: object) -> None:
    decoded = wire_trip(ObjectMessage(document))
    assert isinstance(decoded, ObjectMessage)
    assert same(decoded.getObject(), document)


@given(st.dictionaries(property_names, field_values, max_size=4), st.binary())
def test_body_and_properties_travel_together(properties: dict[str, TypedValue], data: bytes) -> None:
    decoded = wire_trip(_with_properties(BytesMessage(data), properties))
    assert decoded.getBody(object) == (data or None)
    assert same(dict(decoded.typed_properties()), properties)

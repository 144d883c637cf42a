"""ActiveMQ's XStream JSON map format (``transformation: jms-map-json``), as pure functions.

The sample bodies are what ActiveMQ 5.17.2 with XStream 1.4.20 and Jettison 1.5.3 produced for Java
MapMessages (see docs/interop.md); the round trip checks every JMS type our encoder sends."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jmslike.adapters import activemq_map
from jmslike.exceptions import MessageFormatException
from jmslike.properties import TypedValue, to_float32

# Recorded from the broker: a Java MapMessage with one field of each type (HashMap order).
JAVA_MAP_BODY = (
    '{"map":{"entry":[{"string":"inf","float":"Infinity"},{"string":"big","double":1.0E300},'
    '{"string":"b","byte":-5},{"string":"c","char":"\u00e9"},{"string":"d","double":0.5},'
    '{"string":"f","float":1.5},{"string":"i","int":3},{"string":"raw","byte-array":"AAI="},'
    '{"string":"l","long":1152921504606846977},{"string":["uni","a\\"b\\\\c \u2713 \\n"]},'
    '{"string":["s","x"]},{"string":"t","boolean":true},{"string":"sh","short":-300},'
    '{"string":"nan","double":"NaN"}]}}'
).encode()


def test_decodes_every_java_type() -> None:
    items = activemq_map.decode(JAVA_MAP_BODY)

    assert items == {
        "inf": TypedValue("float", math.inf),
        "big": TypedValue("double", 1e300),
        "b": TypedValue("byte", -5),
        "c": TypedValue("char", "é"),
        "d": TypedValue("double", 0.5),
        "f": TypedValue("float", 1.5),
        "i": TypedValue("int", 3),
        "raw": TypedValue("byte[]", b"\x00\x02"),
        "l": TypedValue("long", 2**60 + 1),
        "uni": TypedValue("String", 'a"b\\c ✓ \n'),
        "s": TypedValue("String", "x"),
        "t": TypedValue("boolean", True),
        "sh": TypedValue("short", -300),
        "nan": items["nan"],
    }
    nan = items["nan"]
    assert nan is not None and nan.jms_type == "double" and math.isnan(float(nan.value))


def test_single_entry_is_an_object_and_empty_map_is_an_empty_string() -> None:
    assert activemq_map.decode(b'{"map":{"entry":{"string":"only","int":1}}}') == {
        "only": TypedValue("int", 1)
    }
    assert activemq_map.decode(b'{"map":""}') == {}


def test_number_like_strings_and_keys_keep_their_text() -> None:
    """Jettison writes text that reads back as a number or boolean as a JSON number or boolean."""
    body = b'{"map":{"entry":[{"string":["a",42]},{"string":["c",1.0E300]},{"string":["d",true]},{"string":123,"int":1},{"string":[true,"x"]}]}}'
    assert activemq_map.decode(body) == {
        "a": TypedValue("String", "42"),
        "c": TypedValue("String", "1.0E300"),
        "d": TypedValue("String", "true"),
        "123": TypedValue("int", 1),
        "true": TypedValue("String", "x"),
    }


def test_null_value() -> None:
    assert activemq_map.decode(b'{"map":{"entry":[{"string":"n","null":""}]}}') == {"n": None}


def test_float_is_rounded_to_32_bits_like_java() -> None:
    items = activemq_map.decode(b'{"map":{"entry":{"string":"f","float":0.1}}}')
    assert items == {"f": TypedValue("float", to_float32(0.1))}


def test_encode_shape_matches_what_the_broker_reads() -> None:
    body = activemq_map.encode({"count": TypedValue("int", 3), "name": TypedValue("String", "x"), "n": None})
    assert json.loads(body) == {
        "map": {
            "entry": [{"string": "count", "int": "3"}, {"string": ["name", "x"]}, {"string": "n", "null": ""}]
        }
    }
    assert activemq_map.encode({}) == b'{"map":""}'


def test_encode_is_ascii_without_nul_because_the_frame_has_no_content_length() -> None:
    body = activemq_map.encode({"k\x00": TypedValue("String", "a\x00é😀")})
    assert b"\x00" not in body and body.isascii()


def test_encode_refuses_byte_arrays_the_broker_would_reject() -> None:
    with pytest.raises(MessageFormatException, match="byte"):
        activemq_map.encode({"raw": TypedValue("byte[]", b"\x01")})


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"map":1}',
        b'{"other":""}',
        b'{"map":{"entry":[1]}}',
        b'{"map":{"entry":{"string":"k"}}}',
        b'{"map":{"entry":{"string":"k","int":1,"long":2}}}',
        b'{"map":{"entry":{"string":"k","object":"x"}}}',
        b'{"map":{"entry":{"string":"k","int":"x"}}}',
        b'{"map":{"entry":{"string":"k","int":3000000000}}}',
        b'{"map":{"entry":{"string":"k","boolean":"maybe"}}}',
        b'{"map":{"entry":{"string":"k","char":"ab"}}}',
        b'{"map":{"entry":{"string":"k","byte-array":"!!"}}}',
        b'{"map":{"entry":{"string":"k","double":"inf"}}}',
        b'{"map":{"entry":{"string":"k","int":{"x":1}}}}',
        b'{"map":{"entry":{"string":{"x":1},"int":1}}}',
        b"[" * 100_000,
    ],
)
def test_malformed_bodies_raise_message_format_exception(body: bytes) -> None:
    with pytest.raises(MessageFormatException):
        activemq_map.decode(body)


_TEXT = st.text(st.characters(codec="utf-8"))
_VALUES = st.one_of(
    _TEXT.map(lambda v: TypedValue("String", v)),
    st.booleans().map(lambda v: TypedValue("boolean", v)),
    st.integers(-(2**7), 2**7 - 1).map(lambda v: TypedValue("byte", v)),
    st.integers(-(2**15), 2**15 - 1).map(lambda v: TypedValue("short", v)),
    st.integers(-(2**31), 2**31 - 1).map(lambda v: TypedValue("int", v)),
    st.integers(-(2**63), 2**63 - 1).map(lambda v: TypedValue("long", v)),
    st.floats(width=32).map(lambda v: TypedValue("float", v)),
    st.floats().map(lambda v: TypedValue("double", v)),
    st.characters(max_codepoint=0xFFFF, codec="utf-8").map(lambda v: TypedValue("char", v)),
    st.none(),
)


def _comparable(items: dict[str, TypedValue | None]) -> dict[str, object]:
    """NaN != NaN; compare NaNs by type only."""
    return {
        name: (typed.jms_type, "NaN") if typed is not None and typed.value != typed.value else typed
        for name, typed in items.items()
    }


@given(st.dictionaries(_TEXT, _VALUES, max_size=8))
def test_round_trip_over_typed_maps(items: dict[str, TypedValue | None]) -> None:
    assert _comparable(activemq_map.decode(activemq_map.encode(items))) == _comparable(items)


@given(st.dictionaries(_TEXT, _VALUES, min_size=1, max_size=8))
def test_round_trip_through_jettisons_number_typing(items: dict[str, TypedValue | None]) -> None:
    """What the broker sends back has numbers (and number-like strings) as JSON numbers: simulate it by
    turning every value string that JSON reads as a number into one."""

    def jettison(value: object) -> object:
        if isinstance(value, list):
            return [jettison(v) for v in value]
        if isinstance(value, dict):
            return {k: jettison(v) for k, v in value.items()}
        if isinstance(value, str) and value in ("true", "false"):
            return value == "true"
        if isinstance(value, str):
            try:
                number = json.loads(value)
            except ValueError:
                return value
            if isinstance(number, int) and str(number) == value:
                return json.loads(value, parse_int=_Raw)
        return value

    document = jettison(json.loads(activemq_map.encode(items)))
    body = json.dumps(document, default=str).encode()
    assert _comparable(activemq_map.decode(body)) == _comparable(items)


class _Raw(int):
    """An int that json.dumps writes as its own text."""

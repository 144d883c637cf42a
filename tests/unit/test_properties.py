"""Typed JMS values: ranges, the conversion table, Java string forms, property names."""

from __future__ import annotations

import math
import struct
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jmslike.exceptions import MessageFormatException, NumberFormatException
from jmslike.properties import (
    FIELD_TYPES,
    PROPERTY_TYPES,
    JmsType,
    TypedValue,
    check_property_name,
    convert,
    from_java_string,
    java_string,
    typed_from_object,
)

ALL_TYPES: list[JmsType] = [
    "boolean",
    "byte",
    "short",
    "char",
    "int",
    "long",
    "float",
    "double",
    "String",
    "byte[]",
]

# The JMS 1.1 §3.11.3 table, written out independently of the implementation: row = stored type,
# X = may be read as the column type.
JMS_TABLE = """
          boolean byte short char int long float double String byte[]
boolean   X       .    .     .    .   .    .     .      X      .
byte      .       X    X     .    X   X    .     .      X      .
short     .       .    X     .    X   X    .     .      X      .
char      .       .    .     X    .   .    .     .      X      .
int       .       .    .     .    X   X    .     .      X      .
long      .       .    .     .    .   X    .     .      X      .
float     .       .    .     .    .   .    X     X      X      .
double    .       .    .     .    .   .    .     X      X      .
String    X       X    X     .    X   X    X     X      X      .
byte[]    .       .    .     .    .   .    .     .      .      X
"""


def _parse_table() -> set[tuple[str, str]]:
    header, *rows = JMS_TABLE.strip().splitlines()
    columns = header.split()
    allowed = set()
    for row in rows:
        source, *marks = row.split()
        allowed |= {(source, target) for target, mark in zip(columns, marks, strict=True) if mark == "X"}
    return allowed


ALLOWED = _parse_table()

SAMPLES: dict[str, TypedValue] = {
    "boolean": TypedValue("boolean", True),
    "byte": TypedValue("byte", 7),
    "short": TypedValue("short", 300),
    "char": TypedValue("char", "c"),
    "int": TypedValue("int", 70000),
    "long": TypedValue("long", 2**40),
    "float": TypedValue("float", 1.5),
    "double": TypedValue("double", 2.25),
    "String": TypedValue("String", "12"),
    "byte[]": TypedValue("byte[]", b"\x00x"),
}

EXPECTED: dict[tuple[str, str], object] = {
    ("boolean", "boolean"): True,
    ("boolean", "String"): "true",
    ("byte", "byte"): 7,
    ("byte", "short"): 7,
    ("byte", "int"): 7,
    ("byte", "long"): 7,
    ("byte", "String"): "7",
    ("short", "short"): 300,
    ("short", "int"): 300,
    ("short", "long"): 300,
    ("short", "String"): "300",
    ("char", "char"): "c",
    ("char", "String"): "c",
    ("int", "int"): 70000,
    ("int", "long"): 70000,
    ("int", "String"): "70000",
    ("long", "long"): 2**40,
    ("long", "String"): str(2**40),
    ("float", "float"): 1.5,
    ("float", "double"): 1.5,
    ("float", "String"): "1.5",
    ("double", "double"): 2.25,
    ("double", "String"): "2.25",
    ("String", "boolean"): False,
    ("String", "byte"): 12,
    ("String", "short"): 12,
    ("String", "int"): 12,
    ("String", "long"): 12,
    ("String", "float"): 12.0,
    ("String", "double"): 12.0,
    ("String", "String"): "12",
    ("byte[]", "byte[]"): b"\x00x",
}


def test_the_written_table_and_the_expectations_agree() -> None:
    assert set(EXPECTED) == ALLOWED
    assert len(ALLOWED) == 32


@pytest.mark.parametrize("source", ALL_TYPES)
@pytest.mark.parametrize("target", ALL_TYPES)
def test_conversion_table(source: str, target: JmsType) -> None:
    typed = SAMPLES[source]
    if (source, target) in ALLOWED:
        result = convert(typed, target, "property 'x'")
        expected = EXPECTED[(source, target)]
        assert result == expected
        assert type(result) is type(expected)
    else:
        with pytest.raises(MessageFormatException) as caught:
            convert(typed, target, "property 'x'")
        assert not isinstance(caught.value, NumberFormatException)
        assert f"property 'x' is a {source}; it cannot be read as {target}" in str(caught.value)


def test_property_types_are_the_field_types_without_char_and_bytes() -> None:
    assert set(FIELD_TYPES - PROPERTY_TYPES) == {"char", "byte[]"}


# -- missing values ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("target", "expected"), [("boolean", False), ("String", None), ("byte[]", None)])
def test_missing_value_reads_as_java_valueof_null(target: JmsType, expected: object) -> None:
    assert convert(None, target) is expected


@pytest.mark.parametrize("target", ["byte", "short", "int", "long", "float", "double"])
def test_missing_value_as_number_is_number_format_exception(target: JmsType) -> None:
    with pytest.raises(NumberFormatException, match="is not set"):
        convert(None, target, "property 'gone'")


def test_missing_char_is_a_format_error_not_a_number_error() -> None:
    with pytest.raises(MessageFormatException) as caught:
        convert(None, "char")
    assert not isinstance(caught.value, NumberFormatException)


def test_number_format_exception_is_both_jms_and_python() -> None:
    assert issubclass(NumberFormatException, MessageFormatException)
    assert issubclass(NumberFormatException, ValueError)


# -- String parsing as Java does it ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        ("tRuE", True),
        ("false", False),
        ("yes", False),
        ("1", False),
        ("", False),
    ],
)
def test_string_to_boolean_is_boolean_valueof(text: str, expected: bool) -> None:
    assert convert(TypedValue("String", text), "boolean") is expected


@pytest.mark.parametrize(
    ("text", "target", "expected"),
    [
        ("+5", "int", 5),
        ("-128", "byte", -128),
        ("127", "byte", 127),
        ("-32768", "short", -32768),
        ("2147483647", "int", 2147483647),
        ("-9223372036854775808", "long", -(2**63)),
        ("007", "int", 7),
    ],
)
def test_string_to_integer(text: str, target: JmsType, expected: int) -> None:
    assert convert(TypedValue("String", text), target) == expected


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("128", "byte"),
        ("-129", "byte"),
        ("32768", "short"),
        ("2147483648", "int"),
        ("9223372036854775808", "long"),
        (" 5", "int"),
        ("5 ", "int"),
        ("5_0", "int"),
        ("1.0", "int"),
        ("", "int"),
        ("-", "int"),
        ("0x10", "int"),
        ("abc", "long"),
        ("\u0663", "int"),  # an Arabic-Indic digit: Java accepts it, jmslike keeps to ASCII digits
    ],
)
def test_string_to_integer_rejects_like_java(text: str, target: JmsType) -> None:
    with pytest.raises(NumberFormatException, match=target):
        convert(TypedValue("String", text), target, "property 'n'")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1.5", 1.5),
        (" 1.5\t", 1.5),
        ("1e3", 1000.0),
        ("-2.5E-3", -0.0025),
        ("1.5f", 1.5),
        ("2D", 2.0),
        (".5", 0.5),
        ("5.", 5.0),
        ("+Infinity", math.inf),
        ("-Infinity", -math.inf),
        ("0x1.8p1", 3.0),
        ("1e400", math.inf),
    ],
)
def test_string_to_double(text: str, expected: float) -> None:
    assert convert(TypedValue("String", text), "double") == expected


def test_string_nan_reads_as_nan() -> None:
    assert math.isnan(convert(TypedValue("String", "NaN"), "double"))


@pytest.mark.parametrize("text", ["", "abc", "inf", "nan", "infinity", "1_0", "1e", "--1", "1.2.3", "0x1.8"])
def test_string_to_double_rejects_like_java(text: str) -> None:
    with pytest.raises(NumberFormatException):
        convert(TypedValue("String", text), "double")


def test_string_to_float_rounds_to_32_bits() -> None:
    assert convert(TypedValue("String", "0.1"), "float") == struct.unpack(">f", struct.pack(">f", 0.1))[0]
    assert convert(TypedValue("String", "1e39"), "float") == math.inf


# -- ranges and value checks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jms_type", "low", "high"),
    [
        ("byte", -128, 127),
        ("short", -(2**15), 2**15 - 1),
        ("int", -(2**31), 2**31 - 1),
        ("long", -(2**63), 2**63 - 1),
    ],
)
def test_integer_ranges(jms_type: JmsType, low: int, high: int) -> None:
    assert TypedValue(jms_type, low).value == low
    assert TypedValue(jms_type, high).value == high
    for outside in (low - 1, high + 1):
        with pytest.raises(MessageFormatException, match="range"):
            TypedValue.of(jms_type, outside, "property 'n'")


@pytest.mark.parametrize(
    ("jms_type", "value"),
    [
        ("int", True),
        ("int", 1.0),
        ("int", "1"),
        ("boolean", 1),
        ("double", True),
        ("double", "1.0"),
        ("String", 1),
        ("String", None),
        ("char", "ab"),
        ("char", ""),
        ("char", "\U0001f600"),
        ("byte[]", "x"),
        ("double", 10**400),
        ("decimal", 1),
    ],
)
def test_wrong_values_are_format_errors(jms_type: JmsType, value: object) -> None:
    with pytest.raises(MessageFormatException):
        TypedValue.of(jms_type, value)


def test_float_is_stored_rounded_to_32_bits_and_overflows_to_infinity() -> None:
    assert TypedValue("float", 0.1).value == struct.unpack(">f", struct.pack(">f", 0.1))[0]
    assert TypedValue("float", 1e300).value == math.inf
    assert TypedValue("float", -1e300).value == -math.inf
    assert TypedValue("double", 3).value == 3.0
    assert isinstance(TypedValue("double", 3).value, float)


def test_char_and_bytes_normalise() -> None:
    assert TypedValue("char", "\uffff").value == "\uffff"
    assert TypedValue.of("byte[]", bytearray(b"ab")).value == b"ab"
    assert type(TypedValue.of("byte[]", bytearray(b"ab")).value) is bytes


# -- objects -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "jms_type"),
    [
        (True, "boolean"),
        (5, "int"),
        (2**31 - 1, "int"),
        (2**31, "long"),
        (-(2**31) - 1, "long"),
        (1.5, "double"),
        ("x", "String"),
        (TypedValue("short", 3), "short"),
    ],
)
def test_typed_from_object(value: object, jms_type: str) -> None:
    assert typed_from_object(value, "property 'x'").jms_type == jms_type


@pytest.mark.parametrize("value", [None, b"x", [1], {"a": 1}, 2**63, object(), TypedValue("byte[]", b"")])
def test_typed_from_object_rejects_non_property_values(value: object) -> None:
    with pytest.raises(MessageFormatException):
        typed_from_object(value, "property 'x'")


def test_typed_from_object_allows_bytes_for_fields() -> None:
    assert typed_from_object(b"x", "map field 'x'", FIELD_TYPES) == TypedValue("byte[]", b"x")


# -- Java string forms ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jms_type", "value", "java"),
    [
        ("double", 1.0, "1.0"),
        ("double", 0.1, "0.1"),
        ("double", 100.0, "100.0"),
        ("double", -0.0, "-0.0"),
        ("double", 0.001, "0.001"),
        ("double", 0.0001, "1.0E-4"),
        ("double", 9999999.0, "9999999.0"),
        ("double", 1e7, "1.0E7"),
        ("double", 123456789.0, "1.23456789E8"),
        ("double", 1.2345e-10, "1.2345E-10"),
        ("double", math.nan, "NaN"),
        ("double", math.inf, "Infinity"),
        ("double", -math.inf, "-Infinity"),
        ("double", 5e-324, "4.9E-324"),
        ("double", sys.float_info.max, "1.7976931348623157E308"),
        ("float", 0.1, "0.1"),
        ("float", 1.0 / 3.0, "0.33333334"),
        ("float", 1e10, "1.0E10"),
        ("float", 1.4e-45, "1.4E-45"),
        ("float", 3.4028235e38, "3.4028235E38"),
        ("boolean", True, "true"),
        ("boolean", False, "false"),
        ("long", -(2**63), "-9223372036854775808"),
        ("char", "z", "z"),
    ],
)
def test_java_string_forms(jms_type: JmsType, value: object, java: str) -> None:
    assert java_string(TypedValue.of(jms_type, value)) == java


def _same(a: object, b: object) -> bool:
    """Equal in value and type; NaN equals NaN and 0.0 differs from -0.0."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b and type(a) is type(b)


property_values = st.one_of(
    st.booleans().map(lambda v: TypedValue("boolean", v)),
    st.integers(-(2**7), 2**7 - 1).map(lambda v: TypedValue("byte", v)),
    st.integers(-(2**15), 2**15 - 1).map(lambda v: TypedValue("short", v)),
    st.integers(-(2**31), 2**31 - 1).map(lambda v: TypedValue("int", v)),
    st.integers(-(2**63), 2**63 - 1).map(lambda v: TypedValue("long", v)),
    st.floats(width=32).map(lambda v: TypedValue("float", v)),
    st.floats().map(lambda v: TypedValue("double", v)),
    st.text().map(lambda v: TypedValue("String", v)),
)


@given(property_values)
def test_java_string_reads_back_as_the_same_value(typed: TypedValue) -> None:
    """What a Java peer parses from our header string, and what jmslike restores, is the value sent."""
    text = java_string(typed)
    assert _same(from_java_string(text, typed.jms_type).value, typed.value)
    assert _same(convert(TypedValue("String", text), typed.jms_type), typed.value)


def test_from_java_string_is_strict_for_booleans() -> None:
    assert from_java_string("TRUE", "boolean").value is True
    with pytest.raises(MessageFormatException):
        from_java_string("yes", "boolean")


# -- property names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "a",
        "_x",
        "$y",
        "orderId",
        "\u00fcnic\u00f6de",
        "nullable",
        "Is_it",
        "JMSXGroupID",
        "JMSXDeliveryCount",
        "JMS_IBM_x",
    ],
)
def test_valid_property_names(name: str) -> None:
    assert check_property_name(name) == name


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "non-empty"),
        (None, "non-empty"),
        (5, "non-empty"),
        ("1a", "Java identifier"),
        ("a-b", "Java identifier"),
        ("a b", "Java identifier"),
        ("a.b", "Java identifier"),
        ("NULL", "selector keyword"),
        ("null", "selector keyword"),
        ("True", "selector keyword"),
        ("and", "selector keyword"),
        ("Escape", "selector keyword"),
        ("between", "selector keyword"),
        ("JMSType", "reserved"),
        ("JMSFoo", "reserved"),
        ("JMSXFoo", "reserved"),
    ],
)
def test_invalid_property_names(name: object, reason: str) -> None:
    with pytest.raises(MessageFormatException, match=reason):
        check_property_name(name)

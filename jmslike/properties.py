"""Typed JMS values and the JMS conversion table (JMS 1.1 §3.5.4 for properties, §3.11.3 for map and
stream fields).

Python has one ``int`` and one ``float``; JMS has ``byte``/``short``/``int``/``long`` and
``float``/``double``, and the JMS type decides what a reader may convert a value to and how a Java peer
sees it. So every property, map field and stream field is kept as a :class:`TypedValue` that carries its
JMS type beside the value. This module owns:

- the types and their ranges (checked when a value is set, so a bad value never reaches the wire);
- :func:`convert`, the one table-driven implementation of "read this value as that type", shared by
  property getters, MapMessage getters and StreamMessage reads;
- the Java string forms (``Double.toString``, ``Integer.valueOf`` ...), because properties travel as
  STOMP header strings and Java peers parse them with exactly those rules;
- the property-name rules.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Final, Literal, TypeAlias, cast, overload

from jmslike.exceptions import MessageFormatException, NumberFormatException

JmsType: TypeAlias = Literal[
    "boolean", "byte", "short", "char", "int", "long", "float", "double", "String", "byte[]"
]
"""A JMS value type, spelled as Java spells it."""

Scalar: TypeAlias = bool | int | float | str | bytes
"""The Python representation of a JMS value: ``char`` is a one-character ``str``, ``byte[]`` is ``bytes``."""

PROPERTY_TYPES: Final[frozenset[str]] = frozenset(
    {"boolean", "byte", "short", "int", "long", "float", "double", "String"}
)
"""The types a message property may have (JMS 1.1 §3.5.4): no ``char``, no ``byte[]``."""

FIELD_TYPES: Final[frozenset[str]] = PROPERTY_TYPES | {"char", "byte[]"}
"""The types a MapMessage or StreamMessage field may have."""

# -- JMSX properties (JMS 1.1 §3.5.9) ----------------------------------------------------------------

JMSX_DELIVERY_COUNT: Final = "JMSXDeliveryCount"

JMSX_USER_SET: Final[dict[str, JmsType]] = {"JMSXGroupID": "String", "JMSXGroupSeq": "int"}
"""JMSX properties the application sets, with the one type JMS gives each."""

JMSX_PROVIDER_SET: Final[frozenset[str]] = frozenset(
    {
        JMSX_DELIVERY_COUNT,
        "JMSXUserID",
        "JMSXAppID",
        "JMSXProducerTXID",
        "JMSXConsumerTXID",
        "JMSXRcvTimestamp",
        "JMSXState",
    }
)
"""JMSX properties the provider sets; an application may not overwrite them on a received message."""

SELECTOR_KEYWORDS: Final[frozenset[str]] = frozenset(
    {"NULL", "TRUE", "FALSE", "NOT", "AND", "OR", "BETWEEN", "LIKE", "IN", "IS", "ESCAPE"}
)


@dataclass(frozen=True, slots=True)
class TypedValue:
    """A value with its JMS type. Construction checks and normalises the value, so a TypedValue is always
    in range (a ``float`` is stored rounded to 32 bits, as Java would hold it)."""

    jms_type: JmsType
    value: Scalar

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", _normalize(self.jms_type, self.value, "value"))

    @classmethod
    def of(cls, jms_type: JmsType, value: object, what: str = "value") -> TypedValue:
        """Like the constructor, but errors name ``what`` (e.g. ``property 'count'``)."""
        return cls(jms_type, _normalize(jms_type, value, what))


# -- checking values on the way in ----------------------------------------------------------------------


def _type_error(what: str, jms_type: str, expected: str, value: object) -> MessageFormatException:
    return MessageFormatException(
        f"{what}: a JMS {jms_type} must be {expected}, got {type(value).__name__} {value!r:.60}"
    )


def _as_boolean(value: object, jms_type: str, what: str) -> bool:
    if not isinstance(value, bool):
        raise _type_error(what, jms_type, "a bool", value)
    return value


def _integer_range(jms_type: str) -> tuple[int, int]:
    bits = {"byte": 8, "short": 16, "int": 32, "long": 64}[jms_type]
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


def _as_integer(value: object, jms_type: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _type_error(what, jms_type, "an int", value)
    low, high = _integer_range(jms_type)
    if not low <= value <= high:
        raise MessageFormatException(f"{what}: {value} is outside the JMS {jms_type} range {low}..{high}")
    return value


def to_float32(x: float) -> float:
    """Round to the nearest 32-bit float, as Java's ``(float)`` cast does (too large → ±Infinity)."""
    try:
        return float(struct.unpack(">f", struct.pack(">f", x))[0])
    except OverflowError:
        return math.copysign(math.inf, x)


def _as_floating(value: object, jms_type: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _type_error(what, jms_type, "a float or an int", value)
    try:
        number = float(value)
    except OverflowError:
        raise MessageFormatException(f"{what}: {value} is too large for a JMS {jms_type}") from None
    return to_float32(number) if jms_type == "float" else number


def _as_string(value: object, jms_type: str, what: str) -> str:
    if not isinstance(value, str):
        raise _type_error(what, jms_type, "a str", value)
    return value


def _as_char(value: object, jms_type: str, what: str) -> str:
    """A Java char is one UTF-16 code unit, so characters beyond U+FFFF do not fit."""
    if not isinstance(value, str) or len(value) != 1 or ord(value) > 0xFFFF:
        raise _type_error(what, jms_type, "a str of one character up to U+FFFF", value)
    return value


def _as_bytes(value: object, jms_type: str, what: str) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise _type_error(what, jms_type, "bytes", value)
    return bytes(value)


_NORMALIZERS: Final[dict[str, Callable[[object, str, str], Scalar]]] = {
    "boolean": _as_boolean,
    "byte": _as_integer,
    "short": _as_integer,
    "int": _as_integer,
    "long": _as_integer,
    "float": _as_floating,
    "double": _as_floating,
    "String": _as_string,
    "char": _as_char,
    "byte[]": _as_bytes,
}


def _normalize(jms_type: str, value: object, what: str) -> Scalar:
    normalizer = _NORMALIZERS.get(jms_type)
    if normalizer is None:
        raise MessageFormatException(
            f"{what}: {jms_type!r} is not a JMS type; use one of {sorted(FIELD_TYPES)}"
        )
    return normalizer(value, jms_type, what)


def parse_jms_type(text: str, allowed: frozenset[str] = FIELD_TYPES, what: str = "value") -> JmsType:
    """Check that ``text`` names one of the ``allowed`` JMS types (input from the network or a caller)."""
    if text not in allowed:
        raise MessageFormatException(f"{what}: {text!r:.40} is not one of the types {sorted(allowed)}")
    return cast(JmsType, text)


def typed_from_object(value: object, what: str, allowed: frozenset[str] = PROPERTY_TYPES) -> TypedValue:
    """The JMS type of a Python object, for ``setObjectProperty``, ``MapMessage.setObject`` and
    ``writeObject``: Java decides by the boxed class, Python has fewer classes, so an ``int`` becomes a JMS
    ``int`` when it fits 32 bits and a ``long`` otherwise, and a ``float`` becomes a ``double``. Pass a
    :class:`TypedValue` to choose another type (e.g. ``TypedValue("short", 3)``)."""
    if isinstance(value, TypedValue):
        parse_jms_type(value.jms_type, allowed, what)
        return value
    jms_type: JmsType
    if isinstance(value, bool):
        jms_type = "boolean"
    elif isinstance(value, int):
        low, high = _integer_range("int")
        jms_type = "int" if low <= value <= high else "long"
    elif isinstance(value, float):
        jms_type = "double"
    elif isinstance(value, str):
        jms_type = "String"
    elif isinstance(value, bytes | bytearray | memoryview) and "byte[]" in allowed:
        jms_type = "byte[]"
    else:
        kinds = "bool, int, float, str" + (", bytes" if "byte[]" in allowed else "")
        raise MessageFormatException(
            f"{what}: {type(value).__name__} is not a JMS value type; use {kinds} or a TypedValue"
        )
    return TypedValue.of(jms_type, value, what)


# -- Java string forms ----------------------------------------------------------------------------------


def _decimal_digits(text: str) -> tuple[str, int]:
    """Significant digits of a positive decimal numeral and its exponent E (value = d.ddd * 10**E)."""
    _, digit_tuple, exponent = Decimal(text).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple))
    return digits, exponent + len(digits) - 1


def _reads_back(text: str, x: float, single: bool) -> bool:
    value = float(text)
    return (to_float32(value) if single else value) == x


def _java_digits(x: float, single: bool) -> tuple[str, int]:
    """The digits Java 19+ prints for positive finite ``x``: the fewest that read back as the same
    double (or 32-bit float); when one digit would do, the closest two-digit decimal instead, which is
    why Java prints ``4.9E-324`` for the smallest double where Python prints ``5e-324``."""
    text = repr(x)
    if single:
        text = next(t for t in (f"{x:.{p}e}" for p in range(9)) if _reads_back(t, x, True))
    digits, exponent = _decimal_digits(text)
    if len(digits) == 1 and _reads_back(two := f"{x:.1e}", x, single):
        return _decimal_digits(two)
    return digits, exponent


def _java_floating(x: float, single: bool) -> str:
    """Java's ``Double.toString``/``Float.toString`` layout: plain between 10^-3 and 10^7, else
    computerised scientific notation (``1.0E10``); always at least one digit after the point."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return sign + "0.0"
    digits, exponent = _java_digits(abs(x), single)
    if not -3 <= exponent < 7:
        return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"
    if exponent >= 0:
        return f"{sign}{digits[: exponent + 1].ljust(exponent + 1, '0')}.{digits[exponent + 1 :] or '0'}"
    return f"{sign}0.{'0' * (-exponent - 1)}{digits}"


def java_string(typed: TypedValue) -> str:
    """The value as Java's ``String.valueOf`` writes it: ``true``, ``42``, ``1.0``, ``1.0E10``, ``NaN``."""
    value = typed.value
    if typed.jms_type == "boolean":
        return "true" if value else "false"
    if typed.jms_type in ("float", "double"):
        assert isinstance(value, float)
        return _java_floating(value, single=typed.jms_type == "float")
    if typed.jms_type == "byte[]":
        raise MessageFormatException("a byte[] has no String form")
    return str(value)


_INTEGER_TEXT: Final = re.compile(r"[+-]?[0-9]+")
_FLOATING_TEXT: Final = re.compile(
    r"[+-]?(?:NaN|Infinity"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?"
    r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+[fFdD]?)"
)
_JAVA_TRIM: Final = "".join(chr(c) for c in range(33))
_JAVA_BOX: Final[dict[str, str]] = {
    "byte": "Byte",
    "short": "Short",
    "int": "Integer",
    "long": "Long",
    "float": "Float",
    "double": "Double",
}


def _not_a_number(text: str, target: str, what: str, rule: str) -> NumberFormatException:
    return NumberFormatException(
        f"{what} is the String {text!r:.60}, which is not a valid {target} "
        f"(read as Java's {_JAVA_BOX[target]}.valueOf: {rule})"
    )


def _parse_boolean(text: str, target: str, what: str) -> bool:
    """``Boolean.valueOf``: "true" in any case is true, anything else is false, never an error."""
    return text.lower() == "true"


def _parse_integer(text: str, target: str, what: str) -> int:
    if _INTEGER_TEXT.fullmatch(text) is None:
        raise _not_a_number(text, target, what, "an optional sign and decimal digits, no spaces")
    low, high = _integer_range(target)
    value = int(text)
    if not low <= value <= high:
        raise _not_a_number(text, target, what, f"the value must lie in {low}..{high}")
    return value


def _parse_floating(text: str, target: str, what: str) -> float:
    """``Double.valueOf``: trimmed, ``NaN``/``Infinity``, decimal or hex, optional f/d suffix. A ``float``
    is parsed as a double and then rounded, which can differ from Java in the last bit in rare cases."""
    numeral = text.strip(_JAVA_TRIM)
    if _FLOATING_TEXT.fullmatch(numeral) is None:
        raise _not_a_number(text, target, what, "a decimal or hex numeral, NaN or Infinity")
    numeral = numeral.rstrip("fFdD")
    value = float.fromhex(numeral) if "x" in numeral.lower() else float(numeral)
    return to_float32(value) if target == "float" else value


def _parse_string(text: str, target: str, what: str) -> str:
    return text


_FROM_STRING: Final[dict[str, Callable[[str, str, str], Scalar]]] = {
    "boolean": _parse_boolean,
    "byte": _parse_integer,
    "short": _parse_integer,
    "int": _parse_integer,
    "long": _parse_integer,
    "float": _parse_floating,
    "double": _parse_floating,
    "String": _parse_string,
}


# -- the conversion table -------------------------------------------------------------------------------

CONVERSIONS: Final[dict[str, tuple[str, ...]]] = {
    "boolean": ("boolean", "String"),
    "byte": ("byte", "short", "int", "long", "String"),
    "short": ("short", "int", "long", "String"),
    "char": ("char", "String"),
    "int": ("int", "long", "String"),
    "long": ("long", "String"),
    "float": ("float", "double", "String"),
    "double": ("double", "String"),
    "String": ("boolean", "byte", "short", "int", "long", "float", "double", "String"),
    "byte[]": ("byte[]",),
}
"""JMS 1.1 §3.5.4 / §3.11.3: for each stored type, the types it may be read as."""


def _missing(target: str, what: str) -> Scalar | None:
    """A missing value reads as Java's ``valueOf(null)`` would: false, null, or a NumberFormatException."""
    if target == "boolean":
        return False
    if target in ("String", "byte[]"):
        return None
    if target == "char":
        raise MessageFormatException(f"{what} is not set (null), and a char cannot be null")
    raise NumberFormatException(
        f"{what} is not set (null), so it cannot be read as {target} (Java's "
        f"{_JAVA_BOX[target]}.valueOf(null) fails the same way); check that it exists first"
    )


@overload
def convert(typed: TypedValue | None, target: Literal["boolean"], what: str = ...) -> bool: ...
@overload
def convert(
    typed: TypedValue | None, target: Literal["byte", "short", "int", "long"], what: str = ...
) -> int: ...
@overload
def convert(typed: TypedValue | None, target: Literal["float", "double"], what: str = ...) -> float: ...
@overload
def convert(typed: TypedValue | None, target: Literal["char"], what: str = ...) -> str: ...
@overload
def convert(typed: TypedValue | None, target: Literal["String"], what: str = ...) -> str | None: ...
@overload
def convert(typed: TypedValue | None, target: Literal["byte[]"], what: str = ...) -> bytes | None: ...
@overload
def convert(typed: TypedValue | None, target: JmsType, what: str = ...) -> Scalar | None: ...


def convert(typed: TypedValue | None, target: JmsType, what: str = "value") -> Scalar | None:
    """Read ``typed`` as ``target`` by the JMS conversion table; ``None`` is a missing value.

    ``what`` names the value in error messages (``property 'count'``, ``map field 'x'``).
    A disallowed conversion raises MessageFormatException; a String that does not parse raises
    NumberFormatException (a MessageFormatException too).
    """
    if typed is None:
        return _missing(target, what)
    source = typed.jms_type
    if target not in CONVERSIONS[source]:
        raise MessageFormatException(
            f"{what} is a {source}; it cannot be read as {target} "
            f"(a {source} reads only as {', '.join(CONVERSIONS[source])})"
        )
    if target == "String":
        return java_string(typed)
    if source == "String":
        return _FROM_STRING[target](cast(str, typed.value), target, what)
    return typed.value


def from_java_string(text: str, jms_type: JmsType, what: str = "value") -> TypedValue:
    """The inverse of :func:`java_string`, strict: unlike ``Boolean.valueOf`` only true/false pass.
    Used to restore typed properties that travelled as header strings."""
    if jms_type == "boolean":
        if text.lower() not in ("true", "false"):
            raise MessageFormatException(f"{what}: {text!r:.40} is not a boolean")
        return TypedValue("boolean", text.lower() == "true")
    return TypedValue.of(jms_type, convert(TypedValue("String", text), jms_type, what), what)


# -- property names -------------------------------------------------------------------------------------


def check_property_name(name: object) -> str:
    """Return ``name`` if JMS allows it as a property name, else raise MessageFormatException.

    Java throws IllegalArgumentException here; jmslike keeps every error in the JMS tree and uses
    MessageFormatException. Rules (JMS 1.1 §3.5.1): a Java identifier (approximated by Python's identifier
    rules with ``$`` allowed), not a selector keyword, and not starting with ``JMS`` unless it is a JMSX
    property JMS defines or a ``JMS_<vendor>_`` name.
    """
    if not isinstance(name, str) or not name:
        raise MessageFormatException(f"a property name must be a non-empty str, got {name!r:.60}")
    if not name.replace("$", "_").isidentifier():
        raise MessageFormatException(
            f"property name {name!r:.60} is not a Java identifier: use letters, digits, '_' and '$', "
            "not starting with a digit"
        )
    if name.upper() in SELECTOR_KEYWORDS:
        raise MessageFormatException(
            f"property name {name!r} is a selector keyword ({', '.join(sorted(SELECTOR_KEYWORDS))}); "
            "choose another name"
        )
    jmsx = name in JMSX_USER_SET or name in JMSX_PROVIDER_SET
    if name.startswith("JMS") and not jmsx and not name.startswith("JMS_"):
        raise MessageFormatException(
            f"property name {name!r} starts with 'JMS', which is reserved for JMS headers and the JMSX "
            "properties JMS defines; 'JMS_<vendor>_' names are allowed, otherwise choose another name"
        )
    return name


def check_jmsx_type(name: str, typed: TypedValue) -> None:
    """JMSXGroupID is a String and JMSXGroupSeq an int: other types would confuse every broker."""
    required = JMSX_USER_SET.get(name)
    if required is not None and typed.jms_type != required:
        raise MessageFormatException(f"{name} must be set as a {required}, not a {typed.jms_type}")


__all__ = [
    "CONVERSIONS",
    "FIELD_TYPES",
    "JMSX_DELIVERY_COUNT",
    "JMSX_PROVIDER_SET",
    "JMSX_USER_SET",
    "PROPERTY_TYPES",
    "SELECTOR_KEYWORDS",
    "JmsType",
    "Scalar",
    "TypedValue",
    "check_jmsx_type",
    "check_property_name",
    "convert",
    "from_java_string",
    "java_string",
    "parse_jms_type",
    "to_float32",
    "typed_from_object",
]

"""ActiveMQ Classic's XStream JSON form of a MapMessage body, to and from jmslike's typed map items.

ActiveMQ converts Java MapMessages for STOMP only through its XStream-based ``JmsFrameTranslator``
(``transformation: jms-map-json``): XStream's MapConverter writes a ``java.util.HashMap`` through Jettison,
so every entry is the key element (``string``) followed by the value element, named after the value's Java
class. Jettison's "mapped" convention makes this JSON that is awkward to read back:

- ``{"map":{"entry":[...]}}``, but a single entry is the object itself, not a one-element list, and an empty
  map is ``{"map":""}``;
- repeated element names become a list, so a String value makes the entry ``{"string":["key","value"]}``;
- numbers arrive as JSON numbers or strings (``"NaN"``, ``"Infinity"``), byte[] as base64 ``byte-array``,
  null as ``{"null":""}``.

This module is pure (no broker, no socket) so the format can be property-tested on its own; the adapter
does the wiring. Everything read from the network is checked: a malformed body raises
MessageFormatException, never anything else.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Mapping
from typing import Final

from jmslike.exceptions import MessageFormatException
from jmslike.properties import JmsType, TypedValue, java_string

#: XStream's element name for each Java class a map value can have, and back.
XSTREAM_TYPES: Final[dict[JmsType, str]] = {
    "String": "string",
    "int": "int",
    "long": "long",
    "short": "short",
    "byte": "byte",
    "boolean": "boolean",
    "double": "double",
    "float": "float",
    "char": "char",
    "byte[]": "byte-array",
}
_JMS_TYPES: Final[dict[str, JmsType]] = {tag: jms for jms, tag in XSTREAM_TYPES.items()}
_NULL: Final = "null"
_INTEGERS: Final = frozenset({"int", "long", "short", "byte"})


def encode(items: Mapping[str, TypedValue | None]) -> bytes:
    """The SEND body for ``transformation: jms-map-json``.

    Values travel as strings in Java's own forms (``1.0E10``, ``NaN``): XStream parses element text with
    ``Integer.valueOf``/``Float.valueOf``..., so a string is exact where a JSON number might pass through
    a double on the way. The JSON is ASCII with ``\\u`` escapes, so the body never holds a NUL (the frame
    goes without content-length, where a NUL would end it). byte[] is refused: the broker's XStream
    security rejects ``byte-array`` and would deliver a TextMessage instead, which the sender would never
    hear about.
    """
    entries: list[dict[str, object]] = []
    for name, typed in items.items():
        if typed is None:
            entries.append({"string": name, _NULL: ""})
        elif typed.jms_type == "byte[]":
            raise MessageFormatException(
                f"map field {name!r:.40} is a byte[], which ActiveMQ's jms-map-json transformation refuses "
                "(the Java peer would get a TextMessage); send the bytes in a BytesMessage or base64 them "
                "into a String"
            )
        elif typed.jms_type == "String":
            entries.append({"string": [name, typed.value]})
        else:
            entries.append({"string": name, XSTREAM_TYPES[typed.jms_type]: java_string(typed)})
    document = {"map": {"entry": entries} if entries else ""}
    return json.dumps(document, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def decode(body: bytes) -> dict[str, TypedValue | None]:
    """The typed items of a ``transformation: jms-map-json`` MESSAGE body; MessageFormatException if it
    is not one."""
    try:
        # Numbers stay text: a String value or key that looks like a number comes as a JSON number, and only
        # its exact text is the String (1.0E300 must not become "1e+300").
        document = json.loads(
            body, object_pairs_hook=_Pairs, parse_int=str, parse_float=str, parse_constant=str
        )
    except (ValueError, RecursionError) as error:
        raise MessageFormatException(f"the jms-map-json body is not valid JSON: {error}") from error
    if not (isinstance(document, _Pairs) and len(document) == 1 and document[0][0] == "map"):
        raise MessageFormatException('the jms-map-json body is not {"map": ...}')
    content = document[0][1]
    if content == "":
        return {}
    if not (isinstance(content, _Pairs) and len(content) == 1 and content[0][0] == "entry"):
        raise MessageFormatException('the jms-map-json "map" holds something other than "entry"')
    entries = content[0][1]
    items: dict[str, TypedValue | None] = {}
    if isinstance(entries, _Pairs) or not isinstance(entries, list):
        entries = [entries]  # one entry: Jettison writes the object, not a list of one
    for index, entry in enumerate(entries):
        name, typed = _entry(entry, index)
        items[name] = typed
    return items


class _Pairs(list[tuple[str, object]]):
    """A JSON object as its (name, value) pairs in order: XStream's objects can repeat a name, which a
    dict would silently collapse."""


def _elements(entry: object, where: str) -> list[tuple[str, object]]:
    """An entry's XML elements in order: Jettison writes repeated elements as one name with a list."""
    if not isinstance(entry, _Pairs):
        raise MessageFormatException(f"{where}: expected an object, got {entry!r:.60}")
    elements: list[tuple[str, object]] = []
    for tag, value in entry:
        if isinstance(value, list) and not isinstance(value, _Pairs):
            elements.extend((tag, item) for item in value)
        else:
            elements.append((tag, value))
    return elements


def _entry(entry: object, index: int) -> tuple[str, TypedValue | None]:
    where = f"jms-map-json entry {index}"
    elements = _elements(entry, where)
    if len(elements) != 2 or elements[0][0] != "string" or not isinstance(elements[0][1], str | bool):
        raise MessageFormatException(f"{where}: expected a string key and one value, got {entry!r:.80}")
    name = _json_text(elements[0][1])
    tag, value = elements[1]
    where = f"map field {name!r:.40}"
    if tag == _NULL:
        return name, None
    jms_type = _JMS_TYPES.get(tag)
    if jms_type is None:
        raise MessageFormatException(f"{where}: XStream type {tag!r:.40} is not a JMS map value type")
    return name, TypedValue.of(jms_type, _value(jms_type, value, where), where)


def _value(jms_type: JmsType, value: object, where: str) -> object:
    """XStream's element text (Jettison may have made it a JSON number or boolean) as a Python value."""
    if isinstance(value, _Pairs | list) or value is None:
        raise MessageFormatException(f"{where}: expected a {jms_type} value, got {value!r:.60}")
    if jms_type in ("String", "char"):
        # Jettison writes text that looks like a number or boolean as a JSON number or boolean.
        return value if isinstance(value, str) else _json_text(value)
    if jms_type == "byte[]":
        try:
            return base64.b64decode(str(value), validate=True)
        except binascii.Error as error:
            raise MessageFormatException(f"{where}: the byte-array is not valid base64") from error
    text = value if isinstance(value, str) else _json_text(value)
    try:
        if jms_type == "boolean":
            return {"true": True, "false": False}[text.lower()]
        if jms_type in _INTEGERS:
            return int(text)
        number = float(text)
    except (KeyError, ValueError) as error:
        raise MessageFormatException(f"{where}: {text!r:.40} is not a {jms_type}") from error
    if not math.isfinite(number) and text not in ("NaN", "Infinity", "-Infinity"):
        raise MessageFormatException(f"{where}: {text!r:.40} is not a {jms_type}")
    return number


def _json_text(value: object) -> str:
    """A JSON scalar back as the element text it came from (``true``, ``3``, ``1.0E300``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


__all__ = ["XSTREAM_TYPES", "decode", "encode"]

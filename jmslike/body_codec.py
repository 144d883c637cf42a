"""Broker-neutral encoding of message bodies and properties to STOMP (headers, body bytes) and back.

The adapters map the JMS header fields (JMSPriority, JMSExpiration ...) onto each broker's STOMP headers
themselves; this module owns only what is the same for every broker, as pure functions:

- The body type travels in ``jmslike-type`` (text, bytes, map, stream, object, message). Text is UTF-8;
  bytes are the raw body; map and stream bodies are JSON (``{name: [type, value]}`` and
  ``[[type, value], ...]``, byte[] as base64, non-finite floats as ``"NaN"``/``"Infinity"``/
  ``"-Infinity"``, null as ``["null", null]``), so they keep their JMS types; object bodies are the
  serializer's bytes, named in ``jmslike-serializer``. A null text or object is an empty body plus
  ``jmslike-null-body: true``.
- Properties travel as plain headers in Java's string forms (``true``, ``42``, ``1.0E10``), which Java
  peers read and convert by JMS rules; ``jmslike-ptypes`` lists the non-String types
  (``count=int;flag=boolean``) so jmslike peers get the exact types back. A property whose name is a
  broker header (``priority``, ``expires`` ...) travels as ``jmslike-p-<name>``.
- Input from the network is never trusted: a malformed map or stream body raises MessageFormatException,
  and property decoding never raises at all (a value that does not parse as its listed type stays a String).

Messages from foreign producers carry no type tag. Rule: the body is a TextMessage when it is valid UTF-8
and the headers say text (``content-type`` starting ``text/``) or carry no ``content-length`` (the
ActiveMQ convention for text frames); otherwise a BytesMessage. Invalid UTF-8 always gives a BytesMessage,
so the payload is never lost. Content type and length headers themselves are the adapters' business.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
from collections.abc import Callable, Collection, Mapping
from functools import singledispatch
from typing import Any, Final, cast

from jmslike.exceptions import MessageFormatException
from jmslike.messages import BytesMessage, MapMessage, Message, ObjectMessage, StreamMessage, TextMessage
from jmslike.properties import (
    FIELD_TYPES,
    PROPERTY_TYPES,
    JmsType,
    TypedValue,
    from_java_string,
    java_string,
    parse_jms_type,
)
from jmslike.serializers import JSON, SERIALIZER_HEADER, SerializerRegistry

TYPE_HEADER: Final = "jmslike-type"
PTYPES_HEADER: Final = "jmslike-ptypes"
NULL_BODY_HEADER: Final = "jmslike-null-body"
PROPERTY_PREFIX: Final = "jmslike-p-"
OWN_PREFIX: Final = "jmslike-"

_log = logging.getLogger(__name__)

Encoded = tuple[str, bytes, dict[str, str]]

# -- typed values inside map and stream bodies -------------------------------------------------------------

_NON_FINITE: Final[dict[str, float]] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _element_to_json(typed: TypedValue | None) -> list[object]:
    if typed is None:
        return ["null", None]
    value: object = typed.value
    if isinstance(value, bytes):
        value = base64.b64encode(value).decode("ascii")
    elif isinstance(value, float) and not math.isfinite(value):
        value = java_string(typed)
    return [typed.jms_type, value]


def _element_from_json(element: object, where: str) -> TypedValue | None:
    if not (isinstance(element, list) and len(element) == 2 and isinstance(element[0], str)):
        raise MessageFormatException(f"{where}: expected [type, value], got {element!r:.60}")
    tag, value = element
    if tag == "null" and value is None:
        return None
    jms_type = parse_jms_type(tag, FIELD_TYPES, where)
    if jms_type == "byte[]" and isinstance(value, str):
        try:
            value = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as error:  # ValueError: non-ASCII characters in the string
            raise MessageFormatException(f"{where}: the byte[] is not valid base64") from error
    elif jms_type in ("float", "double") and isinstance(value, str) and value in _NON_FINITE:
        value = _NON_FINITE[value]
    return TypedValue.of(jms_type, value, where)


def _json_dumps(value: object) -> bytes:
    """ASCII JSON: lone surrogates (legal in Java strings and in ours) survive as \\u escapes."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _json_loads(body: bytes, kind: str) -> object:
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as error:
        raise MessageFormatException(f"the {kind} body is not valid JSON: {error}") from error


# -- bodies: encoding -------------------------------------------------------------------------------------


@singledispatch
def _encode(msg: Message) -> Encoded:
    return "message", b"", {}


@_encode.register
def _(msg: TextMessage) -> Encoded:
    text = msg.getText()
    if text is None:
        return "text", b"", {NULL_BODY_HEADER: "true"}
    try:
        return "text", text.encode("utf-8"), {}
    except UnicodeEncodeError as error:
        raise MessageFormatException(
            f"the text has a lone surrogate at index {error.start}, which UTF-8 cannot carry"
        ) from error


@_encode.register
def _(msg: BytesMessage) -> Encoded:
    return "bytes", msg.body_bytes(), {}


@_encode.register
def _(msg: MapMessage) -> Encoded:
    items = {name: _element_to_json(item) for name, item in msg.typed_items().items()}
    return "map", _json_dumps(items), {}


@_encode.register
def _(msg: StreamMessage) -> Encoded:
    return "stream", _json_dumps([_element_to_json(item) for item in msg.typed_items()]), {}


@_encode.register
def _(msg: ObjectMessage) -> Encoded:
    data = msg.serialized_body()
    headers = {SERIALIZER_HEADER: msg.serializer.name}
    if data is None:
        headers[NULL_BODY_HEADER] = "true"
    return "object", data or b"", headers


def encode_body(msg: Message) -> tuple[str, bytes, dict[str, str]]:
    """The message's (type tag, body bytes, extra headers); the tag goes in ``TYPE_HEADER``. Looked up by exact
    type in a plain dict first: ``singledispatch``'s own lookup is a weak-keyed cache (0.62 -> 0.36 us a send,
    timed in process against the null peer)."""
    kind = type(msg)
    encoder = _ENCODERS.get(kind)
    if encoder is None:
        encoder = _ENCODERS[kind] = _encode.dispatch(kind)
    return encoder(msg)


_ENCODERS: dict[type[Message], Callable[[Any], Encoded]] = {}


# -- bodies: decoding -------------------------------------------------------------------------------------


def _is_null(headers: Mapping[str, str]) -> bool:
    return headers.get(NULL_BODY_HEADER) == "true"


def _decode_untagged(body: bytes, headers: Mapping[str, str]) -> Message:
    says_text = headers.get("content-type", "").lower().startswith("text/")
    if says_text or "content-length" not in headers:
        try:
            return TextMessage(body.decode("utf-8"))
        except UnicodeDecodeError:
            pass
    return BytesMessage(body)


def _decode_text(body: bytes, headers: Mapping[str, str], serializers: SerializerRegistry) -> Message:
    if _is_null(headers):
        return TextMessage(None)
    try:
        return TextMessage(body.decode("utf-8"))
    except UnicodeDecodeError:
        _log.warning("a message tagged as text is not valid UTF-8; delivering it as a BytesMessage")
        return BytesMessage(body)


def _decode_bytes(body: bytes, headers: Mapping[str, str], serializers: SerializerRegistry) -> Message:
    return BytesMessage(body)


def _decode_map(body: bytes, headers: Mapping[str, str], serializers: SerializerRegistry) -> Message:
    document = _json_loads(body, "MapMessage")
    if not isinstance(document, dict):
        raise MessageFormatException(f"the MapMessage body is JSON {type(document).__name__}, not an object")
    return MapMessage.from_typed_items(
        {name: _element_from_json(element, f"map field {name!r:.40}") for name, element in document.items()}
    )


def _decode_stream(body: bytes, headers: Mapping[str, str], serializers: SerializerRegistry) -> Message:
    document = _json_loads(body, "StreamMessage")
    if not isinstance(document, list):
        raise MessageFormatException(f"the StreamMessage body is JSON {type(document).__name__}, not a list")
    return StreamMessage.from_typed_items(
        [_element_from_json(element, f"stream field {index}") for index, element in enumerate(document)]
    )


def _decode_object(body: bytes, headers: Mapping[str, str], serializers: SerializerRegistry) -> Message:
    """An unknown serializer does not fail here: getObject() raises, naming it (see SerializerRegistry)."""
    serializer = serializers.resolve(headers.get(SERIALIZER_HEADER, JSON.name))
    return ObjectMessage.from_serialized(None if _is_null(headers) else body, serializer)


def _decode_plain(body: bytes, headers: Mapping[str, str], serializers: SerializerRegistry) -> Message:
    return Message()


_DECODERS: Final[dict[str, Callable[[bytes, Mapping[str, str], SerializerRegistry], Message]]] = {
    "text": _decode_text,
    "bytes": _decode_bytes,
    "map": _decode_map,
    "stream": _decode_stream,
    "object": _decode_object,
    "message": _decode_plain,
}


def decode_body(
    type_tag: str | None, body: bytes, headers: Mapping[str, str], serializers: SerializerRegistry
) -> Message:
    """A new message holding the body. The caller then sets the JMS headers, loads the properties
    (``load_properties(decode_properties(...))``) and calls ``mark_received()``.

    A malformed map or stream body raises MessageFormatException. An unknown tag (a newer jmslike) is
    decoded like an untagged message, so the payload still arrives.
    """
    decoder = _DECODERS.get(type_tag) if type_tag is not None else None
    if decoder is None:
        if type_tag is not None:
            _log.warning("unknown %s %r; decoding as an untagged message", TYPE_HEADER, type_tag)
        return _decode_untagged(body, headers)
    return decoder(body, headers, serializers)


# -- properties -------------------------------------------------------------------------------------------

_SIDECAR_TYPES: Final = PROPERTY_TYPES - {"String"}


def encode_properties(msg: Message, reserved: Collection[str]) -> dict[str, str]:
    """Every application property as a string header, plus the ``PTYPES_HEADER`` type sidecar.

    ``reserved`` holds the header names the broker or STOMP owns; properties with those names travel as
    ``jmslike-p-<name>``. JMSXDeliveryCount is the provider's and is not sent.
    """
    headers: dict[str, str] = {}
    types: list[str] = []
    for name, typed in msg.typed_properties().items():
        headers[PROPERTY_PREFIX + name if name in reserved else name] = java_string(typed)
        if typed.jms_type != "String":
            types.append(f"{name}={typed.jms_type}")
    if types:
        headers[PTYPES_HEADER] = ";".join(types)
    return headers


def _parse_sidecar(text: str) -> dict[str, JmsType]:
    types: dict[str, JmsType] = {}
    for entry in text.split(";"):
        name, _, type_name = entry.rpartition("=")
        if name and type_name in _SIDECAR_TYPES:
            types[name] = cast(JmsType, type_name)
    return types


def _typed_header(text: str, jms_type: JmsType | None, name: str) -> TypedValue:
    if jms_type is not None:
        try:
            return from_java_string(text, jms_type, f"property {name!r:.40}")
        except MessageFormatException:
            _log.debug(
                "property %r is listed as %s but its value does not parse; kept as String", name, jms_type
            )
    return TypedValue("String", text)


def decode_properties(
    headers: Mapping[str, str], reserved: Collection[str], ignore: Collection[str]
) -> dict[str, TypedValue]:
    """The properties carried by ``headers``: every header except those in ``ignore`` (what the adapter
    consumed), those in ``reserved`` (broker headers; properties with such names come as
    ``jmslike-p-<name>``) and jmslike's own. Typed from the sidecar where listed, else String.
    Never raises: this is network input."""
    types = _parse_sidecar(headers.get(PTYPES_HEADER, ""))
    properties: dict[str, TypedValue] = {}
    for header, text in headers.items():
        if header in ignore:
            continue
        if header.startswith(PROPERTY_PREFIX):
            name = header[len(PROPERTY_PREFIX) :]
        elif header.startswith(OWN_PREFIX) or header in reserved:
            continue
        else:
            name = header
        if name:
            properties[name] = _typed_header(text, types.get(name), name)
    return properties


__all__ = [
    "NULL_BODY_HEADER",
    "PROPERTY_PREFIX",
    "PTYPES_HEADER",
    "SERIALIZER_HEADER",
    "TYPE_HEADER",
    "decode_body",
    "decode_properties",
    "encode_body",
    "encode_properties",
]

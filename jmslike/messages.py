"""JMS messages: :class:`Message` and its five body types, with JMS's header, property and read-only rules.

The public surface is JMS's own (camelCase, same names and semantics as ``javax.jms``), so code ported
from Java reads the same; Pythonic extras (``TextMessage.text``, ``Message.properties``) sit on top of it,
never instead. Values keep their JMS types (:mod:`jmslike.properties`), so a Java peer and a Python peer
agree on what ``getIntProperty`` of a given message returns.

Providers (the session and consumer code, the body codec) use a few underscore hooks, documented where
they are defined: ``mark_received``, ``bind_acknowledger``, ``set_delivery_count``, ``load_properties``,
``typed_properties`` (snake_case, so never mistaken for JMS API). Header values live in ``_jms_*`` attributes, but the ``setJMS*`` setters are always
allowed and are the way to set them.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar, Final, TypeVar, cast

from jmslike.constants import DEFAULT_DELIVERY_MODE, DEFAULT_PRIORITY
from jmslike.destinations import Destination
from jmslike.exceptions import (
    MessageEOFException,
    MessageFormatException,
    MessageNotReadableException,
    MessageNotWriteableException,
)
from jmslike.properties import (
    FIELD_TYPES,
    JMSX_DELIVERY_COUNT,
    JMSX_PROVIDER_SET,
    JmsType,
    Scalar,
    TypedValue,
    check_jmsx_type,
    check_property_name,
    convert,
    typed_from_object,
)
from jmslike.serializers import JSON, ObjectSerializer

T = TypeVar("T")
V = TypeVar("V")

_PROPERTIES_READ_ONLY: Final = "message properties are read-only after receipt; call clearProperties() first"


def _int_arg(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MessageFormatException(f"{what} must be an int, got {type(value).__name__}")
    return value


def _optional_str_arg(value: object, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise MessageFormatException(f"{what} must be a str or None, got {type(value).__name__}")
    return value


def _optional_destination_arg(value: object, what: str) -> Destination | None:
    if value is not None and not isinstance(value, Destination):
        raise MessageFormatException(f"{what} must be a Destination or None, got {type(value).__name__}")
    return value


def _byte_slice(value: object, offset: int, length: int | None, what: str) -> bytes:
    """``value[offset:offset+length]``, checked the way Java's array bounds are (no silent clipping)."""
    data = cast(bytes, TypedValue.of("byte[]", value, what).value)
    end = len(data) if length is None else offset + length
    if offset < 0 or end < offset or end > len(data):
        raise MessageFormatException(
            f"{what}: offset {offset} and length {length} do not fit in {len(data)} bytes"
        )
    return data[offset:end]


class _PropertyView(Mapping[str, Scalar]):
    """A live read-only view of a message's properties, name → Python value."""

    def __init__(
        self, lookup: Callable[[str], TypedValue | None], names: Callable[[], Iterable[str]]
    ) -> None:
        self._lookup = lookup
        self._names = names

    def __getitem__(self, name: str) -> Scalar:
        typed = self._lookup(name)
        if typed is None:
            raise KeyError(name)
        return typed.value

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return sum(1 for _ in self._names())


class Message:
    """A message without a body: JMS headers, typed properties, and acknowledgement."""

    _body_type: ClassVar[str] = "message"

    def __init__(self) -> None:
        self._jms_message_id: str | None = None
        self._jms_timestamp = 0
        self._jms_correlation_id: str | None = None
        self._jms_reply_to: Destination | None = None
        self._jms_destination: Destination | None = None
        self._jms_delivery_mode = DEFAULT_DELIVERY_MODE
        self._jms_redelivered = False
        self._jms_type: str | None = None
        self._jms_expiration = 0
        self._jms_priority = DEFAULT_PRIORITY
        self._jms_delivery_time = 0
        self._properties: dict[str, TypedValue] = {}
        self._delivery_count: int | None = None
        self._properties_read_only = False
        self._body_read_only = False
        self._received = False
        self._acknowledger: Callable[[], Awaitable[None] | None] | None = None
        """Set by the consumer that delivered this message; ``acknowledge()`` calls it."""

    # -- headers: setters are always allowed; the provider overwrites them on send -------------------------

    def getJMSMessageID(self) -> str | None:
        return self._jms_message_id

    def setJMSMessageID(self, value: str | None) -> None:
        self._jms_message_id = _optional_str_arg(value, "JMSMessageID")

    def getJMSTimestamp(self) -> int:
        return self._jms_timestamp

    def setJMSTimestamp(self, value: int) -> None:
        self._jms_timestamp = _int_arg(value, "JMSTimestamp")

    def getJMSCorrelationID(self) -> str | None:
        return self._jms_correlation_id

    def setJMSCorrelationID(self, value: str | None) -> None:
        self._jms_correlation_id = _optional_str_arg(value, "JMSCorrelationID")

    def getJMSCorrelationIDAsBytes(self) -> bytes | None:
        """The correlation ID as UTF-8 bytes (STOMP headers are text, so that is how it travels)."""
        return None if self._jms_correlation_id is None else self._jms_correlation_id.encode("utf-8")

    def setJMSCorrelationIDAsBytes(self, value: bytes | None) -> None:
        """Only UTF-8 bytes are accepted: the ID travels in a text header, and other bytes would be
        changed on the way rather than refused."""
        if value is None:
            self._jms_correlation_id = None
            return
        try:
            self._jms_correlation_id = bytes(value).decode("utf-8")
        except (TypeError, UnicodeDecodeError) as error:
            raise MessageFormatException(
                "JMSCorrelationID bytes must be UTF-8 text, because STOMP headers are text; "
                "encode binary IDs (e.g. hex or base64) and use setJMSCorrelationID"
            ) from error

    def getJMSReplyTo(self) -> Destination | None:
        return self._jms_reply_to

    def setJMSReplyTo(self, value: Destination | None) -> None:
        self._jms_reply_to = _optional_destination_arg(value, "JMSReplyTo")

    def getJMSDestination(self) -> Destination | None:
        return self._jms_destination

    def setJMSDestination(self, value: Destination | None) -> None:
        self._jms_destination = _optional_destination_arg(value, "JMSDestination")

    def getJMSDeliveryMode(self) -> int:
        return self._jms_delivery_mode

    def setJMSDeliveryMode(self, value: int) -> None:
        self._jms_delivery_mode = _int_arg(value, "JMSDeliveryMode")

    def getJMSRedelivered(self) -> bool:
        return self._jms_redelivered

    def setJMSRedelivered(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise MessageFormatException(f"JMSRedelivered must be a bool, got {type(value).__name__}")
        self._jms_redelivered = value

    def getJMSType(self) -> str | None:
        return self._jms_type

    def setJMSType(self, value: str | None) -> None:
        self._jms_type = _optional_str_arg(value, "JMSType")

    def getJMSExpiration(self) -> int:
        return self._jms_expiration

    def setJMSExpiration(self, value: int) -> None:
        self._jms_expiration = _int_arg(value, "JMSExpiration")

    def getJMSPriority(self) -> int:
        return self._jms_priority

    def setJMSPriority(self, value: int) -> None:
        self._jms_priority = _int_arg(value, "JMSPriority")

    def getJMSDeliveryTime(self) -> int:
        return self._jms_delivery_time

    def setJMSDeliveryTime(self, value: int) -> None:
        self._jms_delivery_time = _int_arg(value, "JMSDeliveryTime")

    def stamp_for_send(
        self,
        destination: Destination,
        mode: int,
        priority: int,
        expiration: int,
        timestamp: int,
        message_id: str | None,
        delivery_time: int = 0,
    ) -> None:
        """The provider's headers, set by ``send`` with values it has checked already (the public
        setters re-check their argument, a measurable share of a small message's send)."""
        self._jms_destination = destination
        self._jms_delivery_mode = mode
        self._jms_priority = priority
        self._jms_expiration = expiration
        self._jms_timestamp = timestamp
        self._jms_message_id = message_id
        self._jms_delivery_time = delivery_time

    # -- properties -----------------------------------------------------------------------------------

    def _property(self, name: str) -> TypedValue | None:
        if name == JMSX_DELIVERY_COUNT and self._delivery_count is not None:
            return TypedValue("int", self._delivery_count)
        return self._properties.get(name)

    def _check_property_writable(self, name: str) -> None:
        if name == JMSX_DELIVERY_COUNT:
            raise MessageNotWriteableException(
                "JMSXDeliveryCount is counted by the provider on each delivery; applications cannot set it"
            )
        if self._received and name in JMSX_PROVIDER_SET:
            raise MessageNotWriteableException(
                f"{name} was set by the provider on this received message; applications cannot set it, "
                "not even after clearProperties()"
            )
        if self._properties_read_only:
            raise MessageNotWriteableException(_PROPERTIES_READ_ONLY)

    def _set_property(self, name: str, jms_type: JmsType | None, value: object) -> None:
        """Set a property of type ``jms_type``, or of the type ``value``'s class maps to when None."""
        check_property_name(name)
        self._check_property_writable(name)
        what = f"property {name!r}"
        typed = typed_from_object(value, what) if jms_type is None else TypedValue.of(jms_type, value, what)
        check_jmsx_type(name, typed)
        self._properties[name] = typed

    def setBooleanProperty(self, name: str, value: bool) -> None:
        self._set_property(name, "boolean", value)

    def setByteProperty(self, name: str, value: int) -> None:
        self._set_property(name, "byte", value)

    def setShortProperty(self, name: str, value: int) -> None:
        self._set_property(name, "short", value)

    def setIntProperty(self, name: str, value: int) -> None:
        self._set_property(name, "int", value)

    def setLongProperty(self, name: str, value: int) -> None:
        self._set_property(name, "long", value)

    def setFloatProperty(self, name: str, value: float) -> None:
        self._set_property(name, "float", value)

    def setDoubleProperty(self, name: str, value: float) -> None:
        self._set_property(name, "double", value)

    def setStringProperty(self, name: str, value: str) -> None:
        self._set_property(name, "String", value)

    def setObjectProperty(self, name: str, value: object) -> None:
        """bool → boolean, int → int (long beyond 32 bits), float → double, str → String; a TypedValue
        picks the type explicitly. JMS null property values cannot travel as STOMP headers: refused."""
        self._set_property(name, None, value)

    def getBooleanProperty(self, name: str) -> bool:
        return convert(self._property(name), "boolean", f"property {name!r}")

    def getByteProperty(self, name: str) -> int:
        return convert(self._property(name), "byte", f"property {name!r}")

    def getShortProperty(self, name: str) -> int:
        return convert(self._property(name), "short", f"property {name!r}")

    def getIntProperty(self, name: str) -> int:
        return convert(self._property(name), "int", f"property {name!r}")

    def getLongProperty(self, name: str) -> int:
        return convert(self._property(name), "long", f"property {name!r}")

    def getFloatProperty(self, name: str) -> float:
        return convert(self._property(name), "float", f"property {name!r}")

    def getDoubleProperty(self, name: str) -> float:
        return convert(self._property(name), "double", f"property {name!r}")

    def getStringProperty(self, name: str) -> str | None:
        return convert(self._property(name), "String", f"property {name!r}")

    def getObjectProperty(self, name: str) -> Scalar | None:
        typed = self._property(name)
        return None if typed is None else typed.value

    def getPropertyNames(self) -> list[str]:
        names = list(self._properties)
        if self._delivery_count is not None:
            names.append(JMSX_DELIVERY_COUNT)
        return names

    def propertyExists(self, name: str) -> bool:
        return self._property(name) is not None

    def clearProperties(self) -> None:
        """Remove the application's properties and make them writable again. JMSXDeliveryCount stays:
        it is a fact about this delivery, as in ActiveMQ and Artemis."""
        self._properties.clear()
        self._properties_read_only = False

    @property
    def properties(self) -> Mapping[str, Scalar]:
        """A live, read-only mapping of property names to values (set them with the set*Property methods)."""
        return _PropertyView(self._property, self.getPropertyNames)

    # -- body -----------------------------------------------------------------------------------------

    def clearBody(self) -> None:
        """Empty the body and make it writable again (properties are untouched)."""
        self._clear_body()
        self._body_read_only = False

    def _clear_body(self) -> None:
        """Subclasses empty their body here."""

    def _check_body_writable(self) -> None:
        if self._body_read_only:
            raise MessageNotWriteableException(
                f"the body of this received {type(self).__name__} is read-only; call clearBody() first"
            )

    def _body(self) -> object:
        """The body as getBody returns it; None when there is none."""
        return None

    def isBodyAssignableTo(self, c: type[Any]) -> bool:
        """JMS 2.0: whether ``getBody(c)`` would succeed. True for a message without a body."""
        return _assignable(self._body(), c)

    def getBody(self, c: type[T]) -> T | None:
        """JMS 2.0: the body as ``c`` (str for TextMessage, bytes for BytesMessage, dict for MapMessage,
        the object for ObjectMessage); None when the message has no body."""
        body = self._body()
        if not _assignable(body, c):
            raise MessageFormatException(
                f"the body of this {type(self).__name__} is a {type(body).__name__}, "
                f"not assignable to {getattr(c, '__name__', c)!s}"
            )
        return cast(T, body)

    # -- acknowledgement and provider hooks -----------------------------------------------------------

    def acknowledge(self) -> Awaitable[None] | None:
        """Acknowledge as the session's mode says (CLIENT: everything the session delivered so far).
        Does nothing for messages of other sessions or not received, as JMS specifies. A message received
        through ``jmslike.aio`` returns an awaitable: ``await message.acknowledge()``."""
        if self._acknowledger is not None:
            return self._acknowledger()
        return None

    def bind_acknowledger(self, acknowledger: Callable[[], Awaitable[None] | None]) -> None:
        """Provider hook: what ``acknowledge()`` does for this delivery (the session's mode decides)."""
        self._acknowledger = acknowledger

    @property
    def acknowledger(self) -> Callable[[], Awaitable[None] | None] | None:
        """Provider hook: what ``acknowledge()`` calls (None: not received, nothing to do)."""
        return self._acknowledger

    def mark_received(self) -> None:
        """Provider hook, called once a received message is fully built: properties and body become
        read-only (Bytes and Stream messages are put in read mode at the start)."""
        self._received = True
        self._properties_read_only = True
        self._body_read_only = True

    def set_delivery_count(self, count: int) -> None:
        """Provider hook: JMSXDeliveryCount of this delivery (1 on first delivery)."""
        self._delivery_count = _int_arg(count, JMSX_DELIVERY_COUNT)

    def typed_properties(self) -> Mapping[str, TypedValue]:
        """Provider hook: the application's properties with their JMS types (JMSXDeliveryCount excluded)."""
        return MappingProxyType(self._properties)

    def load_properties(self, properties: Mapping[str, TypedValue]) -> None:
        """Provider hook: add decoded properties, bypassing the read-only and name checks (names from the
        network are whatever the sender used). JMSXDeliveryCount is ignored: use set_delivery_count."""
        self._properties.update((k, v) for k, v in properties.items() if k != JMSX_DELIVERY_COUNT)

    def __repr__(self) -> str:
        destination = self._jms_destination
        return (
            f"<{type(self).__name__} id={self._jms_message_id!r} "
            f"destination={destination if destination is None else str(destination)}>"
        )


def _assignable(body: object, c: type[Any]) -> bool:
    if body is None:
        return True
    try:
        return isinstance(body, c)
    except TypeError as error:
        raise MessageFormatException(
            f"getBody/isBodyAssignableTo need a plain class such as str, bytes, dict or object, got {c!r}"
        ) from error


class TextMessage(Message):
    """A message whose body is a string (or null)."""

    _body_type = "text"

    def __init__(self, text: str | None = None) -> None:
        super().__init__()
        self._text: str | None = None
        self.setText(text)

    def setText(self, text: str | None) -> None:
        self._check_body_writable()
        self._text = _optional_str_arg(text, "the text of a TextMessage")

    def getText(self) -> str | None:
        return self._text

    @property
    def text(self) -> str | None:
        return self._text

    @text.setter
    def text(self, value: str | None) -> None:
        self.setText(value)

    def _clear_body(self) -> None:
        self._text = None

    def _body(self) -> object:
        return self._text


# -- Java modified UTF-8 (DataOutput.writeUTF) ---------------------------------------------------------

_SUPPLEMENTARY: Final = re.compile("[\U00010000-\U0010ffff]")


def _surrogate_pair(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def encode_modified_utf8(text: str) -> bytes:
    """Java's modified UTF-8: characters beyond U+FFFF as two 3-byte surrogates, NUL as C0 80."""
    cesu = _SUPPLEMENTARY.sub(_surrogate_pair, text).encode("utf-8", "surrogatepass")
    return cesu.replace(b"\x00", b"\xc0\x80")


def decode_modified_utf8(data: bytes) -> str:
    """The inverse of :func:`encode_modified_utf8`; surrogate pairs are joined again."""
    try:
        if any(byte >= 0xF0 for byte in data):
            raise ValueError("4-byte sequences do not occur in modified UTF-8")
        units = data.replace(b"\xc0\x80", b"\x00").decode("utf-8", "surrogatepass")
    except ValueError as error:
        raise MessageFormatException(f"the data is not Java modified UTF-8: {error}") from error
    return units.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "surrogatepass")


# -- streamed bodies ---------------------------------------------------------------------------------------


class _StreamedMessage(Message):
    """Bytes and Stream messages: write-only until reset() or receipt, then read-only from the start."""

    # The typed writes of the JMS API, the same for both streamed kinds; each kind stores in _write_as.
    def _write_as(self, jms_type: JmsType, value: object) -> None:
        raise NotImplementedError

    def writeBoolean(self, value: bool) -> None:
        self._write_as("boolean", value)

    def writeByte(self, value: int) -> None:
        self._write_as("byte", value)

    def writeShort(self, value: int) -> None:
        self._write_as("short", value)

    def writeChar(self, value: str) -> None:
        self._write_as("char", value)

    def writeInt(self, value: int) -> None:
        self._write_as("int", value)

    def writeLong(self, value: int) -> None:
        self._write_as("long", value)

    def writeFloat(self, value: float) -> None:
        self._write_as("float", value)

    def writeDouble(self, value: float) -> None:
        self._write_as("double", value)

    def _check_body_writable(self) -> None:
        if self._body_read_only:
            raise MessageNotWriteableException(
                f"this {type(self).__name__} is in read-only mode (received, or reset() was called); "
                "call clearBody() to write a new body"
            )

    def _check_readable(self) -> None:
        if not self._body_read_only:
            raise MessageNotReadableException(
                f"this {type(self).__name__} is in write-only mode; call reset() before reading it"
            )

    def reset(self) -> None:
        """Put the body in read-only mode, positioned at the start."""
        self._body_read_only = True
        self._rewind()

    def _rewind(self) -> None:
        raise NotImplementedError

    def mark_received(self) -> None:
        super().mark_received()
        self._rewind()


_BYTES_FORMATS: Final[dict[str, str]] = {
    "boolean": ">?",
    "byte": ">b",
    "short": ">h",
    "char": ">H",
    "int": ">i",
    "long": ">q",
    "float": ">f",
    "double": ">d",
}


class BytesMessage(_StreamedMessage):
    """A stream of bytes written and read with Java's DataOutput/DataInput encodings (big-endian)."""

    _body_type = "bytes"

    def __init__(self, data: bytes = b"") -> None:
        super().__init__()
        # Immutable bytes are kept as they are, and become a bytearray only when something is appended: a body
        # received, or written with one writeBytes call (what nearly every sender does), is then never copied
        # before it is encoded (at 4 KB two copies were a visible share of a send: docs/performance.md).
        self._buffer: bytes | bytearray = data if type(data) is bytes else bytearray(data)
        self._position = 0

    def _rewind(self) -> None:
        self._position = 0

    def _clear_body(self) -> None:
        self._buffer = b""
        self._position = 0

    def _append(self, data: bytes | bytearray) -> None:
        """Add ``data`` at the end of the body; an empty body takes immutable bytes as they are."""
        if type(self._buffer) is bytes:
            if not self._buffer and type(data) is bytes:
                self._buffer = data
                return
            self._buffer = bytearray(self._buffer)
        self._buffer += data

    def _body(self) -> object:
        """The whole body in either mode, without moving the read position; None when empty."""
        return self.body_bytes() or None

    def body_bytes(self) -> bytes:
        body = self._buffer
        return body if type(body) is bytes else bytes(body)

    # -- writing --

    def _write(self, typed: TypedValue) -> None:
        """Append ``typed`` as the matching DataOutput method would; callers check writability first."""
        value = typed.value
        if typed.jms_type == "String":
            encoded = encode_modified_utf8(cast(str, value))
            if len(encoded) > 0xFFFF:
                raise MessageFormatException(
                    f"writeUTF: the string encodes to {len(encoded)} bytes; the limit is 65535 "
                    "(use writeBytes for longer text)"
                )
            self._append(struct.pack(">H", len(encoded)) + encoded)
        elif typed.jms_type == "byte[]":
            self._append(cast(bytes, value))
        else:
            raw = ord(cast(str, value)) if typed.jms_type == "char" else value
            self._append(struct.pack(_BYTES_FORMATS[typed.jms_type], raw))

    def _write_as(self, jms_type: JmsType, value: object) -> None:
        self._check_body_writable()
        self._write(TypedValue.of(jms_type, value, f"the {jms_type} to write"))

    def writeUTF(self, value: str) -> None:
        """A 2-byte length and the text in Java modified UTF-8 (at most 65535 encoded bytes)."""
        self._write_as("String", value)

    def writeBytes(self, value: bytes, offset: int = 0, length: int | None = None) -> None:
        self._check_body_writable()
        if offset == 0 and length is None and isinstance(value, bytes | bytearray):
            self._append(value)  # the whole of it: nothing to check (the common call, on every send)
            return
        self._append(_byte_slice(value, offset, length, "writeBytes value"))

    def writeObject(self, value: object) -> None:
        """Writes as the method for the value's JMS type would (int → writeInt or writeLong, float →
        writeDouble, str → writeUTF, bytes → writeBytes)."""
        self._check_body_writable()
        self._write(typed_from_object(value, "writeObject value", FIELD_TYPES))

    # -- reading --

    def _take(self, size: int) -> bytes:
        """The next ``size`` bytes; at the end, MessageEOFException with the position unchanged."""
        self._check_readable()
        remaining = len(self._buffer) - self._position
        if size > remaining:
            raise MessageEOFException(
                f"cannot read {size} bytes at position {self._position}: the body has {remaining} left"
            )
        data = bytes(self._buffer[self._position : self._position + size])
        self._position += size
        return data

    def _unpack(self, jms_type: str) -> Any:
        fmt = _BYTES_FORMATS[jms_type]
        return struct.unpack(fmt, self._take(struct.calcsize(fmt)))[0]

    def readBoolean(self) -> bool:
        return bool(self._unpack("boolean"))

    def readByte(self) -> int:
        return int(self._unpack("byte"))

    def readUnsignedByte(self) -> int:
        return self._take(1)[0]

    def readShort(self) -> int:
        return int(self._unpack("short"))

    def readUnsignedShort(self) -> int:
        return int(struct.unpack(">H", self._take(2))[0])

    def readChar(self) -> str:
        return chr(self._unpack("char"))

    def readInt(self) -> int:
        return int(self._unpack("int"))

    def readLong(self) -> int:
        return int(self._unpack("long"))

    def readFloat(self) -> float:
        return float(self._unpack("float"))

    def readDouble(self) -> float:
        return float(self._unpack("double"))

    def readUTF(self) -> str:
        start = self._position
        length = self.readUnsignedShort()
        try:
            return decode_modified_utf8(self._take(length))
        except Exception:
            self._position = start
            raise

    def readBytes(self, buffer: bytearray, length: int | None = None) -> int:
        """Fill up to ``length`` (default: all) bytes of ``buffer``; the count read, or -1 at the end."""
        self._check_readable()
        wanted = len(buffer) if length is None else length
        if not 0 <= wanted <= len(buffer):
            raise MessageFormatException(
                f"readBytes: length {length} does not fit a {len(buffer)}-byte buffer"
            )
        count = min(wanted, len(self._buffer) - self._position)
        if count == 0 and wanted > 0:
            return -1
        buffer[:count] = self._take(count)
        return count

    def getBodyLength(self) -> int:
        self._check_readable()
        return len(self._buffer)


class StreamMessage(_StreamedMessage):
    """A sequence of typed values, read back in order with the JMS conversion table (JMS 1.1 §3.11.3)."""

    _body_type = "stream"

    def __init__(self) -> None:
        super().__init__()
        self._items: list[TypedValue | None] = []
        self._position = 0
        self._bytes_read: int | None = None
        """How far into the current byte[] field readBytes has got; None when not inside one."""

    @classmethod
    def from_typed_items(cls, items: list[TypedValue | None]) -> StreamMessage:
        """A received StreamMessage from decoded fields (body codecs and adapters build it this way)."""
        message = cls()
        message._items = items
        return message

    def typed_items(self) -> Sequence[TypedValue | None]:
        return tuple(self._items)

    def _rewind(self) -> None:
        self._position = 0
        self._bytes_read = None

    def _clear_body(self) -> None:
        self._items = []
        self._rewind()

    def _body(self) -> object:
        raise MessageFormatException("JMS 2.0 getBody does not support StreamMessage; read it with read*()")

    def isBodyAssignableTo(self, c: type[Any]) -> bool:
        return False

    # -- writing --

    def _append(self, item: TypedValue | None) -> None:
        self._items.append(item)

    def _write_as(self, jms_type: JmsType, value: object) -> None:
        self._check_body_writable()
        self._append(TypedValue.of(jms_type, value, f"the {jms_type} to write"))

    def writeString(self, value: str | None) -> None:
        self._check_body_writable()
        self._append(None if value is None else TypedValue.of("String", value, "the String to write"))

    def writeBytes(self, value: bytes, offset: int = 0, length: int | None = None) -> None:
        self._check_body_writable()
        self._append(TypedValue("byte[]", _byte_slice(value, offset, length, "writeBytes value")))

    def writeObject(self, value: object) -> None:
        """None writes a null field; otherwise the JMS type follows the value's class (int → int or long)."""
        self._check_body_writable()
        self._append(None if value is None else typed_from_object(value, "writeObject value", FIELD_TYPES))

    # -- reading --

    def _current(self) -> TypedValue | None:
        self._check_readable()
        if self._bytes_read is not None:
            raise MessageFormatException(
                f"stream field {self._position} is a byte[] being read with readBytes; "
                "read it to the end (until readBytes returns less than the buffer or -1) first"
            )
        if self._position >= len(self._items):
            raise MessageEOFException(f"the StreamMessage has no field {self._position}: all were read")
        return self._items[self._position]

    def _where(self) -> str:
        return f"stream field {self._position}"

    def _advance(self, value: V) -> V:
        """Move on after a successful read; a failed conversion never gets here, so the position stays."""
        self._position += 1
        return value

    def readBoolean(self) -> bool:
        return self._advance(convert(self._current(), "boolean", self._where()))

    def readByte(self) -> int:
        return self._advance(convert(self._current(), "byte", self._where()))

    def readShort(self) -> int:
        return self._advance(convert(self._current(), "short", self._where()))

    def readChar(self) -> str:
        return self._advance(convert(self._current(), "char", self._where()))

    def readInt(self) -> int:
        return self._advance(convert(self._current(), "int", self._where()))

    def readLong(self) -> int:
        return self._advance(convert(self._current(), "long", self._where()))

    def readFloat(self) -> float:
        return self._advance(convert(self._current(), "float", self._where()))

    def readDouble(self) -> float:
        return self._advance(convert(self._current(), "double", self._where()))

    def readString(self) -> str | None:
        return self._advance(convert(self._current(), "String", self._where()))

    def readObject(self) -> Scalar | None:
        item = self._current()
        return self._advance(None if item is None else item.value)

    def readBytes(self, buffer: bytearray) -> int:
        """JMS readBytes of a byte[] field, in pieces: returns how many bytes were copied into
        ``buffer``; a count below ``len(buffer)`` ends the field, and -1 means the field was already
        exhausted (or is null). Call again while it returns ``len(buffer)``."""
        if self._bytes_read is None:
            data = convert(self._current(), "byte[]", self._where())
            if data is None:
                return self._advance(-1)
            offset = 0
        else:
            self._check_readable()
            data = cast(bytes, cast(TypedValue, self._items[self._position]).value)
            offset = self._bytes_read
            if offset == len(data):
                self._bytes_read = None
                return self._advance(-1)
        count = min(len(buffer), len(data) - offset)
        buffer[:count] = data[offset : offset + count]
        if count < len(buffer):
            self._bytes_read = None
            return self._advance(count)
        self._bytes_read = offset + count
        return count


class MapMessage(Message):
    """Named typed values, read with the JMS conversion table. Null values (setString(name, None),
    setBytes(name, None), setObject(name, None)) are allowed, as in Java."""

    _body_type = "map"

    def __init__(self, values: Mapping[str, object] | None = None) -> None:
        super().__init__()
        self._map: dict[str, TypedValue | None] = {}
        for name, value in (values or {}).items():
            self.setObject(name, value)

    @classmethod
    def from_typed_items(cls, items: dict[str, TypedValue | None]) -> MapMessage:
        """A received MapMessage from decoded fields (body codecs and adapters build it this way)."""
        message = cls()
        message._map = items
        return message

    def typed_items(self) -> Mapping[str, TypedValue | None]:
        return MappingProxyType(self._map)

    def _clear_body(self) -> None:
        self._map = {}

    def _body(self) -> object:
        """A new dict of name → Python value; None for an empty map (JMS: no body)."""
        return {name: None if item is None else item.value for name, item in self._map.items()} or None

    def _put(self, name: str, item: TypedValue | None) -> None:
        self._map[name] = item

    def _writable_name(self, name: object) -> str:
        """Check that the body may be written and ``name`` is a valid field name."""
        self._check_body_writable()
        if not isinstance(name, str) or not name:
            raise MessageFormatException(f"a MapMessage name must be a non-empty str, got {name!r:.60}")
        return name

    def _set_as(self, name: str, jms_type: JmsType, value: object) -> None:
        self._put(self._writable_name(name), TypedValue.of(jms_type, value, f"map field {name!r}"))

    def setBoolean(self, name: str, value: bool) -> None:
        self._set_as(name, "boolean", value)

    def setByte(self, name: str, value: int) -> None:
        self._set_as(name, "byte", value)

    def setShort(self, name: str, value: int) -> None:
        self._set_as(name, "short", value)

    def setChar(self, name: str, value: str) -> None:
        self._set_as(name, "char", value)

    def setInt(self, name: str, value: int) -> None:
        self._set_as(name, "int", value)

    def setLong(self, name: str, value: int) -> None:
        self._set_as(name, "long", value)

    def setFloat(self, name: str, value: float) -> None:
        self._set_as(name, "float", value)

    def setDouble(self, name: str, value: float) -> None:
        self._set_as(name, "double", value)

    def setString(self, name: str, value: str | None) -> None:
        self._writable_name(name)
        self._put(name, None if value is None else TypedValue.of("String", value, f"map field {name!r}"))

    def setBytes(self, name: str, value: bytes | None, offset: int = 0, length: int | None = None) -> None:
        self._writable_name(name)
        data = None if value is None else _byte_slice(value, offset, length, f"map field {name!r}")
        self._put(name, None if data is None else TypedValue("byte[]", data))

    def setObject(self, name: str, value: object) -> None:
        """bool, int (int or long by size), float (double), str, bytes, None, or a TypedValue."""
        self._writable_name(name)
        what = f"map field {name!r}"
        self._put(name, None if value is None else typed_from_object(value, what, FIELD_TYPES))

    def getBoolean(self, name: str) -> bool:
        return convert(self._map.get(name), "boolean", f"map field {name!r}")

    def getByte(self, name: str) -> int:
        return convert(self._map.get(name), "byte", f"map field {name!r}")

    def getShort(self, name: str) -> int:
        return convert(self._map.get(name), "short", f"map field {name!r}")

    def getChar(self, name: str) -> str:
        return convert(self._map.get(name), "char", f"map field {name!r}")

    def getInt(self, name: str) -> int:
        return convert(self._map.get(name), "int", f"map field {name!r}")

    def getLong(self, name: str) -> int:
        return convert(self._map.get(name), "long", f"map field {name!r}")

    def getFloat(self, name: str) -> float:
        return convert(self._map.get(name), "float", f"map field {name!r}")

    def getDouble(self, name: str) -> float:
        return convert(self._map.get(name), "double", f"map field {name!r}")

    def getString(self, name: str) -> str | None:
        return convert(self._map.get(name), "String", f"map field {name!r}")

    def getBytes(self, name: str) -> bytes | None:
        return convert(self._map.get(name), "byte[]", f"map field {name!r}")

    def getObject(self, name: str) -> Scalar | None:
        item = self._map.get(name)
        return None if item is None else item.value

    def getMapNames(self) -> list[str]:
        return list(self._map)

    def itemExists(self, name: str) -> bool:
        return name in self._map


class ObjectMessage(Message):
    """A message carrying one object, serialized by an explicit :class:`ObjectSerializer` (JSON by
    default; never pickle, see :mod:`jmslike.serializers`).

    As in Java, setObject serializes at once (later changes to the object do not reach the message, and an
    unserializable object fails here, not at send) and getObject returns a fresh copy each time.
    """

    _body_type = "object"

    def __init__(self, obj: object = None, *, serializer: ObjectSerializer = JSON) -> None:
        super().__init__()
        self._serializer = serializer
        self._data: bytes | None = None
        self.setObject(obj)

    @classmethod
    def from_serialized(cls, data: bytes | None, serializer: ObjectSerializer) -> ObjectMessage:
        """A received ObjectMessage: deserialized only when getObject() asks, so a bad body fails there."""
        message = cls(serializer=serializer)
        message._data = data
        return message

    def serialized_body(self) -> bytes | None:
        return self._data

    @property
    def serializer(self) -> ObjectSerializer:
        return self._serializer

    def setObject(self, obj: object) -> None:
        self._check_body_writable()
        self._data = None if obj is None else self._call(self._serializer.dumps, obj)

    def getObject(self) -> object:
        return None if self._data is None else self._call(self._serializer.loads, self._data)

    def _call(self, function: Callable[[Any], V], argument: object) -> V:
        """Run a serializer; its own errors become MessageFormatException, so callers see one kind."""
        try:
            return function(argument)
        except MessageFormatException:
            raise
        except Exception as error:
            raise MessageFormatException(
                f"ObjectMessage serializer {self._serializer.name!r} failed: {error!r:.200}"
            ) from error

    def _clear_body(self) -> None:
        self._data = None

    def _body(self) -> object:
        return self.getObject()


__all__ = [
    "BytesMessage",
    "MapMessage",
    "Message",
    "ObjectMessage",
    "StreamMessage",
    "TextMessage",
    "decode_modified_utf8",
    "encode_modified_utf8",
]

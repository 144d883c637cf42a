"""Safe serializers for ObjectMessage bodies, and the registry that finds them by name.

Java's ObjectMessage carries a Java-serialized object; the Python analogue would be pickle, and there is
deliberately no pickle serializer here: unpickling runs code chosen by whoever wrote the bytes, and a
message body is written by anyone who can send to the destination. A consumer must never execute its
producers' payloads. The default is JSON; an application that needs richer types registers its own
serializer (msgpack, a schema-checked format ...) under a name that both sides know.

The serializer's name travels with the message in the ``jmslike-serializer`` header, so a consumer picks
the matching one from its registry; a name it does not know fails when the object is read, not when the
message is delivered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Final, Protocol, runtime_checkable

from jmslike.exceptions import MessageFormatException

SERIALIZER_HEADER: Final = "jmslike-serializer"
_NAME: Final = re.compile(r"[A-Za-z0-9._+-]+")


@runtime_checkable
class ObjectSerializer(Protocol):
    """Turns ObjectMessage objects into bytes and back. ``name`` travels in a header, so keep it short
    and stable: letters, digits and ``._+-``. Errors should be MessageFormatException; others are wrapped
    into one by ObjectMessage."""

    @property
    def name(self) -> str: ...

    def dumps(self, obj: object) -> bytes: ...

    def loads(self, data: bytes) -> object: ...


class JsonSerializer:
    """JSON in UTF-8: readable by any peer, and unable to run code on load. What comes back is what JSON
    can say: tuples come back as lists, dict keys as strings, and NaN/Infinity are refused (strict JSON,
    so non-Python peers can read every body)."""

    name = "json"

    def dumps(self, obj: object) -> bytes:
        try:
            return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
        except (TypeError, ValueError) as error:
            raise MessageFormatException(
                f"cannot serialize {type(obj).__name__} as JSON ({error}); use JSON types (dict, list, str, "
                "int, float, bool, None) or register another serializer"
            ) from error

    def loads(self, data: bytes) -> object:
        try:
            return json.loads(data)
        except (ValueError, RecursionError) as error:
            raise MessageFormatException(f"the ObjectMessage body is not valid JSON: {error}") from error


JSON: Final = JsonSerializer()


class _UnavailableSerializer:
    """Stands in for a serializer this process does not have, so the message is still delivered
    (headers, properties, acknowledge) and only reading its object fails."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self._reason = reason

    def dumps(self, obj: object) -> bytes:
        raise MessageFormatException(self._reason)

    def loads(self, data: bytes) -> object:
        raise MessageFormatException(self._reason)


class SerializerRegistry:
    """The serializers a connection knows, by name; JSON is always there and is the default."""

    def __init__(self, serializers: Iterable[ObjectSerializer] = (), default: str = JSON.name) -> None:
        self._by_name: dict[str, ObjectSerializer] = {JSON.name: JSON}
        for serializer in serializers:
            self.register(serializer)
        self._default = self.get(default)

    def register(self, serializer: ObjectSerializer) -> None:
        """Add ``serializer``, replacing one of the same name."""
        name = getattr(serializer, "name", None)
        if not isinstance(name, str) or _NAME.fullmatch(name) is None:
            raise MessageFormatException(
                f"serializer name {name!r:.60} cannot travel in a header: use letters, digits and '._+-'"
            )
        self._by_name[name] = serializer

    def get(self, name: str) -> ObjectSerializer:
        try:
            return self._by_name[name]
        except KeyError:
            raise MessageFormatException(
                f"no ObjectMessage serializer named {name!r:.60} is registered (known: "
                f"{', '.join(sorted(self._by_name))}); register one with SerializerRegistry.register() "
                "on the registry given to the ConnectionFactory"
            ) from None

    def resolve(self, name: str) -> ObjectSerializer:
        """Like :meth:`get`, but never raises: an unknown name gives a stand-in that raises on use, for
        decoding messages whose object nobody may ever read."""
        try:
            return self.get(name)
        except MessageFormatException as error:
            return _UnavailableSerializer(name, str(error))

    @property
    def default(self) -> ObjectSerializer:
        return self._default

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name


__all__ = ["JSON", "SERIALIZER_HEADER", "JsonSerializer", "ObjectSerializer", "SerializerRegistry"]

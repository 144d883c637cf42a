"""JMS destinations: Queue, Topic and their temporary kinds.

A destination is a broker-neutral name; each adapter maps it onto its broker's STOMP destination string.
Names are checked here once, so no adapter ever puts a control character or a STOMP delimiter on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass

from jmslike.exceptions import InvalidDestinationException

_FORBIDDEN = {chr(c) for c in range(32)} | {"\x7f"}
#: The names jmslike gives the temporary destinations it creates (``jmslike-tmp-<hex>``): adapters recognise
#: their own temporary destinations in what the broker sends back by it.
TEMPORARY_PREFIX = "jmslike-tmp-"


def check_name(name: object, kind: str) -> str:
    """Return ``name`` if it can be a destination name, else raise InvalidDestinationException."""
    if not isinstance(name, str) or not name:
        raise InvalidDestinationException(f"a {kind} name must be a non-empty string, got {name!r}")
    bad = sorted({ch for ch in name if ch in _FORBIDDEN})
    if bad:
        raise InvalidDestinationException(
            f"{kind} name {name!r} contains control characters {bad!r}; use printable characters only"
        )
    if len(name) > 1024:
        raise InvalidDestinationException(f"{kind} name is {len(name)} characters long; the limit is 1024")
    return name


@dataclass(frozen=True)
class Destination:
    """Base of all destinations; ``name`` is the JMS name without any broker prefix."""

    name: str

    kind = "destination"

    def __post_init__(self) -> None:
        check_name(self.name, self.kind)

    def __str__(self) -> str:
        return f"{self.kind}://{self.name}"


@dataclass(frozen=True)
class Queue(Destination):
    kind = "queue"

    def getQueueName(self) -> str:
        return self.name


@dataclass(frozen=True)
class Topic(Destination):
    kind = "topic"

    def getTopicName(self) -> str:
        return self.name


@dataclass(frozen=True)
class TemporaryQueue(Queue):
    """A queue that lives as long as the connection that created it."""

    kind = "temp-queue"

    def delete(self) -> None:
        """JMS ``TemporaryQueue.delete``: the broker removes it when the connection closes."""


@dataclass(frozen=True)
class TemporaryTopic(Topic):
    """A topic that lives as long as the connection that created it."""

    kind = "temp-topic"

    def delete(self) -> None:
        """JMS ``TemporaryTopic.delete``: the broker removes it when the connection closes."""


def parse_destination(text: str) -> Destination:
    """Parse ``queue://x``, ``topic://x``, ``temp-queue://x`` or ``temp-topic://x`` (the ``str()`` form)."""
    kinds: dict[str, type[Destination]] = {
        "queue": Queue,
        "topic": Topic,
        "temp-queue": TemporaryQueue,
        "temp-topic": TemporaryTopic,
    }
    kind, sep, name = text.partition("://")
    if not sep or kind not in kinds:
        raise InvalidDestinationException(
            f"cannot read destination {text!r}: expected queue://NAME, topic://NAME, "
            "temp-queue://NAME or temp-topic://NAME"
        )
    return kinds[kind](name)

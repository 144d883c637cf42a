"""Hierarchical topic strings: one notation for every broker, and its mapping onto each broker's syntax.

Queue-manager users write topic strings such as ``Sport/Soccer/State/LatestScore/#``: levels separated by
``/``, ``+`` standing for exactly one level and ``#`` for any number of levels (zero included), only as the
last level. Every broker spells this differently (ActiveMQ ``.`` ``*`` ``>``; RabbitMQ and Artemis ``.``
``*`` ``#``), so this module owns the one jmslike notation and the pure functions that turn it into a
broker's syntax (described by the adapter's :class:`TopicSyntax`) and match it (for brokers where jmslike
resolves wildcards itself, such as RabbitMQ's retained-publication catalogue).

The canonical form keeps the notation's wildcards but separates levels with ``.``, which all supported
brokers use: ``Sport/Soccer/#`` and ``Sport.Soccer.#`` are the same topic, and a received message's
destination (``Sport.Soccer.Live``) equals ``session.createTopic("Sport/Soccer/Live")``. A broker's own
wildcard characters (``*``, ``>``) are passed through untouched, so existing broker-specific names keep
working on their broker; only ``+`` and ``#`` are portable.
"""

from __future__ import annotations

from dataclasses import dataclass

from jmslike.exceptions import InvalidDestinationException

SEPARATOR = "/"
CANONICAL_SEPARATOR = "."
SINGLE = "+"
MULTI = "#"


@dataclass(frozen=True)
class TopicSyntax:
    """A broker's hierarchical topic syntax: level separator, one-level and multi-level wildcards."""

    separator: str = "."
    single: str = "*"
    multi: str = "#"


def levels(name: str) -> list[str]:
    """The levels of a topic string in either form (``/`` or ``.`` separated)."""
    return name.replace(SEPARATOR, CANONICAL_SEPARATOR).split(CANONICAL_SEPARATOR)


def canonical(name: str) -> str:
    """The canonical form of a topic string; InvalidDestinationException when it breaks the notation.

    Rules (checked on every topic name): no empty level when ``/`` is used (``a//b``, ``/a``, ``a/``);
    ``#`` only as a whole, last level. ``+`` and ``#`` inside a level (``a+b``) are ordinary characters.
    """
    if SEPARATOR in name and any(level == "" for level in name.split(SEPARATOR)):
        raise InvalidDestinationException(
            f"topic {name!r} has an empty level; write levels separated by single '/' (e.g. 'Sport/Soccer')"
        )
    parts = levels(name)
    for index, level in enumerate(parts):
        if level == MULTI and index != len(parts) - 1:
            raise InvalidDestinationException(
                f"topic {name!r}: '#' (any number of levels) may only be the last level, as in 'Sport/#'"
            )
    return CANONICAL_SEPARATOR.join(parts)


def is_wildcard(name: str) -> bool:
    """True when the topic string names several topics (has a ``+`` or ``#`` level)."""
    return any(level in (SINGLE, MULTI) for level in levels(name))


def to_broker(name: str, syntax: TopicSyntax) -> str:
    """The broker's spelling of a topic string (canonical or ``/`` form)."""
    mapped = []
    for level in levels(name):
        if level == SINGLE:
            mapped.append(syntax.single)
        elif level == MULTI:
            mapped.append(syntax.multi)
        else:
            mapped.append(level)
    return syntax.separator.join(mapped)


def from_broker(name: str, syntax: TopicSyntax) -> str:
    """The canonical form of a broker topic name (its wildcard levels become ``+`` and ``#``)."""
    mapped = []
    for level in name.split(syntax.separator):
        if level == syntax.single:
            mapped.append(SINGLE)
        elif level == syntax.multi:
            mapped.append(MULTI)
        else:
            mapped.append(level)
    return CANONICAL_SEPARATOR.join(mapped)


def matches(pattern: str, topic: str) -> bool:
    """Does the topic string ``pattern`` (``+``, ``#`` wildcards) match the concrete ``topic``?

    ``#`` matches zero or more levels (``Sport/#`` matches ``Sport``, as on RabbitMQ and ActiveMQ 5.17).
    """
    return _match(levels(pattern), levels(topic))


def _match(pattern: list[str], topic: list[str]) -> bool:
    if not pattern:
        return not topic
    head = pattern[0]
    if head == MULTI:
        return True  # only ever last (canonical() checks), so it takes the rest, empty included
    if not topic:
        return False
    if head != SINGLE and head != topic[0]:
        return False
    return _match(pattern[1:], topic[1:])

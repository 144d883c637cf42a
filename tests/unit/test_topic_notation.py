"""The portable topic notation (jmslike.topics), its mapping onto each broker, and the retained envelope.

Pure code: no broker. The integration tests (tests/integration/test_retained.py) show the mapped names
subscribe to the same topics on the real brokers.
"""

from __future__ import annotations

import pytest

from jmslike.adapters.activemq import ActiveMQAdapter
from jmslike.adapters.artemis import ArtemisAdapter
from jmslike.adapters.rabbitmq import RabbitMQAdapter, is_retained_store
from jmslike.contract import RETAINED_STORE_PREFIX
from jmslike.destinations import Queue, TemporaryTopic, Topic
from jmslike.exceptions import InvalidDestinationException
from jmslike.retained import Envelope, store_queue
from jmslike.topics import TopicSyntax, canonical, from_broker, is_wildcard, matches, to_broker

ACTIVEMQ = TopicSyntax(".", "*", ">")
RABBIT = TopicSyntax(".", "*", "#")


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("Sport/Soccer/State/LatestScore/#", "Sport.Soccer.State.LatestScore.#"),
        ("Sport/+/Score", "Sport.+.Score"),
        ("Sport.Soccer", "Sport.Soccer"),
        ("#", "#"),
        ("plain", "plain"),
        ("a+b/c#d", "a+b.c#d"),  # wildcards only as whole levels
    ],
)
def test_canonical(written: str, expected: str) -> None:
    assert canonical(written) == expected


@pytest.mark.parametrize("bad", ["a/#/b", "#/a", "a//b", "/a", "a/"])
def test_canonical_refuses(bad: str) -> None:
    with pytest.raises(InvalidDestinationException):
        canonical(bad)


@pytest.mark.parametrize(
    ("notation", "activemq", "rabbitmq"),
    [
        (
            "Sport/Soccer/State/LatestScore/#",
            "Sport.Soccer.State.LatestScore.>",
            "Sport.Soccer.State.LatestScore.#",
        ),
        ("Sport/+/Score", "Sport.*.Score", "Sport.*.Score"),
        ("Sport/Soccer", "Sport.Soccer", "Sport.Soccer"),
    ],
)
def test_to_broker(notation: str, activemq: str, rabbitmq: str) -> None:
    assert to_broker(notation, ACTIVEMQ) == activemq
    assert to_broker(notation, RABBIT) == rabbitmq
    assert from_broker(to_broker(notation, ACTIVEMQ), ACTIVEMQ) == from_broker(
        to_broker(notation, RABBIT), RABBIT
    )


def test_native_tokens_pass_through() -> None:
    """A broker's own wildcard tokens are not translated (existing broker-specific names keep working)."""
    assert to_broker("Sport.>", ACTIVEMQ) == "Sport.>"
    assert to_broker("Sport.*", RABBIT) == "Sport.*"
    assert from_broker("Sport.*.>", ACTIVEMQ) == "Sport.+.#"


def test_is_wildcard() -> None:
    assert is_wildcard("a/+/b") and is_wildcard("a/#") and is_wildcard("#")
    assert not is_wildcard("a/b") and not is_wildcard("a+b")


@pytest.mark.parametrize(
    ("pattern", "topic", "expected"),
    [
        ("Sport/#", "Sport", True),  # '#' matches zero levels, as on RabbitMQ and ActiveMQ 5.17
        ("Sport/#", "Sport.Soccer.Live", True),
        ("Sport/+", "Sport.Soccer", True),
        ("Sport/+", "Sport", False),
        ("Sport/+", "Sport.Soccer.Live", False),
        ("+/Score", "A.Score", True),
        ("Sport/Soccer", "Sport.Soccer", True),
        ("Sport/Soccer", "Sport.Tennis", False),
        ("#", "anything.at.all", True),
        ("a+b", "ab", False),
    ],
)
def test_matches(pattern: str, topic: str, expected: bool) -> None:
    assert matches(pattern, topic) is expected


def test_adapters_map_topics_to_their_syntax() -> None:
    topic = Topic("Sport/Soccer/+/#")
    assert ActiveMQAdapter().destination_name(topic) == "/topic/Sport.Soccer.*.>"
    assert RabbitMQAdapter().destination_name(topic) == "/topic/Sport.Soccer.*.#"
    assert ArtemisAdapter().destination_name(topic) == "Sport.Soccer.*.#"
    # Queues are never mapped: their names are not hierarchical.
    assert ActiveMQAdapter().destination_name(Queue("a/#")) == "/queue/a/#"


def test_store_queue_names() -> None:
    assert store_queue(Topic("Sport/Soccer"), ActiveMQAdapter()) == Queue(
        RETAINED_STORE_PREFIX + "Sport.Soccer"
    )
    assert store_queue(Topic("Sport/#"), ActiveMQAdapter()).name == RETAINED_STORE_PREFIX + "Sport.>"
    assert store_queue(Topic("Sport/+"), RabbitMQAdapter()).name == RETAINED_STORE_PREFIX + "Sport.*"
    assert is_retained_store(Queue(RETAINED_STORE_PREFIX + "x"))
    assert not is_retained_store(Topic(RETAINED_STORE_PREFIX + "x"))
    with pytest.raises(InvalidDestinationException):
        store_queue(Topic("x" * 300), RabbitMQAdapter())


def test_envelope_round_trip() -> None:
    envelope = Envelope("a.b", "conn-1", False, {"destination": "/topic/a.b", "k": "v:\n"}, b"\x00body\xff")
    assert Envelope.decode(envelope.encode()) == envelope


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[]",
        b'{"v": 99}',
        b'{"v":1,"topic":"t","headers":{},"body":"%%"}',
        b'{"v":1,"topic":"t","headers":{},"body":"\\u0080"}',
        b'{"v":1,"topic":"t","headers":[],"body":""}',
    ],
)
def test_envelope_decode_never_raises(data: bytes) -> None:
    assert Envelope.decode(data) is None


def test_temporary_topic_is_not_mapped_for_artemis() -> None:
    assert ArtemisAdapter().destination_name(TemporaryTopic("jmslike-tmp-x")) == "jmslike-tmp-x"


def test_encoded_header_name_agrees_with_the_dialect() -> None:
    from jmslike.adapters.dialect import ENCODED_HEADER
    from jmslike.retained import ENCODED_HEADER as RETAINED_COPY

    assert RETAINED_COPY == ENCODED_HEADER

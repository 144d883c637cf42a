"""JMS 2.0 shared subscriptions (§8.3.2, §8.3.4) on real brokers: consumers in several connections share
the messages; identity is (name, client ID or none); the shared / unshared and changed-definition rules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from expectations import expected

from jmslike import (
    Connection,
    IllegalStateException,
    InvalidDestinationException,
    JMSException,
    MessageConsumer,
    Session,
)
from jmslike.conformance.suite.helpers import text_of

RECEIVE_MS = 5000
QUIET_MS = 500


def _publish(connection: Connection, topic: str, texts: list[str]) -> None:
    session = connection.createSession()
    producer = session.createProducer(session.createTopic(topic))
    for text in texts:
        producer.send(session.createTextMessage(text))
    session.close()


def _texts(consumer: MessageConsumer) -> list[str]:
    got = []
    while (message := consumer.receive(QUIET_MS)) is not None:
        got.append(text_of(message))
    return got


@pytest.mark.parametrize("durable", [False, True], ids=["non-durable", "durable"])
def test_consumers_in_two_connections_share_the_messages(
    broker: Any, connect: Callable[..., Connection], unique_name: str, durable: bool
) -> None:
    with expected("shared-subscriptions", broker.kind):
        consumers = []
        for _ in range(2):
            session = connect().createSession()  # no client ID: identity is the name alone
            topic = session.createTopic(unique_name)
            create = session.createSharedDurableConsumer if durable else session.createSharedConsumer
            consumers.append(create(topic, "shared"))
        texts = [f"m{i}" for i in range(20)]
        _publish(connect(), unique_name, texts)
        first, second = _texts(consumers[0]), _texts(consumers[1])
        assert sorted(first + second) == sorted(texts), "every message once across the consumers"
        assert first and second, f"both consumers should get a share: {first} / {second}"
        for consumer in consumers:
            consumer.close()
        if durable:
            connect().createSession().unsubscribe("shared")


def test_a_shared_durable_subscription_keeps_messages_until_unsubscribed(
    broker: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    with expected("shared-subscriptions", broker.kind):
        session = connect(unique_name).createSession()
        topic = session.createTopic(unique_name)
        session.createSharedDurableConsumer(topic, "kept").close()
        _publish(connect(), unique_name, ["while away"])
        consumer = session.createSharedDurableConsumer(topic, "kept")
        assert _texts(consumer) == ["while away"]
        consumer.close()
        session.unsubscribe("kept")
        _publish(connect(), unique_name, ["after unsubscribe"])
        again = session.createSharedDurableConsumer(topic, "kept")
        assert _texts(again) == [], "unsubscribe must delete the subscription and its backlog"
        again.close()
        session.unsubscribe("kept")
        with pytest.raises(InvalidDestinationException):
            session.unsubscribe("kept")


def test_a_shared_non_durable_subscription_ends_with_its_last_consumer(
    broker: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    with expected("shared-subscriptions", broker.kind):
        session = connect().createSession()
        topic = session.createTopic(unique_name)
        session.createSharedConsumer(topic, "transient").close()
        _publish(connect(), unique_name, ["nobody listening"])
        consumer = session.createSharedConsumer(topic, "transient")
        assert _texts(consumer) == []


def test_shared_and_unshared_durable_may_not_share_a_name(
    broker: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    with expected("shared-subscriptions", broker.kind):
        session = connect(unique_name).createSession()
        topic = session.createTopic(unique_name)
        session.createSharedDurableConsumer(topic, "name").close()  # where refused, the table says so
        with pytest.raises(JMSException, match="shared durable subscription"):
            session.createDurableConsumer(topic, "name")
        session.unsubscribe("name")
        session.createDurableConsumer(topic, "name").close()
        with pytest.raises(JMSException, match="unshared durable subscription"):
            session.createSharedDurableConsumer(topic, "name")
        session.unsubscribe("name")


def test_a_changed_selector_replaces_an_unused_subscription_and_is_refused_while_consumed(
    broker: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    with expected("shared-subscriptions", broker.kind):
        session = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
        topic = session.createTopic(unique_name)
        session.createSharedDurableConsumer(topic, "sub", "n = 1").close()
        _publish(connect(), unique_name, ["old backlog"])  # no property n: filtered out anyway
        active = session.createSharedDurableConsumer(topic, "sub")  # unused: replaced, backlog gone
        other = connect().createSession()
        with pytest.raises(JMSException, match="active consumers"):
            other.createSharedDurableConsumer(other.createTopic(unique_name), "sub", "n = 2")
        with pytest.raises(IllegalStateException, match="active consumers"):
            other.unsubscribe("sub")  # the consumer is in another connection: the broker knows
        assert _texts(active) == []
        active.close()
        other.unsubscribe("sub")

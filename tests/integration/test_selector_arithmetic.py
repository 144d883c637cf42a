"""Selectors that compute (``price * qty > 10``) on real brokers: a subscriber's selector must never break
another client's publish (on ActiveMQ it did: "Cannot call multiply operation"), and must select exactly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from expectations import expected

from jmslike import Connection, Destination, Session
from jmslike.conformance.suite.helpers import text_of

RECEIVE_MS = 5000
PRICED = [("5x2", 5, 2), ("3x3", 3, 3), ("7x3", 7, 3)]


def _send_priced(session: Session, destination: Destination) -> None:
    """The PRICED messages, with int properties price and qty and a boolean hot."""
    producer = session.createProducer(destination)
    for text, price, qty in PRICED:
        message = session.createTextMessage(text)
        message.setIntProperty("price", price)
        message.setIntProperty("qty", qty)
        message.setBooleanProperty("hot", True)
        producer.send(message)  # must not fail because of anybody's selector


def _publish(connection: Connection, topic: str) -> None:
    session = connection.createSession()
    _send_priced(session, session.createTopic(topic))
    session.close()


def _texts(consumer: Any) -> list[str]:
    got = []
    while (message := consumer.receive(500)) is not None:
        got.append(text_of(message))
    return got


def test_a_computing_selector_on_a_topic_selects_and_never_breaks_a_publisher(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    session = connect().createSession()
    subscriber = session.createConsumer(session.createTopic(unique_name), "price * qty BETWEEN 10 AND 20")
    _publish(connect(), unique_name)
    assert _texts(subscriber) == ["5x2"]


def test_a_durable_subscription_whose_computing_selector_changes_is_recreated(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    session = connect(unique_name).createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    session.createDurableSubscriber(topic, "sub", "price * qty > 10").close()
    _publish(connect(), unique_name)  # 7x3 kept for it while inactive
    again = session.createDurableSubscriber(topic, "sub", "price * qty > 8")  # changed: delete + create
    assert _texts(again) == [], (
        "the old subscription's backlog must go with it (JMS: change = delete + create)"
    )
    again.close()
    _publish(connect(), unique_name)
    resumed = session.createDurableSubscriber(topic, "sub", "price * qty > 8")
    assert _texts(resumed) == ["5x2", "3x3", "7x3"]
    resumed.close()
    session.unsubscribe("sub")


def test_a_computing_selector_on_a_queue_selects_exactly_or_is_refused(
    broker: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    """ActiveMQ would silently match nothing on a queue, and a client-side filter would consume other
    consumers' messages: where the broker cannot compute, the table says unsupported."""
    session = connect().createSession()
    queue = session.createQueue(unique_name)
    with expected("queue-computing-selector", broker.kind):
        consumer = session.createConsumer(queue, "price * qty BETWEEN 10 AND 20")
        _send_priced(session, queue)
        assert _texts(consumer) == ["5x2"]


def test_number_and_boolean_comparisons_on_a_topic_select_exactly(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    """Artemis keeps STOMP's properties as strings and its filter never converts them (``price > 4`` matched
    nothing there): jmslike evaluates such a selector itself on topics."""
    session = connect().createSession()
    subscriber = session.createConsumer(
        session.createTopic(unique_name), "price > 4 AND qty = 3 AND hot = TRUE"
    )
    _publish(connect(), unique_name)
    assert _texts(subscriber) == ["7x3"]


def test_number_comparisons_on_a_queue_select_exactly_or_are_refused(
    broker: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    session = connect().createSession()
    queue = session.createQueue(unique_name)
    with expected("queue-typed-selector", broker.kind):
        consumer = session.createConsumer(queue, "price > 4 AND qty = 3")
        _send_priced(session, queue)
        assert _texts(consumer) == ["7x3"]

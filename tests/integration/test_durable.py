"""Durable subscriptions and client IDs (JMS 1.1 §6.11.1, §4.3.2), checked on real brokers.

Where the test must not trust jmslike's own view of the broker ("is the subscription really gone?"),
it asks the broker through an independent raw STOMP client (stompest).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from jmslike import (
    Connection,
    DeliveryMode,
    IllegalStateException,
    InvalidClientIDException,
    InvalidDestinationException,
    JMSException,
    Session,
)
from jmslike.conformance.suite.helpers import text_of

RECEIVE_MS = 5000


def publish(
    connection: Connection, topic: str, texts: list[str], mode: int = DeliveryMode.PERSISTENT
) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createTopic(topic))
    producer.setDeliveryMode(mode)
    for text in texts:
        producer.send(session.createTextMessage(text))
    session.close()


def receive_all(subscriber: object, wait_ms: int = 500) -> list[str]:
    texts = []
    while (message := subscriber.receive(wait_ms)) is not None:  # type: ignore[attr-defined]
        texts.append(text_of(message))
    return texts


def client_id() -> str:
    return f"client-{uuid.uuid4().hex[:10]}"


def test_durable_needs_client_id(connection: Connection, unique_name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(IllegalStateException, match="client ID"):
        session.createDurableSubscriber(session.createTopic(unique_name), "sub")
    # JMS 2.0: without a client ID the name can only be a shared durable subscription's; there is none.
    with pytest.raises(InvalidDestinationException, match="setClientID"):
        session.unsubscribe("sub")


def test_durable_retains_while_inactive_nondurable_does_not(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    cid = client_id()
    subscriber_connection = connect(cid)
    session = subscriber_connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    durable = session.createDurableSubscriber(topic, "keep")
    non_durable = session.createConsumer(topic)
    publish(connect(), unique_name, ["live"])
    assert text_of(durable.receive(RECEIVE_MS)) == "live"
    assert text_of(non_durable.receive(RECEIVE_MS)) == "live"
    durable.close()
    non_durable.close()
    publish(connect(), unique_name, ["while-away-1", "while-away-2"])
    back = session.createDurableSubscriber(topic, "keep")
    fresh = session.createConsumer(topic)
    assert receive_all(back) == ["while-away-1", "while-away-2"]
    assert receive_all(fresh, 200) == []
    back.close()
    session.unsubscribe("keep")


def test_unsubscribe_deletes_for_good(connect: Callable[..., Connection], unique_name: str) -> None:
    cid = client_id()
    connection = connect(cid)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    session.createDurableSubscriber(topic, "gone").close()
    publish(connect(), unique_name, ["backlog"])
    session.unsubscribe("gone")
    with pytest.raises(InvalidDestinationException):
        session.unsubscribe("gone")
    again = session.createDurableSubscriber(topic, "gone")
    assert receive_all(again, 300) == []  # a new subscription, without the old backlog
    again.close()
    session.unsubscribe("gone")


def test_unsubscribe_unknown_name(connect: Callable[..., Connection]) -> None:
    session = connect(client_id()).createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(InvalidDestinationException):
        session.unsubscribe("never-existed")


def test_unsubscribe_while_active_fails_and_subscription_survives(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect(client_id())
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    subscriber = session.createDurableSubscriber(topic, "busy")
    with pytest.raises(IllegalStateException):
        session.unsubscribe("busy")
    publish(connect(), unique_name, ["still-here"])
    assert text_of(subscriber.receive(RECEIVE_MS)) == "still-here"
    subscriber.close()
    session.unsubscribe("busy")


def test_unsubscribe_with_unacknowledged_message_fails(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect(client_id())
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    subscriber = session.createDurableSubscriber(topic, "pending")
    publish(connect(), unique_name, ["unacked"])
    message = subscriber.receive(RECEIVE_MS)
    subscriber.close()
    with pytest.raises(IllegalStateException, match="unacknowledged"):
        session.unsubscribe("pending")
    assert message is not None
    message.acknowledge()
    session.unsubscribe("pending")


def test_second_consumer_on_same_durable_subscription_fails(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect(client_id())
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    other_session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    first = session.createDurableSubscriber(topic, "single")
    with pytest.raises(JMSException):
        other_session.createDurableSubscriber(topic, "single")
    first.close()
    session.unsubscribe("single")


def test_changing_selector_deletes_and_recreates(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect(client_id())
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    session.createDurableSubscriber(topic, "sel", "kind = 'a'").close()
    publisher = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = publisher.createProducer(publisher.createTopic(unique_name))
    for kind in ("a", "b"):
        message = publisher.createTextMessage(kind)
        message.setStringProperty("kind", kind)
        producer.send(message)
    changed = session.createDurableSubscriber(topic, "sel", "kind = 'b'")
    assert receive_all(changed, 300) == []  # the old backlog went with the old subscription
    message = publisher.createTextMessage("b2")
    message.setStringProperty("kind", "b")
    producer.send(message)
    assert receive_all(changed) == ["b2"]
    changed.close()
    session.unsubscribe("sel")


def test_identity_is_client_id_and_name(connect: Callable[..., Connection], unique_name: str) -> None:
    first_id, second_id = client_id(), client_id()
    first = connect(first_id).createSession(False, Session.AUTO_ACKNOWLEDGE)
    second = connect(second_id).createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = first.createTopic(unique_name)
    a = first.createDurableSubscriber(topic, "same-name")
    b = second.createDurableSubscriber(topic, "same-name")  # another client ID: another subscription
    publish(connect(), unique_name, ["both"])
    assert receive_all(a) == ["both"]
    assert receive_all(b) == ["both"]
    a.close()
    b.close()
    first.unsubscribe("same-name")
    second.unsubscribe("same-name")


def test_client_id_rules(connect: Callable[..., Connection]) -> None:
    cid = client_id()
    connection = connect(start=False)
    connection.setClientID(cid)
    with pytest.raises(IllegalStateException):
        connection.setClientID("another")
    late = connect(start=False)
    late.createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(IllegalStateException, match="before any other"):
        late.setClientID(client_id())
    duplicate = connect(start=False)
    with pytest.raises(InvalidClientIDException):
        duplicate.setClientID(cid)
    assert duplicate.getClientID() is None  # nothing half-applied
    session = duplicate.createSession(False, Session.AUTO_ACKNOWLEDGE)  # and still usable
    session.createProducer(session.createQueue("jmslike.still-usable")).send(session.createTextMessage("ok"))
    with pytest.raises(InvalidClientIDException):
        connect(start=False).setClientID("")


def test_durable_on_a_queue_is_refused(connect: Callable[..., Connection], unique_name: str) -> None:
    session = connect(client_id()).createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(InvalidDestinationException):
        session.createDurableSubscriber(session.createQueue(unique_name), "q")  # type: ignore[arg-type]

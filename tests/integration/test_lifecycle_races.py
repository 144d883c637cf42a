"""Lifecycle edges a second review found: closing from a listener, closed-but-attached subscribers across
a reconnect, stop() from a listener. Each once lost, duplicated or hung something."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

import pytest

from jmslike import Connection, IllegalStateException, JMSException, Message, Session
from jmslike.conformance.suite.helpers import drain_texts, send_texts, text_of

RECEIVE_MS = 5000


def test_listener_closing_its_own_consumer_does_not_duplicate(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect()
    send_texts(connection, unique_name, ["m1", "m2", "m3"])
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(unique_name))
    seen: list[str] = []
    done = threading.Event()

    def listener(message: Message) -> None:
        seen.append(text_of(message))
        consumer.close()  # a common pattern: take one message and stop
        done.set()

    consumer.setMessageListener(listener)
    assert done.wait(10)
    session.close()
    rest = drain_texts(connect(), unique_name, 1000)
    assert seen == ["m1"]
    assert sorted(rest) == ["m2", "m3"], f"m1 was acknowledged once and must not come back: {rest}"


def test_stop_from_a_listener_is_refused_instead_of_deadlocking(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect()
    send_texts(connection, unique_name, ["x"])
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    outcome: list[BaseException | None] = []
    done = threading.Event()

    def listener(message: Message) -> None:
        try:
            connection.stop()
            outcome.append(None)
        except JMSException as exc:
            outcome.append(exc)
        done.set()

    session.createConsumer(session.createQueue(unique_name)).setMessageListener(listener)
    assert done.wait(10)
    assert isinstance(outcome[0], IllegalStateException)


def test_recreating_a_closed_subscriber_with_unacknowledged_messages(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect(f"cid-{uuid.uuid4().hex[:8]}")
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    subscriber = session.createDurableSubscriber(topic, "d1")
    publisher = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    publisher.createProducer(publisher.createTopic(unique_name)).send(publisher.createTextMessage("held"))
    held = subscriber.receive(RECEIVE_MS)
    assert held is not None
    subscriber.close()
    with pytest.raises(IllegalStateException, match="acknowledge"):
        session.createDurableSubscriber(topic, "d1")
    held.acknowledge()  # settles it: the old subscription detaches
    again = session.createDurableSubscriber(topic, "d1")
    again.close()
    session.unsubscribe("d1")


def test_closed_attached_subscriber_is_not_resubscribed_after_reconnect(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect(f"cid-{uuid.uuid4().hex[:8]}", url_options="reconnect=true&heartbeat_ms=1000")
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    subscriber = session.createDurableSubscriber(topic, "d1")
    publisher = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    publisher.createProducer(publisher.createTopic(unique_name)).send(publisher.createTextMessage("held"))
    held = subscriber.receive(RECEIVE_MS)
    assert held is not None
    subscriber.close()  # unacknowledged: the broker subscription stays attached for now
    generation = connection.generation
    connection.wire.kill_socket()  # a network drop
    deadline = time.monotonic() + 30
    while connection.generation == generation:  # wait for the supervisor's reconnect, bounded
        assert time.monotonic() < deadline, "the connection did not reconnect"
        time.sleep(0.05)
    with pytest.raises(JMSException):
        held.acknowledge()  # delivered before the loss: the broker has it again
    again = session.createDurableSubscriber(topic, "d1")  # the old one was not re-subscribed
    back = again.receive(RECEIVE_MS)
    assert back is not None and back.getJMSMessageID() == held.getJMSMessageID()
    back.acknowledge()
    again.close()
    session.unsubscribe("d1")


def test_stop_returns_after_the_subscriber_a_listener_closed_is_released(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    """A listener closes its own durable subscriber: the session's thread releases the subscription once
    the listener returns, and stop() waits for that, so an unsubscribe right after stop() never meets a
    subscription still attached. (A reviewer caught a version that marked the thread idle first.)"""
    connection = connect(f"cid-{uuid.uuid4().hex[:8]}")
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    subscriber = session.createDurableSubscriber(topic, "d1")
    closed = threading.Event()

    def listener(message: Message) -> None:
        subscriber.close()
        closed.set()

    subscriber.setMessageListener(listener)
    publisher = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    publisher.createProducer(publisher.createTopic(unique_name)).send(publisher.createTextMessage("one"))
    assert closed.wait(10), "the listener did not run"
    connection.stop()
    assert subscriber.spec.sub_id not in connection._consumers, (
        "stop() returned while the closed subscriber was still being released"
    )
    session.unsubscribe("d1")

"""Acknowledgement modes, recover() and redelivery (JMS 1.1 §4.4.11, §3.4.7) on real brokers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from expectations import expected

from jmslike import Connection, DeliveryMode, IllegalStateException, Message, Session
from jmslike.conformance.suite.helpers import drain, text_of

RECEIVE_MS = 5000


def send_texts(connection: Connection, queue_name: str, texts: list[str]) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createQueue(queue_name))
    for text in texts:
        producer.send(session.createTextMessage(text))
    session.close()


def test_auto_ack_consumes_for_good(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    send_texts(connection, unique_name, ["a", "b"])
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(unique_name))
    assert text_of(consumer.receive(RECEIVE_MS)) == "a"
    session.close()
    rest = drain(connect(), unique_name)
    assert [text_of(m) for m in rest] == ["b"]


def test_client_ack_acknowledges_everything_delivered_by_the_session(
    connect: Callable[..., Connection], unique_name: str, broker_kind: str
) -> None:
    connection = connect()
    send_texts(connection, unique_name, ["1", "2", "3"])
    send_texts(connection, unique_name + ".other", ["x"])
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    first = session.createConsumer(session.createQueue(unique_name))
    second = session.createConsumer(session.createQueue(unique_name + ".other"))
    m1 = first.receive(RECEIVE_MS)
    first.receive(RECEIVE_MS)
    second.receive(RECEIVE_MS)
    assert m1 is not None
    m1.acknowledge()  # acks all three delivered so far, across both consumers
    third = first.receive(RECEIVE_MS)
    assert text_of(third) == "3"
    session.close()  # closing does not acknowledge "3"
    left = drain(connect(), unique_name)
    assert [text_of(m) for m in left] == ["3"]
    with expected("redelivered-after-close", broker_kind):
        assert left[0].getJMSRedelivered() is True
    assert drain(connect(), unique_name + ".other") == []


def test_closing_client_ack_session_redelivers_flagged(
    connect: Callable[..., Connection], unique_name: str, broker_kind: str
) -> None:
    connection = connect()
    send_texts(connection, unique_name, ["only"])
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    message = session.createConsumer(session.createQueue(unique_name)).receive(RECEIVE_MS)
    assert text_of(message) == "only"
    session.close()
    again = drain(connect(), unique_name)
    assert len(again) == 1
    assert again[0].getJMSMessageID() == message.getJMSMessageID()  # type: ignore[union-attr]
    with expected("redelivered-after-close", broker_kind):
        assert again[0].getJMSRedelivered() is True
        assert again[0].getIntProperty("JMSXDeliveryCount") >= 2


def test_recover_redelivers_from_oldest_unacked(connection: Connection, unique_name: str) -> None:
    send_texts(connection, unique_name, ["a", "b", "c"])
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(unique_name))
    a = consumer.receive(RECEIVE_MS)
    assert a is not None
    a.acknowledge()
    b = consumer.receive(RECEIVE_MS)
    assert text_of(b) == "b" and b is not None and not b.getJMSRedelivered()
    session.recover()
    b_again = consumer.receive(RECEIVE_MS)
    assert text_of(b_again) == "b"
    assert b_again is not None and b_again.getJMSRedelivered() is True
    assert b_again.getIntProperty("JMSXDeliveryCount") == 2
    assert b_again.getJMSMessageID() == b.getJMSMessageID()
    c = consumer.receive(RECEIVE_MS)
    assert text_of(c) == "c" and c is not None and not c.getJMSRedelivered()
    c.acknowledge()
    session.close()
    assert drain(connection, unique_name) == []


def test_acknowledge_after_recover_covers_only_what_was_consumed_again(
    connect: Callable[..., Connection], unique_name: str, broker_kind: str
) -> None:
    # On ActiveMQ CLIENT_ACKNOWLEDGE sends one cumulative ACK per consumer: it must name the newest
    # message consumed *since recover()*, not the newest ever delivered.
    connection = connect()
    send_texts(connection, unique_name, ["1", "2", "3", "4"])
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(unique_name))
    assert [text_of(consumer.receive(RECEIVE_MS)) for _ in range(3)] == ["1", "2", "3"]
    session.recover()
    again = consumer.receive(RECEIVE_MS)
    assert text_of(again) == "1" and again is not None
    again.acknowledge()
    session.close()
    left = drain(connect(), unique_name)
    assert [text_of(m) for m in left] == ["2", "3", "4"]
    with expected("redelivered-after-close", broker_kind):
        assert [m.getJMSRedelivered() for m in left[:2]] == [True, True]


def test_a_dropped_expired_message_does_not_acknowledge_what_came_before(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    # jmslike drops a delivery that expired in its prefetch buffer; in AUTO mode with an ACK, but with a
    # cumulative ACK (CLIENT mode on ActiveMQ) that ACK would also take the consumed, unacknowledged
    # message before it.
    client = connect().createSession(False, Session.CLIENT_ACKNOWLEDGE)
    consumer = client.createConsumer(client.createQueue(unique_name))  # subscribed: messages prefetched
    session = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createQueue(unique_name))
    producer.send(session.createTextMessage("kept"))
    expiring = session.createTextMessage("expiring")
    producer.send(expiring, DeliveryMode.PERSISTENT, 4, 1000)
    producer.send(session.createTextMessage("last"))
    assert text_of(consumer.receive(RECEIVE_MS)) == "kept"
    while time.time() * 1000 <= expiring.getJMSExpiration():  # a clock condition: expiry is time
        time.sleep(0.05)
    assert text_of(consumer.receive(RECEIVE_MS)) == "last"  # "expiring" is dropped, never delivered
    client.close()  # nothing acknowledged
    assert [text_of(m) for m in drain(connect(), unique_name)] == ["kept", "last"]


def test_individual_acknowledge(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    send_texts(connection, unique_name, ["1", "2", "3"])
    session = connection.createSession(False, Session.INDIVIDUAL_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(unique_name))
    received = [consumer.receive(RECEIVE_MS) for _ in range(3)]
    received[1].acknowledge()  # type: ignore[union-attr]
    session.close()
    assert sorted(text_of(m) for m in drain(connect(), unique_name)) == ["1", "3"]


def test_dups_ok_consumes(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    send_texts(connection, unique_name, ["1", "2"])
    session = connection.createSession(False, Session.DUPS_OK_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(unique_name))
    assert [text_of(consumer.receive(RECEIVE_MS)) for _ in range(2)] == ["1", "2"]
    session.close()
    assert drain(connect(), unique_name) == []


def test_recover_in_transacted_session_is_illegal(connection: Connection) -> None:
    with pytest.raises(IllegalStateException):
        connection.createSession(True, Session.SESSION_TRANSACTED).recover()


def test_listener_exception_redelivers_in_auto_mode(connection: Connection, unique_name: str) -> None:
    import threading

    send_texts(connection, unique_name, ["poison-once"])
    errors: list[Exception] = []
    connection.setExceptionListener(errors.append)
    seen: list[tuple[str, bool, int]] = []
    done = threading.Event()

    def listener(message: Message) -> None:
        seen.append(
            (text_of(message), message.getJMSRedelivered(), message.getIntProperty("JMSXDeliveryCount"))
        )
        if len(seen) == 1:
            raise RuntimeError("first attempt fails")
        done.set()

    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createConsumer(session.createQueue(unique_name)).setMessageListener(listener)
    assert done.wait(10)
    assert seen == [("poison-once", False, 1), ("poison-once", True, 2)]
    session.close()
    assert drain(connection, unique_name) == []


def test_sys_exit_in_a_listener_or_exception_listener_ends_neither_thread(
    connection: Connection, unique_name: str
) -> None:
    """``sys.exit()`` in a callback thread ends no process; escaping jmslike's threads, it ended the session's
    (no later delivery) or the connection's report thread (no later report). Each is now a failure like any
    other: the message comes again (AUTO), and the ExceptionListener hears of it and of what follows."""
    import threading

    send_texts(connection, unique_name, ["first", "second"])
    reports: list[BaseException | None] = []
    reported_twice = threading.Event()

    def on_exception(error: Exception) -> None:
        reports.append(error.__cause__)
        if len(reports) == 1:
            raise SystemExit(1)
        reported_twice.set()

    connection.setExceptionListener(on_exception)
    seen: list[tuple[str, bool]] = []
    done = threading.Event()

    def listener(message: Message) -> None:
        seen.append((text_of(message), message.getJMSRedelivered()))
        if len(seen) == 1:
            raise SystemExit(2)
        if len(seen) == 3:
            raise RuntimeError("fails once")
        if len(seen) == 4:
            done.set()

    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createConsumer(session.createQueue(unique_name)).setMessageListener(listener)
    assert done.wait(10), f"deliveries stopped after {seen}"
    assert seen == [("first", False), ("first", True), ("second", False), ("second", True)]
    assert reported_twice.wait(10), f"reports stopped after {reports}"
    assert [type(cause) for cause in reports] == [SystemExit, RuntimeError]
    session.close()
    assert drain(connection, unique_name) == []


def test_acknowledge_after_session_close_is_illegal(connection: Connection, unique_name: str) -> None:
    send_texts(connection, unique_name, ["x"])
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    message = session.createConsumer(session.createQueue(unique_name)).receive(RECEIVE_MS)
    assert message is not None
    session.close()
    with pytest.raises(IllegalStateException):
        message.acknowledge()


# -- DUPS_OK_ACKNOWLEDGE: lazy, cumulative where the broker allows (issue #21) ----------------------------


@pytest.mark.parametrize("with_listener", [False, True], ids=["receive", "listener"])
def test_dups_ok_consumes_everything_and_owes_nothing_after_close(
    connect: Callable[..., Connection], unique_name: str, with_listener: bool
) -> None:
    """DUPS_OK acknowledges lazily (one ACK per half prefetch, or when nothing is buffered): whatever was
    consumed is acknowledged by the time the session is closed, so nothing comes back."""
    import threading

    texts = [f"m{n}" for n in range(60)]
    send_texts(connect(), unique_name, texts)
    session = connect().createSession(False, Session.DUPS_OK_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(unique_name))
    got: list[str] = []
    if with_listener:
        all_in = threading.Event()

        def listener(message: Message) -> None:
            got.append(text_of(message))
            if len(got) == len(texts):
                all_in.set()

        consumer.setMessageListener(listener)
        assert all_in.wait(RECEIVE_MS / 1000 * 4), f"only {len(got)} of {len(texts)} delivered"
    else:
        while len(got) < len(texts):
            message = consumer.receive(RECEIVE_MS)
            assert message is not None, f"only {len(got)} of {len(texts)} delivered"
            got.append(text_of(message))
    assert got == texts
    session.close()
    assert drain(connect(), unique_name, 1000) == []


def test_dups_ok_after_a_lost_connection_redelivers_but_never_loses(
    proxy: Any, via_proxy: Callable[..., Connection], connect: Callable[..., Connection], unique_name: str
) -> None:
    """What a DUPS_OK consumer had consumed but not yet acknowledged when its connection died comes back
    (JMS allows the duplicates there); nothing it had not consumed is lost."""
    texts = [f"m{n}" for n in range(50)]
    send_texts(connect(), unique_name, texts)
    session = via_proxy(prefetch=50).createSession(False, Session.DUPS_OK_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(unique_name))
    consumed = [text_of(consumer.receive(RECEIVE_MS)) for _ in range(10)]
    assert consumed == texts[:10]
    proxy.drop()
    again = [text_of(m) for m in drain(connect(), unique_name, 2000)]
    assert len(again) == len(set(again)), f"a message came back twice: {again}"
    assert set(texts[10:]) <= set(again) <= set(texts), f"lost or foreign messages: {again}"


def test_dups_ok_listener_poison_leaves_the_subscription_and_the_rest_is_consumed(
    connect: Callable[..., Connection], unique_name: str, broker_kind: str
) -> None:
    """A message its DUPS_OK listener fails every time is redelivered locally 6 times, then leaves the
    consumer without taking the others with it: on ActiveMQ, whose DUPS_OK ACKs are cumulative (a later
    ACK would acknowledge it too), NACK moves it to the dead-letter queue; elsewhere it goes back to the
    broker when the consumer closes, as in AUTO mode."""
    import threading

    poison = f"poison-{unique_name}"
    send_texts(connect(), unique_name, ["a", poison, "b"])
    attempts: list[str] = []
    finished = threading.Event()

    def listener(message: Message) -> None:
        attempts.append(text_of(message))
        if text_of(message) == poison:
            raise RuntimeError("this message always fails")
        if text_of(message) == "b":
            finished.set()

    connection = connect()
    connection.setExceptionListener(lambda exc: None)
    session = connection.createSession(False, Session.DUPS_OK_ACKNOWLEDGE)
    session.createConsumer(session.createQueue(unique_name)).setMessageListener(listener)
    assert finished.wait(RECEIVE_MS / 1000 * 2), f"'b' never came after the poison: {attempts}"
    assert attempts == ["a"] + [poison] * 7 + ["b"]
    session.close()
    left = [text_of(m) for m in drain(connect(), unique_name, 1000)]
    if broker_kind == "activemq":
        assert left == []
        dead = [text_of(m) for m in drain(connect(), "ActiveMQ.DLQ", 1000)]
        assert poison in dead, f"the poison message is neither in the queue nor in ActiveMQ.DLQ: {dead}"
    else:
        assert left == [poison]

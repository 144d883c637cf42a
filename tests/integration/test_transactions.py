"""Transacted sessions (JMS 1.1 §4.4.7): atomic commit, rollback that redelivers, close that rolls back."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from jmslike import Connection, IllegalStateException, Session
from jmslike.conformance.suite.helpers import drain_texts, text_of

RECEIVE_MS = 5000


def test_sends_appear_only_on_commit(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    tx = connection.createSession(True, Session.SESSION_TRANSACTED)
    assert tx.getTransacted()
    producer = tx.createProducer(tx.createQueue(unique_name))
    producer.send(tx.createTextMessage("1"))
    producer.send(tx.createTextMessage("2"))
    assert drain_texts(connect(), unique_name, 300) == []
    tx.commit()
    assert drain_texts(connect(), unique_name) == ["1", "2"]


def test_rollback_discards_sends(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    tx = connection.createSession(True, Session.SESSION_TRANSACTED)
    producer = tx.createProducer(tx.createQueue(unique_name))
    producer.send(tx.createTextMessage("gone"))
    tx.rollback()
    producer.send(tx.createTextMessage("kept"))
    tx.commit()
    assert drain_texts(connect(), unique_name) == ["kept"]


def test_rollback_redelivers_consumed_flagged(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    plain = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    sender = plain.createProducer(plain.createQueue(unique_name))
    for text in ("a", "b"):
        sender.send(plain.createTextMessage(text))
    tx = connection.createSession(True, Session.SESSION_TRANSACTED)
    consumer = tx.createConsumer(tx.createQueue(unique_name))
    assert [text_of(consumer.receive(RECEIVE_MS)) for _ in range(2)] == ["a", "b"]
    tx.rollback()
    again = [consumer.receive(RECEIVE_MS) for _ in range(2)]
    assert [text_of(m) for m in again] == ["a", "b"]
    assert all(m is not None and m.getJMSRedelivered() for m in again)
    assert all(m is not None and m.getIntProperty("JMSXDeliveryCount") == 2 for m in again)
    tx.commit()
    tx.close()
    assert drain_texts(connect(), unique_name, 300) == []


def test_consume_and_produce_atomically(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    plain = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    plain.createProducer(plain.createQueue(unique_name + ".in")).send(plain.createTextMessage("job"))
    tx = connection.createSession(True, Session.SESSION_TRANSACTED)
    job = tx.createConsumer(tx.createQueue(unique_name + ".in")).receive(RECEIVE_MS)
    tx.createProducer(tx.createQueue(unique_name + ".out")).send(
        tx.createTextMessage("result of " + text_of(job))
    )
    tx.commit()
    tx.close()
    assert drain_texts(connect(), unique_name + ".in", 300) == []
    assert drain_texts(connect(), unique_name + ".out") == ["result of job"]


def test_close_rolls_back(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    plain = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    plain.createProducer(plain.createQueue(unique_name)).send(plain.createTextMessage("in"))
    tx = connection.createSession(True, Session.SESSION_TRANSACTED)
    assert text_of(tx.createConsumer(tx.createQueue(unique_name)).receive(RECEIVE_MS)) == "in"
    tx.createProducer(tx.createQueue(unique_name + ".out")).send(tx.createTextMessage("never"))
    tx.close()
    assert drain_texts(connect(), unique_name) == ["in"]
    assert drain_texts(connect(), unique_name + ".out", 300) == []


def test_commit_and_rollback_need_a_transacted_session(connection: Connection) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(IllegalStateException):
        session.commit()
    with pytest.raises(IllegalStateException):
        session.rollback()


def test_empty_commit_and_rollback_are_harmless(connection: Connection) -> None:
    tx = connection.createSession(True, Session.SESSION_TRANSACTED)
    tx.commit()
    tx.rollback()
    tx.commit()


def test_a_message_whose_consumer_was_closed_before_commit_is_committed(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    """JMS: closing a consumer leaves what it delivered to the session's transaction, which commit() then
    consumes. On Artemis the acknowledgement goes out after COMMIT, so the consumer must stay subscribed until
    it has (an ACK for an unsubscribed consumer is void there, and the message would come back)."""
    connection = connect()
    plain = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    plain.createProducer(plain.createQueue(unique_name)).send(plain.createTextMessage("consumed"))
    tx = connection.createSession(True, Session.SESSION_TRANSACTED)
    consumer = tx.createConsumer(tx.createQueue(unique_name))
    assert text_of(consumer.receive(RECEIVE_MS)) == "consumed"
    consumer.close()
    tx.commit()
    connection.close()
    assert drain_texts(connect(), unique_name, 1000) == []

"""What survives a broker restart (graceful and SIGKILL), and how connections recover.

Each test restarts the real broker through the launcher; the broker fixture brings it back for the next
test. Broker state is checked with a fresh connection after the restart, and deletion with an independent
raw STOMP client (stompest), so jmslike's own view never confirms itself.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from probes import durable_backlog

from jmslike import (
    Connection,
    ConnectionLostException,
    DeliveryMode,
    JMSException,
    Message,
    Session,
    TransactionRolledBackException,
)
from jmslike.conformance.suite.helpers import receive_all, text_of
from jmslike.conformance.suite.restarts import restart

pytestmark = [pytest.mark.restart, pytest.mark.slow]
MODES = ["graceful", "kill"]
RECEIVE_MS = 5000


def drain(connection: Connection, queue: str, wait_ms: int = 1000) -> list[Message]:
    """A restarted broker may take a moment to hand out its backlog (RabbitMQ rebuilds its message store's
    indices after a SIGKILL): the first message is awaited for RECEIVE_MS, the rest until nothing more
    arrives for ``wait_ms``. An expected-empty queue costs RECEIVE_MS."""
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    try:
        consumer = session.createConsumer(session.createQueue(queue))
        first = consumer.receive(RECEIVE_MS)
        return [] if first is None else [first, *receive_all(consumer, wait_ms)]
    finally:
        session.close()


def send(connection: Connection, queue: str, text: str, mode: int) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createQueue(queue))
    producer.send(session.createTextMessage(text), mode, 4, 0)
    session.close()


@pytest.mark.parametrize("mode", MODES)
def test_queue_persistent_survives_non_persistent_does_not(
    broker: Any, connect: Callable[..., Connection], unique_name: str, mode: str
) -> None:
    connection = connect()
    send(connection, unique_name, "persistent", DeliveryMode.PERSISTENT)
    send(connection, unique_name, "non-persistent", DeliveryMode.NON_PERSISTENT)
    connection.close()
    restart(broker, mode)
    assert [text_of(m) for m in drain(connect(), unique_name)] == ["persistent"]


@pytest.mark.parametrize("mode", MODES)
def test_durable_subscription_and_backlog_survive(
    broker: Any, connect: Callable[..., Connection], unique_name: str, mode: str
) -> None:
    cid = f"restart-{uuid.uuid4().hex[:8]}"
    connection = connect(cid)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(unique_name), "kept").close()
    publisher = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = publisher.createProducer(publisher.createTopic(unique_name))
    producer.send(publisher.createTextMessage("p"), DeliveryMode.PERSISTENT, 4, 0)
    producer.send(publisher.createTextMessage("np"), DeliveryMode.NON_PERSISTENT, 4, 0)
    connection.close()
    restart(broker, mode)
    again = connect(cid)
    session = again.createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(unique_name), "kept")
    texts = []
    while (message := subscriber.receive(1000)) is not None:
        texts.append(text_of(message))
    assert texts == ["p"]
    subscriber.close()
    session.unsubscribe("kept")


@pytest.mark.parametrize("mode", MODES)
def test_unsubscribed_stays_deleted(
    broker: Any, connect: Callable[..., Connection], unique_name: str, mode: str
) -> None:
    cid = f"gone-{uuid.uuid4().hex[:8]}"
    connection = connect(cid)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(unique_name), "deleted").close()
    session.unsubscribe("deleted")
    publisher = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    publisher.createProducer(publisher.createTopic(unique_name)).send(publisher.createTextMessage("after"))
    connection.close()
    restart(broker, mode)
    assert durable_backlog(broker, cid, unique_name, "deleted") in (None, [])


@pytest.mark.parametrize("mode", MODES)
def test_unacknowledged_comes_back_after_restart(
    broker: Any, connect: Callable[..., Connection], unique_name: str, mode: str
) -> None:
    connection = connect()
    send(connection, unique_name, "held", DeliveryMode.PERSISTENT)
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    held = session.createConsumer(session.createQueue(unique_name)).receive(RECEIVE_MS)
    assert text_of(held) == "held"
    restart(broker, mode)
    back = drain(connect(), unique_name)
    assert [text_of(m) for m in back] == ["held"]
    assert back[0].getJMSMessageID() == held.getJMSMessageID()  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
def test_uncommitted_work_is_undone(
    broker: Any, connect: Callable[..., Connection], unique_name: str, mode: str
) -> None:
    connection = connect()
    send(connection, unique_name + ".in", "input", DeliveryMode.PERSISTENT)
    tx = connection.createSession(True, Session.SESSION_TRANSACTED)
    tx.createProducer(tx.createQueue(unique_name + ".committed")).send(tx.createTextMessage("c"))
    tx.commit()
    assert text_of(tx.createConsumer(tx.createQueue(unique_name + ".in")).receive(RECEIVE_MS)) == "input"
    tx.createProducer(tx.createQueue(unique_name + ".out")).send(tx.createTextMessage("uncommitted"))
    restart(broker, mode)
    with pytest.raises((TransactionRolledBackException, ConnectionLostException, JMSException)):
        tx.commit()
    fresh = connect()
    assert [text_of(m) for m in drain(fresh, unique_name + ".in")] == ["input"]
    assert drain(fresh, unique_name + ".out", 300) == []
    assert [text_of(m) for m in drain(fresh, unique_name + ".committed")] == ["c"]


def test_exception_listener_told_of_lost_connection(broker: Any, connect: Callable[..., Connection]) -> None:
    connection = connect(url_options="heartbeat_ms=1000")
    told: list[JMSException] = []
    lost = threading.Event()

    def on_exception(error: JMSException) -> None:
        told.append(error)
        lost.set()

    connection.setExceptionListener(on_exception)
    broker.kill()
    assert lost.wait(15)
    assert isinstance(told[0], ConnectionLostException)
    session_error = None
    try:
        connection.createSession(False, Session.AUTO_ACKNOWLEDGE).createProducer(None)
    except JMSException as exc:
        session_error = exc
    consumer_error: Exception | None = None
    try:
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        session.createConsumer(session.createQueue("x")).receive(1000)
    except JMSException as exc:
        consumer_error = exc
    assert session_error is not None or consumer_error is not None


@pytest.mark.parametrize("mode", MODES)
def test_failover_resubscribes_and_keeps_receiving(
    broker: Any, connect: Callable[..., Connection], unique_name: str, mode: str
) -> None:
    cid = f"failover-{uuid.uuid4().hex[:8]}"
    connection = connect(cid, url_options="reconnect=true&reconnect_attempts=60&heartbeat_ms=1000")
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    subscriber = session.createDurableSubscriber(topic, "resilient")
    # A name of its own for the queue: on Artemis a name is either a queue or a topic (docs/artemis.md).
    queue_name = f"{unique_name}-q"
    queue_consumer = session.createConsumer(session.createQueue(queue_name))
    publisher = connect()
    publish = publisher.createSession(False, Session.AUTO_ACKNOWLEDGE)
    publish.createProducer(publish.createTopic(unique_name)).send(publish.createTextMessage("before"))
    before = subscriber.receive(RECEIVE_MS)
    assert text_of(before) == "before"  # delivered, not acknowledged
    send(publisher, queue_name, "queued-before", DeliveryMode.PERSISTENT)
    assert text_of(queue_consumer.receive(RECEIVE_MS)) == "queued-before"
    publisher.close()
    restart(broker, mode)
    after = connect()
    publish = after.createSession(False, Session.AUTO_ACKNOWLEDGE)
    publish.createProducer(publish.createTopic(unique_name)).send(publish.createTextMessage("after"))
    texts = []
    while (message := subscriber.receive(10_000)) is not None:
        texts.append(text_of(message))
        if "after" in texts:
            break
    # The unacknowledged "before" comes back (the broker owns it again) and "after" arrives: nothing lost.
    assert texts.count("after") == 1
    assert "before" in texts
    requeued = queue_consumer.receive(10_000)
    assert text_of(requeued) == "queued-before"
    requeued.acknowledge()  # type: ignore[union-attr]
    subscriber.close()
    session.unsubscribe("resilient")

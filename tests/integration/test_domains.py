"""The JMS 1.0.2 domain interfaces (QueueConnectionFactory, createSender, publish, requestors) on real
brokers: the same semantics and errors as the unified API they delegate to."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from jmslike import (
    Connection,
    InvalidDestinationException,
    Message,
    QueueConnectionFactory,
    QueueRequestor,
    Session,
    TopicConnectionFactory,
    TopicRequestor,
)
from jmslike.conformance.suite.helpers import text_of

RECEIVE_MS = 5000


@pytest.fixture
def queue_connection(broker: Any, url: str) -> Iterator[Connection]:
    connection = QueueConnectionFactory(url).createQueueConnection(broker.user, broker.password)
    connection.start()
    yield connection
    connection.close()


@pytest.fixture
def topic_connection(broker: Any, url: str) -> Iterator[Connection]:
    connection = TopicConnectionFactory(url).createTopicConnection(broker.user, broker.password)
    connection.start()
    yield connection
    connection.close()


def test_queue_sender_and_receiver(queue_connection: Connection, unique_name: str) -> None:
    session = queue_connection.createQueueSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    sender = session.createSender(queue)
    assert sender.getQueue() == queue
    sender.send(session.createTextMessage("p2p"))
    receiver = session.createReceiver(queue)
    assert text_of(receiver.receive(RECEIVE_MS)) == "p2p"


def test_topic_publisher_and_subscriber(topic_connection: Connection, unique_name: str) -> None:
    session = topic_connection.createTopicSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    subscriber = session.createSubscriber(topic)
    publisher = session.createPublisher(topic)
    assert publisher.getTopic() == topic
    publisher.publish(session.createTextMessage("pub/sub"))
    assert text_of(subscriber.receive(RECEIVE_MS)) == "pub/sub"


def test_a_destination_of_the_other_domain_is_refused(queue_connection: Connection, unique_name: str) -> None:
    session = queue_connection.createQueueSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(InvalidDestinationException, match="createSender takes a Queue"):
        session.createSender(session.createTopic(unique_name))  # type: ignore[arg-type]
    with pytest.raises(InvalidDestinationException, match="createSubscriber takes a Topic"):
        session.createSubscriber(session.createQueue(unique_name))  # type: ignore[arg-type]
    with pytest.raises(InvalidDestinationException, match="publish"):
        session.createPublisher(None).publish(
            session.createQueue(unique_name), session.createTextMessage("x")
        )


def _responder(
    connect: Callable[..., Connection], session_of: Callable[[Connection], Session]
) -> Callable[..., None]:
    """A listener that answers each request on its JMSReplyTo, in a connection of its own."""
    connection = connect()
    session = session_of(connection)
    producer = session.createProducer(None)

    def answer(request: Message) -> None:
        reply = session.createTextMessage(f"re: {text_of(request)}")
        reply.setJMSCorrelationID(request.getJMSMessageID())
        destination = request.getJMSReplyTo()
        assert destination is not None
        producer.send(destination, reply)

    return lambda consumer_destination: session.createConsumer(consumer_destination).setMessageListener(
        answer
    )


def test_queue_requestor_gets_the_reply(
    queue_connection: Connection, connect: Callable[..., Connection], unique_name: str
) -> None:
    session = queue_connection.createQueueSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    _responder(connect, lambda c: c.createSession())(queue)
    with QueueRequestor(session, queue) as requestor:
        request = session.createTextMessage("ping")
        reply = requestor.request(request, RECEIVE_MS)
    assert text_of(reply) == "re: ping"
    assert reply is not None and reply.getJMSCorrelationID() == request.getJMSMessageID()


def test_topic_requestor_gets_the_reply(
    topic_connection: Connection, connect: Callable[..., Connection], unique_name: str
) -> None:
    session = topic_connection.createTopicSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    _responder(connect, lambda c: c.createSession())(topic)
    with TopicRequestor(session, topic) as requestor:
        reply = requestor.request(session.createTextMessage("ping"), RECEIVE_MS)
    assert text_of(reply) == "re: ping"

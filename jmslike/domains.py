"""The JMS 1.0.2 domain interfaces that legacy code still uses: factories, type names, requestors.

JMS 1.1 unified the point-to-point and publish/subscribe APIs; the old names stayed, and ported code still
says ``QueueConnectionFactory``, ``createQueueSession``, ``createSender``, ``publish``. As in ActiveMQ's
Java client, one class implements every flavour: a ``QueueSession`` *is* a :class:`Session`, a
``QueueSender`` and a ``TopicPublisher`` *are* a :class:`MessageProducer` (their old method names come from
jmslike.domain_methods). Here: the two factories, the type names as aliases, and the two requestors.
"""

from __future__ import annotations

from collections.abc import Callable

from jmslike.connection import Connection, ConnectionFactory
from jmslike.consumer import MessageConsumer
from jmslike.destinations import Destination, Queue, Topic
from jmslike.domain_methods import expect_domain
from jmslike.messages import Message
from jmslike.producer import MessageProducer
from jmslike.session import Session


class QueueConnectionFactory(ConnectionFactory):
    """``javax.jms.QueueConnectionFactory``."""

    def createQueueConnection(self, userName: str | None = None, password: str | None = None) -> Connection:
        return self.createConnection(userName, password)


class TopicConnectionFactory(ConnectionFactory):
    """``javax.jms.TopicConnectionFactory``."""

    def createTopicConnection(self, userName: str | None = None, password: str | None = None) -> Connection:
        return self.createConnection(userName, password)


class _Requestor:
    """Request/reply over a temporary destination (JMS 1.1 §5.10, §6.14): the session must not be
    transacted and its connection must be started, as JMS says (the reply is consumed in it)."""

    def __init__(
        self, session: Session, destination: Destination, temporary: Callable[[], Destination]
    ) -> None:
        self._reply_to = temporary()
        self._producer = session.createProducer(destination)
        self._consumer = session.createConsumer(self._reply_to)

    def request(self, message: Message, timeout_ms: int | None = None) -> Message | None:
        """Send ``message`` with JMSReplyTo set to the requestor's temporary destination and wait for the
        reply: forever as in JMS, or at most ``timeout_ms`` (a Pythonic extra; None when nothing came)."""
        message.setJMSReplyTo(self._reply_to)
        self._producer.send(message)
        return self._consumer.receive(timeout_ms)

    def close(self) -> None:
        """Close the requestor's producer and consumer; the session stays open, as in JMS."""
        self._consumer.close()
        self._producer.close()


class QueueRequestor(_Requestor):
    """``javax.jms.QueueRequestor(session, queue)``."""

    def __init__(self, session: Session, queue: Queue) -> None:
        expect_domain(queue, Queue, "QueueRequestor")
        super().__init__(session, queue, session.createTemporaryQueue)

    def __enter__(self) -> QueueRequestor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class TopicRequestor(_Requestor):
    """``javax.jms.TopicRequestor(session, topic)``: the reply comes on a temporary topic."""

    def __init__(self, session: Session, topic: Topic) -> None:
        expect_domain(topic, Topic, "TopicRequestor")
        super().__init__(session, topic, session.createTemporaryTopic)

    def __enter__(self) -> TopicRequestor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# The JMS 1.0.2 type names: the unified classes implement every flavour, as ActiveMQ's Java client does.
QueueConnection = Connection
TopicConnection = Connection
QueueSession = Session
TopicSession = Session
QueueSender = MessageProducer
TopicPublisher = MessageProducer
QueueReceiver = MessageConsumer


__all__ = [
    "QueueConnection",
    "QueueConnectionFactory",
    "QueueReceiver",
    "QueueRequestor",
    "QueueSender",
    "QueueSession",
    "TopicConnection",
    "TopicConnectionFactory",
    "TopicPublisher",
    "TopicRequestor",
    "TopicSession",
]

"""The JMS 1.0.2 domain method names, as mixins of the unified classes (see jmslike.domains).

``createQueueSession``, ``createSender``, ``createReceiver``, ``createPublisher``, ``createSubscriber``,
``publish``, ``getQueue``, ``getTopic``: each is the unified JMS 1.1 call with a check that the destination
belongs to its domain, so semantics and errors are the unified API's. They live apart from Connection,
Session and MessageProducer so those modules keep to what they own; this module imports none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from jmslike.destinations import Destination, Queue, Topic
from jmslike.exceptions import InvalidDestinationException

if TYPE_CHECKING:
    from jmslike.consumer import MessageConsumer
    from jmslike.producer import MessageProducer
    from jmslike.session import Session


def expect_domain(destination: object, kind: type[Destination], call: str, *, optional: bool = False) -> None:
    """Refuse a destination of the other domain (or None where JMS does not allow it)."""
    if destination is None and optional:
        return
    if not isinstance(destination, kind):
        allowed = " (or None)" if optional else ""
        raise InvalidDestinationException(f"{call} takes a {kind.__name__}{allowed}, got {destination!r}")


class _CreatesSessions(Protocol):
    def createSession(self, *args: Any, **kwargs: Any) -> Session: ...


class ConnectionDomainMethods:
    """``QueueConnection.createQueueSession`` and ``TopicConnection.createTopicSession``."""

    def createQueueSession(self: _CreatesSessions, transacted: bool, acknowledgeMode: int) -> Session:
        """``QueueConnection.createQueueSession``: a Session (one class serves every domain)."""
        return self.createSession(transacted, acknowledgeMode)

    def createTopicSession(self: _CreatesSessions, transacted: bool, acknowledgeMode: int) -> Session:
        """``TopicConnection.createTopicSession``: a Session (one class serves every domain)."""
        return self.createSession(transacted, acknowledgeMode)


class _CreatesClients(Protocol):
    def createProducer(self, destination: Destination | None = None) -> MessageProducer: ...

    def createConsumer(
        self,
        destination: Destination,
        messageSelector: str | None = None,
        noLocal: bool = False,
        onRequestOnly: bool = False,
    ) -> MessageConsumer: ...


class SessionDomainMethods:
    """``QueueSession.createSender/createReceiver`` and ``TopicSession.createPublisher/createSubscriber``."""

    def createSender(self: _CreatesClients, queue: Queue | None) -> MessageProducer:
        """A producer for ``queue``; None makes an unidentified sender, as in JMS."""
        expect_domain(queue, Queue, "createSender", optional=True)
        return self.createProducer(queue)

    def createReceiver(
        self: _CreatesClients, queue: Queue, messageSelector: str | None = None
    ) -> MessageConsumer:
        expect_domain(queue, Queue, "createReceiver")
        return self.createConsumer(queue, messageSelector)

    def createPublisher(self: _CreatesClients, topic: Topic | None) -> MessageProducer:
        """A producer for ``topic``; None makes an unidentified publisher, as in JMS."""
        expect_domain(topic, Topic, "createPublisher", optional=True)
        return self.createProducer(topic)

    def createSubscriber(
        self: _CreatesClients, topic: Topic, messageSelector: str | None = None, noLocal: bool = False
    ) -> MessageConsumer:
        """A non-durable subscriber (durable ones: ``createDurableSubscriber``)."""
        expect_domain(topic, Topic, "createSubscriber")
        return self.createConsumer(topic, messageSelector, noLocal)


class _Sends(Protocol):
    def send(self, *args: Any, completionListener: Any = None, retain: bool = False) -> None: ...

    def getDestination(self) -> Destination | None: ...


class ProducerDomainMethods:
    """``QueueSender.send/getQueue`` (send is the unified one) and ``TopicPublisher.publish/getTopic``."""

    def publish(self: _Sends, *args: Any, **kwargs: Any) -> None:
        """``TopicPublisher.publish``: the same forms and options as ``send``."""
        if args and isinstance(args[0], Queue):
            raise InvalidDestinationException(f"publish() takes a Topic, got {args[0]!r}; use send()")
        self.send(*args, **kwargs)

    def getQueue(self: _Sends) -> Queue | None:
        """A ``QueueSender``'s queue (None for an unidentified sender)."""
        destination = self.getDestination()
        expect_domain(destination, Queue, "getQueue (a QueueSender's destination)", optional=True)
        return destination  # type: ignore[return-value]

    def getTopic(self: _Sends) -> Topic | None:
        """A ``TopicPublisher``'s topic (None for an unidentified publisher)."""
        destination = self.getDestination()
        expect_domain(destination, Topic, "getTopic (a TopicPublisher's destination)", optional=True)
        return destination  # type: ignore[return-value]

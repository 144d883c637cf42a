"""The session calls that make destinations and messages: no broker round trip, the same in every API.

``createQueue``, ``createTopic`` and the ``create*Message`` family belong to a JMS session, but they only
build objects: the threaded :class:`~jmslike.session.Session` and the asyncio ``jmslike.aio.Session`` share
them from here, so both check names and pick serializers by one rule.
"""

from __future__ import annotations

from jmslike import topics
from jmslike.destinations import Queue, Topic, check_name
from jmslike.messages import BytesMessage, MapMessage, Message, ObjectMessage, StreamMessage, TextMessage
from jmslike.serializers import SerializerRegistry


class MessageFactoryMethods:
    """Mixin: the host provides ``check_open()`` (IllegalStateException once closed) and ``serializer_registry``."""

    def check_open(self) -> None:
        raise NotImplementedError

    @property
    def serializer_registry(self) -> SerializerRegistry:
        raise NotImplementedError

    def createQueue(self, queueName: str) -> Queue:
        """The Queue named ``queueName`` (no broker round trip; brokers create queues on first use)."""
        self.check_open()
        return Queue(check_name(queueName, "queue"))

    def createTopic(self, topicName: str) -> Topic:
        """A topic; hierarchical names may use the portable notation ``Sport/Soccer/#`` (jmslike.topics)."""
        self.check_open()
        return Topic(topics.canonical(check_name(topicName, "topic")))

    def createMessage(self) -> Message:
        """A Message without a body (headers and properties only)."""
        self.check_open()
        return Message()

    def createTextMessage(self, text: str | None = None) -> TextMessage:
        """A TextMessage holding ``text`` (or no text)."""
        self.check_open()
        message = TextMessage()
        if text is not None:
            message.setText(text)
        return message

    def createBytesMessage(self) -> BytesMessage:
        """An empty BytesMessage."""
        self.check_open()
        return BytesMessage()

    def createMapMessage(self) -> MapMessage:
        """An empty MapMessage."""
        self.check_open()
        return MapMessage()

    def createStreamMessage(self) -> StreamMessage:
        """An empty StreamMessage."""
        self.check_open()
        return StreamMessage()

    def createObjectMessage(self, obj: object = None, serializer: str | None = None) -> ObjectMessage:
        """An ObjectMessage serialised by a named safe serializer (the registry default, JSON; never pickle)."""
        self.check_open()
        registry = self.serializer_registry
        chosen = registry.get(serializer) if serializer is not None else registry.default
        return ObjectMessage(obj, serializer=chosen)

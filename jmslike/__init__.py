"""jmslike: JMS semantics for Python over STOMP, on ActiveMQ Classic, ActiveMQ Artemis and RabbitMQ.

Everything an application needs is importable from here, under JMS's own names::

    from jmslike import ConnectionFactory, DeliveryMode, Session

    factory = ConnectionFactory("activemq://127.0.0.1:61613")
    with factory.createConnection() as connection:
        connection.setClientID("orders-service")
        session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
"""

from __future__ import annotations

from jmslike.connection import Connection, ConnectionFactory, ConnectionMetaData
from jmslike.constants import AcknowledgeMode, DeliveryMode
from jmslike.consumer import MessageConsumer, QueueBrowser, TopicSubscriber
from jmslike.destinations import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.exceptions import *  # noqa: F403
from jmslike.exceptions import __all__ as _exception_names
from jmslike.messages import BytesMessage, MapMessage, Message, ObjectMessage, StreamMessage, TextMessage
from jmslike.producer import CompletionListener, MessageProducer
from jmslike.serializers import JsonSerializer, ObjectSerializer, SerializerRegistry
from jmslike.session import Session

__all__ = [
    "AcknowledgeMode",
    "BytesMessage",
    "CompletionListener",
    "Connection",
    "ConnectionFactory",
    "ConnectionMetaData",
    "DeliveryMode",
    "Destination",
    "JsonSerializer",
    "MapMessage",
    "Message",
    "MessageConsumer",
    "MessageProducer",
    "ObjectMessage",
    "ObjectSerializer",
    "Queue",
    "QueueBrowser",
    "SerializerRegistry",
    "Session",
    "StreamMessage",
    "TemporaryQueue",
    "TemporaryTopic",
    "TextMessage",
    "Topic",
    "TopicSubscriber",
    *_exception_names,
]

"""jmslike: JMS semantics for Python over STOMP, on ActiveMQ Classic, ActiveMQ Artemis and RabbitMQ.

Everything an application needs is importable from here, under JMS's own names::

    from jmslike import ConnectionFactory, DeliveryMode, Session

    factory = ConnectionFactory("activemq://127.0.0.1:61613")
    with factory.createConnection() as connection:
        connection.setClientID("orders-service")
        session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
"""

from __future__ import annotations

from pathlib import Path as _Path


def _map_source_checkout() -> None:
    """In a source checkout, let jmslike.adapters / .conformance / .spark_sink resolve to the sibling folders,
    as the installed distribution maps them (pyproject package-dir). Without this, running
    ``python -m jmslike...`` from the repository root breaks: "-m" puts the cwd first on sys.path, so the
    source folder jmslike/, which does not contain those folders, shadows the installed package. An
    installed jmslike has no pyproject.toml beside it, so nothing changes there."""
    root = _Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "adapters" / "__init__.py").is_file():
        __path__.append(str(root))  # noqa: F405 - a package module always has __path__


_map_source_checkout()

from jmslike.connection import Connection, ConnectionFactory, ConnectionMetaData
from jmslike.connection_listener import ConnectionListener
from jmslike.constants import AcknowledgeMode, DeliveryMode
from jmslike.consumer import MessageConsumer, QueueBrowser
from jmslike.context import JMSConsumer, JMSContext, JMSProducer
from jmslike.destinations import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.domains import (
    QueueConnection,
    QueueConnectionFactory,
    QueueReceiver,
    QueueRequestor,
    QueueSender,
    QueueSession,
    TopicConnection,
    TopicConnectionFactory,
    TopicPublisher,
    TopicRequestor,
    TopicSession,
)
from jmslike.durable_subscriptions import TopicSubscriber
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
    "ConnectionListener",
    "ConnectionMetaData",
    "DeliveryMode",
    "Destination",
    "JMSConsumer",
    "JMSContext",
    "JMSProducer",
    "JsonSerializer",
    "MapMessage",
    "Message",
    "MessageConsumer",
    "MessageProducer",
    "ObjectMessage",
    "ObjectSerializer",
    "Queue",
    "QueueBrowser",
    "QueueConnection",
    "QueueConnectionFactory",
    "QueueReceiver",
    "QueueRequestor",
    "QueueSender",
    "QueueSession",
    "SerializerRegistry",
    "Session",
    "StreamMessage",
    "TemporaryQueue",
    "TemporaryTopic",
    "TextMessage",
    "Topic",
    "TopicConnection",
    "TopicConnectionFactory",
    "TopicPublisher",
    "TopicRequestor",
    "TopicSession",
    "TopicSubscriber",
    *_exception_names,
]

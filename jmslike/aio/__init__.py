"""jmslike for asyncio: the JMS API's names, awaited (``await producer.send(m)``, ``await consumer.receive()``,
``async for message in consumer``, ``async with``), on the same adapters and rules as the threaded API, with
no thread on the data path. See docs/aio.md for what it covers today.
"""

from jmslike.aio.connection import Connection, ConnectionFactory
from jmslike.aio.consumer import MessageConsumer, QueueBrowser
from jmslike.aio.context import JMSConsumer, JMSContext, JMSProducer
from jmslike.aio.producer import MessageProducer
from jmslike.aio.session import Session
from jmslike.connection_listener import AsyncConnectionListener as ConnectionListener

__all__ = [
    "Connection",
    "ConnectionFactory",
    "ConnectionListener",
    "JMSConsumer",
    "JMSContext",
    "JMSProducer",
    "MessageConsumer",
    "MessageProducer",
    "QueueBrowser",
    "Session",
]

"""``jmslike.aio``'s JMS 2.0 simplified API: JMSContext, JMSProducer, JMSConsumer, awaited.

The threaded :mod:`jmslike.context`'s rules, and where they do no I/O its code (:class:`ContextBase`,
:class:`JMSProducerBase`, :class:`SharedConnection`): a context is a connection and one session, made on
first use (so ``setClientID`` can still come first); errors leave as their JMSRuntimeException counterparts;
``createContext(sessionMode)`` makes a sibling on the same connection, which closes with the last context;
with autoStart (the default) creating a consumer starts the connection; a context cannot be closed from its
own listener (it would wait for itself).

What is awaited: whatever talks to the broker (``await context.createConsumer(...)``, ``await
producer.send(destination, body)``, ``await consumer.receiveBody(str, 1000)``, ``commit``, ``close``...);
settings, ``createQueue``/``createTopic`` and ``create*Message`` are plain calls. With ``JMSProducer.setAsync``
(a CompletionListener, whose methods may be coroutine functions) ``send`` returns once the message is written
and the listener runs in the context's session task.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Self, TypeVar

from jmslike.context import ContextBase, JMSProducerBase, SharedConnection, unchecked, unchecked_async
from jmslike.destinations import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.exceptions import IllegalStateException
from jmslike.messages import Message

if TYPE_CHECKING:
    from jmslike.aio.connection import AnyConnectionListener, Connection, ExceptionListener
    from jmslike.aio.consumer import MessageConsumer, MessageListener, QueueBrowser
    from jmslike.aio.producer import MessageProducer
    from jmslike.aio.session import Session
    from jmslike.connection import ConnectionMetaData
    from jmslike.producer import CompletionListener

T = TypeVar("T")


class JMSContext(ContextBase["Connection"]):
    """``javax.jms.JMSContext`` on the event loop: ``async with await factory.createContext() as context``."""

    def __init__(self, shared: SharedConnection[Connection], sessionMode: int) -> None:
        """Made by ``await ConnectionFactory.createContext()`` or ``JMSContext.createContext``, not directly."""
        super().__init__(shared, sessionMode)
        self._session: Session | None = None
        self._producer: MessageProducer | None = None
        self._closing: asyncio.Future[None] | None = None

    # -- the session behind the context -------------------------------------------------------------------

    def _messages(self) -> Session:
        return self._open_session()

    def _open_session(self) -> Session:
        self._check_open()
        if self._session is None:
            self._session = self._connection.session_now(self._mode)
        return self._session

    async def _consumer(self, consumer: MessageConsumer) -> JMSConsumer:
        if self._auto_start:
            await self._connection.start()
        return JMSConsumer(consumer)

    # -- connection-level calls -------------------------------------------------------------------------

    @unchecked
    def getClientID(self) -> str | None:
        """The connection's client ID, or None."""
        self._check_open()
        return self._connection.getClientID()

    @unchecked_async
    async def setClientID(self, clientID: str) -> None:
        """Set the connection's client ID; only before the context is used (the session is created then)."""
        self._check_open()
        await self._connection.setClientID(clientID)

    @unchecked
    def getMetaData(self) -> ConnectionMetaData:
        """What is known about the provider and the broker."""
        self._check_open()
        return self._connection.getMetaData()

    @unchecked
    def getExceptionListener(self) -> ExceptionListener | None:
        """The connection's ExceptionListener."""
        self._check_open()
        return self._connection.getExceptionListener()

    @unchecked
    def setExceptionListener(self, listener: ExceptionListener | None) -> None:
        """Called (a plain function or a coroutine function) with asynchronous errors, e.g. a lost connection."""
        self._check_open()
        self._connection.setExceptionListener(listener)

    @unchecked
    def getConnectionListener(self) -> AnyConnectionListener | None:
        """The connection's ConnectionListener (jmslike extra: jmslike.connection_listener)."""
        self._check_open()
        return self._connection.getConnectionListener()

    @unchecked
    def setConnectionListener(self, listener: AnyConnectionListener | None) -> None:
        """Told (in tasks of its own, in order) when a reconnecting connection loses its broker and is back."""
        self._check_open()
        self._connection.setConnectionListener(listener)

    @unchecked_async
    async def start(self) -> None:
        """Start (or restart) delivery on the connection."""
        self._check_open()
        await self._connection.start()

    @unchecked_async
    async def stop(self) -> None:
        """Pause delivery; returns once no listener of the connection is running."""
        self._check_open()
        await self._connection.stop()

    @unchecked_async
    async def close(self) -> None:
        """Close the session (rolling back an open transaction); the connection too when this was the last
        context on it. Idempotent. Refused from the context's own listener."""
        if self._closed:
            if self._closing is not None:
                await asyncio.shield(self._closing)  # a second close waits for the first
            return
        session = self._session
        if session is not None and session.in_listener():
            raise IllegalStateException(
                "a JMSContext cannot be closed from its own MessageListener (it would wait for that listener "
                "to return); close it from another task"
            )
        if self._shared.is_last() and self._connection.in_listener():
            raise IllegalStateException(
                "the last JMSContext of a connection cannot be closed from a listener of that connection "
                "(closing the connection waits for its listeners); close it from another task"
            )
        # From a task a listener started: wait for the listener before anything is marked closed.
        if self._shared.is_last():
            await self._connection.wait_out_listeners("close()")
        elif session is not None:
            await session.wait_out_listener("close()")
        if self._closed:  # closed by another caller meanwhile
            if self._closing is not None:
                await asyncio.shield(self._closing)
            return
        self._closed = True
        self._closing = asyncio.ensure_future(self._close_now(session))
        await asyncio.shield(self._closing)  # a cancelled caller does not stop it: the connection must close

    async def _close_now(self, session: Session | None) -> None:
        try:
            if session is not None:
                await session.close()
        finally:
            if self._shared.leave():
                await self._connection.close()

    async def __aenter__(self) -> JMSContext:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<aio.JMSContext mode={self._mode} {state} on {self._connection!r}>"

    # -- session-level calls ----------------------------------------------------------------------------

    @unchecked_async
    async def commit(self) -> None:
        """Commit the context's transaction (SESSION_TRANSACTED): Session.commit."""
        await self._open_session().commit()

    @unchecked_async
    async def rollback(self) -> None:
        """Roll back the context's transaction; consumed messages come back flagged redelivered."""
        await self._open_session().rollback()

    @unchecked_async
    async def recover(self) -> None:
        """Redeliver, flagged, every message consumed and not acknowledged (not in a transacted context)."""
        await self._open_session().recover()

    @unchecked_async
    async def acknowledge(self) -> None:
        """Acknowledge every message this context consumed so far (CLIENT_ACKNOWLEDGE; no effect otherwise)."""
        await self._open_session().acknowledge()

    @unchecked_async
    async def createTemporaryQueue(self) -> TemporaryQueue:
        """A temporary queue that lives as long as the context's connection."""
        return await self._open_session().createTemporaryQueue()

    @unchecked_async
    async def createTemporaryTopic(self) -> TemporaryTopic:
        """A temporary topic that lives as long as the context's connection."""
        return await self._open_session().createTemporaryTopic()

    @unchecked
    def createProducer(self) -> JMSProducer:
        """A JMSProducer: fluent settings, then ``await producer.send(destination, body)``."""
        self._open_session()
        return JMSProducer(self)

    @unchecked_async
    async def createConsumer(
        self, destination: Destination, messageSelector: str | None = None, noLocal: bool = False
    ) -> JMSConsumer:
        """A consumer on ``destination``; starts the connection when autoStart is on."""
        session = self._open_session()
        return await self._consumer(await session.createConsumer(destination, messageSelector, noLocal))

    @unchecked_async
    async def createDurableConsumer(
        self, topic: Topic, name: str, messageSelector: str | None = None, noLocal: bool = False
    ) -> JMSConsumer:
        """A consumer on the unshared durable subscription (client ID, ``name``)."""
        session = self._open_session()
        return await self._consumer(
            await session.createDurableConsumer(topic, name, messageSelector, noLocal)
        )

    @unchecked_async
    async def createSharedConsumer(
        self, topic: Topic, sharedSubscriptionName: str, messageSelector: str | None = None
    ) -> JMSConsumer:
        """A consumer on the shared non-durable subscription (``sharedSubscriptionName``, client ID or none)."""
        session = self._open_session()
        return await self._consumer(
            await session.createSharedConsumer(topic, sharedSubscriptionName, messageSelector)
        )

    @unchecked_async
    async def createSharedDurableConsumer(
        self, topic: Topic, name: str, messageSelector: str | None = None
    ) -> JMSConsumer:
        """A consumer on the shared durable subscription (``name``, client ID or none)."""
        session = self._open_session()
        return await self._consumer(await session.createSharedDurableConsumer(topic, name, messageSelector))

    @unchecked
    def createBrowser(self, queue: Queue, messageSelector: str | None = None) -> QueueBrowser:
        """A QueueBrowser on ``queue`` (where the broker can browse): ``async for message in browser``."""
        return self._open_session().createBrowser(queue, messageSelector)

    @unchecked_async
    async def unsubscribe(self, name: str) -> None:
        """Delete the durable subscription ``name`` (unshared: of this client ID; shared: name and client ID or none)."""
        await self._open_session().unsubscribe(name)

    # -- for JMSProducer ------------------------------------------------------------------------------------

    async def send_with(
        self,
        destination: Destination,
        message: Message,
        settings: tuple[int, int, int],
        listener: CompletionListener | None,
        disable: tuple[bool, bool],
        delivery_delay: int,
    ) -> None:
        """Send through the context's anonymous producer with one JMSProducer's settings."""
        if self._producer is None:
            self._producer = self._open_session().createProducer(None)
        producer = self._producer
        producer.setDeliveryDelay(delivery_delay)
        producer.setDisableMessageID(disable[0])
        producer.setDisableMessageTimestamp(disable[1])
        await producer.send(destination, message, *settings, completionListener=listener)


class JMSProducer(JMSProducerBase):
    """``javax.jms.JMSProducer`` on the event loop: fluent settings (plain calls, as in the threaded API, ``setAsync``
    included), then ``await producer.send(destination, body)`` (the body rules:
    :class:`jmslike.context.JMSProducerBase`)."""

    def __init__(self, context: JMSContext) -> None:
        super().__init__()
        self._context = context

    @unchecked_async
    async def send(self, destination: Destination, body: object) -> Self:
        """Send ``body`` (a Message, str, bytes, Mapping or serialisable object) to ``destination``; returns
        once the broker has it, as ``MessageProducer.send`` does."""
        message = self.message_for(destination, body, self._context)
        await self._context.send_with(
            destination, message, self.send_settings, self._async, self.disabled, self._delivery_delay
        )
        return self


class JMSConsumer:
    """``javax.jms.JMSConsumer`` on the event loop: ``await receive()``, ``await receiveBody(str)``,
    ``async for``, listeners that may be coroutine functions."""

    def __init__(self, consumer: MessageConsumer) -> None:
        self._consumer = consumer

    @unchecked
    def getMessageSelector(self) -> str | None:
        """The selector as the application wrote it, or None."""
        return self._consumer.getMessageSelector()

    @unchecked_async
    async def receive(self, timeout: int | None = None) -> Message | None:
        """Wait for the next message; ``None``/0 waits until one comes or the consumer closes."""
        return await self._consumer.receive(timeout)

    @unchecked_async
    async def receiveNoWait(self) -> Message | None:
        """The next message if one is there now, else None."""
        return await self._consumer.receiveNoWait()

    @unchecked_async
    async def receiveBody(self, c: type[T], timeout: int | None = None) -> T | None:
        """The next message's body as ``c`` (str, bytes, dict, or an ObjectMessage's class): a body that is
        not one raises MessageFormatRuntimeException, and in AUTO/DUPS_OK mode the message stays for the next
        receive (JMS 2.0)."""
        return await self._consumer.receive_body(c, timeout)

    @unchecked_async
    async def receiveBodyNoWait(self, c: type[T]) -> T | None:
        """The next message's body as ``c`` if one is there now, else None."""
        return await self._consumer.receive_body(c, no_wait=True)

    @unchecked
    def setMessageListener(self, listener: MessageListener | object | None) -> None:
        """Deliver messages to ``listener`` (a function, a coroutine function, or an object with onMessage)."""
        self._consumer.setMessageListener(listener)

    @unchecked
    def getMessageListener(self) -> MessageListener | None:
        """The listener set with setMessageListener, or None."""
        return self._consumer.getMessageListener()

    @unchecked_async
    async def close(self) -> None:
        """Stop delivery to this consumer."""
        await self._consumer.close()

    async def __aiter__(self) -> AsyncIterator[Message]:
        """``async for message in consumer``: until the consumer is closed."""
        while (message := await self.receive()) is not None:
            yield message

    async def __aenter__(self) -> JMSConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<aio.JMSConsumer of {self._consumer!r}>"

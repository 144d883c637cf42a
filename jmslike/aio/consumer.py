"""``jmslike.aio``'s MessageConsumer: ``await receive()``, ``async for``, and listeners that may be coroutines.

It holds its subscription and its inbox; its session decides delivery (order, acknowledgement, local
redelivery), as in the threaded API (:mod:`jmslike.aio.session_engine`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from jmslike import retained
from jmslike.aio import retained as aio_retained
from jmslike.consumer import (
    BrowserBase,
    ConsumerBase,
    as_listener,
    browse_spec,
    browsed_message,
    client_accepts,
    selector_value,
)
from jmslike.contract import IncomingMessage, SubscriptionSpec
from jmslike.delivery import Pending
from jmslike.destinations import Queue
from jmslike.exceptions import IllegalStateException, JMSException
from jmslike.flow import BufferGauge
from jmslike.messages import Message
from jmslike.selector import Selector
from jmslike.subscription_plans import refuse_remove_on_close
from jmslike.subscriptions import DurableDefinition, companion_accepts

if TYPE_CHECKING:
    from jmslike.aio.session import Session

log = logging.getLogger(__name__)

T = TypeVar("T")

#: A MessageListener: a plain function or a coroutine function, given the Message.
MessageListener = Callable[[Message], "Awaitable[None] | None"]


async def nothing_to_acknowledge() -> None:
    """``await message.acknowledge()`` where there is nothing to acknowledge -- outside CLIENT and INDIVIDUAL
    acknowledgement (JMS ignores it there), or on a browsed message -- stays awaitable, so code written for any
    mode runs in every mode."""


class MessageConsumer(ConsumerBase):
    """``javax.jms.MessageConsumer`` on the event loop: ``await session.createConsumer(destination)``."""

    def __init__(
        self,
        session: Session,
        spec: SubscriptionSpec,
        selector: Selector | None,
        definition: DurableDefinition | None = None,
    ) -> None:
        super().__init__(spec, selector, session.connection.adapter, session.connection.buffer)
        self._session = session
        self._listener: MessageListener | None = None
        #: A durable subscriber's record (jmslike.subscriptions), kept up to date when it closes.
        self.definition = definition
        #: A persistence-filtered subscriber's companion subscription (it delivers through this one).
        self.companion: CompanionConsumer | None = None

    # -- JMS API --------------------------------------------------------------------------------------------

    async def receive(self, timeout_ms: int | None = None) -> Message | None:
        """The next message; ``None``/0 waits until one comes or the consumer closes (JMS ``receive()``),
        otherwise None once ``timeout_ms`` passed. Not while a MessageListener is set."""
        self.check_open()
        if self._listener is not None:
            raise IllegalStateException("receive() is not allowed while a MessageListener is set")
        deadline = asyncio.get_running_loop().time() + timeout_ms / 1000 if timeout_ms else None
        self._session.connection.hint_if_stopped("receive()")
        return await self._session.receive_for(self, deadline)

    async def receiveNoWait(self) -> Message | None:
        """A message already delivered to this consumer, or None at once."""
        self.check_open()
        if self._listener is not None:
            raise IllegalStateException("receiveNoWait() is not allowed while a MessageListener is set")
        return await self._session.receive_for(self, asyncio.get_running_loop().time())

    async def receive_body(
        self, c: type[T], timeout_ms: int | None = None, *, no_wait: bool = False
    ) -> T | None:
        """JMS 2.0 ``JMSConsumer.receiveBody`` on this consumer: the next message's body as ``c`` (None when the
        wait ends empty or the message has no body). A body that is not a ``c`` raises MessageFormatException;
        in AUTO and DUPS_OK mode the message then stays for the next receive."""
        self.check_receive_body(c, self._listener is not None)
        now = asyncio.get_running_loop().time()
        deadline = now if no_wait else (now + timeout_ms / 1000 if timeout_ms else None)
        if not no_wait:
            self._session.connection.hint_if_stopped("receiveBody()")
        message = await self._session.receive_for(self, deadline, body_type=c)
        return None if message is None else message.getBody(c)

    def setMessageListener(self, listener: MessageListener | object | None) -> None:
        """A callable (a coroutine function too) or an object with ``onMessage(message)``; the session runs its
        listeners one message at a time, in a task of its own, while the connection is started."""
        self.check_open()
        self._listener = as_listener(listener)
        if self._listener is not None:
            self._session.ensure_dispatcher()

    def getMessageListener(self) -> MessageListener | None:
        """The listener set, or None; IllegalStateException once closed, as in the threaded API."""
        self.check_open()
        return self._listener

    async def requestUpdate(self, correlationID: str | None = None) -> int:
        """Deliver (to receive or the listener) the current retained publication of every topic this
        subscription matches that passes its selector, marked ``JMS_jmslike_Retained``; return how many.
        None: NoRetainedMessageException. Only the subscription's owner may ask. With ``correlationID``
        every delivered message carries it as JMSCorrelationID (docs/retained.md)."""
        return await aio_retained.request_update(self, correlationID)

    async def close(self, removeSubscription: bool = False) -> None:
        """Stop delivery; the broker subscription ends now, or once the session settled what this consumer
        delivered (acknowledge, recover, commit, rollback): JMS lets it acknowledge them after the close. A
        durable subscriber's subscription is kept, or deleted with its backlog with ``removeSubscription``
        (as the threaded TopicSubscriber's)."""
        if self.closed:
            if removeSubscription:
                raise IllegalStateException("the subscriber is already closed; use session.unsubscribe(name)")
            return
        if removeSubscription:
            name = refuse_remove_on_close(
                self.spec.durable_name,
                own_listener=self._session.delivering_to(self),
                holds_unacked=self.spec.durable_name is not None
                and any(s.holds_unacked(self.spec.durable_name) for s in self._session.connection.sessions()),
            )
            await self._session.consumer_closed(self, self.inbox.close())
            await self._session.unsubscribe(name)
            return
        await self._session.consumer_closed(self, self.inbox.close())
        if self.definition is not None:
            await self._session.record_detached(self.definition)

    def __aiter__(self) -> AsyncIterator[Message]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[Message]:
        """``async for message in consumer``: until the consumer (or its session) closes."""
        while not self.closed:
            message = await self.receive()
            if message is None:
                return
            yield message

    async def __aenter__(self) -> MessageConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<aio.{type(self).__name__} {self.spec.destination} {'closed' if self.closed else 'open'}>"

    def _check_session_open(self) -> None:
        self._session.check_open()

    # -- for the session and the connection -----------------------------------------------------------------

    @property
    def session(self) -> Session:
        return self._session

    @property
    def listener(self) -> MessageListener | None:
        return self._listener

    def enqueue(self, incoming: IncomingMessage) -> None:
        """A MESSAGE frame for this subscription (from the wire's reader, on the loop)."""
        self._session.enqueue(self, incoming)

    def accepts(self, incoming: IncomingMessage) -> bool:
        """Client-side selector and noLocal where the broker cannot filter; a companion's message by its rule."""
        companion = self.companion
        if companion is not None and incoming.sub_id == companion.spec.sub_id:
            return companion.accepts(incoming)
        connection = self._session.connection
        return client_accepts(
            incoming,
            connection.adapter,
            connection.connection_id,
            no_local=self.client_no_local,
            selector=self.client_selector,
        )

    def stop_taking(self) -> list[Pending]:
        """Closed with its session: take no more, and give back what was buffered."""
        return self.inbox.close() if not self.closed else []


class QueueBrowser(BrowserBase):
    """``javax.jms.QueueBrowser`` on the event loop: ``async for message in session.createBrowser(queue)``.

    Each enumeration browses afresh and streams, as the threaded browser does: a message is handed over as it
    arrives, and ``timeout_ms`` bounds the wait for each next one (JMSException when the broker goes quiet
    without ending the browse). The browse subscription ends when the enumeration is exhausted or closed
    (``aclose()``, or leaving ``contextlib.aclosing``)."""

    def __init__(self, session: Session, queue: Queue, selector: Selector | None) -> None:
        super().__init__(queue, selector)
        self._session = session

    async def getEnumeration(self, timeout_ms: int = 30_000) -> AsyncGenerator[Message, None]:
        """Subscribe (a refusal is raised here, as JMS has it), then the queue's messages in order."""
        if self._closed:
            raise IllegalStateException("the browser is closed")
        self._session.check_open()
        connection = self._session.connection
        spec = browse_spec(connection.next_sub_id(), self._queue, self._selector, connection.config.prefetch)
        sink = _BrowseSink(spec, connection.buffer)
        wire = await connection.blocking_wire_for_use()  # first, as a session's _attach_companion says why
        connection.register_consumer(sink)  # type: ignore[arg-type]
        try:
            await connection.in_worker(connection.adapter.subscribe, wire, spec)
        except BaseException:
            connection.unregister_consumer(sink)  # type: ignore[arg-type]
            raise
        return self._stream(sink, timeout_ms)

    async def __aiter__(self) -> AsyncIterator[Message]:
        enumeration = await self.getEnumeration()
        async with contextlib.aclosing(enumeration):
            async for message in enumeration:
                yield message

    async def _stream(self, sink: _BrowseSink, timeout_ms: int) -> AsyncGenerator[Message, None]:
        connection = self._session.connection
        try:
            while (item := await sink.next(timeout_ms / 1000)) is not None:
                message = browsed_message(item, connection.adapter, connection.serializers)
                if message is not None:
                    # A look, not a delivery: nothing to acknowledge.
                    message.bind_acknowledger(nothing_to_acknowledge)
                    yield message
        finally:
            connection.unregister_consumer(sink)  # type: ignore[arg-type]
            if not connection.wire_closed and connection.failure is None:
                with contextlib.suppress(JMSException):  # a lost connection ends the browse anyway
                    await connection.in_worker(
                        connection.adapter.detach, connection.blocking_wire(), sink.spec, list
                    )

    async def close(self) -> None:
        self._closed = True

    def __repr__(self) -> str:
        return f"<aio.QueueBrowser {self._queue}>"


class _BrowseSink:
    """A browse subscription's messages, from the wire's reader to the browsing coroutine, in order, until the
    broker says the browse ended. Registered with the connection like a consumer, but always ``closed``:
    nothing re-subscribes a browse."""

    closed = True

    def __init__(self, spec: SubscriptionSpec, buffer: BufferGauge) -> None:
        self.spec = spec
        self._buffer = buffer  # a browse is no consumer's: while it waits, the wire reads on (jmslike.flow)
        self._items: deque[IncomingMessage] = deque()
        self._ended = False
        self._changed = asyncio.Event()

    def enqueue(self, incoming: IncomingMessage) -> None:  # on the loop, from the wire's reader
        if incoming.browser_end:
            self._ended = True
        else:
            self._items.append(incoming)
        self._changed.set()

    async def next(self, timeout_s: float) -> IncomingMessage | None:
        """The next message, or None once the broker ended the browse; JMSException after ``timeout_s`` of
        silence."""
        with self._buffer.reading():
            while not self._items and not self._ended:
                self._changed.clear()
                try:
                    async with asyncio.timeout(timeout_s):
                        await self._changed.wait()
                except TimeoutError:
                    raise JMSException(
                        f"the broker sent nothing for {timeout_s:.1f}s during a queue browse and did not end it"
                    ) from None
        return self._items.popleft() if self._items else None


class CompanionConsumer(MessageConsumer):
    """The non-durable half of a persistence-filtered subscription: it delivers, through its owner, the messages
    the durable subscription does not keep (the inactive selector not TRUE), as the threaded API's does."""

    def __init__(
        self,
        session: Session,
        spec: SubscriptionSpec,
        selector: Selector | None,
        owner: MessageConsumer,
        inactive: Selector,
    ) -> None:
        super().__init__(session, spec, selector)
        self._owner = owner
        self._inactive = inactive

    def enqueue(self, incoming: IncomingMessage) -> None:
        self._session.enqueue(self._owner, incoming)

    def accepts(self, incoming: IncomingMessage) -> bool:
        if not super().accepts(incoming):
            return False
        return companion_accepts(self._inactive, lambda name: selector_value(incoming, name))


class OnRequestConsumer(retained.OnRequestTopic, MessageConsumer):
    """A subscriber on request only (:func:`jmslike.retained.park`): bound on the broker to a parking topic
    nothing is published to, it receives only what ``requestUpdate()`` hands it. ``getTopic()`` is the topic
    it asked for."""

    def __init__(
        self,
        session: Session,
        spec: SubscriptionSpec,
        selector: Selector | None,
        definition: DurableDefinition | None = None,
    ) -> None:
        self._requested, parked = retained.park(session.connection.adapter, spec)
        super().__init__(session, parked, selector, definition)

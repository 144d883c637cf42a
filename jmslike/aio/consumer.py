"""``jmslike.aio``'s MessageConsumer: ``await receive()``, ``async for``, and listeners that may be coroutines.

It holds its subscription and its inbox; its session decides delivery (order, acknowledgement, local
redelivery), as in the threaded API (:mod:`jmslike.aio.session`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from jmslike.consumer import ConsumerBase, as_listener
from jmslike.contract import IncomingMessage, SubscriptionSpec
from jmslike.delivery import Pending
from jmslike.exceptions import IllegalStateException
from jmslike.messages import Message
from jmslike.selector import Selector

if TYPE_CHECKING:
    from jmslike.aio.session import Session

log = logging.getLogger(__name__)

#: A MessageListener: a plain function or a coroutine function, given the Message.
MessageListener = Callable[[Message], "Awaitable[None] | None"]


class MessageConsumer(ConsumerBase):
    """``javax.jms.MessageConsumer`` on the event loop: ``await session.createConsumer(destination)``."""

    def __init__(self, session: Session, spec: SubscriptionSpec, selector: Selector | None) -> None:
        super().__init__(spec, selector, session.connection.adapter)
        self._session = session
        self._listener: MessageListener | None = None

    # -- JMS API --------------------------------------------------------------------------------------------

    async def receive(self, timeout_ms: int | None = None) -> Message | None:
        """The next message; ``None``/0 waits until one comes or the consumer closes (JMS ``receive()``),
        otherwise None once ``timeout_ms`` passed. Not while a MessageListener is set."""
        self.check_open()
        if self._listener is not None:
            raise IllegalStateException("receive() is not allowed while a MessageListener is set")
        deadline = asyncio.get_running_loop().time() + timeout_ms / 1000 if timeout_ms else None
        return await self._session.receive_for(self, deadline)

    async def receiveNoWait(self) -> Message | None:
        """A message already delivered to this consumer, or None at once."""
        self.check_open()
        if self._listener is not None:
            raise IllegalStateException("receiveNoWait() is not allowed while a MessageListener is set")
        return await self._session.receive_for(self, asyncio.get_running_loop().time())

    def setMessageListener(self, listener: MessageListener | object | None) -> None:
        """A callable (a coroutine function too) or an object with ``onMessage(message)``; the session runs its
        listeners one message at a time, in a task of its own, while the connection is started."""
        self.check_open()
        self._listener = as_listener(listener)
        if self._listener is not None:
            self._session.ensure_dispatcher()

    def getMessageListener(self) -> MessageListener | None:
        return self._listener

    async def close(self) -> None:
        """Stop delivery; the broker subscription ends now, or once the session settled what this consumer
        delivered (acknowledge, recover, commit, rollback): JMS lets it acknowledge them after the close."""
        if self.closed:
            return
        await self._session.consumer_closed(self, self.inbox.close())

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
    def listener(self) -> MessageListener | None:
        return self._listener

    def enqueue(self, incoming: IncomingMessage) -> None:
        """A MESSAGE frame for this subscription (from the wire's reader, on the loop)."""
        self._session.enqueue(self, incoming)

    def stop_taking(self) -> list[Pending]:
        """Closed with its session: take no more, and give back what was buffered."""
        return self.inbox.close() if not self.closed else []

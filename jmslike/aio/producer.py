"""``jmslike.aio``'s MessageProducer: ``await producer.send(message)``, with the threaded producer's settings.

Settings, ``send``'s overloads and the stamping of the message are :mod:`jmslike.producer_settings`', shared
with the threaded producer; the session decides how the send waits (:meth:`jmslike.aio.sending.Sender.send`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from jmslike.aio import retained as aio_retained
from jmslike.destinations import Destination
from jmslike.exceptions import IllegalStateException, InvalidDestinationException, JMSException
from jmslike.producer_settings import ProducerSettings

if TYPE_CHECKING:
    from jmslike.aio.session import Session
    from jmslike.producer import CompletionListener

log = logging.getLogger(__name__)


class MessageProducer(ProducerSettings):
    """``javax.jms.MessageProducer`` on the event loop: ``session.createProducer(destination or None)``."""

    def __init__(self, session: Session, destination: Destination | None) -> None:
        super().__init__(destination)
        self._session = session
        self._closed = False

    def check_open(self) -> None:
        if self._closed:
            raise IllegalStateException("the producer is closed")
        self._session.check_open()

    async def send(
        self, *args: Any, completionListener: CompletionListener | None = None, retain: bool = False
    ) -> None:
        """``await send(message[, deliveryMode, priority, timeToLive])`` or, for a producer created without a
        destination, ``await send(destination, message[, ...])``. PERSISTENT and transacted sends return once
        the broker has the message; a NON_PERSISTENT one outside a transaction once it is written (module
        docstring of jmslike.aio.sending). With ``completionListener`` (JMS 2.0 asynchronous send) it returns
        once written, and the listener's ``onCompletion(message)`` or ``onException(message, exception)`` (plain
        or coroutine functions) runs in the session's dispatch task, in send order.

        ``retain=True`` (topics): also keep the message as the topic's retained publication, replacing the
        previous one; an empty body clears it (docs/retained.md). Such a send returns once the broker has it."""
        self.check_open()
        self.raise_failed_send()
        destination, message, mode, priority, ttl = self.resolve_send(args)
        if not isinstance(destination, Destination):
            raise InvalidDestinationException(f"cannot send to {destination!r}")
        connection = self._session.connection
        connection.temporaries.check_use(destination, connection.adapter)
        delay = self._delivery_delay
        if delay and retain:
            raise JMSException("a retained publication cannot be delayed; setDeliveryDelay(0) first")
        if delay and not connection.delay_check.verified:  # once per connection: a private round trip
            await connection.in_worker(connection.delay_check.ensure, connection)
        outgoing = self._outgoing(
            message, destination, mode, priority, ttl, delay, connection.adapter, connection.connection_id
        )
        if retain:
            listener, session = completionListener, self._session
            # After the callbacks of earlier sends (JMS 2.0 §7.3.8), and also when this caller is cancelled
            # while the pair goes out (it runs to its end).
            sent = None if listener is None else (lambda: session.complete_sent(listener, message))
            await aio_retained.publish(session, outgoing, sent)
            return
        await self._session.sender.send(self, outgoing, message, completionListener)

    async def close(self) -> None:
        """Close once the session's unwaited sends are confirmed (bounded by the receipt timeout); raise the
        error of one the broker refused that no call reported yet (the producer is closed all the same)."""
        self._session.refuse_in_callback("close() of a producer")
        await self._session.wait_out_callback("close() of a producer")
        if not self._closed and not await self._session.settle_sends():
            log.warning("closing a producer whose asynchronous sends are still unconfirmed")
        error = self.close_quietly()
        if error is not None:
            raise error

    def close_quietly(self) -> JMSException | None:
        """Close without waiting; the unreported error of an unwaited send, returned."""
        self._closed = True
        self._session.remove_producer(self)
        return self.take_failed_send()

    async def __aenter__(self) -> MessageProducer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

"""MessageProducer: the provider sets the JMS headers on send, and a send returns once the broker has it.

A PERSISTENT or transacted ``send`` waits for the broker's receipt, as a JMS send does. A NON_PERSISTENT
send outside a transaction returns once written, as ActiveMQ's and Qpid's Java clients do by default (JMS
gives such messages at-most-once): its receipt is awaited in the background, an ERROR for it reaches the
ExceptionListener and fails the producer's next ``send`` or ``close``, and ``close``, ``commit`` and
``Connection.close`` still return only once the broker has everything (``force_sync_send=true`` makes every
send wait). ``send(..., completionListener=l)`` (JMS 2.0) returns at once too, and the listener's
``onCompletion``/``onException`` run on the session's dispatch thread, never the receiver thread. Both kinds
of asynchronous send share one window per session, bounded in messages (``send_window``) and bytes
(``send_window_bytes``), so a producer cannot run ahead of the broker without bound. As in JMS, the
message's own delivery mode, priority and expiration are overwritten by the producer's
(``setJMSDeliveryMode`` before send has no effect).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from jmslike import retained
from jmslike.constants import DeliveryMode
from jmslike.destinations import Destination
from jmslike.domain_methods import ProducerDomainMethods
from jmslike.exceptions import (
    ConnectionLostException,
    IllegalStateException,
    InvalidDestinationException,
    JMSException,
)
from jmslike.messages import Message
from jmslike.producer_settings import ProducerSettings
from jmslike.send_window import settle_once

if TYPE_CHECKING:
    from jmslike.contract import Frame, PendingReceipt, Wire
    from jmslike.session import Session

log = logging.getLogger(__name__)


class CompletionListener(Protocol):
    """JMS 2.0 ``CompletionListener``."""

    def onCompletion(self, message: Message) -> None: ...

    def onException(self, message: Message, exception: JMSException) -> None: ...


_UNSET: Any = object()


class MessageProducer(ProducerSettings, ProducerDomainMethods):
    """``javax.jms.MessageProducer``; created by ``Session.createProducer(destination or None)``."""

    def __init__(self, session: Session, destination: Destination | None) -> None:
        super().__init__(destination)
        self._session = session
        self._closed = False

    def close(self) -> None:
        """Close the producer once the broker confirmed its session's asynchronous sends (bounded by the
        receipt timeout; JMS 2.0 §7.3.7); later calls raise IllegalStateException. Raises the error of an
        unwaited NON_PERSISTENT send that no call has reported yet (the producer is closed all the same)."""
        if not self._closed and not self._session.settle_sends():
            log.warning("closing a producer whose asynchronous sends are still unconfirmed")
        error = self.close_quietly()
        if error is not None:
            raise error

    def close_quietly(self) -> JMSException | None:
        """Close without waiting, and return (not raise) the unreported error of an unwaited send: for the
        session's close, which settled its sends already and must close every producer (the error has
        reached the ExceptionListener)."""
        self._closed = True
        self._session.remove_producer(self)
        return self.take_failed_send()

    def __enter__(self) -> MessageProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def check_open(self) -> None:
        if self._closed:
            raise IllegalStateException("the producer is closed")
        self._session.check_open()

    # -- send -----------------------------------------------------------------------------------------

    def send(
        self, *args: Any, completionListener: CompletionListener | None = None, retain: bool = False
    ) -> None:
        """``send(message[, deliveryMode, priority, timeToLive])`` or, for a producer created without a
        destination, ``send(destination, message[, deliveryMode, priority, timeToLive])``.

        ``retain=True`` (topics): also keep the message as the topic's retained publication, replacing the
        previous one; an empty body clears it (docs/retained.md). Such a send is synchronous."""
        self.check_open()
        self.raise_failed_send()
        destination, message, mode, priority, ttl = self.resolve_send(args)
        self._send(
            destination,
            message,
            mode,
            priority,
            ttl,
            completionListener,
            retain,
        )

    def _send(
        self,
        destination: Destination,
        message: Message,
        mode: int,
        priority: int,
        ttl: int,
        listener: CompletionListener | None,
        retain: bool = False,
    ) -> None:
        session = self._session
        connection = session.connection
        if not isinstance(destination, Destination):
            raise InvalidDestinationException(f"cannot send to {destination!r}")
        connection.check_temporary_use(destination)
        delay = self._delivery_delay
        if delay:
            if retain:
                raise JMSException("a retained publication cannot be delayed; setDeliveryDelay(0) first")
            connection.delay_check.ensure(connection)
        outgoing = self._outgoing(
            message, destination, mode, priority, ttl, delay, connection.adapter, connection.connection_id
        )
        if retain:
            retained.publish(session, outgoing)
            if listener is not None:  # after the callbacks of earlier sends (JMS 2.0 §7.3.8)
                session.complete(session.completion_ticket(), lambda: listener.onCompletion(message))
            return
        transaction = session.transaction_for_send()
        frame = connection.adapter.send_frame(outgoing, transaction)
        wire = connection.wire_for_use()
        if transaction is not None and not connection.adapter.transactional_send_receipts:
            # This broker answers a transactional SEND only after COMMIT (on RabbitMQ: when the publish is
            # confirmed), so the receipt is awaited by commit(), which must not return before the
            # committed messages are safe.
            ticket = session.completion_ticket() if listener is not None else -1

            def settled(error: JMSException | None) -> None:  # receiver thread
                if listener is not None:
                    if error is None:
                        session.complete(ticket, lambda: listener.onCompletion(message))
                    else:
                        session.complete(ticket, lambda: listener.onException(message, error))

            settle = settle_once(settled)
            session.defer_receipt(
                _submitted(wire, frame, settle, session, ticket), settle if listener is not None else None
            )
            return
        unwaited = (
            listener is None
            and transaction is None
            and mode == DeliveryMode.NON_PERSISTENT
            and not connection.config.force_sync_send
        )
        if listener is None and not unwaited:
            wire.request(frame)
            return
        size = len(frame.body)
        ticket = session.acquire_send_slot(size, ordered=listener is not None)
        done: Callable[[JMSException | None], None] = (
            _Unwaited(self, session, size)
            if listener is None
            else _Completing(session, listener, message, size, ticket)
        )
        try:
            _submitted(wire, frame, done, session, ticket)
        except JMSException:
            session.release_send_slot(size)
            raise


class _Unwaited:
    """How an unwaited NON_PERSISTENT send is settled, on the receiver thread: its place in the window given back,
    a refusal kept for the producer's next call, a loss counted. An object, not a closure: a send window holds
    one per send in flight, and a closure over these names is nine objects for the garbage collector to track
    (the window's objects drive how often it runs; docs/performance.md)."""

    __slots__ = ("_producer", "_session", "_size")

    def __init__(self, producer: MessageProducer, session: Session, size: int) -> None:
        self._producer = producer
        self._session = session
        self._size = size

    def __call__(self, error: JMSException | None) -> None:  # receiver thread: hand over, nothing else
        self._session.release_send_slot(self._size)
        if isinstance(error, ConnectionLostException):
            self._producer.note_lost_send(error)  # at-most-once allows the loss, not silence
        elif error is not None:
            self._producer.note_failed_send(error)
            self._session.connection.report(error)


class _Completing:
    """How a send with a CompletionListener is settled, on the receiver thread: its place given back and the
    listener's callback queued for the session's thread, in send order (an object for the reason
    :class:`_Unwaited` gives)."""

    __slots__ = ("_error", "_listener", "_message", "_session", "_size", "_ticket")

    def __init__(
        self, session: Session, listener: CompletionListener, message: Message, size: int, ticket: int
    ) -> None:
        self._session = session
        self._listener = listener
        self._message = message
        self._size = size
        self._ticket = ticket
        self._error: JMSException | None = None

    def __call__(self, error: JMSException | None) -> None:  # receiver thread: hand over, nothing else
        self._error = error
        self._session.release_send_slot(self._size, self._notify, self._ticket)

    def _notify(self) -> None:  # the session's thread, in send order
        if self._error is None:
            self._listener.onCompletion(self._message)
        else:
            self._listener.onException(self._message, self._error)


def _submitted(
    wire: Wire, frame: Frame, settled: Callable[[JMSException | None], None], session: Session, ticket: int
) -> PendingReceipt:
    """Hand ``frame`` to the wire; a send that fails here raises to its caller, and its place in the completion
    order is given up (nothing waits behind it)."""
    try:
        return wire.submit(frame, settled)
    except BaseException:
        if ticket >= 0:
            session.complete(ticket, _nothing)
        raise


def _nothing() -> None:
    """The place of a send that raised to its caller, in the completion order: nothing to call."""

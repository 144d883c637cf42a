"""What a connection does with its wire's events, in every API: route MESSAGE frames, report the rest.

The wire calls these from its reader (a thread, or the asyncio transport's callback), so they only route and hand
over. The events of a wire that is not, or no longer, the connection's own -- a client-ID claim under way, a
wire replaced or closed -- are its opener's business: that opener sees them as exceptions.
"""

from __future__ import annotations

import logging
from typing import Protocol

from jmslike.contract import Adapter, Frame, IncomingMessage
from jmslike.exceptions import ConnectionLostException, JMSException
from jmslike.flow import BufferGauge

log = logging.getLogger(__name__)


class Subscriber(Protocol):
    def enqueue(self, incoming: IncomingMessage) -> None: ...


class RoutingConnection(Protocol):
    """The connection as the router needs it."""

    @property
    def adapter(self) -> Adapter: ...

    def subscriber_for(self, sub_id: str) -> Subscriber | None: ...

    def owns(self, wire: object) -> bool:
        """Whether ``wire`` is this connection's current wire (lost or not)."""

    def report(self, error: JMSException) -> None: ...

    def on_lost(self, error: ConnectionLostException, wire: object | None = None) -> None:
        """``wire`` is the one lost, for a connection that checks again that it is still its own."""

    @property
    def buffer(self) -> BufferGauge: ...


class WireEventRouter:
    """The ``WireEvents`` of one wire (``wire`` is set once it exists)."""

    def __init__(self, connection: RoutingConnection) -> None:
        self._connection = connection
        self.wire: object | None = None

    @property
    def buffer(self) -> BufferGauge:
        return self._connection.buffer

    def _current(self) -> bool:
        return self.wire is not None and self._connection.owns(self.wire)

    def on_message(self, frame: Frame) -> None:
        connection = self._connection
        incoming = connection.adapter.decode_message(frame)
        subscriber = connection.subscriber_for(incoming.sub_id)
        if subscriber is None:
            # Arrived after its consumer detached: ActiveMQ takes it back on its own; RabbitMQ keeps it with
            # this connection until it closes (its STOMP refuses ACK/NACK after UNSUBSCRIBE).
            log.debug("message for detached subscription %r not delivered", incoming.sub_id)
            return
        subscriber.enqueue(incoming)

    def on_error(self, error: JMSException) -> None:
        if self._current():
            self._connection.report(error)

    def on_lost(self, error: ConnectionLostException) -> None:
        if self._current():
            self._connection.on_lost(error, self.wire)

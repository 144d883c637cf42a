"""JMS 2.0 delivery delay: the check that the broker really holds a delayed message back.

A broker that does not honour the delay header delivers the message at once, silently: ActiveMQ Classic
ignores ``AMQ_SCHEDULED_DELAY`` unless its scheduler is on (``schedulerSupport="true"``). JMS says a
delayed message is never delivered before its time, so jmslike finds out once per connection, before the
first delayed send, and refuses where the broker would deliver early.

The probe needs no timing assumption: on a private connection it sends a message delayed by a minute, then
an undelayed one, to one temporary queue. A broker that holds the first back delivers the second first; one
that ignores the delay delivers in send order. The private connection closes at once; its temporary queue
goes with it, and the held-back probe is dropped when its time comes (the broker cannot deliver it).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from jmslike.constants import DeliveryMode
from jmslike.exceptions import JMSException, UnsupportedFeatureException

if TYPE_CHECKING:
    from jmslike.config import ConnectionConfig
    from jmslike.connection import Connection
    from jmslike.contract import Adapter


class PrivateOpener(Protocol):
    """An application connection of either API, as the check needs it: its broker, and a private threaded
    connection to it (``jmslike.aio`` runs the check in a worker thread)."""

    @property
    def adapter(self) -> Adapter: ...

    @property
    def config(self) -> ConnectionConfig: ...

    def open_private(self) -> Connection: ...


PROBE_DELAY_MS = 60_000
_PROBE, _MARKER = "jmslike delivery-delay probe", "jmslike delivery-delay marker"


class DelayCheck:
    """Per connection: whether the broker was seen to honour delivery delay (found once, then kept)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._verified = False

    @property
    def verified(self) -> bool:
        """The broker was seen to hold delayed messages back (no round trip is needed any more)."""
        return self._verified

    def trust(self) -> None:
        """The probe's own connection: it sends the one delayed message that asks the question."""
        self._verified = True

    def ensure(self, connection: PrivateOpener) -> None:
        """Return when delayed sends are honoured; UnsupportedFeatureException otherwise."""
        if self._verified:
            return
        with self._lock:
            if not self._verified:
                _probe(connection)
                self._verified = True


def _probe(connection: PrivateOpener) -> None:
    adapter = connection.adapter
    if not adapter.capabilities.delivery_delay:
        raise UnsupportedFeatureException(
            adapter.display_name,
            "delivery delay (JMS 2.0 setDeliveryDelay)",
            "the broker has no scheduled delivery over STOMP; jmslike refuses rather than deliver early",
        )
    private = connection.open_private()
    try:
        private.delay_check.trust()
        private.start()
        session = private.createSession()
        queue = session.createTemporaryQueue()
        consumer = session.createConsumer(queue)
        producer = session.createProducer(queue)
        producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)
        producer.setDeliveryDelay(PROBE_DELAY_MS)
        producer.send(session.createTextMessage(_PROBE))
        producer.setDeliveryDelay(0)
        producer.send(session.createTextMessage(_MARKER))
        first = consumer.receive(connection.config.receipt_timeout_ms)
    finally:
        private.close()
    if first is None:
        raise JMSException("the delivery-delay check got no message back from the broker in time; retry")
    if first.getBody(str) == _PROBE:
        raise UnsupportedFeatureException(
            adapter.display_name,
            "delivery delay (JMS 2.0 setDeliveryDelay)",
            "this broker delivered a delayed message at once, so its scheduled delivery is off; enable it "
            '(ActiveMQ Classic: schedulerSupport="true" on the <broker> element)',
        )

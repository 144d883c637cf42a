"""What a JMS producer is told before it sends, and how a send becomes a wire message: the same in every API.

The threaded :class:`~jmslike.producer.MessageProducer` and the asyncio ``jmslike.aio.MessageProducer`` share
their settings (delivery mode, priority, time to live, delivery delay, disabled IDs and timestamps), the reading
of ``send``'s JMS overloads, the checks of each value and the stamping and encoding of the message
(:func:`outgoing_message`); only how a send waits for the broker is theirs.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import uuid
from typing import Any

from jmslike import body_codec
from jmslike.constants import DEFAULT_PRIORITY, DEFAULT_TIME_TO_LIVE, DeliveryMode
from jmslike.contract import Adapter, OutgoingMessage
from jmslike.destinations import Destination
from jmslike.exceptions import JMSException, MessageFormatException, UnsupportedOperationException
from jmslike.messages import Message

log = logging.getLogger(__name__)


class ProducerSettings:
    """Mixin: a producer's JMS settings; the host provides ``check_open()``."""

    def __init__(self, destination: Destination | None) -> None:
        self._destination = destination
        self._delivery_mode = DeliveryMode.PERSISTENT
        self._priority = DEFAULT_PRIORITY
        self._time_to_live = DEFAULT_TIME_TO_LIVE
        self._delivery_delay = 0
        self._disable_id = False
        self._disable_timestamp = False
        # JMSMessageID: "ID:" and 32 hex digits, unique without a uuid4 per send: 20 random digits per
        # producer, then a 12-digit counter (spark_sink relies on the shape, docs/api.md on uniqueness).
        self._id_prefix = "ID:" + uuid.uuid4().hex[:20]
        self._id_counter = itertools.count()
        # The first error the broker answered to an unwaited NON_PERSISTENT send (set by the wire's reader),
        # raised by the next send or close; and how many such sends a lost connection took along.
        self._failed_send: JMSException | None = None
        self._lost_sends = 0
        self._async_lock = threading.Lock()

    def check_open(self) -> None:
        raise NotImplementedError

    # -- settings -------------------------------------------------------------------------------------

    def setDeliveryMode(self, deliveryMode: int) -> None:
        """Set the DeliveryMode of the messages this producer sends."""
        self.check_open()
        self._delivery_mode = check_delivery_mode(deliveryMode)

    def getDeliveryMode(self) -> int:
        """The DeliveryMode of the messages this producer sends."""
        self.check_open()
        return self._delivery_mode

    def setPriority(self, priority: int) -> None:
        """Set the Priority of the messages this producer sends."""
        self.check_open()
        self._priority = check_priority(priority)

    def getPriority(self) -> int:
        """The Priority of the messages this producer sends."""
        self.check_open()
        return self._priority

    def setTimeToLive(self, timeToLive: int) -> None:
        """Set the TimeToLive of the messages this producer sends."""
        self.check_open()
        self._time_to_live = check_time_to_live(timeToLive)

    def getTimeToLive(self) -> int:
        """The TimeToLive of the messages this producer sends."""
        self.check_open()
        return self._time_to_live

    def setDeliveryDelay(self, deliveryDelay: int) -> None:
        """JMS 2.0: messages are delivered no earlier than ``deliveryDelay`` ms after send. Where the broker
        cannot hold them back, the first delayed send raises UnsupportedFeatureException."""
        self.check_open()
        self._delivery_delay = check_delivery_delay(deliveryDelay)

    def getDeliveryDelay(self) -> int:
        """The DeliveryDelay of the messages this producer sends."""
        self.check_open()
        return self._delivery_delay

    def setDisableMessageID(self, value: bool) -> None:
        """Set the DisableMessageID of the messages this producer sends."""
        self.check_open()
        self._disable_id = bool(value)

    def getDisableMessageID(self) -> bool:
        """The DisableMessageID of the messages this producer sends."""
        self.check_open()
        return self._disable_id

    def setDisableMessageTimestamp(self, value: bool) -> None:
        """Set the DisableMessageTimestamp of the messages this producer sends."""
        self.check_open()
        self._disable_timestamp = bool(value)

    def getDisableMessageTimestamp(self) -> bool:
        """The DisableMessageTimestamp of the messages this producer sends."""
        self.check_open()
        return self._disable_timestamp

    def getDestination(self) -> Destination | None:
        """The Destination of the messages this producer sends."""
        self.check_open()
        return self._destination

    # -- unwaited sends ----------------------------------------------------------------------------------

    def note_failed_send(self, error: JMSException) -> None:
        """The broker refused an unwaited send: the producer's next call raises it (the first one only)."""
        with self._async_lock:
            if self._failed_send is None:
                self._failed_send = error

    def raise_failed_send(self) -> None:
        if self._failed_send is None:
            # Read without the lock (once per send): an error set by the receiver thread a moment later is raised
            # by the next call, as if it had arrived then.
            return
        error = self.take_failed_send()
        if error is not None:
            raise error

    def note_lost_send(self, error: JMSException) -> None:
        """An unwaited send was unconfirmed when the connection was lost: JMS allows the loss of a
        NON_PERSISTENT message, not silence about it."""
        with self._async_lock:
            self._lost_sends += 1
            lost = self._lost_sends
        if lost == 1 or lost % 100 == 0:
            log.warning(
                "%d NON_PERSISTENT message(s) of a producer were unconfirmed when the connection was lost and "
                "may be lost (JMS allows it for NON_PERSISTENT; use PERSISTENT or force_sync_send=true to know): %s",
                lost,
                error,
            )

    def take_failed_send(self) -> JMSException | None:
        """The unreported error of an unwaited send, as the call that reports it raises it (or None)."""
        with self._async_lock:  # the receiver thread sets it
            error, self._failed_send = self._failed_send, None
        if error is None:
            return None
        raised = type(error)(
            f"an earlier NON_PERSISTENT send of this producer was refused by the broker (that message is lost): "
            f"{error.reason}; this call did nothing, call it again",
            error.errorCode,
        )
        raised.__cause__ = error
        return raised

    def _outgoing(
        self,
        message: Message,
        destination: Destination,
        mode: int,
        priority: int,
        ttl: int,
        delay: int,
        adapter: Adapter,
        origin: str,
    ) -> OutgoingMessage:
        """:func:`outgoing_message` with this producer's message ID and timestamp settings."""
        return outgoing_message(
            message,
            destination,
            mode,
            priority,
            ttl,
            delay,
            self.next_message_id(),
            stamp_time=not self._disable_timestamp,
            reserved=adapter.reserved_headers,
            origin=origin,
        )

    def next_message_id(self) -> str | None:
        """The JMSMessageID for the next send (None when disabled)."""
        return None if self._disable_id else f"{self._id_prefix}{next(self._id_counter):012x}"

    def resolve_send(self, args: tuple[Any, ...]) -> tuple[Destination, Message, int, int, int]:
        """``send``'s JMS overloads -- ``(message[, deliveryMode, priority, timeToLive])`` or, for a producer
        created without a destination, ``(destination, message[, ...])`` -- read and checked: the destination,
        the message, and the delivery mode, priority and time to live to send it with."""
        if args and isinstance(args[0], Destination):
            if self._destination is not None:
                raise UnsupportedOperationException(
                    "this producer was created for a destination; call send(message, ...) or create the "
                    "producer with createProducer(None) to name the destination per send"
                )
            destination, rest = args[0], args[1:]
        else:
            if self._destination is None:
                raise UnsupportedOperationException(
                    "this producer has no destination; call send(destination, message, ...)"
                )
            destination, rest = self._destination, args
        if not rest or not isinstance(rest[0], Message):
            raise MessageFormatException(f"send() needs a Message created by the session, got {rest[:1]!r}")
        message = rest[0]
        options = rest[1:]
        if not options:  # the producer's own settings, checked when they were set
            return destination, message, self._delivery_mode, self._priority, self._time_to_live
        if len(options) != 3:
            raise JMSException("send(message, deliveryMode, priority, timeToLive): give all three or none")
        mode, priority, ttl = options
        return (
            destination,
            message,
            check_delivery_mode(mode),
            check_priority(priority),
            check_time_to_live(ttl),
        )


def outgoing_message(
    message: Message,
    destination: Destination,
    mode: int,
    priority: int,
    ttl: int,
    delay: int,
    message_id: str | None,
    *,
    stamp_time: bool,
    reserved: frozenset[str],
    origin: str,
) -> OutgoingMessage:
    """Stamp ``message`` for a send (JMS headers set on the sender's object, as JMS requires) and encode it
    for the wire; every API's producer sends through here. ``reserved``: the adapter's header names."""
    now = int(time.time() * 1000)
    timestamp = now if stamp_time else 0
    expiration = now + ttl if ttl else 0  # from the send, delay or not (JMS 2.0 §3.4.9; Qpid JMS too)
    message.stamp_for_send(destination, mode, priority, expiration, timestamp, message_id, now + delay)
    type_tag, body, extra = body_codec.encode_body(message)
    headers = body_codec.encode_properties(message, reserved)
    headers.update(extra)
    return OutgoingMessage(
        destination=destination,
        message_id=message_id,
        timestamp=timestamp,
        delivery_mode=mode,
        priority=priority,
        expiration=expiration,
        time_to_live=ttl,
        correlation_id=message.getJMSCorrelationID(),
        reply_to=message.getJMSReplyTo(),
        jms_type=message.getJMSType(),
        type_tag=type_tag,
        body=body,
        property_headers=headers,
        origin=origin,
        delivery_delay=delay,
        delivery_time=now + delay,
    )


def check_delivery_mode(mode: Any) -> int:
    if mode not in (DeliveryMode.PERSISTENT, DeliveryMode.NON_PERSISTENT) or isinstance(mode, bool):
        raise JMSException(
            f"delivery mode must be DeliveryMode.PERSISTENT (2) or DeliveryMode.NON_PERSISTENT (1), got {mode!r}"
        )
    return int(mode)


def check_priority(priority: Any) -> int:
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= 9:
        raise JMSException(f"priority must be an integer 0-9, got {priority!r}")
    return priority


def check_delivery_delay(delay: Any) -> int:
    if not isinstance(delay, int) or isinstance(delay, bool) or delay < 0:
        raise JMSException(f"delivery delay must be an integer number of milliseconds >= 0, got {delay!r}")
    return delay


def check_time_to_live(ttl: Any) -> int:
    if not isinstance(ttl, int) or isinstance(ttl, bool) or ttl < 0:
        raise JMSException(f"time to live must be an integer number of milliseconds >= 0, got {ttl!r}")
    return ttl

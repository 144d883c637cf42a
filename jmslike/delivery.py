"""What a delivery is to a session, in every API: the broker's message plus its local redeliveries, and
which ACK frames settle a batch of them.

A session redelivers locally (``recover()``, ``rollback()``, a listener that raised) by putting a
:class:`Pending` back in its consumer's inbox with one more local redelivery; JMSRedelivered and
JMSXDeliveryCount follow from it. The threaded :mod:`~jmslike.session_engine` and ``jmslike.aio.session_engine`` share
these rules; nothing here waits or locks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from jmslike.contract import IncomingMessage, SubscriptionSpec
from jmslike.exceptions import MessageFormatException

if TYPE_CHECKING:
    from jmslike.messages import Message


class Subscribed(Protocol):
    """A consumer as these rules see it: its subscription."""

    @property
    def spec(self) -> SubscriptionSpec: ...


C = TypeVar("C", bound=Subscribed)

# A listener that keeps raising in AUTO or DUPS_OK mode gets its message back this many times, like the
# ActiveMQ Java client's maximumRedeliveries; after that the message stays unacknowledged on the broker
# (never dropped) and is redelivered when the consumer closes; on a cumulative DUPS_OK subscription it is
# NACKed instead (SessionEngine._poison).
MAX_LISTENER_REDELIVERIES = 6


@dataclass
class Pending:
    """A message in an inbox or delivered-but-unacknowledged: the broker's view plus local redeliveries."""

    incoming: IncomingMessage
    local_redeliveries: int = 0
    epoch: int = 0  # the session epoch it arrived in: an ack is only valid on that connection

    @property
    def redelivered(self) -> bool:
        return self.incoming.redelivered or self.local_redeliveries > 0

    @property
    def delivery_count(self) -> int:
        return 1 + (1 if self.incoming.redelivered else 0) + self.local_redeliveries

    def again(self) -> Pending:
        return Pending(self.incoming, self.local_redeliveries + 1, self.epoch)


def from_lost_connection(pending: Pending, epoch: int) -> bool:
    """Whether ``pending`` came on a connection since lost (the session is at ``epoch`` now): the broker has it
    again and redelivers it, so it is neither delivered, acknowledged nor handed back on the new connection. Its
    ack id means nothing there: RabbitMQ 3.10 reads only the delivery tag of one, and a stale NACK hit the new
    connection's delivery with the same number (raw STOMP control, README "Connection recovery"). A local copy
    (retained publications, Artemis's auto-acknowledged topic deliveries) was never the broker's to redeliver."""
    return pending.epoch != epoch and not pending.incoming.local


def give_back(
    held: dict[C, list[IncomingMessage]],
    consumer: C,
    pendings: Iterable[Pending],
    epoch: int,
    front: bool = False,
) -> None:
    """Keep ``pendings`` in ``held`` (a session's messages to hand back to the broker when each consumer detaches),
    at the front or the end of ``consumer``'s, without those from a lost connection (:func:`from_lost_connection`;
    review finding: a listener failing after the loss had its closed consumer NACK the old ack id on the new one)."""
    current = [p.incoming for p in pendings if not from_lost_connection(p, epoch)]
    mine = held.setdefault(consumer, [])
    if front:
        mine[:0] = current
    else:
        mine.extend(current)


def cumulative(consumer: Subscribed, pending: Pending) -> bool:
    """Whether ``pending`` came through ``consumer``'s own cumulative subscription: a durable subscriber's
    companion subscription (durable_subscriptions) delivers through it with individual acknowledgement."""
    incoming = pending.incoming
    return consumer.spec.cumulative_ack and (incoming.local or incoming.sub_id == consumer.spec.sub_id)


class LazyAcks(Generic[C]):
    """DUPS_OK_ACKNOWLEDGE on a cumulative subscription acknowledges lazily, as JMS allows there (duplicates
    after a failure): one ACK for half a prefetch of consumed messages, or as soon as the consumer has nothing
    buffered, so an idle consumer owes the broker nothing. Per consumer: how many it owes and the newest of them,
    whose one ACK settles them all. A local delivery (jmslike's own, nothing on the broker) never stands in for
    the ACK owed for broker messages. No lock: the session guards it."""

    def __init__(self) -> None:
        self._owed: dict[C, tuple[int, Pending]] = {}

    def consumed(self, consumer: C, pending: Pending, buffered: bool) -> Pending | None:
        """``consumer`` is done with ``pending`` (``buffered``: it holds more): the delivery to ACK now, if any."""
        owed, newest = self._owed.pop(consumer, (0, None))
        if not pending.incoming.local:
            owed, newest = owed + 1, pending
        if newest is None:
            return None
        if owed < max(1, consumer.spec.prefetch // 2) and buffered:
            self._owed[consumer] = (owed, newest)
            return None
        return newest

    def flush(self, consumer: C) -> Pending | None:
        """The ACK ``consumer`` still owes (before it detaches, or a message of it is taken off the
        subscription), if any."""
        entry = self._owed.pop(consumer, None)
        return entry[1] if entry is not None else None

    def clear(self) -> None:
        """The connection was lost: the broker has every unacknowledged delivery again."""
        self._owed.clear()


def acks_for(batch: Sequence[tuple[C, Pending]]) -> list[Pending]:
    """The deliveries whose ACK frames acknowledge ``batch``: each one, except that a cumulative
    subscription needs only its newest (consumption follows delivery order, recovered messages go back to
    the front of the inbox, so the newest consumed is the last delivered of those owed)."""
    acks: list[Pending] = []
    newest: dict[C, Pending] = {}
    for consumer, pending in batch:
        if cumulative(consumer, pending) and not pending.incoming.local:
            newest[consumer] = pending
        else:
            acks.append(pending)
    return acks + list(newest.values())


def body_refused(message: Message, body_type: type[Any], left_in_place: bool) -> MessageFormatException:
    """JMS 2.0 ``receiveBody``: a body that cannot be returned as ``body_type``. In AUTO and DUPS_OK mode the
    message is left in place for the next receive; otherwise it counts as delivered."""
    return MessageFormatException(
        f"the body of {type(message).__name__} {message.getJMSMessageID()} cannot be returned as "
        f"{getattr(body_type, '__name__', body_type)}; "
        + (
            "it stays in place for the next receive"
            if left_in_place
            else "it counts as delivered (acknowledge, commit or recover decide its fate)"
        )
    )

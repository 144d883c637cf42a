"""``jmslike.aio``'s session engine: delivery, acknowledgement, transactions and the listener task on the
event loop, no thread; sends go through it to :mod:`jmslike.aio.sending`. ``jmslike.aio.session.Session`` adds the JMS factory methods on top.

The JMS rules are the threaded :class:`~jmslike.session.Session`'s, and where a rule is pure it is the same code
(:mod:`~jmslike.delivery`, :func:`~jmslike.consumer.client_accepts`, :func:`~jmslike.consumer.build_message`,
:class:`~jmslike.send_window.SendPlaces`, :mod:`~jmslike.transaction_outcomes`):

- one delivery at a time per session: listeners run in one task per session, one message at a time; a
  ``receive`` hands out the next message of its consumer;
- AUTO_ACKNOWLEDGE and DUPS_OK_ACKNOWLEDGE acknowledge a message once ``receive`` returned it or its listener
  returned; CLIENT_ACKNOWLEDGE acknowledges everything delivered so far (``await message.acknowledge()`` or
  ``await session.acknowledge()``); INDIVIDUAL_ACKNOWLEDGE one message;
- ``recover()`` and ``rollback()`` redeliver locally, oldest first, flagged redelivered;
- ``commit()`` returns only once the broker has the transaction (and, where it confirms a transaction's
  sends only after COMMIT, each of them); an unknown outcome is a JMSException, never
  TransactionRolledBackException;
- a NON_PERSISTENT send outside a transaction does not wait for its receipt, bounded by the send window; its
  error reaches the ExceptionListener and the producer's next call; ``close`` and ``commit`` wait for them
  (the sends themselves: :mod:`jmslike.aio.sending`, which uses this engine's public methods only).

The wake-up of waiting coroutines is one ``asyncio.Event`` per session, replaced at every wake: a waiter holds
the event it saw, so no wake-up between its check and its wait is lost (everything runs on the loop).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import itertools
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from jmslike.aio import listener_scope
from jmslike.aio.consumer import MessageConsumer, nothing_to_acknowledge
from jmslike.aio.producer import MessageProducer
from jmslike.aio.sending import Sender, completion
from jmslike.aio.wakeup import Wakeup, event_within
from jmslike.catalogue import optional_registry
from jmslike.constants import AcknowledgeMode
from jmslike.consumer import build_message
from jmslike.contract import AsyncPendingReceipt, AsyncWire, IncomingMessage
from jmslike.delivery import (
    MAX_LISTENER_REDELIVERIES,
    LazyAcks,
    Pending,
    acks_for,
    body_refused,
    cumulative,
    from_lost_connection,
    give_back,
)
from jmslike.exceptions import (
    ConnectionLostException,
    IllegalStateException,
    JMSException,
    JMSTimeoutException,
    TransactionRolledBackException,
    as_jms_exception,
)
from jmslike.messages import Message
from jmslike.send_window import CompletionOrder
from jmslike.subscription_plans import (
    of_durable_subscription,
)
from jmslike.subscriptions import DurableDefinition
from jmslike.transaction_outcomes import (
    abandon_sends,
    commit_in_doubt,
    commit_lost,
    deferred_receipt_error,
    sends_in_doubt,
)

if TYPE_CHECKING:
    from jmslike.aio.connection import Connection
    from jmslike.producer import CompletionListener

log = logging.getLogger(__name__)

_T = TypeVar("_T")

_ACK_ON_DELIVERY = (AcknowledgeMode.AUTO_ACKNOWLEDGE, AcknowledgeMode.DUPS_OK_ACKNOWLEDGE)
# Modes whose subscriptions take cumulative ACKs where the broker has them (DUPS_OK: lazily, LazyAcks).
_CUMULATIVE_MODES = (AcknowledgeMode.CLIENT_ACKNOWLEDGE, AcknowledgeMode.DUPS_OK_ACKNOWLEDGE)
_ACK_LATER = (
    AcknowledgeMode.CLIENT_ACKNOWLEDGE,
    AcknowledgeMode.SESSION_TRANSACTED,
    AcknowledgeMode.INDIVIDUAL_ACKNOWLEDGE,
)


@dataclasses.dataclass
class _Ending:
    """A transaction taken from its session by the commit or rollback that ends it: its STOMP id, what it
    consumed, its sends whose receipts the broker sends only at COMMIT with their callbacks (told if it rolls
    back), and the work that needs it committed."""

    tx: str | None
    consumed: list[tuple[MessageConsumer, Pending]]
    deferred: list[AsyncPendingReceipt]
    abandon: list[Callable[[JMSException | None], None]]
    after: list[Callable[[], Awaitable[None]]]


@dataclasses.dataclass
class _Caller:
    """Whether the caller of work run to its end (``_run_to_end``) still waits for it."""

    waiting: bool = True


class SessionEngine:
    """State and rules of an asyncio session (see the module doc); ``Session`` is the JMS face on top of it."""

    _tx_ids = itertools.count(1)

    def __init__(self, connection: Connection, acknowledge_mode: int) -> None:
        self._connection = connection
        self._mode = acknowledge_mode
        self._consumers: list[MessageConsumer] = []
        self._closing: list[MessageConsumer] = []  # closed, detach deferred until what they delivered settles
        self._orphans: dict[MessageConsumer, list[IncomingMessage]] = {}  # go back to the broker at detach
        self._producers: list[MessageProducer] = []
        self._unacked: list[tuple[MessageConsumer, Pending]] = []
        self._tx: str | None = None
        self._deferred: list[
            AsyncPendingReceipt
        ] = []  # transactional sends the broker answers only after COMMIT
        self._deferred_abandon: list[
            Callable[[JMSException | None], None]
        ] = []  # their callbacks, if rolled back
        # Work that needs the transaction committed (jmslike.aio.retained).
        self._after_commit: list[Callable[[], Awaitable[None]]] = []
        self._lazy_acks: LazyAcks[MessageConsumer] = LazyAcks()  # DUPS_OK on a cumulative subscription
        self._rollback_only: str | None = None
        # One transaction boundary at a time: a commit, a rollback, a close's rollback and a send's BEGIN each
        # hold this. A commit whose caller was cancelled runs on (_run_to_end), and what the session does next
        # (send, commit, rollback, close) waits for it rather than slipping into it.
        self._boundary = asyncio.Lock()
        # The deliveries of a transaction being ended (a commit or rollback under way): a connection lost meanwhile
        # makes the next transaction 'rollback only' only if it holds others (received meanwhile) or has begun.
        self._ending_ids: set[int] = set()
        self._epoch = 0  # advances when the connection is lost: earlier deliveries can no longer be acked
        self._closed = False
        self._stopping = False
        self._sender = Sender(self)  # the sends, and the send window they share
        self._changed = Wakeup()  # a message, start, close, loss, the last send settled: jmslike.aio.wakeup
        self._dispatcher: asyncio.Task[None] | None = None
        self._current: tuple[MessageConsumer, Pending] | None = None  # the listener's delivery, while it runs
        self._recover_current = False
        self._rr = 0
        self._background: set[asyncio.Future[None]] = set()  # clean-ups of calls whose caller was cancelled
        self._close_task: asyncio.Future[None] | None = None
        self._ending_transactions = False  # close() has rolled back: no transaction begins any more
        # Transactional sends past their transaction check whose frames are not with the transport yet, and
        # whether a commit, rollback or close waits for them before it takes the open transaction (_hands_empty):
        # then new sends do not join that transaction but wait at the boundary for the next.
        self._in_hand = 0
        self._taking_open = False
        # commit() and rollback() calls under way. Each ends the work done before it was called: a send made
        # after it (its caller cancelled, the application going on) waits for it to end and joins the next
        # transaction, and what it consumed is what was received before the call (review finding: a cancelled
        # rollback aborted a send made after it, which was then lost without a word).
        self._endings = 0
        self._dispatching = False  # the dispatch task is delivering to a listener or settling after it
        self._tasks: deque[Callable[[], Awaitable[None] | None]] = deque()  # completion callbacks, in order
        self._completions: CompletionOrder[Callable[[], Awaitable[None] | None]] = CompletionOrder()
        # Completion callbacks run in the dispatch task, or in the commit a listener called, which runs those
        # queued behind that listener (settle_sends) in its own task. Both may take callbacks at once (a
        # listener's commit whose caller was cancelled runs on while the dispatch task goes on), so a lock makes
        # them run one at a time, in send order.
        self._callback_running = False
        self._callback_lock = asyncio.Lock()

    @property
    def connection(self) -> Connection:
        return self._connection

    @property
    def transacted(self) -> bool:
        return self._mode == AcknowledgeMode.SESSION_TRANSACTED

    @property
    def epoch(self) -> int:
        return self._epoch

    def check_open(self) -> None:
        if self._closed:
            raise IllegalStateException("the session is closed")
        self._connection.check_open()

    def still_attached(self, durable_name: str) -> bool:
        """A closed consumer of durable subscription ``durable_name`` waits for its messages to be settled."""
        return any(c.spec.durable_name == durable_name for c in self._closing)

    def holds_unacked(self, durable_name: str) -> bool:
        """Whether a delivered message of durable subscription ``durable_name`` (unshared or shared) is
        unacknowledged or in the open transaction."""
        return any(of_durable_subscription(c.spec, durable_name) for c, _ in self._unacked)

    async def record_detached(self, definition: DurableDefinition) -> None:
        """A durable consumer closed: the registry records when (for expiry and administration)."""
        connection = self._connection
        if connection.wire_closed or connection.failure is not None:
            return
        registry = await connection.in_worker(optional_registry, connection)
        if registry is None:
            return
        try:
            await connection.in_worker(registry.detached, definition)
        except JMSException as exc:
            log.warning("could not record that durable subscription %r was closed: %s", definition.name, exc)

    async def _attach(self, consumer: MessageConsumer) -> MessageConsumer:
        """Register ``consumer`` and subscribe it on the broker; the subscription exists when this returns. If
        the caller is cancelled the subscribe goes on in its worker thread, and what it made is ended."""
        connection = self._connection
        adapter = connection.adapter
        if self._mode in _CUMULATIVE_MODES and adapter.cumulative_client_ack:
            consumer.spec = dataclasses.replace(consumer.spec, cumulative_ack=True)
        await connection.use_wire()  # a reconnect under way: subscribe on the new wire
        connection.register_consumer(consumer)
        subscribing = asyncio.ensure_future(
            connection.in_worker(adapter.subscribe, connection.blocking_wire(), consumer.spec)
        )
        try:
            await asyncio.shield(subscribing)
        except asyncio.CancelledError:
            # The worker thread goes on and the subscription may come into being: end it once it has.
            cleanup = asyncio.ensure_future(self._abandon(consumer, subscribing))
            self._background.add(cleanup)
            cleanup.add_done_callback(self._background.discard)
            raise
        except BaseException:
            consumer.inbox.close()  # what arrived before the failure counts against the byte bound no more
            connection.unregister_consumer(consumer)
            raise
        self._consumers.append(consumer)
        return consumer

    async def _abandon(self, consumer: MessageConsumer, subscribing: asyncio.Future[None]) -> None:
        """A createConsumer whose caller was cancelled: once the subscribe ended, detach what it made."""
        await asyncio.wait({subscribing})
        if subscribing.cancelled() or subscribing.exception() is not None:
            consumer.inbox.close()
            self._connection.unregister_consumer(consumer)
            return
        await self._detach(consumer, consumer.stop_taking())

    def remove_producer(self, producer: MessageProducer) -> None:
        if producer in self._producers:
            self._producers.remove(producer)

    def wake(self) -> None:
        """Wake every coroutine of this session waiting for a change (a message, start, close, loss)."""
        self._changed.wake()

    def enqueue(self, consumer: MessageConsumer, incoming: IncomingMessage) -> None:
        """From the wire's reader (on the loop): hand over and wake; a closed consumer's message goes back to
        the broker when it detaches."""
        pending = Pending(incoming, epoch=self._epoch)
        if consumer.closed:
            self._orphans.setdefault(consumer, []).append(incoming)
            return
        consumer.inbox.put(pending)
        self.wake()

    async def _take(self, consumer: MessageConsumer, deadline: float | None) -> Pending | None:
        loop = asyncio.get_running_loop()
        while True:
            if consumer.closed or self._closed:
                return None
            failure = self._connection.failure
            if failure is not None:
                raise ConnectionLostException(f"cannot receive: {failure}") from failure
            connection = self._connection
            if connection.started.is_set() and connection.ready.is_set() and consumer.inbox:
                return consumer.inbox.take()
            changed = self._changed.event
            if deadline is None:
                await changed.wait()
                continue
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            if not await event_within(changed, remaining):
                return None

    async def receive_for(
        self, consumer: MessageConsumer, deadline: float | None, body_type: type[Any] | None = None
    ) -> Message | None:
        """The next message of ``consumer`` (None when ``deadline``, loop time, passes or it is closed). With
        ``body_type`` (JMS 2.0 ``receiveBody``) a body that cannot be returned as that type raises
        MessageFormatException: in AUTO and DUPS_OK mode the message stays in place, as in the threaded API."""
        while True:
            pending = await self._take(consumer, deadline)
            if pending is None:
                return None
            # No await from here to the return: a receive cancelled now has taken nothing.
            message = self._deliver(consumer, pending)
            if message is None:
                continue
            if body_type is not None and not message.isBodyAssignableTo(body_type):
                auto = self._mode in _ACK_ON_DELIVERY
                if auto:
                    consumer.inbox.put_back(pending)
                    self.wake()
                raise body_refused(message, body_type, left_in_place=auto)
            if self._mode in _ACK_ON_DELIVERY:
                self._ack_consumed(consumer, pending)
            return message

    def _deliver(self, consumer: MessageConsumer, pending: Pending) -> Message | None:
        """A pending delivery as a Message, or dropped (expired, or not for this subscription) with its ack."""
        incoming = pending.incoming
        connection = self._connection
        if from_lost_connection(pending, self._epoch):
            # Left in an inbox the loss did not clear (a consumer still subscribing), or put back by a listener
            # that failed after a reconnect, it was delivered twice, and its ACK went to the new connection.
            return None
        if incoming.expired() or not consumer.accepts(incoming):
            self._drop(consumer, pending)
            return None
        message = build_message(
            incoming,
            connection.adapter.reserved_headers,
            connection.serializers,
            redelivered=pending.redelivered,
            delivery_count=pending.delivery_count,
        )
        if self._mode in _ACK_LATER:
            self._unacked.append((consumer, pending))
            generation = pending.epoch
            if self._mode == AcknowledgeMode.CLIENT_ACKNOWLEDGE:
                message.bind_acknowledger(lambda: self._run_to_end(self._acknowledge_all(generation)))
            elif self._mode == AcknowledgeMode.INDIVIDUAL_ACKNOWLEDGE:
                message.bind_acknowledger(
                    lambda: self._run_to_end(self._acknowledge_one(pending, generation))
                )
        if message.acknowledger is None:
            # Ignored in the other modes (JMS), yet awaitable, as docs/aio.md writes it for every mode.
            message.bind_acknowledger(nothing_to_acknowledge)
        return message

    def _drop(self, consumer: MessageConsumer, pending: Pending) -> None:
        """Acknowledged at once, except on a cumulative subscription, where its ACK would also acknowledge what
        the application has not: the next acknowledge() settles it (DUPS_OK: the lazy ACK, LazyAcks)."""
        if self._mode == AcknowledgeMode.DUPS_OK_ACKNOWLEDGE:
            self._ack_consumed(consumer, pending)
        elif cumulative(consumer, pending):
            self._unacked.append((consumer, pending))
        else:
            self._ack_now(pending)

    def _ack_consumed(self, consumer: MessageConsumer, pending: Pending) -> None:
        """AUTO / DUPS_OK: the message is done with. AUTO acknowledges each one; DUPS_OK on a cumulative
        subscription lazily (delivery.LazyAcks), as the threaded API does."""
        if not cumulative(consumer, pending):
            self._ack_now(pending)
            return
        due = self._lazy_acks.consumed(consumer, pending, buffered=bool(consumer.inbox))
        if due is not None:
            self._ack_now(due)

    def _flush_lazy_ack(self, consumer: MessageConsumer) -> None:
        """DUPS_OK: send the ACK ``consumer`` still owes (before it detaches, or before a message of it is taken
        off the subscription)."""
        due = self._lazy_acks.flush(consumer)
        if due is not None:
            self._ack_now(due)

    def _poison(self, consumer: MessageConsumer, pending: Pending) -> None:
        """A listener failed ``pending`` too often. Normally it goes back to the broker when its consumer
        detaches; on a cumulative DUPS_OK subscription any later ACK would acknowledge it too, so it is taken off
        the subscription now (the broker's dead-letter queue) after the ACK owed for what came before it."""
        if not cumulative(consumer, pending) or self._mode != AcknowledgeMode.DUPS_OK_ACKNOWLEDGE:
            self._give_back(consumer, [pending])
            return
        self._flush_lazy_ack(consumer)
        if pending.epoch != self._epoch or pending.incoming.local:
            return  # the broker has it back already (lost connection), or never had it (local)
        try:
            self._connection.wire.post_nowait(self._connection.adapter.poison_frame(pending.incoming))
        except ConnectionLostException:
            log.debug("poison NACK lost with the connection; the broker will redeliver")

    def _give_back(self, consumer: MessageConsumer, pendings: Iterable[Pending], front: bool = False) -> None:
        """Keep ``pendings`` to be handed back to the broker when ``consumer`` detaches (delivery.give_back)."""
        give_back(self._orphans, consumer, pendings, self._epoch, front)

    def _ack_now(self, pending: Pending) -> None:
        """One ACK without a receipt, handed to the transport at once (no await, so no cancellation splits a
        delivery from its ACK); a delivery from before a connection loss belongs to the broker again."""
        if pending.epoch != self._epoch or pending.incoming.local:
            return
        try:
            self._connection.wire.post_nowait(self._connection.adapter.ack_frame(pending.incoming, None))
        except ConnectionLostException:
            log.debug("ack lost with the connection; the broker will redeliver")

    async def _run_to_end(self, work: Coroutine[Any, Any, _T], caller: _Caller | None = None) -> _T:
        """Await ``work``, which runs to its end even if the caller is cancelled: an acknowledge, commit,
        rollback or close cancelled half way would leave the session's state and the broker's apart. The
        caller's cancellation is raised as usual; a failure after it is logged. Each of these calls takes what
        it settles from the session before its first await (a commit its transaction, an acknowledge its
        batch), so a later call never joins work already under way. ``caller`` learns when the caller is gone,
        for work that does less then."""
        task = asyncio.ensure_future(work)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if caller is not None:
                caller.waiting = False
            task.add_done_callback(_log_failure)
            raise

    def _check_generation(self, generation: int) -> None:
        if generation != self._epoch:
            raise ConnectionLostException(
                "this message was delivered before the connection was lost; it cannot be acknowledged any more: "
                "the broker redelivers it (flagged redelivered)"
            )

    async def acknowledge(self) -> None:
        """CLIENT_ACKNOWLEDGE: acknowledge everything this session delivered so far (JMS 2.0
        ``JMSContext.acknowledge()``); nothing in the other modes, as JMS says."""
        await self._run_to_end(self._acknowledge())

    async def _acknowledge(self) -> None:
        self.check_open()
        if self._mode == AcknowledgeMode.CLIENT_ACKNOWLEDGE:
            await self._acknowledge_all(self._epoch)

    async def _acknowledge_all(self, generation: int) -> None:
        self.check_open()
        self._check_generation(generation)
        batch, self._unacked = self._unacked, []
        try:
            await self._send_acks(acks_for(batch), None)
        except JMSException:
            if all(p.epoch == self._epoch for _, p in batch):  # not acknowledged after all: still owed
                self._unacked[:0] = batch
            raise
        finally:
            await self._release_closed()

    async def _acknowledge_one(self, pending: Pending, generation: int) -> None:
        self.check_open()
        self._check_generation(generation)
        entry = next(((c, p) for c, p in self._unacked if p is pending), None)
        if entry is None:
            return
        self._unacked.remove(entry)
        try:
            await self._send_acks([pending], None)
        except JMSException:
            if pending.epoch == self._epoch:
                self._unacked.insert(0, entry)
            raise
        finally:
            await self._release_closed()

    async def _send_acks(self, batch: list[Pending], transaction: str | None) -> None:
        """ACK frames for ``batch``; the last one with a receipt, so the broker has them all on return."""
        batch = [p for p in batch if not p.incoming.local]
        if not batch:
            return
        wire = await self._connection.use_wire()
        adapter = self._connection.adapter
        for pending in batch[:-1]:
            await wire.post(adapter.ack_frame(pending.incoming, transaction))
        await wire.request(adapter.ack_frame(batch[-1].incoming, transaction))

    def _redeliver_locally(self, entries: list[tuple[MessageConsumer, Pending]]) -> None:
        """Put delivered messages back at the front of their inboxes, in their original order."""
        for consumer, pending in reversed(entries):
            if consumer.closed:
                self._give_back(consumer, [pending], front=True)
            else:
                consumer.inbox.put_back(pending.again())
        self.wake()

    async def recover(self) -> None:
        """Redeliver from the oldest unacknowledged message, flagged redelivered."""
        self.check_open()
        if self.transacted:
            raise IllegalStateException("recover() is not allowed in a transacted session; use rollback()")
        if self._current is not None and self._for_listener():
            self._recover_current = True  # the listener's own message comes again too
        await self._run_to_end(self._recover())

    async def _recover(self) -> None:
        batch, self._unacked = self._unacked, []
        self._redeliver_locally(batch)
        await self._release_closed()

    async def transaction_for_send(self) -> str | None:
        """The STOMP transaction a send joins (BEGIN on first use), or None outside transactions."""
        if not self.transacted:
            return None
        await self._after_endings()
        if self._rollback_only is not None:
            raise TransactionRolledBackException(
                f"the transaction can only roll back: {self._rollback_only}; call rollback() and retry"
            )
        if self._tx is not None and not self._taking_open:
            return self._tx
        return await self._holding_boundary(self._begin)

    async def in_transaction(self, work: Callable[[str], Awaitable[None]]) -> None:
        """Run ``work`` with the open transaction (begun if there is none) while no commit or rollback can end
        it: a retained send's two SENDs both go into the transaction they began in, also when its caller is
        cancelled once they started and the application commits meanwhile. A caller cancelled before (waiting
        for the BEGIN or a reconnect) sends nothing."""
        caller = _Caller()
        await self._after_endings()

        async def begun(wire: AsyncWire) -> None:
            transaction = await self._begin(wire)
            if caller.waiting:
                await work(transaction)

        await self._holding_boundary(begun, caller)

    async def _holding_boundary(
        self, work: Callable[[AsyncWire], Awaitable[_T]], caller: _Caller | None = None
    ) -> _T:
        """Run ``work`` on the wire under ``_boundary``; from the moment it holds the boundary, it runs to its
        end even if this caller is cancelled (a BEGIN may be on its way: the transaction it begins is the
        session's, which the next send joins and commit or rollback ends, instead of staying open on the
        broker, unknown to the session, until the connection closes)."""
        wire = await self._connection.use_wire()  # a reconnect is waited for side by side, not in turn
        timeout_s = self._connection.config.receipt_timeout_ms / 1000
        if (
            self._taking_open
        ):  # an ending under way: its sends in hand, then its COMMIT, each within that time
            timeout_s *= 2
        try:  # behind a commit under way, or another send's BEGIN: bounded by the receipt timeout
            async with asyncio.timeout(timeout_s):
                await self._boundary.acquire()
        except TimeoutError:
            raise JMSTimeoutException(
                f"no transaction could begin within {timeout_s:.1f}s (receipt_timeout_ms): the session was "
                "ending its transaction (a commit, rollback or close, waiting for the sends in it and for the "
                "broker's answer) or beginning one (another send's BEGIN) all that time; nothing was sent: send "
                "again"
            ) from None
        return await self._run_to_end(self._release_after(wire, work), caller)

    async def _release_after(self, wire: AsyncWire, work: Callable[[AsyncWire], Awaitable[_T]]) -> _T:
        try:
            if self._ending_transactions:  # queued behind close()'s rollback: nothing was sent
                raise IllegalStateException(
                    "the session was closed while this send waited to begin a transaction"
                )
            if not wire.is_open:  # lost while this send waited: the reconnected one (use_wire waits, bounded)
                wire = await self._connection.use_wire()
            return await work(wire)
        finally:
            self._boundary.release()

    async def _begin(self, wire: AsyncWire) -> str:
        """The open transaction, begun now on ``wire`` if there is none (the caller holds ``_boundary``)."""
        if self._rollback_only is not None:
            raise TransactionRolledBackException(
                f"the transaction can only roll back: {self._rollback_only}; call rollback() and retry"
            )
        if self._tx is None:
            tx = f"{self._connection.connection_id}-tx{next(self._tx_ids)}"
            epoch = self._epoch
            await wire.request(self._connection.adapter.transaction_frame("BEGIN", tx))
            if self._epoch != epoch:  # answered, then lost before this task ran again
                raise ConnectionLostException(
                    "the connection to the broker was lost while beginning a transaction"
                )
            self._tx = tx
        return self._tx

    def mark_rollback_only(self, reason: str) -> None:
        """The open transaction may hold half of something that must be all or nothing (a retained send's pair):
        it can only roll back, and commit() says why."""
        if self._rollback_only is None:
            self._rollback_only = reason

    def defer_receipt(self, pending: AsyncPendingReceipt) -> None:
        """A transactional send whose receipt the broker sends only after COMMIT: ``commit()`` waits for it."""
        self._deferred.append(pending)

    def after_commit(self, task: Callable[[], Awaitable[None]]) -> None:
        """Run ``task`` once the open transaction committed (dropped if it rolls back or is lost)."""
        self._after_commit.append(task)

    def complete_sent(self, listener: CompletionListener, message: Message) -> None:
        """A send that returned only once the broker had it (a retained one): its callback, in send order."""
        self.complete(self.completion_ticket(listener), completion(listener, message, None))

    @property
    def open_transaction(self) -> str | None:
        """The STOMP id of the transaction sends join now (None: none begun, or not transacted)."""
        return self._tx

    def hold_in_hand(self) -> Callable[[], None]:
        """A transactional send is past its transaction check and its frame is not with the transport yet: a
        commit, rollback or close waits for it before taking the open transaction (``_hands_empty``). Returns
        what releases it (once; a second call does nothing)."""
        self._in_hand += 1
        return _once(self._handed)

    def _handed(self) -> None:
        self._in_hand -= 1
        self.wake()

    def deferring(
        self, abandon: Callable[[JMSException | None], None] | None
    ) -> Callable[[AsyncPendingReceipt], None]:
        """For a transactional send whose receipt the broker sends only after COMMIT (RabbitMQ): what records its
        pending receipt in the transaction open now, for ``commit()`` to wait for, and ``abandon`` (its
        CompletionListener's settlement) to be told if that transaction rolls back instead. Bound to this
        transaction's lists: a send handed over after its transaction ended still lands in that one."""
        deferred, abandoned = self._deferred, self._deferred_abandon

        def submitted(pending: AsyncPendingReceipt) -> None:
            deferred.append(pending)
            if abandon is not None:
                abandoned.append(abandon)

        return submitted

    @property
    def sender(self) -> Sender:
        """This session's sends (jmslike.aio.sending): producers hand their messages to it."""
        return self._sender

    async def changed_within(self, timeout_s: float) -> bool:
        """Wait for the session's next wake-up at most ``timeout_s``; False when the time ran out."""
        return await event_within(self._changed.event, timeout_s)

    async def commit(self) -> None:
        """Commit; TransactionRolledBackException only when nothing was committed for certain, a JMSException
        (ConnectionLostException for a loss) when the outcome is unknown."""
        self.refuse_in_callback("commit()")
        await self.wait_out_callback("commit()")
        await self._run_to_end(
            self._commit(self._for_listener(), self._consumed_so_far(), self._ending_begins())
        )

    def _consumed_so_far(self) -> dict[int, Pending]:
        """What a commit or rollback called now ends: the deliveries received so far, by id. The objects are kept, not
        only their ids: a delivery freed meanwhile (a connection loss empties the list) could leave its id to a new
        one, which the commit would then take as its own (review finding)."""
        return {id(p): p for _, p in self._unacked}

    def _ending_begins(self) -> Callable[[], None]:
        """Count a commit or rollback as under way (``_endings``) from its call until it has taken the open
        transaction and let go of the boundary (or failed before); returns what ends the count (once; a second call
        does nothing). Not until its end: what a commit waits for after the boundary (RabbitMQ's deferred receipts,
        the after-commit work) holds up no send of the next transaction."""
        self._endings += 1
        return _once(self._ending_ended)

    def _ending_ended(self) -> None:
        self._endings -= 1
        self.wake()

    async def _after_endings(self) -> None:
        """A send (not one of this session's completion callbacks, which a commit waits for) made while a commit or
        rollback is under way waits for it to end, bounded as a wait for the boundary is."""
        if not self._endings or self._in_callback():
            return
        loop = asyncio.get_running_loop()
        timeout_s = 2 * self._connection.config.receipt_timeout_ms / 1000
        deadline = loop.time() + timeout_s
        while self._endings:
            if not await self.changed_within(deadline - loop.time()):
                raise JMSTimeoutException(
                    f"no transaction could begin within {timeout_s:.1f}s (receipt_timeout_ms): a commit or rollback "
                    "called before this send was still ending its transaction; nothing was sent: send again"
                )

    async def _commit(self, mine: bool, received: dict[int, Pending], ends: Callable[[], None]) -> None:
        try:
            self.check_open()
            if not self.transacted:
                raise IllegalStateException("commit() needs a transacted session: createSession(True, ...)")
            if not await self.settle_sends(mine):
                raise JMSException(
                    "asynchronous sends of this transaction are still unconfirmed after the receipt timeout, so "
                    "it was not committed; call rollback() and send again"
                )
            async with self._boundary:
                committed = await self._commit_under_boundary(received)
        finally:
            ends()
        if committed is None:
            return
        consumed, ending = committed
        # Outside the boundary: waiting for what the broker confirms only after COMMIT, and the after-commit
        # work (removing older retained copies browses, up to 30 s), must not hold the session's next send.
        try:
            await self._await_deferred(ending.deferred)
            for task in ending.after:
                await task()
            await self.settle_sends(
                mine
            )  # callbacks of sends answered only at COMMIT (RabbitMQ) have returned
            if not self._connection.adapter.capabilities.transactional_acks:
                # The sends are committed; now the consumed messages. A failure here loses nothing: they come
                # back flagged redelivered (at-least-once for consumption on such brokers).
                try:
                    await self._send_acks([p for _, p in consumed], None)
                except JMSException as exc:
                    self._connection.report(exc)
        finally:
            await self._release_closed()  # after those ACKs: a consumer closed meanwhile is detached only now

    async def _commit_under_boundary(
        self, received: dict[int, Pending]
    ) -> tuple[list[tuple[MessageConsumer, Pending]], _Ending] | None:
        """COMMIT the open transaction; once committed, what it consumed and what it took from the session
        (None when there was nothing to commit)."""
        if self._ending_transactions:
            # close() took the boundary first and rolled the transaction back: finding nothing open now is no
            # commit (review finding: this returned as if committed).
            raise TransactionRolledBackException(
                "the session was closed while this commit waited for its asynchronous sends; close() rolled the "
                "transaction back"
            )
        rollback_only, epoch = self._rollback_only, self._epoch
        consumed = [(c, p) for c, p in self._unacked if received.get(id(p)) is p]
        if rollback_only is not None:
            await self._rollback_local(redeliver=True, received=received)
            raise TransactionRolledBackException(f"the transaction was rolled back: {rollback_only}")
        if not consumed and self._tx is None:
            return None
        self._ending_ids = {id(p) for _, p in consumed}
        try:
            return await self._commit_consumed(consumed, epoch)
        finally:
            self._ending_ids = set()

    async def _commit_consumed(
        self, consumed: list[tuple[MessageConsumer, Pending]], epoch: int
    ) -> tuple[list[tuple[MessageConsumer, Pending]], _Ending]:
        adapter = self._connection.adapter
        try:
            await self._begin(await self._connection.use_wire())  # only consumed messages: their ACKs' one
        except JMSException as exc:
            # This commit's transaction only: a message received meanwhile is the next one's, and a loss
            # meanwhile left that one 'rollback only'.
            await self._rollback_local(redeliver=True, ending=self._take_open(consumed))
            raise TransactionRolledBackException(f"commit failed before COMMIT was sent: {exc}") from exc
        await self._hands_empty()
        ending = self._take_open(consumed)
        tx = ending.tx
        if tx is None:  # lost while the sends in hand went out: on_connection_lost dropped the transaction
            await self._rollback_local(redeliver=True, ending=ending)
            raise TransactionRolledBackException(
                "commit failed before COMMIT was sent: the connection to the broker was lost during the transaction"
            )
        try:
            wire = await self._connection.use_wire()
            if adapter.capabilities.transactional_acks:
                for _, pending in consumed:
                    if not pending.incoming.local:
                        await wire.post(adapter.ack_frame(pending.incoming, tx))
            if self._epoch != epoch:
                raise ConnectionLostException("the connection to the broker was lost during the transaction")
        except JMSException as exc:
            await self._rollback_local(redeliver=True, ending=ending)
            raise TransactionRolledBackException(f"commit failed before COMMIT was sent: {exc}") from exc
        try:
            await wire.request(adapter.transaction_frame("COMMIT", tx))
        except ConnectionLostException as exc:
            self._forget_transaction(consumed)
            await self._release_closed()
            raise commit_lost() from exc
        except JMSTimeoutException as exc:
            wire.discard(
                ending.deferred
            )  # no answer will settle them now: told, not left for later callbacks
            abandon_sends(ending.abandon, sends_in_doubt())
            self._forget_transaction(consumed)
            await self._release_closed()
            raise commit_in_doubt() from exc
        except JMSException as exc:
            await self._rollback_local(redeliver=True, ending=ending)
            raise TransactionRolledBackException(f"the broker refused COMMIT: {exc}") from exc
        self._forget_transaction(consumed)
        return consumed, ending

    async def _await_deferred(self, deferred: list[AsyncPendingReceipt]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._connection.config.receipt_timeout_ms / 1000
        for item in deferred:
            answered = await item.answered(max(0.0, deadline - loop.time()))
            error = deferred_receipt_error(answered, item.error)
            if error is not None:
                raise error

    def _forget_transaction(self, consumed: list[tuple[MessageConsumer, Pending]]) -> None:
        """The transaction is over (committed, or its outcome reported as unknown): the next starts clean. Its
        closed consumers are detached by the caller (_release_closed), once their ACKs are sent."""
        done = {id(p) for _, p in consumed}
        self._unacked = [(c, p) for c, p in self._unacked if id(p) not in done]

    async def rollback(self) -> None:
        """Discard the transaction's sends and redeliver what it consumed, flagged redelivered."""
        self.refuse_in_callback("rollback()")
        await self.wait_out_callback("rollback()")
        await self._run_to_end(
            self._rollback(self._for_listener(), self._consumed_so_far(), self._ending_begins())
        )

    async def _rollback(self, mine: bool, received: dict[int, Pending], ends: Callable[[], None]) -> None:
        try:
            self.check_open()
            if not self.transacted:
                raise IllegalStateException("rollback() needs a transacted session: createSession(True, ...)")
            await self.settle_sends(mine)
            async with self._boundary:
                failure = await self._rollback_local(redeliver=True, received=received)
        finally:
            ends()
        if failure is not None:
            raise failure

    async def _hands_empty(self) -> None:
        """Before ending the open transaction: until the sends in hand have their frames with the transport (each
        within the write deadline, which drops the connection otherwise)."""
        self._taking_open = True  # sends from now on wait for the next transaction: this wait ends
        try:
            while self._in_hand:
                await self._changed.event.wait()
        except BaseException:
            self._taking_open = False
            raise

    def _take_open(self, consumed: list[tuple[MessageConsumer, Pending]]) -> _Ending:
        """Take the open transaction from the session, which then has none: a send made meanwhile waits at
        ``_boundary`` and then begins another."""
        ending = _Ending(self._tx, consumed, self._deferred, self._deferred_abandon, self._after_commit)
        self._tx, self._deferred, self._deferred_abandon, self._after_commit = None, [], [], []
        self._taking_open = False
        return ending

    async def _rollback_local(
        self, redeliver: bool, ending: _Ending | None = None, received: dict[int, Pending] | None = None
    ) -> JMSException | None:
        """ABORT a transaction -- the session's open one, or ``ending``, which a commit took -- and hand what it
        consumed back: redelivered locally, or (closing) to the broker when their consumers detach. The caller
        holds ``_boundary``.

        The local part happens whatever ABORT's outcome: an ABORT that failed (no receipt in time, refused) is
        returned, for rollback() to raise once the session is rolled back. Its sends are never committed either
        way, so their receipts, which the broker sends only at COMMIT where it defers them, are forgotten and
        their callbacks told."""
        owned = self._ending_ids
        if ending is None:  # the open one: 'rollback only' was about it
            await self._hands_empty()
            # What a rollback() ends is what was received before its call (``received``); close() ends all.
            ending = self._take_open(
                [(c, p) for c, p in self._unacked if received is None or received.get(id(p)) is p]
            )
            self._rollback_only = None
            owned = {id(p) for _, p in ending.consumed}
        failure: JMSException | None = None
        if ending.tx is not None and self._connection.failure is None:
            wire = self._connection.wire
            outer, self._ending_ids = self._ending_ids, owned  # a loss during ABORT is this transaction's
            try:
                await wire.request(self._connection.adapter.transaction_frame("ABORT", ending.tx))
            except ConnectionLostException:
                log.debug("ABORT lost with the connection; the broker discards the transaction anyway")
            except JMSException as exc:
                log.warning("the broker did not confirm ABORT of a rolled-back transaction: %s", exc)
                failure = exc
            finally:
                self._ending_ids = outer
                wire.discard(ending.deferred)
        abandon_sends(ending.abandon)
        done = {id(p) for _, p in ending.consumed}
        batch = [(c, p) for c, p in self._unacked if id(p) in done]
        self._unacked = [(c, p) for c, p in self._unacked if id(p) not in done]
        if redeliver:
            self._redeliver_locally(batch)
        else:  # closing: they go back to the broker when their consumers detach
            for consumer, pending in batch:
                self._give_back(consumer, [pending])
        await self._release_closed()
        return failure

    async def settle_sends(self, mine: bool | None = None, places: bool = True) -> bool:
        """JMS 2.0 §7.3.7: close, commit and rollback return only once every asynchronous send of this session
        is settled and its completion callback has returned. Bounded by the receipt timeout: False when sends
        were still unconfirmed then. Called by this session's listener (one that commits), the queued callbacks
        run here, since they would otherwise wait behind it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._connection.config.receipt_timeout_ms / 1000
        if mine is None:
            mine = self._for_listener()
        while True:
            # Asked again each time: a listener's commit that runs on after the listener returned leaves the
            # callbacks to the dispatch task, which would otherwise start the next listener beside them.
            while mine and self._tasks and self._for_listener():
                await self._run_callbacks(for_listener=True)
            running = self._callback_running and not self._in_callback()  # elsewhere: wait for it
            if not (
                (places and self._sender.places.busy) or self._tasks or running
            ):  # places=False: callbacks only
                return True
            changed = self._changed.event
            remaining = deadline - loop.time()
            if remaining <= 0 or not await event_within(changed, remaining):
                log.warning("asynchronous sends of a session still unsettled after the receipt timeout")
                return False

    def completion_ticket(self, listener: CompletionListener | None) -> int:
        """A send's place in the order of completion callbacks (-1: it has no CompletionListener)."""
        return self._completions.ticket() if listener is not None else -1

    def complete(self, ticket: int, callback: Callable[[], Awaitable[None] | None]) -> None:
        """A send with a CompletionListener is settled: its callback runs after those of earlier sends."""
        for ready in self._completions.settle(ticket, callback):
            self.run_task(ready)

    def run_task(self, task: Callable[[], Awaitable[None] | None]) -> None:
        """Run ``task`` (a completion callback) in this session's dispatch task, after those queued before it;
        after close none runs (close waited for them, bounded by the receipt timeout)."""
        if self._closed:
            log.warning("a send settled after its session was closed; its completion callback is not run")
            return
        self._tasks.append(task)
        # While a batch runs (_run_callbacks) it takes this one too, or wakes the session when it stops.
        if not self._callback_running:
            self.ensure_dispatcher()

    async def _run_callbacks(self, for_listener: bool = False) -> None:
        """Run the queued completion callbacks, oldest first, while :meth:`_may_run_callback` (one at a time:
        ``_callback_lock``). Those queued together run under one acquisition of the lock with one wake-up after the
        last, rather than one each (receipts come in bursts); each still runs in a callback scope of its own, which
        ends when it returns (listener_scope: a task it started acts for it only until then)."""
        async with self._callback_lock:
            if not self._may_run_callback(for_listener):
                return
            self._callback_running = True
            try:
                while self._may_run_callback(for_listener):
                    scope, token = listener_scope.enter(self, callback=True)
                    try:
                        await self._run_callback(self._tasks.popleft())
                    finally:
                        listener_scope.leave(scope, token)
            finally:
                self._callback_running = False
                self.wake()

    def _may_run_callback(self, for_listener: bool) -> bool:
        """A queued callback may run now: the session is not closed (none runs after close returns), the caller's task
        is not being cancelled (a callback may have swallowed the cancel that ends the dispatch), and, when
        ``for_listener`` (a listener's commit), the caller still acts for the running listener (it may have returned
        while this waited for the lock, or while a callback ran)."""
        if not self._tasks or self._closed:
            return False
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            return False
        return not for_listener or self._for_listener()

    async def _run_callback(self, task: Callable[[], Awaitable[None] | None]) -> None:
        """One completion callback: what it raises is reported, never raised into jmslike."""
        try:
            result = task()
            # None, from a plain function, skips isawaitable's ABC check (dear, once per send).
            if result is not None and inspect.isawaitable(result):
                await result
        except asyncio.CancelledError:
            running = asyncio.current_task()
            if running is not None and running.cancelling():
                raise  # the caller's task is what is cancelled (the session closing, a cancelled commit)
            # Something the callback awaited was cancelled: the callback failed, as a listener does
            # (_dispatch_one); raised on, it would end the dispatch task and strand every listener.
            self._connection.report(JMSException("a CompletionListener was cancelled"))
        except Exception as exc:  # the application's callback: reported, never raised into jmslike
            self._connection.report(as_jms_exception(exc, "a CompletionListener raised"))

    def refuse_in_callback(self, action: str) -> None:
        """JMS 2.0 §7.3.8: a CompletionListener may not close, commit or roll back its own session (that would
        wait for the callback itself)."""
        scope = listener_scope.of(self)
        if scope is not None and scope.callback and scope.owned_here():
            raise IllegalStateException(
                f"{action} may not be called from a CompletionListener of this session (it would wait for that "
                "callback to return); do it from another task"
            )

    def ensure_dispatcher(self) -> None:
        if self._dispatcher is None or self._dispatcher.done():
            # Started from a listener or callback, it must not act for that (listener_scope).
            self._dispatcher = asyncio.get_running_loop().create_task(
                self._dispatch_loop(), context=listener_scope.detached_context()
            )
        self.wake()

    def _next_for_listener(
        self,
    ) -> tuple[MessageConsumer, Callable[[Message], Awaitable[None] | None]] | None:
        """Round robin over consumers with a listener and a message, so none starves another."""
        connection = self._connection
        if self._stopping or not connection.started.is_set() or not connection.ready.is_set():
            return None
        if connection.failure is not None:
            return None
        count = len(self._consumers)
        for step in range(count):
            consumer = self._consumers[(self._rr + step) % count]
            listener = consumer.listener
            if listener is not None and consumer.inbox and not consumer.closed:
                self._rr = (self._rr + step + 1) % count
                return consumer, listener
        return None

    async def _dispatch_loop(self) -> None:
        while not self._closed:
            changed = self._changed.event
            if self._tasks:
                self._dispatching = True
                try:
                    await self._run_callbacks()
                finally:
                    self._dispatching = False
                continue
            found = None if self._callback_running else self._next_for_listener()  # never beside a callback
            if found is None:
                await changed.wait()
                continue
            self._dispatching = True
            try:
                await self._dispatch_one(*found)
            except Exception as exc:  # the session's own failure, not the listener's: report, keep serving
                self._connection.report(as_jms_exception(exc))
            finally:
                self._dispatching = False
                self.wake()  # stop() and close() wait for the dispatch to end

    async def _dispatch_one(
        self, consumer: MessageConsumer, listener: Callable[[Message], Awaitable[None] | None]
    ) -> None:
        pending = consumer.inbox.take()
        message = self._deliver(consumer, pending)
        if message is None:
            return
        self._current = (consumer, pending)
        self._recover_current = False
        failed = False
        scope, token = listener_scope.enter(self, callback=False)
        try:
            result = listener(message)
            if inspect.isawaitable(result):
                await result
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the session is closing: its dispatch task is what is cancelled
            failed = True  # something the listener awaited was cancelled: the listener failed
            self._connection.report(
                JMSException(f"message listener cancelled on {message.getJMSMessageID()}")
            )
        except Exception as exc:
            failed = True
            self._connection.report(
                as_jms_exception(exc, f"message listener raised on {message.getJMSMessageID()}")
            )
        finally:
            listener_scope.leave(scope, token)
            self._current = None
        await self._after_listener(consumer, pending, failed)

    async def _after_listener(self, consumer: MessageConsumer, pending: Pending, failed: bool) -> None:
        if self._mode not in _ACK_ON_DELIVERY:
            await self._release_closed()
            return
        # A failure counts before a recover() the listener called, as in the threaded engine: a listener that
        # recovers and then raises gets its message back at most MAX_LISTENER_REDELIVERIES times, not forever.
        if failed and pending.local_redeliveries < MAX_LISTENER_REDELIVERIES:
            self._redeliver_locally([(consumer, pending)])
        elif failed:
            log.error(
                "message %s failed %d times in its listener; handed back to the broker (or, on a cumulative "
                "DUPS_OK subscription, to its dead-letter queue)",
                pending.incoming.message_id,
                pending.delivery_count,
            )
            self._poison(consumer, pending)
        elif self._recover_current:
            self._redeliver_locally([(consumer, pending)])
        else:
            self._ack_consumed(consumer, pending)
        await self._release_closed()

    async def idle(self) -> None:
        """Return once no listener of this session is running, nor the settling after it (Connection.stop,
        close)."""
        if self._for_listener():
            return
        while self._dispatching:
            await self._changed.event.wait()

    def delivering_to(self, consumer: MessageConsumer) -> bool:
        """Whether this session's listener is running on a message of ``consumer`` now."""
        return self._current is not None and self._current[0] is consumer

    def in_listener(self) -> bool:
        """Whether the caller is one of this session's listeners or completion callbacks itself (its task), which
        Connection.stop and close refuse: they would wait for it."""
        scope = listener_scope.of(self)
        return scope is not None and scope.owned_here()

    async def wait_out_listener(self, action: str) -> None:
        """From a task one of this session's listeners or callbacks started: wait for it to return before
        ``action`` (listener_scope.wait_out)."""
        await listener_scope.wait_out(self, action, self._connection.config.receipt_timeout_ms / 1000)

    async def wait_out_callback(self, action: str) -> None:
        """From a task one of this session's completion callbacks started: wait for it to return before
        ``action``; a task a listener started acts for it instead (a commit there runs its callbacks)."""
        timeout_s = self._connection.config.receipt_timeout_ms / 1000
        await listener_scope.wait_out(self, action, timeout_s, listeners=False)

    def _in_callback(self) -> bool:
        """Whether the caller acts for one of this session's completion callbacks (listener_scope)."""
        scope = listener_scope.of(self)
        return scope is not None and scope.callback

    def _for_listener(self) -> bool:
        """Whether the caller acts for this session's MessageListener: the dispatch task while it runs one, or a
        task started from there meanwhile (its commit running on, an ``asyncio.wait_for``)."""
        scope = listener_scope.of(self)
        return scope is not None and not scope.callback

    async def consumer_closed(self, consumer: MessageConsumer, buffered: list[Pending]) -> None:
        """A consumer stopped taking messages: detach it now, or once what it delivered is settled. Runs to its
        end even if the caller is cancelled (review finding: a close cancelled during the broker round trip left
        the consumer registered and a persistence-filtered subscriber's companion subscribed, its messages piling
        up unacknowledged until the connection closed)."""
        await self._run_to_end(self._consumer_closed(consumer, buffered))

    async def _consumer_closed(self, consumer: MessageConsumer, buffered: list[Pending]) -> None:
        if consumer in self._consumers:
            self._consumers.remove(consumer)
        self._give_back(consumer, buffered)
        owed = any(c is consumer for c, _ in self._unacked) or (
            self._current is not None and self._current[0] is consumer
        )
        self.wake()
        if owed:
            self._closing.append(consumer)
        else:
            await self._detach(consumer)

    async def _release_closed(self) -> None:
        current = self._current[0] if self._current is not None else None
        settled = [c for c in self._closing if c is not current and not any(u is c for u, _ in self._unacked)]
        self._closing = [c for c in self._closing if c not in settled]
        for consumer in settled:
            await self._detach(consumer)

    async def _detach(self, consumer: MessageConsumer, buffered: list[Pending] | None = None) -> None:
        """End the broker subscription (the adapter's round trip, in a worker thread); what the consumer held
        unacknowledged goes back to the broker."""
        connection = self._connection
        loop = asyncio.get_running_loop()
        self._flush_lazy_ack(consumer)  # before the UNSUBSCRIBE, after any ACK of its last delivery
        if buffered:
            self._give_back(consumer, buffered)

        async def hand_back() -> list[IncomingMessage]:
            return [m for m in self._orphans.pop(consumer, []) if not m.local]

        def held() -> list[IncomingMessage]:  # in the worker thread: collected on the loop
            return asyncio.run_coroutine_threadsafe(hand_back(), loop).result(connection.worker_timeout_s)

        if connection.failure is None and not connection.wire_closed:
            try:
                await connection.in_worker(
                    connection.adapter.detach, connection.blocking_wire(), consumer.spec, held
                )
            except JMSException as exc:  # a lost connection detaches everything anyway
                log.debug("detach of %s failed: %s", consumer.spec.sub_id, exc)
        connection.unregister_consumer(consumer)
        self._orphans.pop(consumer, None)
        companion, consumer.companion = consumer.companion, None
        if companion is not None:  # it delivered through its owner, and ends with it
            companion.stop_taking()
            await self._detach(companion)

    async def close(self) -> None:
        """Close: unwaited sends settled, an open transaction rolled back, consumers detached (what they hold
        unacknowledged goes back to the broker). A listener may not close its own session."""
        if self._closed:
            return
        self.refuse_in_callback("close()")
        if self.in_listener():
            raise IllegalStateException(
                "a MessageListener may not close its own session (close waits for it)"
            )
        await self.wait_out_listener("close()")
        if self._close_task is None:  # a second close waits for the first
            self._close_task = asyncio.ensure_future(self._close())
            self._close_task.add_done_callback(_retrieved)
        await asyncio.shield(self._close_task)

    async def _close(self) -> None:
        if self._closed:
            return
        self._stopping = True
        self.wake()
        await self.idle()
        if self._background:  # subscriptions of cancelled createConsumer calls end first
            await asyncio.wait(set(self._background))
        if self._connection.failure is None:
            if not await self.settle_sends():
                log.warning("closing a session whose asynchronous sends are still unconfirmed")
            if self.transacted:
                async with self._boundary:  # after a commit under way
                    self._ending_transactions = True  # a send waiting behind this is refused (_release_after)
                    await self._rollback_local(redeliver=False)
                await self.settle_sends(places=False)  # callbacks of the sends the rollback told (RabbitMQ)
        for consumer in list(self._consumers) + list(self._closing):
            buffered = consumer.stop_taking()
            self._give_back(consumer, buffered)
        for consumer, pending in self._unacked:  # never acknowledged: the broker has them again
            self._give_back(consumer, [pending])
        self._unacked = []
        for consumer in list(self._consumers) + list(self._closing):
            await self._detach(consumer)
        self._consumers, self._closing = [], []
        for producer in list(self._producers):
            producer.close_quietly()
        self._closed = True
        self.wake()
        dispatcher = self._dispatcher
        if dispatcher is not None and not dispatcher.done():
            dispatcher.cancel()
        self._connection.remove_session(self)

    def on_connection_lost(self) -> None:
        """The broker has every unacknowledged delivery again: forget them, fail the open transaction."""
        for consumer in self._consumers:
            consumer.inbox.clear()
        held = any(id(p) not in self._ending_ids for _, p in self._unacked)
        # An open transaction a commit or rollback is ending (waiting for its sends in hand) is that ending's to
        # report, not the next transaction's.
        if self.transacted and (held or (self._tx is not None and not self._taking_open)):
            self._rollback_only = "the connection to the broker was lost during the transaction"
        self._unacked = []
        for consumer in self._closing:  # their subscriptions died with the connection
            self._connection.unregister_consumer(consumer)
        self._closing = []
        self._orphans = {}
        self._deferred = []
        self._deferred_abandon = []  # the lost wire answers them (ConnectionLostException)
        self._after_commit = []
        self._lazy_acks.clear()
        self._epoch += 1
        self._tx = None
        self.wake()


def _log_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("a session call whose caller was cancelled failed: %s", task.exception())


def _once(action: Callable[[], None]) -> Callable[[], None]:
    """``action``, run by the first call only: a count taken once is given back once, however often its holder
    says it is done (hold_in_hand, _ending_begins)."""
    done = False

    def call() -> None:
        nonlocal done
        if not done:
            done = True
            action()

    return call


def _retrieved(task: asyncio.Future[None]) -> None:
    """The close's outcome reaches every caller that awaits it; one that was cancelled leaves it here."""
    if not task.cancelled() and task.exception() is not None:
        log.debug("session close failed: %s", task.exception())

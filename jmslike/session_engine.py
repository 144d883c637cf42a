"""The delivery engine under every Session: one serial delivery path, acknowledgement modes, local
transactions, the listener thread and the asynchronous-send bookkeeping, the same on every broker.

``jmslike.session.Session`` adds the JMS factory methods (producers, consumers, subscriptions, browsers,
temporary destinations) on top; consumers, producers and the subscription modules call the engine's public
methods. The rules below are the engine's.

Delivery model. The receiver thread appends each incoming message to its consumer's inbox (bounded by
the broker's prefetch) and notifies the session. ``receive()`` takes from the inbox on the caller's
thread; listeners run on the session's own dispatch thread, one at a time, as JMS requires. Completion
listeners of asynchronous sends run on that same thread.

Lock rule: ``_cond`` guards inboxes and bookkeeping and is never held while waiting for a broker receipt,
because the receiver thread needs it to enqueue messages (holding it across a round trip deadlocks).

Redelivery is done by jmslike, not by NACK or ABORT (brokers disagree on both, see brokers.md): every
subscription uses individual client acknowledgement, so a message the application has not acknowledged
is still owned by this session on the broker, and ``recover()``/``rollback()`` put it back at the front
of its consumer's inbox, flagged redelivered with JMSXDeliveryCount raised. If the client dies instead,
the broker redelivers it.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from jmslike.constants import AcknowledgeMode
from jmslike.consumer import MessageConsumer
from jmslike.contract import IncomingMessage, PendingReceipt
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
from jmslike.producer import MessageProducer
from jmslike.send_window import CompletionOrder, SendWindow
from jmslike.subscription_plans import (
    of_durable_subscription,
)
from jmslike.transaction_outcomes import (
    abandon_sends,
    commit_in_doubt,
    commit_lost,
    deferred_receipt_error,
    sends_in_doubt,
)

if TYPE_CHECKING:
    from jmslike.connection import Connection

log = logging.getLogger(__name__)


class SessionEngine:
    """State and rules of a session (see the module doc); ``Session`` is the JMS face on top of it."""

    _tx_ids = itertools.count(1)

    def __init__(self, connection: Connection, acknowledge_mode: int) -> None:
        self._connection = connection
        self._ack_mode = acknowledge_mode
        # Entered as ``with self._lock`` (a C call) where nothing waits or notifies: the Condition's own ``__enter__``
        # and ``__exit__`` are two Python calls, taken several times per message on the send and delivery paths.
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._consumers: list[MessageConsumer] = []
        self._closing: list[MessageConsumer] = []  # closed, detach deferred until their messages settle
        # Delivered messages of closed consumers that go back to the broker when the consumer detaches.
        self._orphans: dict[MessageConsumer, list[IncomingMessage]] = {}
        self._producers: list[MessageProducer] = []
        self._unacked: list[tuple[MessageConsumer, Pending]] = []
        self._tx: str | None = None
        self._deferred_receipts: list[PendingReceipt] = []  # transactional sends answered only after COMMIT
        self._deferred_abandon: list[
            Callable[[JMSException | None], None]
        ] = []  # their callbacks, if rolled back
        self._after_commit: list[Callable[[], None]] = []  # work that needs the transaction committed
        self._epoch = 0  # advances when the connection is lost: earlier deliveries can no longer be acked
        self._stopping = False  # close() under way: no more listener deliveries
        self._rollback_only: str | None = None
        self._closed = False
        self._dispatcher: threading.Thread | None = None
        self._tasks: deque[Callable[[], None]] = deque()
        self._completions: CompletionOrder[Callable[[], None]] = CompletionOrder()  # callbacks in send order
        self._busy = False
        self._in_callback = False  # the dispatch thread is running a completion callback (not a listener)
        self._lazy_acks: LazyAcks[MessageConsumer] = LazyAcks()  # DUPS_OK on a cumulative subscription
        config = connection.config
        self._window = SendWindow(
            self._lock,
            config.send_window,
            config.send_window_bytes,
            config.receipt_timeout_ms / 1000,
            awaiting=connection.awaiting_answers,
        )
        self._current: tuple[MessageConsumer, Pending] | None = None
        self._recover_current = False
        self._rr = 0

    @property
    def connection(self) -> Connection:
        return self._connection

    @property
    def transacted(self) -> bool:
        return self._ack_mode == AcknowledgeMode.SESSION_TRANSACTED

    def check_open(self) -> None:
        if self._closed:
            raise IllegalStateException("the session is closed")
        self._connection.check_open()

    def attach(self, consumer: MessageConsumer) -> MessageConsumer:
        """Register ``consumer`` with the connection and subscribe it on the broker (for the modules that
        build consumers: durable and shared subscriptions, retained publications)."""
        if (
            self._ack_mode in (AcknowledgeMode.CLIENT_ACKNOWLEDGE, AcknowledgeMode.DUPS_OK_ACKNOWLEDGE)
            and self._connection.adapter.cumulative_client_ack
        ):
            consumer.spec = dataclasses.replace(consumer.spec, cumulative_ack=True)
        self._connection.register_consumer(consumer)
        try:
            self._connection.adapter.subscribe(self._connection.wire_for_use(), consumer.spec)
        except BaseException:
            with self._lock:  # what arrived before the failure counts against the byte bound no more
                consumer.inbox.close()
            self._connection.unregister_consumer(consumer)
            raise
        with self._lock:
            self._consumers.append(consumer)
        return consumer

    def still_attached(self, durable_name: str) -> bool:
        with self._lock:
            return any(c.spec.durable_name == durable_name for c in self._closing)

    def holds_unacked(self, durable_name: str) -> bool:
        """Whether a delivered message of durable subscription ``durable_name`` (unshared or shared) is
        unacknowledged or in the open transaction."""
        with self._lock:
            return any(of_durable_subscription(c.spec, durable_name) for c, _ in self._unacked)

    @property
    def current_delivery(self) -> tuple[MessageConsumer, Pending] | None:
        """The message a listener of this session is running on now, with its consumer."""
        return self._current

    def enqueue_for(self, consumer: MessageConsumer, pending: Pending) -> None:
        """Receiver thread: append and wake whoever waits; a closed consumer's message is kept to be
        handed back to the broker when it detaches. Nothing else."""
        with self._lock:
            pending.epoch = self._epoch
            if consumer.closed:
                self._orphans.setdefault(consumer, []).append(pending.incoming)
            else:
                consumer.inbox.put(pending)
                self._cond.notify_all()

    def _give_back(self, consumer: MessageConsumer, pendings: Iterable[Pending], front: bool = False) -> None:
        """Keep ``pendings`` to be handed back to the broker when ``consumer`` detaches (delivery.give_back)."""
        give_back(self._orphans, consumer, pendings, self._epoch, front)

    def wake_waiters(self) -> None:
        with self._lock:
            self._cond.notify_all()

    def _take(self, consumer: MessageConsumer, deadline: float | None) -> Pending | None:
        """Wait (bounded by ``deadline``) for the next message of ``consumer``; None on timeout/close."""
        with self._lock:
            while True:
                if consumer.closed or self._closed:
                    return None
                failed = self._connection.failure
                if failed is not None:
                    raise ConnectionLostException(f"cannot receive: {failed}") from failed
                if self._connection.started and consumer.inbox:
                    return consumer.inbox.take()
                if deadline is None:
                    self._cond.wait()
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)

    def receive_for(
        self, consumer: MessageConsumer, deadline: float | None, body_type: type[Any] | None = None
    ) -> Message | None:
        """The next message of ``consumer``. With ``body_type`` (JMS 2.0 ``receiveBody``) a message whose
        body cannot be returned as that type raises MessageFormatException; in AUTO and DUPS_OK mode it is
        left in place as if the call had not happened, in the other modes it counts as delivered."""
        auto = self._ack_mode in (AcknowledgeMode.AUTO_ACKNOWLEDGE, AcknowledgeMode.DUPS_OK_ACKNOWLEDGE)
        while True:
            pending = self._take(consumer, deadline)
            if pending is None:
                return None
            message = self._deliver(consumer, pending)
            if message is None:
                continue
            if body_type is not None and not message.isBodyAssignableTo(body_type):
                if auto:
                    with self._lock:
                        if consumer.closed:  # closed meanwhile: it goes back to the broker with the rest
                            self._give_back(consumer, [pending])
                        else:
                            consumer.inbox.put_back(pending)
                        self._cond.notify_all()
                raise body_refused(message, body_type, left_in_place=auto)
            if auto:
                self._ack_consumed(consumer, pending)
            return message

    def acknowledge_delivered(self) -> None:
        """Acknowledge everything this session delivered so far (JMSContext.acknowledge()). JMS gives it a
        meaning in CLIENT_ACKNOWLEDGE mode only; in the other modes it does nothing, as JMS says."""
        self.check_open()
        if self._ack_mode == AcknowledgeMode.CLIENT_ACKNOWLEDGE:
            self._acknowledge_all(self._epoch)

    def _deliver(self, consumer: MessageConsumer, pending: Pending) -> Message | None:
        """Turn a pending delivery into a Message, or drop it (expired / filtered) with an ack."""
        incoming = pending.incoming
        if from_lost_connection(pending, self._epoch):
            # An inbox the loss did not clear, or a listener that failed after a reconnect put it back.
            return None
        if incoming.expired():
            self._drop(consumer, pending)  # expired messages are never delivered (JMS 1.1 §3.4.9)
            return None
        if not consumer.accepts(incoming):
            self._drop(consumer, pending)  # not part of this subscription: client-side selector or noLocal
            return None
        message = consumer.build_message(pending)
        if self._ack_mode in (
            AcknowledgeMode.CLIENT_ACKNOWLEDGE,
            AcknowledgeMode.SESSION_TRANSACTED,
            AcknowledgeMode.INDIVIDUAL_ACKNOWLEDGE,
        ):
            with self._lock:
                self._unacked.append((consumer, pending))
            generation = pending.epoch
            if self._ack_mode == AcknowledgeMode.CLIENT_ACKNOWLEDGE:
                message.bind_acknowledger(lambda: self._acknowledge_all(generation))
            elif self._ack_mode == AcknowledgeMode.INDIVIDUAL_ACKNOWLEDGE:
                message.bind_acknowledger(lambda: self._acknowledge_one(pending, generation))
        return message

    def _drop(self, consumer: MessageConsumer, pending: Pending) -> None:
        """A delivery the application never sees is acknowledged at once, except on a cumulative
        subscription: there its ACK would also acknowledge what the application consumed before it and has
        not acknowledged yet, so it is settled by the next acknowledge() instead."""
        if self._ack_mode == AcknowledgeMode.DUPS_OK_ACKNOWLEDGE:
            self._ack_consumed(consumer, pending)
        elif cumulative(consumer, pending):
            with self._lock:
                self._unacked.append((consumer, pending))
        else:
            self._ack_now(pending)

    def _ack_consumed(self, consumer: MessageConsumer, pending: Pending) -> None:
        """AUTO / DUPS_OK: the message is done with (delivered, or dropped as expired or filtered). AUTO
        acknowledges each one; DUPS_OK on a cumulative subscription lazily (delivery.LazyAcks)."""
        if not cumulative(consumer, pending):
            self._ack_now(pending)
            return
        with self._lock:
            due = self._lazy_acks.consumed(consumer, pending, buffered=bool(consumer.inbox))
        if due is not None:
            self._ack_now(due)

    def _flush_lazy_ack(self, consumer: MessageConsumer) -> None:
        """DUPS_OK: send the ACK ``consumer`` still owes for what it consumed (before it detaches, or before
        a message of it is taken off the subscription)."""
        with self._lock:
            due = self._lazy_acks.flush(consumer)
        if due is not None:
            self._ack_now(due)

    def _poison(self, consumer: MessageConsumer, pending: Pending) -> None:
        """A listener failed ``pending`` too often. Normally it goes back to the broker when its consumer
        detaches; on a cumulative subscription any later ACK would acknowledge it too, so it is taken off
        the subscription now (the broker's dead-letter queue; ActiveMQ's default policy discards a
        NON_PERSISTENT one) after the ACK owed for what came before it."""
        if not cumulative(consumer, pending) or self._ack_mode != AcknowledgeMode.DUPS_OK_ACKNOWLEDGE:
            with self._lock:  # given back when its consumer detaches, never dropped
                self._give_back(consumer, [pending])
            return
        self._flush_lazy_ack(consumer)
        if pending.epoch != self._epoch or pending.incoming.local:
            return  # the broker has it back already (lost connection), or never had it (local)
        try:
            self._connection.wire_for_use().post(self._connection.adapter.poison_frame(pending.incoming))
        except ConnectionLostException:
            log.debug("poison NACK lost with the connection; the broker will redeliver")

    def _ack_now(self, pending: Pending) -> None:
        """Acknowledge one message without waiting (AUTO / DUPS_OK, dropped messages). A message from
        before a connection loss belongs to the broker again: its ack would reach the new connection, where
        the id means nothing or another message, so it is not sent (the broker redelivers, flagged)."""
        if pending.epoch != self._epoch or pending.incoming.local:
            return
        try:
            self._connection.wire_for_use().post(self._connection.adapter.ack_frame(pending.incoming, None))
        except ConnectionLostException:
            log.debug("ack lost with the connection; the broker will redeliver")

    def _check_generation(self, generation: int) -> None:
        """A message delivered before a reconnect belongs to the broker again: acknowledging it cannot
        work, and pretending it did would let an 'acknowledged' message come back. Say so instead."""
        if generation != self._epoch:
            raise ConnectionLostException(
                "this message was delivered before the connection was lost and re-established; it cannot be "
                "acknowledged any more: the broker redelivers it (flagged redelivered)"
            )

    def _acknowledge_all(self, generation: int) -> None:
        """CLIENT_ACKNOWLEDGE: acknowledge everything this session has delivered so far."""
        self.check_open()
        self._check_generation(generation)
        with self._lock:
            batch, self._unacked = self._unacked, []
        try:
            self._send_acks(acks_for(batch), None)
        except JMSException:
            with self._lock:  # not acknowledged after all: still owed (recover, unsubscribe checks)
                if all(p.epoch == self._epoch for _, p in batch):
                    self._unacked[:0] = batch
            raise
        finally:
            self._release_closed()

    def _acknowledge_one(self, pending: Pending, generation: int) -> None:
        self.check_open()
        self._check_generation(generation)
        with self._lock:
            entry = next(((c, p) for c, p in self._unacked if p is pending), None)
            if entry is None:
                return
            self._unacked.remove(entry)
        try:
            self._send_acks([pending], None)
        except JMSException:
            with self._lock:
                if pending.epoch == self._epoch:
                    self._unacked.insert(0, entry)
            raise
        finally:
            self._release_closed()

    def _send_acks(self, batch: list[Pending], transaction: str | None) -> None:
        batch = [p for p in batch if not p.incoming.local]  # delivered by jmslike: nothing on the broker
        if not batch:
            return
        wire = self._connection.wire_for_use()
        adapter = self._connection.adapter
        for pending in batch[:-1]:
            wire.post(adapter.ack_frame(pending.incoming, transaction))
        wire.request(adapter.ack_frame(batch[-1].incoming, transaction))

    def _redeliver_locally(self, entries: list[tuple[MessageConsumer, Pending]]) -> None:
        """Put delivered messages back at the front of their inboxes, in their original order."""
        with self._lock:
            for consumer, pending in reversed(entries):
                if consumer.closed:
                    self._give_back(consumer, [pending], front=True)
                else:
                    consumer.inbox.put_back(pending.again())
            self._cond.notify_all()

    def recover(self) -> None:
        """Stop, then redeliver from the oldest unacknowledged message, flagged redelivered."""
        self.check_open()
        if self.transacted:
            raise IllegalStateException("recover() is not allowed in a transacted session; use rollback()")
        with self._lock:
            batch, self._unacked = self._unacked, []
            if self._current is not None and threading.current_thread() is self._dispatcher:
                self._recover_current = True
        self._redeliver_locally(batch)
        self._release_closed()  # messages of closed consumers go back to the broker, flagged by it

    def transaction_for_send(self) -> str | None:
        """The STOMP transaction a send must join (BEGIN on first use), or None outside transactions."""
        if not self.transacted:
            return None
        if self._rollback_only is not None:
            raise TransactionRolledBackException(
                f"the transaction can only roll back: {self._rollback_only}; call rollback() and retry"
            )
        if self._tx is None:
            tx = f"{self._connection.connection_id}-tx{next(self._tx_ids)}"
            self._connection.wire_for_use().request(self._connection.adapter.transaction_frame("BEGIN", tx))
            self._tx = tx
        return self._tx

    def mark_rollback_only(self, reason: str) -> None:
        """The open transaction may hold half of something that must be all or nothing (a retained send's pair):
        it can only roll back, and commit() says why."""
        with self._lock:
            if self._rollback_only is None:
                self._rollback_only = reason

    def after_commit(self, task: Callable[[], None]) -> None:
        """Run ``task`` once the open transaction committed (dropped if it rolls back)."""
        self._after_commit.append(task)

    def defer_receipt(
        self, pending: PendingReceipt, abandon: Callable[[JMSException | None], None] | None = None
    ) -> None:
        """Remember a transactional send whose receipt the broker sends only after COMMIT; ``abandon`` (its
        completion, called at most once) hears of a rollback, since the broker then never answers it."""
        with self._lock:
            self._deferred_receipts.append(pending)
            if abandon is not None:
                self._deferred_abandon.append(abandon)

    def _await_deferred_receipts(self, pending: list[PendingReceipt]) -> None:
        """After COMMIT: wait until the broker confirmed every message of the transaction. ``pending`` was
        taken before COMMIT: a connection loss meanwhile empties the session's list, and must not make
        unconfirmed messages look confirmed."""
        deadline = time.monotonic() + self._connection.config.receipt_timeout_ms / 1000
        for item in pending:
            answered = item.wait(max(0.0, deadline - time.monotonic()))
            error = deferred_receipt_error(answered, item.error)
            if error is not None:
                raise error

    def commit(self) -> None:
        """Commit; TransactionRolledBackException only when it is certain nothing was committed. When the
        outcome is unknown (connection lost or no receipt after COMMIT was sent) a JMSException that says
        so (ConnectionLostException for a loss); the session's next transaction then starts clean."""
        self.check_open()
        if not self.transacted:
            raise IllegalStateException("commit() needs a transacted session: createSession(True, ...)")
        self._refuse_in_callback("commit()")
        if not self._settle_callbacks():  # the transaction's asynchronous sends are confirmed before COMMIT
            raise JMSException(
                "asynchronous sends of this transaction are still unconfirmed after the receipt timeout, so it "
                "was not committed; call rollback() and send again"
            )
        # One consistent view: the receiver thread rewrites these when the connection is lost.
        with self._lock:
            rollback_only, tx, epoch = self._rollback_only, self._tx, self._epoch
            consumed = list(self._unacked)
            deferred = list(self._deferred_receipts)
        if rollback_only is not None:
            self._rollback_local(redeliver=True)
            raise TransactionRolledBackException(f"the transaction was rolled back: {rollback_only}")
        if not consumed and tx is None:
            return
        acks_in_transaction = self._connection.adapter.capabilities.transactional_acks
        try:
            if tx is None:  # only consumed messages: the broker transaction for their ACKs starts now
                tx = self.transaction_for_send()
                assert tx is not None
            wire = self._connection.wire_for_use()
            if acks_in_transaction:
                for _, pending in consumed:
                    if not pending.incoming.local:
                        wire.post(self._connection.adapter.ack_frame(pending.incoming, tx))
            with self._lock:
                lost = self._epoch != epoch or self._rollback_only is not None
            if lost:  # the broker dropped the transaction with the connection it was on
                raise ConnectionLostException("the connection to the broker was lost during the transaction")
        except JMSException as exc:
            self._rollback_local(redeliver=True)
            raise TransactionRolledBackException(f"commit failed before COMMIT was sent: {exc}") from exc
        try:
            wire.request(self._connection.adapter.transaction_frame("COMMIT", tx))
        except ConnectionLostException as exc:
            self._forget_transaction(consumed, in_doubt=True)
            self._release_closed()
            raise commit_lost() from exc
        except JMSTimeoutException as exc:
            # No answer will settle them now: told, not left for later callbacks to wait behind.
            with self._lock:
                deferred, abandoned = self._deferred_receipts, self._deferred_abandon
            wire.discard(deferred)
            abandon_sends(abandoned, sends_in_doubt())
            self._forget_transaction(consumed, in_doubt=True)
            self._release_closed()
            raise commit_in_doubt() from exc
        except JMSException as exc:
            self._rollback_local(redeliver=True)
            raise TransactionRolledBackException(f"the broker refused COMMIT: {exc}") from exc
        self._forget_transaction(consumed)
        try:
            tasks, self._after_commit = self._after_commit, []
            self._await_deferred_receipts(deferred)
            for task in tasks:
                task()
            self._settle_callbacks()  # callbacks of sends answered only at COMMIT (RabbitMQ) have returned
            if not acks_in_transaction:
                # The sends are committed; now the consumed messages. A failure here loses nothing: they come
                # back flagged redelivered (at-least-once for consumption on such brokers).
                try:
                    self._send_acks([p for _, p in consumed], None)
                except JMSException as exc:
                    self._connection.report(exc)
        finally:
            self._release_closed()  # after those ACKs: a consumer closed in the transaction is detached only now

    def _forget_transaction(
        self, consumed: list[tuple[MessageConsumer, Pending]], in_doubt: bool = False
    ) -> None:
        """The transaction is over: committed, or ``in_doubt`` (its outcome reported to the application).
        A 'rollback only' that a connection loss left meanwhile was about this transaction, so it goes too:
        the next transaction starts clean. Its closed consumers are detached by the caller (_release_closed),
        once their ACKs are sent."""
        with self._lock:
            done = {id(p) for _, p in consumed}
            self._unacked = [(c, p) for c, p in self._unacked if id(p) not in done]
            self._tx = None
            self._deferred_receipts = []
            self._deferred_abandon = []  # answered by their receipts, or by the lost wire
            self._rollback_only = None
            if in_doubt:
                self._after_commit = []

    def rollback(self) -> None:
        """Discard the transaction's sends and redeliver what it consumed, flagged redelivered."""
        self.check_open()
        if not self.transacted:
            raise IllegalStateException("rollback() needs a transacted session: createSession(True, ...)")
        self._refuse_in_callback("rollback()")
        self._settle_callbacks()
        failure = self._rollback_local(redeliver=True)
        if failure is not None:
            raise failure

    def _rollback_local(self, redeliver: bool) -> JMSException | None:
        """ABORT the broker transaction (its sends vanish) and hand consumed messages back locally.

        The local part happens whatever ABORT's outcome: an ABORT that failed (no receipt in time, refused) is
        returned, for rollback() to raise once the session is rolled back. Its sends are never committed either
        way, so their receipts, which the broker sends only at COMMIT where it defers them, are forgotten and
        their callbacks told."""
        tx, self._tx = self._tx, None
        self._rollback_only = None
        with self._lock:
            deferred, self._deferred_receipts = self._deferred_receipts, []
            abandoned, self._deferred_abandon = self._deferred_abandon, []
        self._after_commit = []
        failure: JMSException | None = None
        if tx is not None:
            try:
                wire = self._connection.wire_for_use()
                try:
                    wire.request(self._connection.adapter.transaction_frame("ABORT", tx))
                finally:
                    wire.discard(deferred)
            except ConnectionLostException:
                log.debug("ABORT lost with the connection; the broker discards the transaction anyway")
            except JMSException as exc:
                log.warning("the broker did not confirm ABORT of a rolled-back transaction: %s", exc)
                failure = exc
        abandon_sends(abandoned)
        with self._lock:
            batch, self._unacked = self._unacked, []
            if not redeliver:  # closing: they go back to the broker when their consumers detach
                for consumer, pending in batch:
                    self._give_back(consumer, [pending])
        if redeliver:
            self._redeliver_locally(batch)
        self._release_closed()
        return failure

    def ensure_dispatcher(self) -> None:
        with self._lock:
            self._start_dispatcher()
            self._cond.notify_all()

    def _start_dispatcher(self) -> None:
        """Under the lock: the dispatch thread, started on first need."""
        if self._dispatcher is None:
            self._dispatcher = threading.Thread(
                target=self._dispatch_loop, name=f"jmslike-session-{id(self):x}", daemon=True
            )
            self._dispatcher.start()

    def run_task(self, task: Callable[[], None]) -> None:
        """Run ``task`` on this session's dispatch thread (completion listeners)."""
        with self._lock:
            self._tasks.append(task)
            self._start_dispatcher()
            self._cond.notify_all()

    def _next_work(self) -> list[Callable[[], None]] | tuple[MessageConsumer, Pending, Any] | None:
        """Under ``_cond``: every task queued, in order, or a listener delivery when started (marked current: a
        listener closing its own consumer must find the session owing this message); None when closed.

        The tasks are taken together and run one after another (:meth:`_dispatch_loop`): the passes under the
        lock, and the wake-up of whoever waits for the thread to be idle, are paid once per batch, not once per
        completion callback (receipts come in bursts: ActiveMQ's 256 B CompletionListener sends ran about five per
        batch; docs/performance.md)."""
        while True:
            if self._closed and not self._tasks:
                return None
            if self._tasks:
                self._busy = True
                self._in_callback = True
                tasks = list(self._tasks)
                self._tasks.clear()
                return tasks
            if self._connection.started and self._connection.failure is None and not self._stopping:
                listening = [c for c in self._consumers if c.listener is not None and c.inbox]
                if listening:
                    self._rr = (self._rr + 1) % len(listening)
                    consumer = listening[self._rr]
                    listener = consumer.listener  # read once: setMessageListener does not take _cond
                    if listener is None:
                        continue
                    pending = consumer.inbox.take()
                    self._busy = True
                    self._current = (consumer, pending)
                    self._recover_current = False
                    return consumer, pending, listener
            self._cond.wait()

    def _dispatch_loop(self) -> None:
        """One thread per session runs its listeners and completion callbacks, one at a time. Two passes
        under ``_cond`` per delivery (take it, then settle it), paid on every message; per batch of completion
        callbacks (:meth:`_next_work`).

        A callback's BaseException (``sys.exit()`` in a listener) is reported like any other failure: outside
        the main thread it ends no process, and escaping here it ended the session's thread, leaving every later
        delivery and completion of the session waiting for good."""
        while True:
            with self._lock:
                work = self._next_work()
                if work is None:
                    return
            try:
                if isinstance(work, list):
                    self._run_tasks(work)
                else:
                    self._deliver_to_listener(*work)
            except BaseException as exc:
                self._connection.report(as_jms_exception(exc))
            finally:
                with self._lock:
                    self._current = None
                    self._in_callback = False
                    settled = self._settled_closed() if self._closing else []
                    if not settled:
                        self._busy = False
                        self._cond.notify_all()
                if settled:
                    self._detach_settled(settled)

    def _run_tasks(self, tasks: list[Callable[[], None]]) -> None:
        """Run ``tasks`` in order; one that raises is reported and the next still runs."""
        for task in tasks:
            try:
                task()
            except BaseException as exc:  # as in _dispatch_loop
                self._connection.report(as_jms_exception(exc))

    def _detach_settled(self, settled: list[MessageConsumer]) -> None:
        """Detach consumers closed by (or during) the delivery that just ended, still marked busy: stop()
        and close() return only after their subscriptions are released, and an unsubscribe that follows
        must not find the broker's subscription still attached."""
        try:
            for consumer in settled:
                try:
                    self._detach(consumer)
                except Exception as exc:
                    self._connection.report(as_jms_exception(exc))
        finally:
            with self._lock:
                self._busy = False
                self._cond.notify_all()

    def _deliver_to_listener(self, consumer: MessageConsumer, pending: Pending, listener: Any) -> None:
        message = self._deliver(consumer, pending)
        if message is None:
            return
        auto = self._ack_mode in (AcknowledgeMode.AUTO_ACKNOWLEDGE, AcknowledgeMode.DUPS_OK_ACKNOWLEDGE)
        try:
            listener(message)
        except BaseException as exc:  # sys.exit() too: see _dispatch_loop
            self._connection.report(
                as_jms_exception(exc, f"message listener raised on {message.getJMSMessageID()}")
            )
            if auto:
                if pending.local_redeliveries < MAX_LISTENER_REDELIVERIES:
                    self._redeliver_locally([(consumer, pending)])
                else:
                    log.error(
                        "message %s failed %d times in its listener; handed back to the broker (or, on a "
                        "cumulative DUPS_OK subscription, to its dead-letter queue)",
                        message.getJMSMessageID(),
                        pending.delivery_count,
                    )
                    self._poison(consumer, pending)
            return
        if auto:
            if self._recover_current:
                self._redeliver_locally([(consumer, pending)])
            else:
                self._ack_consumed(consumer, pending)

    def on_dispatch_thread(self) -> bool:
        """Whether the caller is this session's listener / completion-callback thread (which must not wait
        for itself: close and stop refuse there)."""
        return self._dispatcher is not None and threading.current_thread() is self._dispatcher

    def wait_idle(self) -> None:
        """Block until no listener runs (Connection.stop, Session.close)."""
        if threading.current_thread() is self._dispatcher:
            return
        with self._lock:
            while self._busy:
                self._cond.wait(0.5)

    def acquire_send_slot(self, size: int, ordered: bool = False) -> int:
        """For MessageProducer: wait (bounded by the receipt timeout) for a place in the asynchronous send
        window (jmslike.send_window); when ``ordered`` (a send with a CompletionListener), return the send's
        place in the completion order (:meth:`completion_ticket`), else -1. One pass under the lock when a
        place is free, the usual case: this runs once per asynchronous send."""
        with self._lock:
            if self._window.try_take(size):
                return self._completions.ticket() if ordered else -1
        self._window.acquire(size)
        return self.completion_ticket() if ordered else -1

    def completion_ticket(self) -> int:
        """The place of an asynchronous send with a CompletionListener in this session's send order."""
        with self._lock:
            return self._completions.ticket()

    def complete(self, ticket: int, then: Callable[[], None]) -> None:
        """Receiver thread: the send of ``ticket`` is settled; its callback is queued for the dispatch thread
        once every earlier send's is (JMS 2.0 §7.3.8: callbacks in send order, whatever order receipts come
        in; Artemis answers PERSISTENT sends out of order)."""
        with self._lock:
            if self._queue_completions(ticket, then):
                self._cond.notify_all()

    def _queue_completions(self, ticket: int, then: Callable[[], None]) -> bool:
        """Under the lock: :meth:`complete` without the wake-up, which the caller owes when this returns True."""
        ready = self._completions.settle(ticket, then)
        if not ready:
            return False
        if self._closed:
            # close() gave up waiting (receipt timeout) and returned: JMS allows no callback after that.
            log.warning("a send settled after its session was closed; its completion callback is not run")
            return False
        self._tasks.extend(ready)
        self._start_dispatcher()
        return True

    def release_send_slot(self, size: int, then: Callable[[], None] | None = None, ticket: int = -1) -> None:
        """Receiver thread: an asynchronous send is settled; ``then`` (its completion callback, with its
        ``ticket``) is queued in the same pass under the lock. Whom it wakes: a sender waiting for a place only
        when the release lets it go on (SendPlaces.release: a full window's sender waits for a quarter of it), on
        the window's own condition; the dispatch thread, or close() and commit() waiting for every send, on the
        session's, only when a callback was queued or the last send settled. This runs once per send."""
        with self._lock:
            wake = False
            if self._window.release(size):
                self._window.wake_senders()
                wake = not self._window.busy  # close(), commit() wait on _cond for every send settled
            if then is not None and self._queue_completions(ticket, then):
                wake = True
            if wake:
                self._cond.notify_all()

    def settle_sends(self) -> bool:
        """For MessageProducer.close: wait (bounded by the receipt timeout) until this session's asynchronous
        sends are confirmed and their callbacks have returned (JMS 2.0 §7.3.7). A closed session has none."""
        if self._closed:
            return True
        self._refuse_in_callback("close() of a producer")
        return self._settle_callbacks()

    def _settle_callbacks(self) -> bool:
        """JMS 2.0 §7.3.7: close, commit and rollback return only once every asynchronous send of this
        session is settled and its completion callback has returned. Bounded by the receipt timeout, never a
        hang: False when sends were still unconfirmed then (commit refuses to go on; close goes on, and a
        later receipt runs no callback). On the session's own thread (a MessageListener that commits) the
        queued callbacks run here, since they would otherwise wait behind the caller."""
        deadline = time.monotonic() + self._connection.config.receipt_timeout_ms / 1000
        mine = self.on_dispatch_thread()
        with self._lock:
            while True:
                while mine and self._tasks:
                    tasks = list(self._tasks)
                    self._tasks.clear()
                    # They are CompletionListeners here too: one may not commit, roll back or close this session
                    # (§7.3.8), or it would end the listener's transaction from inside the listener's commit.
                    was_in_callback, self._in_callback = self._in_callback, True
                    self._cond.release()
                    try:
                        self._run_tasks(tasks)
                    finally:
                        self._cond.acquire()
                        self._in_callback = was_in_callback
                pending = self._window.busy or self._tasks or (self._in_callback and not mine)
                remaining = deadline - time.monotonic()
                if not pending:
                    return True
                if remaining <= 0:
                    log.warning("asynchronous sends of a session still unsettled after the receipt timeout")
                    return False
                with self._connection.awaiting_answers():
                    self._cond.wait(remaining)

    def _refuse_in_callback(self, action: str) -> None:
        """JMS 2.0 §7.3.8: a CompletionListener may not close, commit or roll back its own session (that
        would wait for the callback itself)."""
        if self._in_callback and self.on_dispatch_thread():
            raise IllegalStateException(
                f"{action} may not be called from a CompletionListener of this session (it would wait for that "
                "callback to return); do it from another thread"
            )

    def on_connection_lost(self) -> None:
        """Receiver thread: prefetched and unacknowledged messages now belong to the broker again."""
        with self._lock:
            for consumer in self._consumers:
                consumer.inbox.clear()
            if self.transacted and (self._unacked or self._tx is not None):
                self._rollback_only = "the connection to the broker was lost during the transaction"
            self._unacked = []
            for consumer in self._closing:  # their subscriptions died with the connection
                self._connection.unregister_consumer(consumer)
            self._closing = []
            self._orphans = {}
            self._lazy_acks.clear()
            self._deferred_receipts = []
            self._deferred_abandon = []  # the lost wire answers them (ConnectionLostException)
            self._epoch += 1
            self._tx = None
            self._cond.notify_all()

    def close(self) -> None:
        """Roll back an open transaction, close consumers and producers; unacknowledged stays unacked."""
        if self._closed:
            return
        self._refuse_in_callback("close()")
        if self.on_dispatch_thread():
            raise IllegalStateException(
                "a MessageListener may not close its own session (JMS 2.0 §4.4.1: close waits for the listener "
                "to return); close the consumer instead, or close the session from another thread"
            )
        self._settle_callbacks()
        with self._lock:  # no new listener delivery from here on, then wait for the running one
            self._stopping = True
            self._cond.notify_all()
        self.wait_idle()
        if self.transacted:
            try:
                self._rollback_local(redeliver=False)
            except JMSException:
                log.debug("rollback on close failed", exc_info=True)
        for consumer in list(self._consumers):
            consumer.close()
        with self._lock:
            # Closing a session does not acknowledge: the broker gets these back.
            for consumer, pending in self._unacked:
                self._give_back(consumer, [pending])
            self._unacked = []
        self._release_closed()
        for producer in list(self._producers):
            producer.close_quietly()  # this session's sends are settled above; errors went to the listener
        with self._lock:
            self._closed = True
            self._cond.notify_all()
        self._connection.remove_session(self)

    def consumer_closed(self, consumer: MessageConsumer) -> None:
        """Stop delivery, then detach at once, or defer while the session still owes the broker an ack
        for messages the consumer delivered."""
        with self._lock:
            buffered = consumer.inbox.close()
            if consumer in self._consumers:
                self._consumers.remove(consumer)
            self._give_back(consumer, buffered)
            owed = any(c is consumer for c, _ in self._unacked) or (
                self._current is not None and self._current[0] is consumer
            )
            if owed:
                self._closing.append(consumer)
            self._cond.notify_all()
        if not owed:
            self._detach(consumer)

    def _detach(self, consumer: MessageConsumer) -> None:
        """End a closed consumer's subscription, after the lazy DUPS_OK ACK it still owes (sent by the same
        thread, so it reaches the broker before the UNSUBSCRIBE and after any ACK of its last delivery)."""
        self._flush_lazy_ack(consumer)
        consumer.detach()

    def hand_back(self, consumer: MessageConsumer) -> list[IncomingMessage]:
        """The closed consumer's messages that go back to the broker at detach (taken only once)."""
        with self._lock:
            return [m for m in self._orphans.pop(consumer, []) if not m.local]

    def _release_closed(self) -> None:
        """Detach closed consumers whose delivered messages are now settled (acked, recovered, rolled back)."""
        with self._lock:
            settled = self._settled_closed()
        for consumer in settled:
            self._detach(consumer)

    def _settled_closed(self) -> list[MessageConsumer]:
        """Under ``_cond``: take the closed consumers that owe the broker nothing any more."""
        current = self._current[0] if self._current is not None else None
        settled = [c for c in self._closing if c is not current and not any(u is c for u, _ in self._unacked)]
        self._closing = [c for c in self._closing if c not in settled]
        return settled

    def remove_producer(self, producer: MessageProducer) -> None:
        if producer in self._producers:
            self._producers.remove(producer)

"""``jmslike.aio``'s sends: a message's way from ``await producer.send`` to the wire, and its outcome's way back.

One :class:`Sender` per session engine. A send goes as its delivery mode, its session's transaction and its
CompletionListener say (the rules are the threaded producer's, docs/aio.md):

- with a CompletionListener, whatever the mode: do not wait; the listener's callback runs with the outcome, in
  send order, in the session's dispatch task;
- without one, PERSISTENT outside a transaction, or any send with ``force_sync_send``: wait for the broker's
  receipt;
- without one, NON_PERSISTENT outside a transaction: do not wait; a place in the session's send window
  (:class:`~jmslike.send_window.SendPlaces`) bounds what is in flight, and the answer settles it later (a refusal
  is kept for the producer and the ExceptionListener);
- in a transaction: the send joins the session's open transaction (begun by the engine on first use) and stays
  "in hand" until its frame is with the transport (without a CompletionListener: until the broker answered), so
  a commit, rollback or close never writes its COMMIT or ABORT before it; where the broker answers a
  transactional SEND only after COMMIT (RabbitMQ), ``commit()`` waits for that receipt instead.

Everything else a send touches belongs to the engine, through its public methods: the open transaction, the
completion order and the dispatch task that runs completion callbacks, and the session's wake-up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from jmslike.aio import loop_turns
from jmslike.aio.wakeup import Wakeup, event_within
from jmslike.constants import DeliveryMode
from jmslike.contract import AsyncPendingReceipt, AsyncWire, Frame, OutgoingMessage
from jmslike.exceptions import ConnectionLostException, JMSException
from jmslike.messages import Message
from jmslike.send_window import SendPlaces, settle_once

if TYPE_CHECKING:
    from jmslike.aio.producer import MessageProducer
    from jmslike.aio.session_engine import SessionEngine
    from jmslike.producer import CompletionListener


class Sender:
    """The sends of one session (module docstring): hands frames to the wire and owns the send window."""

    def __init__(self, engine: SessionEngine) -> None:
        self._engine = engine
        config = engine.connection.config
        self.places = SendPlaces(
            config.send_window, config.send_window_bytes, config.receipt_timeout_ms / 1000
        )
        # A sender waiting for a place waits for this alone: on the session's wake-up every completion callback
        # queued and every delivery woke it to find the window still full (jmslike.send_window.SendWindow).
        self._freed = Wakeup()
        self._waiting = 0  # senders waiting for a place: no waiter, no wake-up

    async def send(
        self,
        producer: MessageProducer,
        outgoing: OutgoingMessage,
        message: Message,
        listener: CompletionListener | None = None,
    ) -> None:
        """Send ``outgoing`` as JMS says for its delivery mode and this session (module docstring); with a
        CompletionListener (JMS 2.0) return once written, and run the listener with the outcome, in send order,
        in this session's dispatch task."""
        engine = self._engine
        connection = engine.connection
        while True:
            # Outside a transaction and with the wire up, neither needs a coroutine (one fewer per send each).
            tx = await engine.transaction_for_send() if engine.transacted else None
            frame = connection.adapter.send_frame(outgoing, tx)
            wire = connection.wire_if_ready() or await connection.use_wire()
            # A commit, rollback or close waiting at the boundary while this send began its transaction may have
            # ended that transaction before this task ran again: then the send joins the next one (or, closing,
            # is refused), never one already committed or aborted.
            if tx is None or tx == engine.open_transaction:
                break
        if tx is None:
            await self._hand_over(producer, outgoing, message, listener, frame, wire, nothing)
            return
        # From here until its frame is with the transport the send is "in hand": a commit, rollback or close ends
        # the transaction only after, so its SEND never follows their COMMIT or ABORT.
        handed = engine.hold_in_hand()
        await self._hand_over(producer, outgoing, message, listener, frame, wire, handed, tx)

    async def _hand_over(
        self,
        producer: MessageProducer,
        outgoing: OutgoingMessage,
        message: Message,
        listener: CompletionListener | None,
        frame: Frame,
        wire: AsyncWire,
        handed: Callable[[], None],
        tx: str | None = None,
    ) -> None:
        """The rest of ``send``: hand ``frame`` over as its delivery mode, transaction and listener say; call
        ``handed`` once it is with the transport (or failed), whatever path it takes."""
        engine = self._engine
        delegated = False  # the hand-over runs on in _submit's task, or _send_unwaited took care of it
        try:
            if tx is not None and not engine.connection.adapter.transactional_send_receipts:
                # The broker answers a transactional SEND only after COMMIT (RabbitMQ): commit() waits for it.
                while (
                    loop_turns.must_yield()
                ):  # the loop's other work goes first; a cancel here sends nothing
                    await asyncio.sleep(0)
                ticket = engine.completion_ticket(listener)

                def after_commit(error: JMSException | None) -> None:  # on the loop, from the wire's reader
                    if listener is not None:
                        engine.complete(ticket, completion(listener, message, error))

                settle = settle_once(after_commit)
                # Into this transaction's lists, also once the caller was cancelled.
                submitted = engine.deferring(settle if listener is not None else None)

                try:  # in this step when the transport takes it at once (no task)
                    pending = wire.submit_nowait(frame, settle)
                except BaseException:
                    if ticket >= 0:
                        engine.complete(ticket, nothing)
                    raise
                if pending is not None:
                    submitted(pending)
                    return
                delegated = True
                await self._submit(wire, frame, settle, ticket, submitted=submitted, handed=handed)
                return
            if listener is None and (
                tx is not None
                or outgoing.delivery_mode != DeliveryMode.NON_PERSISTENT
                or engine.connection.config.force_sync_send
            ):
                # A transactional one stays in hand until answered: a commit from another task goes out only
                # after the broker took it, so a refusal (the broker closes after an ERROR) or a loss before the
                # answer leaves that commit a definite rollback, never an outcome in doubt.
                await wire.request(frame)
                return
            delegated = True
            await self._send_unwaited(producer, message, listener, frame, wire, handed)
        finally:
            if not delegated:
                handed()

    async def _send_unwaited(
        self,
        producer: MessageProducer,
        message: Message,
        listener: CompletionListener | None,
        frame: Frame,
        wire: AsyncWire,
        handed: Callable[[], None],
    ) -> None:
        """A send that does not wait for its receipt: bounded by the send window; its outcome reaches its
        CompletionListener, or the producer and the ExceptionListener. ``handed``: once the frame is with the
        transport, or will never be."""
        size = len(frame.body)
        try:
            while loop_turns.must_yield():  # the loop's other work goes first (jmslike.aio.loop_turns)
                await asyncio.sleep(
                    0
                )  # a yield, not a wait: nothing taken yet, so a cancel here sends nothing
            await self._take_place(size)
        except BaseException:
            handed()
            raise

        engine = self._engine
        ticket = engine.completion_ticket(listener)
        settled = _Unwaited(self, producer, listener, message, size, ticket)

        def unsent() -> None:
            self._release(size)

        # No await from taking the place to handing the frame over while the transport takes it at once: a
        # cancelled caller cannot split them, so no task is needed (a task per send cost ~half the send's CPU).
        try:
            pending = wire.submit_nowait(frame, settled)
        except BaseException:
            if ticket >= 0:
                engine.complete(ticket, nothing)
            unsent()
            handed()
            raise
        if pending is None:  # backed up: the awaited write drains under the write deadline
            await self._submit(wire, frame, settled, ticket, unsent, handed=handed)
        else:
            handed()

    def unwaited_answered(
        self,
        producer: MessageProducer,
        listener: CompletionListener | None,
        message: Message | None,
        size: int,
        ticket: int,
        error: JMSException | None,
    ) -> None:
        """On the loop, from the wire's reader: an unwaited send is answered. Its place comes free; its outcome
        goes to its CompletionListener (in send order), or a refusal to the producer and the ExceptionListener,
        and a loss is counted (at-most-once allows it, not silence)."""
        engine = self._engine
        self._release(size)
        if listener is not None:
            assert message is not None
            engine.complete(ticket, completion(listener, message, error))
        elif isinstance(error, ConnectionLostException):
            producer.note_lost_send(error)
        elif error is not None:
            producer.note_failed_send(error)
            engine.connection.report(error)

    async def _submit(
        self,
        wire: AsyncWire,
        frame: Frame,
        settled: Callable[[JMSException | None], None],
        ticket: int,
        unsent: Callable[[], None] | None = None,
        submitted: Callable[[AsyncPendingReceipt], None] | None = None,
        handed: Callable[[], None] | None = None,
    ) -> AsyncPendingReceipt:
        """Hand ``frame`` to the wire. A caller cancelled meanwhile does not stop it (the frame may be on its
        way, and its receipt settles it); a send that fails here raises (to its caller, if still waiting), gives
        its place in the completion order up (nothing waits behind it) and calls ``unsent``. ``submitted`` gets
        the pending receipt once the frame is handed over, whether or not the caller still waits; ``handed`` is
        called either way once the hand-over is over.

        One outcome per send, also when the submitting task itself is cancelled (loop shutdown, cancel-all) after
        its receipt was recorded: whichever comes first, the answer or the failure, settles it; the other is
        ignored (the review of ad8dc2a saw a place released twice there)."""
        outcome = False

        def settle(error: JMSException | None) -> None:  # on the loop, from the wire's reader
            nonlocal outcome
            if not outcome:
                outcome = True
                settled(error)

        submitting = asyncio.ensure_future(wire.submit(frame, settle))

        def handed_over(done: asyncio.Future[AsyncPendingReceipt]) -> None:
            nonlocal outcome
            if handed is not None:
                handed()
            if not done.cancelled() and done.exception() is None:
                if submitted is not None:
                    submitted(done.result())
            elif not outcome:
                outcome = True
                if ticket >= 0:
                    self._engine.complete(ticket, nothing)
                if unsent is not None:
                    unsent()

        submitting.add_done_callback(handed_over)
        return await asyncio.shield(submitting)

    async def _take_place(self, size: int) -> None:
        if self.places.try_take(size):
            return
        loop = asyncio.get_running_loop()
        began = loop.time()
        deadline = began + self._engine.connection.config.receipt_timeout_ms / 1000
        while True:
            now = loop.time()
            pause_s = self.places.wait_step(size, now - began, deadline - now)
            if pause_s is None:
                return
            if not pause_s:
                raise self.places.stalled()
            self._waiting += 1
            try:
                await event_within(self._freed.event, pause_s)
            finally:
                self._waiting -= 1

    def _release(self, size: int) -> None:
        """A send's place comes free: wake the senders waiting for one when it lets them go on
        (SendPlaces.release), and the session's waiters when it was the last (close, commit)."""
        if self.places.release(size):
            if self._waiting:
                self._freed.wake()
            if not self.places.busy:
                self._engine.wake()


class _Unwaited:
    """The wire's callback for one unwaited send: :meth:`Sender.unwaited_answered` with what it needs. An
    object, not a closure: the send window holds one per send in flight, and a closure over these names is nine
    objects for the garbage collector to track (the window's objects drive how often it runs; jmslike.contract).
    The message is kept only for a CompletionListener."""

    __slots__ = ("_listener", "_message", "_producer", "_sender", "_size", "_ticket")

    def __init__(
        self,
        sender: Sender,
        producer: MessageProducer,
        listener: CompletionListener | None,
        message: Message,
        size: int,
        ticket: int,
    ) -> None:
        self._sender = sender
        self._producer = producer
        self._listener = listener
        self._message = message if listener is not None else None
        self._size = size
        self._ticket = ticket

    def __call__(self, error: JMSException | None) -> None:  # on the loop, from the wire's reader
        self._sender.unwaited_answered(
            self._producer, self._listener, self._message, self._size, self._ticket, error
        )


def completion(
    listener: CompletionListener, message: Message, error: JMSException | None
) -> Callable[[], Awaitable[None] | None]:
    """The callback of one asynchronous send: ``onCompletion`` or ``onException`` (either may be a coroutine
    function)."""
    if error is None:
        return lambda: listener.onCompletion(message)
    return lambda: listener.onException(message, error)


def nothing() -> None:
    """The place of a send that raised to its caller, in the completion order: nothing to call."""

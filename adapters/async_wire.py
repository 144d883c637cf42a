"""The asyncio STOMP wire: JMS's receipts, errors and connection loss on the asyncio driver.

The twin of the threaded :mod:`~jmslike.adapters.transport` (both are :class:`~jmslike.adapters.wire_base.WireBase`,
which holds every rule they share), on :mod:`~jmslike.adapters.stomp_async` instead of a socket thread: a
receipt is a future, the hold after an unmatched ERROR is a ``call_later`` on the loop, and there is no lock
(everything runs on the loop). ``jmslike.aio`` stands on it.

Adapters are written against the blocking :class:`~jmslike.contract.Wire` (their connect, subscribe and detach
hooks make round trips). :class:`BlockingView` gives them one over this wire, for code that runs in a worker
thread (``asyncio.to_thread``) while the loop serves the wire: the aio API runs those rare hooks that way, and
keeps the data path (send, receive, acknowledge, commit) on the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import math
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from jmslike.adapters.stomp_async import AsyncStompConnection
from jmslike.adapters.stomp_core import Version
from jmslike.adapters.stomp_socket import (
    DriverSettings,
    SocketClosed,
    SocketConnectError,
    TLSConnectError,
    WriteStalled,
)
from jmslike.adapters.transport import Done
from jmslike.adapters.wire_base import ErrorMapper, WireBase
from jmslike.config import ConnectionConfig
from jmslike.contract import Frame, PendingReceipt, WireEvents
from jmslike.exceptions import (
    ConnectionLostException,
    IllegalStateException,
    JMSException,
    JMSTimeoutException,
)

T = TypeVar("T")


class WaitDeadlines:
    """The deadlines of one wire's receipt waits, kept by one timer on the loop instead of one timer per wait.

    Why: a synchronous send in jmslike.aio waits for its receipt with a deadline (receipt_timeout_ms), and a timer
    per wait -- a TimerHandle made, pushed on the loop's heap, cancelled a few hundred microseconds later and
    dropped from the heap -- was about a twentieth of that send's instructions (``python -m
    benchmarks.instructions``). Here a wait is an entry in a dict; the one timer is set for the earliest deadline,
    and when it fires it ends the waits that are due and is set again for the earliest left. Receipts come long before their deadlines, so it fires
    about once per timeout and finds nothing, whatever the rate of sends."""

    __slots__ = ("_at", "_loop", "_timer", "_waits")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._waits: dict[asyncio.Future[None], float] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._at = math.inf  # when the timer fires

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def add(self, waiting: asyncio.Future[None], timeout_s: float) -> None:
        """End ``waiting`` (its result None) once ``timeout_s`` has passed, unless it is done or removed first."""
        at = self._loop.time() + timeout_s
        self._waits[waiting] = at
        if at < self._at:
            self._set(at)

    def remove(self, waiting: asyncio.Future[None]) -> None:
        """``waiting`` is over; the timer stays set (when it fires it finds this one gone)."""
        self._waits.pop(waiting, None)

    def _set(self, at: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(at, self._due)
        self._at = at

    def _due(self) -> None:
        self._timer, self._at = None, math.inf
        now = self._loop.time()
        due = [waiting for waiting, at in self._waits.items() if at <= now]
        for waiting in due:
            del self._waits[waiting]
            _end_wait(waiting)
        if self._waits:
            self._set(min(self._waits.values()))


class AsyncPending:
    """One frame waiting for its receipt on the loop: ``await answered()``; ``callback`` runs on the loop.

    Most are never awaited (unwaited sends hear their answer through ``callback``), so a future exists only while
    someone waits: one per waiter, ended by the answer or by its deadline (the wire's :class:`WaitDeadlines`). No
    ``asyncio.timeout`` and no ``shield``, which cost a synchronous send two more objects and their callbacks
    (docs/performance.md). A waiter that times out or is cancelled ends only its own wait; the answer, when it
    comes, is still recorded and wakes the others."""

    __slots__ = ("_deadlines", "_waiters", "callback", "error", "finished", "frame")

    def __init__(
        self,
        frame: Frame,
        callback: Callable[[JMSException | None], None] | None,
        deadlines: WaitDeadlines,
    ) -> None:
        self.frame = frame
        self.callback = callback
        self.error: JMSException | None = None
        self.finished = False
        self._deadlines = deadlines
        # Made by the first waiter: most are never awaited, and a list per send in flight is one more object for
        # the garbage collector to track (jmslike.contract says why that counts).
        self._waiters: list[asyncio.Future[None]] | None = None

    def finish(self, error: JMSException | None) -> None:
        """The answer, once."""
        if self.finished:
            return
        self.finished = True
        self.error = error
        for waiting in self._waiters or ():
            _end_wait(waiting)
        if self.callback is not None:
            self.callback(error)

    async def answered(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for the answer (``error`` then says which); False when none came in time."""
        if self.finished:
            return True
        deadlines = self._deadlines
        waiting: asyncio.Future[None] = deadlines.loop.create_future()
        if self._waiters is None:
            self._waiters = []
        waiters = self._waiters
        waiters.append(waiting)
        deadlines.add(waiting, timeout_s)
        try:
            await waiting
        finally:
            deadlines.remove(waiting)
            waiters.remove(waiting)
        return self.finished


def _end_wait(waiting: asyncio.Future[None]) -> None:
    """Wake one waiter of :meth:`AsyncPending.answered` (answered, or out of time), unless it is gone."""
    if not waiting.done():
        waiting.set_result(None)


class AsyncStompWire(WireBase[AsyncPending]):
    """One STOMP connection to one broker host on the running loop. Not reconnecting."""

    _ids = itertools.count(1)

    def __init__(
        self,
        config: ConnectionConfig,
        host: tuple[str, int],
        stomp_version: Version,
        events: WireEvents,
        error_for: ErrorMapper,
        default_vhost: str | None = None,
        tx_sends_answered_at_commit: bool = False,
    ) -> None:
        super().__init__(config, host, events, error_for, default_vhost, tx_sends_answered_at_commit)
        self._loop = asyncio.get_running_loop()
        self._deadlines = WaitDeadlines(self._loop)
        self._connected = asyncio.Event()
        self._connection = AsyncStompConnection(
            DriverSettings.from_config(config, host, stomp_version, f"a{next(self._ids)}-"),
            on_event=self._on_event,
            on_closed=self._ended,
            hold=self._hold_reading,
        )

    async def open(self, headers: Mapping[str, str]) -> dict[str, str]:
        """Connect and wait for CONNECTED; return its headers. Errors are mapped, never hang."""
        try:
            await self._connection.connect(self._vhost, self._with_credentials(headers))
        except ValueError as exc:
            raise self._connect_failure(exc, None) from None
        except (TLSConnectError, SocketConnectError) as exc:
            raise self._connect_failure(exc, None) from exc.cause
        except (SocketClosed, WriteStalled) as exc:
            self._abandon()
            raise self._connect_failure(exc, self._connection.tls_error) from exc
        try:
            await asyncio.wait_for(self._connected.wait(), self._config.connect_timeout_ms / 1000)
        except TimeoutError:
            self._abandon()
            raise self._connect_timeout() from None
        refusal = self._connect_outcome(self._connection.tls_error)
        if refusal is not None:
            self._abandon()
            raise refusal
        return self._connected_headers

    def _abandon(self) -> None:
        self._closing = True
        self._connection.abort()

    async def close(self, timeout_s: float = 5.0) -> None:
        """Graceful DISCONNECT (its receipt means the broker has every frame before it), then drop the socket."""
        if self._closing:
            return
        self._closing = True
        self._wake_reader()  # a held reader reads on: DISCONNECT's receipt is behind what it holds back
        try:
            if not self._lost:
                await self._connection.disconnect(timeout_s)
        finally:
            self._fail_all(ConnectionLostException("connection closed"))

    def kill_socket(self) -> None:
        """Drop the TCP connection without DISCONNECT (tests of recovery)."""
        self._connection.abort()

    async def _write(self, frame: Frame, pending: AsyncPending | None, recorded: list[str]) -> None:
        try:
            await self._connection.send(
                self._prepare(frame), receipt=pending is not None, on_sent=self._recorder(pending, recorded)
            )
        except Exception as exc:
            raise self._lost_writing(frame, exc) from exc

    def _lost_writing(self, frame: Frame, exc: Exception) -> ConnectionLostException:
        """A write failed: drop the stream (how much of the frame went out is unknown) and return what the caller
        raises (if the call is still its own: one outcome). A stall or a closed socket says why; anything else the
        transport raised is named."""
        if isinstance(exc, (WriteStalled, SocketClosed)):
            error, reason = self._write_failure(frame, exc)
        else:
            reason = f"the transport failed while writing {frame.command}: {exc!r}"
            error = ConnectionLostException(f"jmslike dropped the connection: {reason}")
        self._connection.abort(reason)
        return error

    async def submit(
        self, frame: Frame, callback: Callable[[JMSException | None], None] | None
    ) -> AsyncPending:
        """Send with a receipt and return once the frame is written; ``callback`` runs on the loop when
        answered. Exactly one outcome: this raises and ``callback`` never runs, or ``callback`` runs once.

        A caller cancelled while the transport drains gets CancelledError with the frame on its way: its answer
        is no longer counted as one the connection waits for (``_gave_up``), and a callback would still run, so
        callers with a callback shield this call (the session engine does)."""
        self._check_usable(frame)
        pending = AsyncPending(frame, callback, self._deadlines)
        recorded: list[str] = []
        try:
            await self._write(frame, pending, recorded)
        except JMSException:
            if self._still_ours(recorded):
                raise
        except asyncio.CancelledError:
            if recorded:
                self._gave_up(pending)
            raise
        return pending

    def submit_nowait(
        self, frame: Frame, callback: Callable[[JMSException | None], None] | None, coalesce: bool = True
    ) -> AsyncPending | None:
        """:meth:`submit` with no await, so a cancelled caller cannot come between the frame and its
        bookkeeping and no task is needed to shield it. Only while the transport is below its high-water mark:
        otherwise None, nothing written, and the caller awaits :meth:`submit`, which drains under the write
        deadline. So what is buffered this way stays within one frame, and one batch of coalesced frames (64
        KiB, :func:`~jmslike.adapters.stomp_socket.may_coalesce`), of what an awaited write allows.
        ``coalesce``: whether the frame may wait in the batch (False when the caller waits for its answer)."""
        self._check_usable(frame)
        if not self._connection.takes_without_waiting:
            return None
        pending = AsyncPending(frame, callback, self._deadlines)
        recorded: list[str] = []
        try:
            self._connection.write(
                self._prepare(frame),
                receipt=True,
                on_sent=self._recorder(pending, recorded),
                coalesce=coalesce,
            )
        except Exception as exc:
            error = self._lost_writing(frame, exc)
            if self._still_ours(recorded):
                raise error from exc
        return pending

    def blocking(self, timeout_s: float) -> BlockingView:
        """The blocking view of this wire for adapter hooks in a worker thread (contract.AsyncWire)."""
        return BlockingView(self, self._loop, timeout_s)

    async def request(self, frame: Frame, timeout_s: float | None = None) -> None:
        """Send ``frame`` with a receipt and wait; raise the mapped exception on ERROR or timeout. Written without
        an await when the transport takes it at once (the hot path of a synchronous send: three coroutines fewer)."""
        pending = self.submit_nowait(frame, None, coalesce=False)
        if pending is None:
            pending = await self.submit(frame, None)
        elif not self._connection.takes_without_waiting:
            # This frame took the transport past its high-water mark: it gets the write deadline first, as one
            # written by submit does (a broker that stops reading is a loss that says so, not a receipt timeout
            # with the frame still going out).
            try:
                await self._connection.drained()
            except asyncio.CancelledError:
                self._gave_up(pending)
                raise
            except Exception as exc:
                raise self._lost_writing(frame, exc) from exc
        timeout = self._config.receipt_timeout_ms / 1000 if timeout_s is None else timeout_s
        try:
            answered = await pending.answered(timeout)
        except asyncio.CancelledError:
            self._gave_up(pending)  # the caller was cancelled: nobody waits for this receipt any more
            raise
        if not answered:
            self._gave_up(pending)
            raise JMSTimeoutException(f"no receipt for {frame.command} within {timeout:.1f}s")
        if pending.error is not None:
            raise pending.error

    async def post(self, frame: Frame) -> None:
        """Send without a receipt."""
        self._check_usable(frame)
        await self._write(frame, None, [])

    def post_nowait(self, frame: Frame) -> None:
        """Send without a receipt and without waiting for the transport to drain (no await: a coroutine
        cancelled right after cannot have the frame half done); the next awaited write drains it."""
        self._check_usable(frame)
        try:
            self._connection.write(self._prepare(frame))
        except Exception as exc:
            raise self._lost_writing(frame, exc) from exc

    def _connect_answered_hook(self) -> None:
        self._connected.set()

    def _forget_receipts(self, receipt_ids: list[str]) -> None:
        self._connection.forget(receipt_ids)

    def _wake_reader(self) -> None:  # on the loop: jmslike.aio's inboxes and receipts live there
        self._connection.wake_reader()

    def _call_later(self, delay_s: float, callback: Callable[[], None]) -> None:
        self._loop.call_later(delay_s, callback)


class _ViewPending:
    """A receipt awaited from a worker thread (the blocking contract's PendingReceipt)."""

    __slots__ = ("done", "error", "on_loop")

    def __init__(self) -> None:
        self.done = Done()
        self.error: JMSException | None = None
        self.on_loop: AsyncPending | None = None  # the wire's own pending, once submitted

    def wait(self, timeout_s: float) -> bool:
        return self.done.wait(timeout_s)


class BlockingView:
    """The blocking :class:`~jmslike.contract.Wire` over an :class:`AsyncStompWire`, for adapter hooks run in a
    worker thread while the loop serves the wire. Called on the loop's own thread it would wait for itself:
    that raises IllegalStateException instead of hanging."""

    def __init__(self, wire: AsyncStompWire, loop: asyncio.AbstractEventLoop, timeout_s: float) -> None:
        """``timeout_s``: the longest a call waits for the loop (beyond the wire's own receipt timeout)."""
        self._wire = wire
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._timeout_s = timeout_s

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if threading.get_ident() == self._loop_thread:
            coroutine.close()
            raise IllegalStateException(
                "a blocking wire call on the event loop's thread would wait for itself"
            )
        try:
            return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(self._timeout_s)
        except concurrent.futures.TimeoutError:
            raise JMSTimeoutException(
                f"the event loop did not run this wire call within {self._timeout_s:.1f}s (is it still running?)"
            ) from None

    @property
    def host(self) -> tuple[str, int]:
        return self._wire.host

    @property
    def is_open(self) -> bool:
        return self._wire.is_open

    def request(self, frame: Frame, timeout_s: float | None = None) -> None:
        self._run(self._wire.request(frame, timeout_s))

    def post(self, frame: Frame) -> None:
        self._run(self._wire.post(frame))

    def submit(self, frame: Frame, callback: Callable[[JMSException | None], None] | None) -> _ViewPending:
        view = _ViewPending()

        def answered(error: JMSException | None) -> None:
            view.error = error
            view.done.set()
            if callback is not None:
                callback(error)

        view.on_loop = self._run(self._wire.submit(frame, answered))
        return view

    def discard(self, pending: Sequence[PendingReceipt]) -> None:
        on_loop = [view.on_loop for view in pending if isinstance(view, _ViewPending)]
        self._loop.call_soon_threadsafe(self._wire.discard, on_loop)

    def awaiting_answers(self) -> contextlib.nullcontext[None]:
        """Nothing to do: the asyncio driver holds frames only to the end of the loop's turn, which a waiting
        caller's await reaches."""
        return contextlib.nullcontext()

    def close(self, timeout_s: float = 5.0) -> None:
        self._run(self._wire.close(timeout_s))

"""The asynchronous send window of one session: how many sends await their receipt, and their bytes.

A producer must not run ahead of the broker without bound (JMS 2.0 asynchronous sends, and unwaited
NON_PERSISTENT sends): a send takes a place before its frame is written and gives it back when its receipt
(or its error, or the loss of the connection) settles it. The window bounds both the count
(``send_window``) and the bytes of message bodies (``send_window_bytes``, 0 = no byte bound); a message
bigger than the byte window goes alone, so it is never refused for its size. The counting
(:class:`SendPlaces`) is pure state; :class:`SendWindow` adds the threaded sender's wait, on a condition of its
own over the session's lock. Both are unit-tested without a broker.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Final, Generic, TypeVar

from jmslike.exceptions import JMSException

T = TypeVar("T")


def settle_once(settled: Callable[[JMSException | None], None]) -> Callable[[JMSException | None], None]:
    """``settled`` called at most once, whoever calls first: the wire with the broker's answer, or the session
    giving up a send the broker will never answer (a rolled-back transaction's, on a broker that answers
    transactional sends only at COMMIT)."""
    lock = threading.Lock()
    done = False

    def once(error: JMSException | None) -> None:
        nonlocal done
        with lock:
            if done:
                return
            done = True
        settled(error)

    return once


class CompletionOrder(Generic[T]):
    """JMS 2.0 §7.3.8: the completion callbacks of a session's asynchronous sends run in the order of the sends,
    whatever order the broker's receipts arrive in (Artemis 2.21 answers PERSISTENT sends out of order: a
    receipt waits for the journal, a later send's may not). Each send takes a ticket; a settled one is held
    until every earlier ticket is settled. Pure state, under the session's lock or on its loop."""

    def __init__(self) -> None:
        self._issued = 0
        self._next = 0
        self._settled: dict[int, T] = {}

    def ticket(self) -> int:
        """The place of a send in this session's order, taken before its frame is written."""
        ticket = self._issued
        self._issued += 1
        return ticket

    def settle(self, ticket: int, callback: T) -> list[T]:
        """``ticket``'s send is settled with ``callback``: the callbacks that may run now, in send order."""
        self._settled[ticket] = callback
        ready: list[T] = []
        while self._next in self._settled:
            ready.append(self._settled.pop(self._next))
            self._next += 1
        return ready


#: How long a sender that found the send window full waits for a quarter of it to come free before it takes any
#: place that has (:class:`SendPlaces`). It was tuned with a window of 256, a quarter of which RabbitMQ answers in about
#: 3 ms of streaming 4 KB sends. With the default window of 1024 a quarter takes longer than this on both brokers, so
#: it is this wait that decides: a full window's sender goes on every 5 ms with the places answered meanwhile, and a
#: trickle of answers keeps sends going at the broker's pace.
REFILL_WAIT_S: Final = 0.005


class SendPlaces:
    """The counting alone: places taken and the bytes they carry, no waiting (the asyncio ``Sender`` waits on a
    ``Wakeup`` of its own, :class:`SendWindow` on a condition of its own).

    A sender that found the window full goes on once a quarter of it is free again (:meth:`refilled`), or after
    :data:`REFILL_WAIT_S` at any place free (:meth:`wait_step`), not at the first place given back: TCP's "silly
    window" avoidance. Taking places one at a time as receipts came in had the sender wake, write one frame and
    block again per receipt, each a thread switch and a write of its own (RabbitMQ NON_PERSISTENT 4 KB sends:
    375-1,587 waits per 20,000 sends, now 50-90; docs/performance.md). The time bound keeps a broker that answers a
    trickle (ActiveMQ's producer flow control pacing sends to a slow consumer) from holding a sender back until its
    receipt timeout. A send that finds a place free never waits."""

    def __init__(self, count_limit: int, byte_limit: int, timeout_s: float) -> None:
        self._count_limit = max(1, count_limit)
        self._byte_limit = byte_limit
        self._timeout_s = timeout_s
        self._sends = 0
        self._bytes = 0
        #: A waiting sender goes on at or below these: three quarters of the window, and at least one place free.
        self._refill_sends = self._count_limit - max(1, self._count_limit // 4)
        self._refill_bytes = byte_limit - byte_limit // 4
        #: A sender has waited out REFILL_WAIT_S: the next place given back wakes it. One-shot, taken by that
        #: release: every waiter it wakes looks again and sets it again if it still cannot go on (a take does not
        #: clear it, or of two impatient senders of different sizes the one that fits would leave the other
        #: unwoken; review of b705614).
        self._impatient = False

    @property
    def busy(self) -> bool:
        """Some send still awaits its receipt."""
        return self._sends > 0

    def try_take(self, size: int) -> bool:
        """Take a place for a send of ``size`` body bytes if one is free."""
        if self._full(size):
            return False
        self._sends += 1
        self._bytes += size
        return True

    def release(self, size: int) -> bool:
        """A send of ``size`` bytes settled; True when that may let a waiter go on -- a sender waiting for places
        (:meth:`wait_step`), or one waiting for every send to be settled -- so the caller wakes them only then."""
        self._sends -= 1
        self._bytes -= size
        impatient, self._impatient = self._impatient, False
        return self._sends == 0 or impatient or self.refilled()

    def refilled(self) -> bool:
        """A quarter of the window is free again (in sends and in bytes): a sender that found it full may go on."""
        return self._sends <= self._refill_sends and (
            not self._byte_limit or self._bytes <= self._refill_bytes
        )

    def wait_step(self, size: int, waited_s: float, remaining_s: float) -> float | None:
        """One look by a sender that found the window full, has waited ``waited_s`` and may wait ``remaining_s``
        more (the receipt timeout): None when it took a place for ``size`` bytes; else how long to wait before
        looking again (it is woken sooner when a release returns True), 0.0 when its time is up and nothing came
        free (raise :meth:`stalled`). It takes a place once the window is refilled; once it has waited
        :data:`REFILL_WAIT_S`, or at its deadline, any place free will do."""
        patient = waited_s < REFILL_WAIT_S and remaining_s > 0
        if (not patient or self.refilled()) and self.try_take(size):
            return None
        if remaining_s <= 0:
            return 0.0
        if patient:
            return min(remaining_s, REFILL_WAIT_S - waited_s)
        self._impatient = True  # from now on any place given back wakes it (release)
        return remaining_s

    def stalled(self) -> JMSException:
        """What a send that found no place within the receipt timeout raises: nothing was sent."""
        return JMSException(
            f"{self._sends} asynchronous send(s) ({self._bytes} bytes) still unconfirmed after "
            f"{self._timeout_s:.1f}s (receipt_timeout_ms): the broker does not answer (ActiveMQ: "
            "producer flow control, a full memory or store limit); this send was not made: send it "
            "again later, or raise receipt_timeout_ms"
        )

    def _full(self, size: int) -> bool:
        if self._sends >= self._count_limit:
            return True
        return bool(self._byte_limit) and self._sends > 0 and self._bytes + size > self._byte_limit


class SendWindow(SendPlaces):
    """Places for asynchronous sends; every method is called with or takes ``lock``, the session's (entered
    directly: a C call, where a Condition's ``with`` is two Python calls).

    A sender waiting for a place waits on a condition of its own over that lock, woken by :meth:`wake_senders`
    alone: on the session's condition, every completion queued for the dispatch thread and every delivery woke it
    too, to find the window still full and wait again (ActiveMQ, 256 B CompletionListener sends: 0.17-0.19 waits
    per send, while 1.1-1.4% of sends found the window full; docs/performance.md)."""

    def __init__(
        self,
        lock: threading.RLock | threading.Lock,
        count_limit: int,
        byte_limit: int,
        timeout_s: float,
        awaiting: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        super().__init__(count_limit, byte_limit, timeout_s)
        self._cond = threading.Condition(lock)
        self._lock = lock
        self._waiting = 0  # senders waiting for a place: no waiter, no wake-up
        #: Around each wait for a place: tells the wire someone waits for its receipts (Wire.awaiting_answers).
        self._awaiting = awaiting

    def wake_senders(self) -> None:
        """Under the lock: wake the senders waiting for a place, if any, as :meth:`~SendPlaces.release` asked."""
        if self._waiting:
            self._cond.notify_all()

    def acquire(self, size: int) -> None:
        """Wait (at most the receipt timeout) for a place for a send of ``size`` body bytes; raise a
        JMSException saying nothing was sent when none came free."""
        began = time.monotonic()
        deadline = began + self._timeout_s
        with self._lock:
            if self.try_take(size):
                return
            while True:
                now = time.monotonic()
                pause_s = self.wait_step(size, now - began, deadline - now)
                if pause_s is None:
                    return
                if not pause_s:
                    raise self.stalled()
                self._waiting += 1
                try:
                    with self._awaiting():
                        self._cond.wait(pause_s)
                finally:
                    self._waiting -= 1

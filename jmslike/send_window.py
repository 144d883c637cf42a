"""The asynchronous send window of one session: how many sends await their receipt, and their bytes.

A producer must not run ahead of the broker without bound (JMS 2.0 asynchronous sends, and unwaited
NON_PERSISTENT sends): a send takes a place before its frame is written and gives it back when its receipt
(or its error, or the loss of the connection) settles it. The window bounds both the count
(``send_window``) and the bytes of message bodies (``send_window_bytes``, 0 = no byte bound); a message
bigger than the byte window goes alone, so it is never refused for its size. Pure state under the
session's condition (the session also waits on it for the window to empty), so it is unit-tested without
a broker.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Generic, TypeVar

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


class SendPlaces:
    """The counting alone: places taken and the bytes they carry, no waiting (the asyncio session waits on its
    loop, :class:`SendWindow` on a condition)."""

    def __init__(self, count_limit: int, byte_limit: int, timeout_s: float) -> None:
        self._count_limit = max(1, count_limit)
        self._byte_limit = byte_limit
        self._timeout_s = timeout_s
        self._sends = 0
        self._bytes = 0

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

    def release(self, size: int) -> None:
        """A send of ``size`` bytes settled."""
        self._sends -= 1
        self._bytes -= size

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
    """Places for asynchronous sends; every method is called with or takes ``cond``, the session's, made with
    ``lock`` (entered directly: a C call, where the Condition's ``with`` is two Python calls)."""

    def __init__(
        self,
        cond: threading.Condition,
        lock: AbstractContextManager[Any],
        count_limit: int,
        byte_limit: int,
        timeout_s: float,
        awaiting: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
    ) -> None:
        super().__init__(count_limit, byte_limit, timeout_s)
        self._cond = cond
        self._lock = lock
        #: Around each wait for a place: tells the wire someone waits for its receipts (Wire.awaiting_answers).
        self._awaiting = awaiting

    def acquire(self, size: int) -> None:
        """Wait (at most the receipt timeout) for a place for a send of ``size`` body bytes; raise a
        JMSException saying nothing was sent when none came free."""
        deadline = time.monotonic() + self._timeout_s
        with self._lock:
            while not self.try_take(size):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self.stalled()
                with self._awaiting():
                    self._cond.wait(remaining)

"""How many bytes a connection's consumers may hold undelivered: the byte bound on top of prefetch.

The broker pushes up to ``prefetch`` messages ahead per consumer; that bounds a consumer's buffer in messages,
not in bytes (1000 messages of 10 MB are 10 GB). STOMP has no byte credit on ActiveMQ or RabbitMQ, so the one
lever a client has is TCP itself: once the bodies buffered in a connection's consumer inboxes pass
``buffer_bytes`` (a URL key), its wire stops reading from the socket; the kernel's buffers fill and the broker
stops sending to this connection. Reading resumes once the application has taken the buffer down to half the
bound (hysteresis, so the reader does not stop and go at every message).

Two exceptions keep this from ever hanging a call. While a frame of this connection waits for its receipt (a
send, an acknowledgement with a receipt, a subscribe or close), and while a caller waits for messages that are
no consumer's (a queue browse, jmslike's own reads of a retained-publication store: :meth:`BufferGauge.reading`),
the wire reads on, since what they wait for is behind the held-back messages in the stream. So the bound holds
whenever the connection only consumes, which is where big backlogs pile up; a connection that also sends keeps
the prefetch bound. The price of the bound is the price of TCP: a consumer whose messages nobody takes stops the
deliveries of every other consumer of its connection once it holds the bound (give such consumers a connection
of their own, or a bigger ``buffer_bytes``), and while the wire holds back, a broker that died is noticed only
when reading resumes or a write fails.

Where the broker cannot take a client that stops reading, the adapter declares ``byte_bound=False`` and the
connection counts nothing: RabbitMQ 3.10 resets such a connection (held 30 s, with heart-beats or without; 3 s
with 1 s heart-beats; raw control: ``python -m jmslike.conformance.held_reader``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class BufferGauge:
    """The bytes of message bodies a connection's consumers hold undelivered, against ``limit`` (0 = no byte
    bound). Thread-safe: the threaded API's sessions update it from their own threads."""

    __slots__ = ("_limit", "_lock", "_low", "_over", "_readers", "_total", "_watchers")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._low = limit // 2
        self._lock = threading.Lock()
        self._total = 0
        self._over = False
        self._readers = 0  # callers waiting for messages that are no consumer's (reading())
        self._watchers: list[Callable[[], None]] = []

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def total(self) -> int:
        """Bytes held now."""
        return self._total

    @property
    def over(self) -> bool:
        """Past the bound, and not yet back down to half of it: the wire should not read."""
        return self._over

    @property
    def holding(self) -> bool:
        """The wire should not read: over the bound, and nobody waits in :meth:`reading`."""
        return self._over and not self._readers

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """While a caller waits for messages that are no consumer's (a browse, a store read): the wire reads on,
        over the bound or not (they are behind what it holds back)."""
        with self._lock:
            self._readers += 1
            watchers = list(self._watchers) if self._over else []
        for wake in watchers:
            wake()
        try:
            yield
        finally:
            with self._lock:
                self._readers -= 1

    def add(self, size: int) -> None:
        """A message of ``size`` body bytes went into an inbox."""
        if self._limit:
            with self._lock:
                self._total += size
                if self._total > self._limit:
                    self._over = True

    def remove(self, size: int) -> None:
        """A message of ``size`` body bytes left an inbox (taken, or dropped with the inbox)."""
        if not self._limit:
            return
        with self._lock:
            self._total -= size
            released = self._over and self._total <= self._low
            if released:
                self._over = False
            watchers = list(self._watchers) if released else []
        for wake in watchers:  # outside the lock: a wire's wake-up takes its own
            wake()

    def watch(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` whenever the gauge drops back under its bound (a wire's reader waits for it)."""
        with self._lock:
            self._watchers.append(wake)

    def unwatch(self, wake: Callable[[], None]) -> None:
        with self._lock:
            if wake in self._watchers:
                self._watchers.remove(wake)

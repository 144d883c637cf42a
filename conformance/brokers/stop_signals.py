"""The stop request of a foreground command (``run KIND``): which of SIGINT/SIGTERM arrived, and a wait for one.

Why not a ``threading.Event`` set by the handler: a Python signal handler runs in the main thread between two
bytecodes of whatever it was doing, and ``Event.set()`` takes the lock of the Event's condition. When the signal
lands while the main thread is inside ``Event.wait()`` holding that same lock (a window of a few bytecodes per
wait), the handler waits for a lock its own thread holds, forever. CI hit exactly that (2026-11-26): a SIGTERM
sent just as ``run rabbitmq`` entered its wait loop, and the command never exited. The handler here only appends
to a list, which takes no lock, and the wait sleeps in short slices and looks at the list between them.
"""

from __future__ import annotations

import signal
import time
from types import FrameType

# How long a stop request may go unnoticed; sleep() resumes after a handler ran, so the slice bounds the delay.
_SLICE_S = 0.05


class StopSignals:
    """Records stop signals from a handler that takes no lock; :meth:`wait` returns once one arrived."""

    def __init__(self) -> None:
        self._received: list[int] = []

    def install(self, *signums: int) -> None:
        """Handle ``signums`` in this process (call from the main thread, as ``signal.signal`` requires)."""
        for signum in signums:
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._received.append(signum)  # list.append takes no lock: safe wherever the handler interrupts

    @property
    def received(self) -> int | None:
        """The first stop signal that arrived, or None."""
        return self._received[0] if self._received else None

    def wait(self, timeout_s: float) -> bool:
        """True as soon as a stop signal has arrived; False after ``timeout_s`` without one."""
        deadline = time.monotonic() + timeout_s
        while not self._received:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, _SLICE_S))
        return True

"""A wake-up that any number of coroutines wait for, and waiting for one with a time bound.

A session's coroutines wait for "something changed" (a message came, the connection started, a send was
answered) and then look at the state again. An :class:`asyncio.Event` that is set and cleared would lose a
change made between a waiter's look and its wait; instead each change sets the current event and puts a fresh
one in its place, and a waiter takes the current event with no ``await`` between its look and the take
(:attr:`Wakeup.event`), so a change after its look has set the very event it waits on.
"""

from __future__ import annotations

import asyncio


class Wakeup:
    """One kind of change: :meth:`wake` wakes every coroutine waiting for it so far."""

    __slots__ = ("event",)

    def __init__(self) -> None:
        #: Take it with no await since looking at the state, then wait on it (module docstring).
        self.event = asyncio.Event()

    def wake(self) -> None:
        """Wake every coroutine waiting on the current event; later waiters wait for the next wake-up."""
        event, self.event = self.event, asyncio.Event()
        event.set()


async def event_within(event: asyncio.Event, timeout_s: float) -> bool:
    """Wait for ``event`` at most ``timeout_s``; False when the time ran out. (``asyncio.timeout``, not
    ``wait_for``, which makes a task per wait: this is on the send window's hot path.)"""
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return False
    return True

"""How many sends may run on an event loop before the loop runs anything else.

An unwaited send that finds a place in its session's window and a transport that takes the frame suspends
nowhere (jmslike.aio.sending). A loop of them would keep the reader, the heart-beats and every other task
of the application from running; so after :data:`SENDS_PER_TURN` such sends in one turn of the event loop, the
next one yields first. The count is the loop's, shared by every session and connection on it: a count per
session let 128 sessions run 4,096 sends per turn (678 ms of loop lag, a heart-beat timeout on an idle
connection; review of dcd36f8).
"""

from __future__ import annotations

import asyncio
import weakref

SENDS_PER_TURN = 32


class _Turn:
    """Sends in the current turn of one loop; reset by a callback the first send of a turn schedules."""

    __slots__ = ("armed", "sends")

    def __init__(self) -> None:
        self.sends = 0
        self.armed = False

    def reset(self) -> None:
        self.sends = 0
        self.armed = False


_turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Turn] = weakref.WeakKeyDictionary()


def must_yield() -> bool:
    """Count one send on the running loop; True when the turn has had its share and the caller should yield
    (``await asyncio.sleep(0)``) and ask again (``while must_yield()``: a resumed task counts in its new turn,
    or every yielding task would send one frame beyond the budget) before doing anything it cannot undo. The
    reset is scheduled with ``call_soon`` at the first send of a turn, so it runs before a task that yields
    resumes."""
    loop = asyncio.get_running_loop()
    turn = _turns.get(loop)
    if turn is None:
        turn = _turns[loop] = _Turn()
    if not turn.armed:
        turn.armed = True
        loop.call_soon(turn.reset)
    turn.sends += 1
    return turn.sends > SENDS_PER_TURN

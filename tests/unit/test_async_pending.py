"""A receipt awaited on the loop (adapters/async_wire.AsyncPending): answered once, whoever waited or gave up."""

from __future__ import annotations

import asyncio

from jmslike.adapters.async_wire import AsyncPending, WaitDeadlines
from jmslike.contract import Frame
from jmslike.exceptions import JMSException

FRAME = Frame("SEND", {"destination": "/queue/x"}, b"")


def test_a_wait_ends_with_the_answer() -> None:
    async def scenario() -> None:
        heard: list[JMSException | None] = []
        pending = AsyncPending(FRAME, heard.append, WaitDeadlines(asyncio.get_running_loop()))
        error = JMSException("refused")
        asyncio.get_running_loop().call_soon(pending.finish, error)
        assert await pending.answered(30.0) is True
        assert pending.error is error and heard == [error]
        pending.finish(None)  # a second answer changes nothing
        assert pending.error is error and heard == [error]

    asyncio.run(scenario())


def test_a_wait_that_times_out_leaves_the_answer_to_come() -> None:
    async def scenario() -> None:
        heard: list[JMSException | None] = []
        pending = AsyncPending(FRAME, heard.append, WaitDeadlines(asyncio.get_running_loop()))
        assert await pending.answered(0.01) is False
        assert pending.error is None and heard == []
        pending.finish(None)
        assert heard == [None]
        assert await pending.answered(0.0) is True  # already answered: no wait at all

    asyncio.run(scenario())


def test_a_second_wait_after_a_timeout_hears_the_answer() -> None:
    async def scenario() -> None:
        pending = AsyncPending(FRAME, None, WaitDeadlines(asyncio.get_running_loop()))
        assert await pending.answered(0.01) is False
        asyncio.get_running_loop().call_later(0.01, pending.finish, None)
        assert await pending.answered(30.0) is True

    asyncio.run(scenario())


def test_a_cancelled_waiter_does_not_cancel_the_answer() -> None:
    async def scenario() -> None:
        heard: list[JMSException | None] = []
        pending = AsyncPending(FRAME, heard.append, WaitDeadlines(asyncio.get_running_loop()))
        waiter = asyncio.ensure_future(pending.answered(30.0))
        await asyncio.sleep(0)  # the waiter is waiting
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        assert waiter.cancelled()
        pending.finish(None)
        assert heard == [None] and pending.finished
        assert await pending.answered(30.0) is True

    asyncio.run(scenario())


def test_concurrent_waiters_each_keep_their_own_timeout_and_cancellation() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        pending = AsyncPending(FRAME, None, WaitDeadlines(loop))
        short = asyncio.ensure_future(pending.answered(0.01))
        long = asyncio.ensure_future(pending.answered(30.0))
        cancelled = asyncio.ensure_future(pending.answered(30.0))
        await asyncio.sleep(0)  # a yield: the three are waiting
        cancelled.cancel()
        assert await short is False  # its own timeout ended only its own wait
        assert not long.done()
        pending.finish(None)
        assert await long is True  # neither the cancel nor the short timeout ended it
        await asyncio.gather(cancelled, return_exceptions=True)
        assert cancelled.cancelled()

    asyncio.run(scenario())


def test_one_timer_keeps_every_deadline_of_a_wire() -> None:
    # Waits of several frames on one wire share its WaitDeadlines: a later wait with an earlier deadline ends first,
    # the timer is set again for the waits left, and a wait answered in time is never ended by the timer.
    async def scenario() -> None:
        deadlines = WaitDeadlines(asyncio.get_running_loop())
        slow, quick, answered = (AsyncPending(FRAME, None, deadlines) for _ in range(3))
        slow_wait = asyncio.ensure_future(slow.answered(0.2))
        answered_wait = asyncio.ensure_future(answered.answered(0.05))
        quick_wait = asyncio.ensure_future(quick.answered(0.02))
        await asyncio.sleep(0)  # all three are waiting
        answered.finish(None)
        assert await quick_wait is False
        assert not slow_wait.done()
        assert await answered_wait is True
        assert await slow_wait is False  # the timer, set again after the quick one, ended it too

    asyncio.run(scenario())


def test_an_answered_wait_leaves_no_deadline_behind() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        deadlines = WaitDeadlines(loop)
        for _ in range(100):
            pending = AsyncPending(FRAME, None, deadlines)
            loop.call_soon(pending.finish, None)
            assert await pending.answered(30.0) is True
        ended = AsyncPending(FRAME, None, deadlines)
        # The timer, still set for the first of the 100 deadlines (30 s away), is moved earlier for this one.
        assert await ended.answered(0.01) is False

    asyncio.run(scenario())

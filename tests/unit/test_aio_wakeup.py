"""jmslike.aio.wakeup: a change made between a waiter's look and its wait is not lost, a change wakes every
waiter so far and none after, and a bounded wait says whether it was woken."""

from __future__ import annotations

import asyncio

from jmslike.aio.wakeup import Wakeup, event_within


def test_a_wake_between_the_look_and_the_wait_is_not_lost() -> None:
    async def run() -> bool:
        wakeup = Wakeup()
        taken = wakeup.event  # taken before looking at the state
        wakeup.wake()  # the change lands after the look, before the wait
        return await event_within(taken, 5.0)

    assert asyncio.run(run())


def test_a_wake_wakes_every_waiter_so_far_and_not_the_next() -> None:
    async def run() -> tuple[list[bool], bool]:
        wakeup = Wakeup()
        waiters = [asyncio.ensure_future(event_within(wakeup.event, 5.0)) for _ in range(3)]
        await asyncio.sleep(0)  # let them wait
        wakeup.wake()
        woken = list(await asyncio.gather(*waiters))
        later = await event_within(wakeup.event, 0.01)  # no wake since it took the event
        return woken, later

    woken, later = asyncio.run(run())
    assert woken == [True, True, True]
    assert later is False


def test_a_bounded_wait_without_a_wake_returns_false() -> None:
    assert asyncio.run(event_within(Wakeup().event, 0.01)) is False

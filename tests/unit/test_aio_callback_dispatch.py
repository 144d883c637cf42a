"""The asyncio session's dispatch of completion callbacks, batched (jmslike.aio.session_engine._run_callbacks):
each callback still has a scope of its own, and none runs once the session is closed. Pure scheduling on one event
loop: the engine runs on a stand-in for its connection that owns no socket (no broker behaviour is involved)."""

from __future__ import annotations

import asyncio
import types

from jmslike.aio import listener_scope
from jmslike.aio.session_engine import SessionEngine
from jmslike.constants import AcknowledgeMode
from jmslike.exceptions import JMSException


class _Connection:
    """What the engine asks of its connection while it only runs callbacks."""

    config = types.SimpleNamespace(send_window=1024, send_window_bytes=1 << 22, receipt_timeout_ms=10_000)
    failure = None
    started = ready = types.SimpleNamespace(is_set=lambda: False)  # no listener deliveries

    def __init__(self) -> None:
        self.reports: list[JMSException] = []

    def report(self, error: JMSException) -> None:
        self.reports.append(error)

    def check_open(self) -> None:
        pass


def _engine() -> tuple[SessionEngine, _Connection]:
    connection = _Connection()
    return SessionEngine(connection, AcknowledgeMode.AUTO_ACKNOWLEDGE), connection  # type: ignore[arg-type]


def test_a_task_a_callback_started_acts_for_it_only_until_it_returns() -> None:
    """Callbacks queued together run in one batch, but a task the first one started is on its own once that callback
    returned, while the next one runs (a shared scope made its commit wait for the whole batch)."""

    async def run() -> list[bool]:
        engine, _ = _engine()
        second_runs = asyncio.Event()
        seen: list[bool] = []

        async def started_by_first() -> None:
            await second_runs.wait()
            scope = listener_scope.of(engine)
            seen.append(scope is not None and scope.callback)

        spawned: list[asyncio.Task[None]] = []

        def first() -> None:
            spawned.append(asyncio.get_running_loop().create_task(started_by_first()))

        async def second() -> None:
            second_runs.set()
            await spawned[0]

        engine.run_task(first)
        engine.run_task(second)
        while not spawned:
            await asyncio.sleep(0)
        await spawned[0]
        return seen

    assert asyncio.run(asyncio.wait_for(run(), 5)) == [False], (
        "a task the first callback started still acted for a callback while the second ran"
    )


def test_no_callback_runs_once_the_session_is_closed_even_if_one_swallows_the_cancel() -> None:
    """What close() does once the callbacks it waited for are settled or timed out: mark the session closed, cancel
    its dispatch task. A callback that swallows that cancel must not let the next one run."""

    async def run() -> list[str]:
        engine, _ = _engine()
        ran: list[str] = []
        waiting = asyncio.Event()

        async def first() -> None:
            waiting.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                ran.append("first, cancelled")  # swallowed: an application's callback may do that

        def second() -> None:
            ran.append("second")

        engine.run_task(first)
        engine.run_task(second)
        await waiting.wait()
        dispatcher = engine._dispatcher  # white box: close()'s last steps, without its socket work
        assert dispatcher is not None
        engine._closed = True
        dispatcher.cancel()
        await asyncio.wait([dispatcher])
        return ran

    assert asyncio.run(asyncio.wait_for(run(), 5)) == ["first, cancelled"]

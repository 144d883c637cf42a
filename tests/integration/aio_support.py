"""What the jmslike.aio integration tests share: one bounded event loop per test, a connection, and the event
loops a test of the asyncio driver runs on."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

import pytest

from jmslike.aio import Connection, ConnectionFactory

T = TypeVar("T")

EVENT_LOOPS = ["asyncio", "uvloop"]


class LoopRunner(Protocol):
    """``asyncio.run`` or ``uvloop.run``: ``main`` to completion on a fresh event loop, its result returned."""

    def __call__(self, main: Coroutine[Any, Any, T], /) -> T: ...


def loop_runner(name: str, *, skip_if_missing: bool = True) -> LoopRunner:
    """The runner of the event loop ``name`` (one of EVENT_LOOPS). Without uvloop installed, a test asking for it
    skips, saying why, or fails when ``skip_if_missing`` is False (a run that asked for uvloop by name). uvloop is
    what uvicorn (FastAPI) runs when it is there, and its transports (TLS included) are its own code, not
    asyncio's: the driver's socket handling is tested on both."""
    if name not in EVENT_LOOPS:
        raise ValueError(f"no event loop {name!r}: one of {', '.join(EVENT_LOOPS)}")
    if name == "uvloop":
        if skip_if_missing:
            uvloop = pytest.importorskip(
                "uvloop", reason="uvloop is not installed (pip install uvloop; the test extra has it)"
            )
        else:
            import uvloop
        runner: LoopRunner = uvloop.run
        return runner
    return asyncio.run


def run(body: Callable[[], Awaitable[None]], deadline_s: float = 60.0) -> None:
    """Run ``body`` on a fresh event loop; a hang fails the test after ``deadline_s`` instead of stalling it. The
    loop is asyncio's, or the one ``JMSLIKE_TEST_EVENT_LOOP`` names (``uvloop``: the jmslike.aio suite on it,
    ``JMSLIKE_TEST_EVENT_LOOP=uvloop pytest tests/integration/test_aio*.py tests/integration/test_transaction_ends.py``
    from the repository's root; docs/aio.md)."""

    async def bounded() -> None:
        async with asyncio.timeout(deadline_s):
            await body()

    loop_runner(os.environ.get("JMSLIKE_TEST_EVENT_LOOP", "asyncio"), skip_if_missing=False)(bounded())


async def open_connection(
    broker: Any, url: str, client_id: str | None = None, start: bool = True
) -> Connection:
    """A jmslike.aio connection to the broker the plugin launched, started unless ``start=False``."""
    connection = await ConnectionFactory(url, clientID=client_id).createConnection(
        broker.user, broker.password
    )
    if start:
        await connection.start()
    return connection


async def until(predicate: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.05) -> None:
    """The loop's wait_until (jmslike.conformance.suite.helpers): poll ``predicate`` between other tasks until
    true; AssertionError naming ``what`` after ``timeout_s``."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        if asyncio.get_running_loop().time() >= deadline:
            raise AssertionError(f"timed out after {timeout_s:.1f}s waiting for {what}")
        await asyncio.sleep(interval_s)

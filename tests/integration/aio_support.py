"""What the jmslike.aio integration tests share: one bounded event loop per test, and a connection."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from jmslike.aio import Connection, ConnectionFactory


def run(body: Callable[[], Awaitable[None]], deadline_s: float = 60.0) -> None:
    """Run ``body`` on a fresh event loop; a hang fails the test after ``deadline_s`` instead of stalling it."""

    async def bounded() -> None:
        async with asyncio.timeout(deadline_s):
            await body()

    asyncio.run(bounded())


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

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

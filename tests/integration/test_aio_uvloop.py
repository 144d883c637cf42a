"""jmslike.aio on uvloop, the event loop uvicorn (FastAPI) runs when it is installed: its transports provide
asyncio.Transport's methods without deriving from asyncio's classes, and a check for the class refused them, so every
connection failed at CONNECT ("connection closed by the broker during CONNECT")."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from aio_support import open_connection

from jmslike import DeliveryMode
from jmslike.aio import Session
from jmslike.messages import Message, TextMessage

uvloop = pytest.importorskip(
    "uvloop", reason="uvloop is not installed (pip install uvloop; the test extra has it)"
)


def test_a_round_trip_and_completion_listeners_on_uvloop(broker: Any, url: str) -> None:
    queue_name = f"aio-uvloop-{uuid.uuid4().hex[:8]}"
    completed: list[str] = []

    class Completion:
        def onCompletion(self, message: Message) -> None:
            assert isinstance(message, TextMessage)
            completed.append(message.getText() or "")

        def onException(self, message: Message, exception: Exception) -> None:
            completed.append(f"failed: {exception}")

    async def body() -> list[str | None]:
        assert not isinstance(asyncio.get_running_loop(), asyncio.BaseEventLoop), "not running on uvloop"
        connection = await open_connection(broker, url)
        try:
            session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
            queue = session.createQueue(queue_name)
            producer = session.createProducer(queue)
            producer.setDeliveryMode(DeliveryMode.PERSISTENT)
            for i in range(20):
                await producer.send(session.createTextMessage(str(i)), completionListener=Completion())
            await session.settle_sends()
            consumer = await session.createConsumer(queue)
            got: list[str | None] = []
            for _ in range(20):
                message = await consumer.receive(10_000)
                assert isinstance(message, TextMessage), message
                got.append(message.getText())
            return got
        finally:
            await connection.close()

    async def bounded() -> list[str | None]:
        async with asyncio.timeout(60):
            return await body()

    got = uvloop.run(bounded())
    assert got == [str(i) for i in range(20)]
    assert completed == [str(i) for i in range(20)], "CompletionListener callbacks, in send order"

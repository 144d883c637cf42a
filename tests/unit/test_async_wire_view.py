"""The blocking view of the asyncio wire (adapters/async_wire.py), without a broker: called on the loop's own
thread it would wait for itself, so it refuses instead of hanging."""

from __future__ import annotations

import asyncio

import pytest

from jmslike.adapters.async_wire import AsyncStompWire, BlockingView
from jmslike.config import parse_url
from jmslike.contract import Frame
from jmslike.exceptions import ConnectionLostException, IllegalStateException, JMSException


class _Events:
    def on_message(self, frame: Frame) -> None: ...

    def on_error(self, error: JMSException) -> None: ...

    def on_lost(self, error: ConnectionLostException) -> None: ...


def _error_for(text: str, frame: Frame | None) -> type[JMSException]:
    return JMSException


def test_a_blocking_call_on_the_loop_thread_is_refused_not_a_hang() -> None:
    async def body() -> None:
        wire = AsyncStompWire(
            parse_url("activemq://127.0.0.1:9"), ("127.0.0.1", 9), "1.2", _Events(), _error_for
        )
        view = BlockingView(wire, asyncio.get_running_loop(), 5.0)
        with pytest.raises(IllegalStateException, match="wait for itself"):
            view.request(Frame("SEND", {"destination": "/queue/x"}))

    asyncio.run(asyncio.wait_for(body(), 5))


def test_a_blocking_call_from_a_worker_thread_reaches_the_wire() -> None:
    async def body() -> None:
        wire = AsyncStompWire(
            parse_url("activemq://127.0.0.1:9"), ("127.0.0.1", 9), "1.2", _Events(), _error_for
        )
        view = BlockingView(wire, asyncio.get_running_loop(), 5.0)
        # Never connected: the wire answers with its own refusal, carried back to the worker thread.
        with pytest.raises(ConnectionLostException):
            await asyncio.to_thread(view.post, Frame("SEND", {"destination": "/queue/x"}))

    asyncio.run(asyncio.wait_for(body(), 5))

"""The conformance suite's bridge to jmslike.aio (conformance/suite/aio_bridge.py), without a broker: what it
calls a gap of jmslike.aio, and what it leaves the scenario's own error."""

from __future__ import annotations

import asyncio

import pytest

from jmslike import NotYetInAioException, aio
from jmslike.conformance.suite import aio_bridge
from jmslike.messages import TextMessage


class _AsyncTwin:
    async def subscribe(self, topic: str) -> None: ...


class _ThreadedTwin:
    def subscribe(self, topic: str, extra: str = "") -> None: ...


def test_arguments_only_the_threaded_api_takes_are_a_gap_of_jmslike_aio(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # jmslike.aio now takes every argument of the threaded API's JMS methods: the rule, on a stand-in pair.
    monkeypatch.setattr(aio_bridge, "_threaded_twins", lambda: {_AsyncTwin: _ThreadedTwin})
    target = _AsyncTwin()
    with pytest.raises(NotYetInAioException, match=r"_AsyncTwin\.subscribe\(_, extra=\)"):
        aio_bridge._check_arguments(target, "subscribe", target.subscribe, ("t",), {"extra": "a"})


def test_arguments_neither_api_takes_stay_a_type_error() -> None:
    consumer = object.__new__(aio.MessageConsumer)
    with pytest.raises(TypeError, match="neither API takes"):
        aio_bridge._check_arguments(consumer, "close", consumer.close, (), {"bogus": 1})


def test_arguments_jmslike_aio_takes_pass() -> None:
    session = object.__new__(aio.Session)
    aio_bridge._check_arguments(session, "createConsumer", session.createConsumer, ("queue", "a = 1"), {})


def test_a_missing_method_is_a_gap_of_jmslike_aio() -> None:
    session = aio_bridge.Bridged(object.__new__(aio.Session), aio_bridge._the_loop("aio"))
    with pytest.raises(NotYetInAioException, match=r"Session\.createSender"):
        session.createSender()


def test_acknowledge_of_a_bridged_message_waits_on_the_loop_once() -> None:
    loop = aio_bridge._the_loop("aio")
    calls: list[str] = []

    async def acknowledge() -> None:
        calls.append("acknowledged")

    message = TextMessage("m")
    message.bind_acknowledger(acknowledge)
    aio_bridge._blocking_acknowledge(message, loop)
    aio_bridge._blocking_acknowledge(message, loop)  # bridged twice: still one acknowledgement per call
    assert message.acknowledge() is None
    assert calls == ["acknowledged"]


def test_a_listener_s_bridged_calls_run_in_the_listener_s_own_task() -> None:
    """What lets jmslike.aio tell that a listener is calling (it refuses a listener closing its own session)."""
    loop = aio_bridge._the_loop("aio")
    seen: list[object] = []

    async def who_calls() -> str:
        seen.append(asyncio.current_task())
        return "answered"

    def scenario_listener(message: object) -> str:
        return loop.run(who_calls())  # a blocking bridged call, from the listener's worker thread

    listener = aio_bridge._in_worker(scenario_listener, loop)

    async def dispatch() -> tuple[object, object]:
        result = await listener("m")
        return result, asyncio.current_task()

    result, dispatch_task = asyncio.run_coroutine_threadsafe(dispatch(), loop.loop).result(10)
    assert result == "answered"
    assert seen == [dispatch_task]


@pytest.mark.parametrize(("api", "uv"), [("aio", False), ("aio-uvloop", True)])
def test_each_api_gets_its_own_kind_of_event_loop(api: str, uv: bool) -> None:
    """``--api aio-uvloop`` drives the scenarios on uvloop's loop, ``--api aio`` on asyncio's; one loop per kind."""
    if uv:
        pytest.importorskip("uvloop", reason="uvloop is not installed (the test extra has it)")
    loop = aio_bridge._the_loop(api)
    assert loop is aio_bridge._the_loop(api)

    async def kind() -> bool:
        return isinstance(asyncio.get_running_loop(), asyncio.BaseEventLoop)

    assert loop.run(kind()) is not uv, "asyncio's loops derive from BaseEventLoop, uvloop's do not"

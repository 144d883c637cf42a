"""The conformance suite's bridge to jmslike.aio (conformance/suite/aio_bridge.py), without a broker: what it
calls a gap of jmslike.aio, and what it leaves the scenario's own error."""

from __future__ import annotations

import pytest

from jmslike import NotYetInAioException, aio
from jmslike.conformance.suite import aio_bridge
from jmslike.messages import TextMessage


def test_arguments_only_the_threaded_api_takes_are_a_gap_of_jmslike_aio() -> None:
    consumer = object.__new__(aio.MessageConsumer)
    with pytest.raises(NotYetInAioException, match=r"MessageConsumer.close\(removeSubscription=\)"):
        aio_bridge._check_arguments(consumer, "close", consumer.close, (), {"removeSubscription": True})


def test_arguments_neither_api_takes_stay_a_type_error() -> None:
    consumer = object.__new__(aio.MessageConsumer)
    with pytest.raises(TypeError, match="neither API takes"):
        aio_bridge._check_arguments(consumer, "close", consumer.close, (), {"bogus": 1})


def test_arguments_jmslike_aio_takes_pass() -> None:
    session = object.__new__(aio.Session)
    aio_bridge._check_arguments(session, "createConsumer", session.createConsumer, ("queue", "a = 1"), {})


def test_a_missing_method_is_a_gap_of_jmslike_aio() -> None:
    factory = aio_bridge.Bridged(object.__new__(aio.ConnectionFactory), aio_bridge._the_loop())
    with pytest.raises(NotYetInAioException, match=r"ConnectionFactory\.createContext"):
        factory.createContext()


def test_acknowledge_of_a_bridged_message_waits_on_the_loop_once() -> None:
    loop = aio_bridge._the_loop()
    calls: list[str] = []

    async def acknowledge() -> None:
        calls.append("acknowledged")

    message = TextMessage("m")
    message.bind_acknowledger(acknowledge)
    aio_bridge._blocking_acknowledge(message, loop)
    aio_bridge._blocking_acknowledge(message, loop)  # bridged twice: still one acknowledgement per call
    assert message.acknowledge() is None
    assert calls == ["acknowledged"]

"""DUPS_OK_ACKNOWLEDGE through jmslike.aio on the real brokers: lazy and cumulative where the broker allows
(delivery.LazyAcks, as in the threaded API), never losing a message and owing the broker nothing after close."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from aio_support import open_connection, run

from jmslike import Connection, Session
from jmslike.aio import Session as AioSession
from jmslike.conformance.suite.helpers import drain, text_of
from jmslike.messages import Message

RECEIVE_MS = 5000


def send_texts(connection: Connection, queue_name: str, texts: list[str]) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createQueue(queue_name))
    for text in texts:
        producer.send(session.createTextMessage(text))
    session.close()


@pytest.mark.parametrize("with_listener", [False, True], ids=["receive", "listener"])
def test_dups_ok_consumes_everything_and_owes_nothing_after_close(
    broker: Any, url: str, connect: Callable[..., Connection], unique_name: str, with_listener: bool
) -> None:
    texts = [f"m{n}" for n in range(60)]
    send_texts(connect(), unique_name, texts)

    async def body() -> None:
        async with await open_connection(broker, url) as connection:
            session = await connection.createSession(AioSession.DUPS_OK_ACKNOWLEDGE)
            consumer = await session.createConsumer(session.createQueue(unique_name))
            got: list[str] = []
            if with_listener:
                all_in = asyncio.Event()

                async def listener(message: Message) -> None:
                    got.append(text_of(message))
                    if len(got) == len(texts):
                        all_in.set()

                consumer.setMessageListener(listener)
                async with asyncio.timeout(RECEIVE_MS / 1000 * 4):
                    await all_in.wait()
            else:
                while len(got) < len(texts):
                    message = await consumer.receive(RECEIVE_MS)
                    assert message is not None, f"only {len(got)} of {len(texts)} delivered"
                    got.append(text_of(message))
            assert got == texts
            await session.close()

    run(body)
    assert drain(connect(), unique_name, 1000) == [], "what was consumed came back: an ACK was owed"


def test_dups_ok_listener_poison_leaves_the_subscription_and_the_rest_is_consumed(
    broker: Any, url: str, connect: Callable[..., Connection], unique_name: str, broker_kind: str
) -> None:
    """As in the threaded API: 6 local redeliveries, then on ActiveMQ (cumulative DUPS_OK ACKs, a later one
    would acknowledge it too) NACKed to the dead-letter queue; elsewhere back to the broker at close."""
    poison = f"poison-{unique_name}"
    send_texts(connect(), unique_name, ["a", poison, "b"])
    attempts: list[str] = []

    async def body() -> None:
        async with await open_connection(broker, url) as connection:
            connection.setExceptionListener(lambda exc: None)
            finished = asyncio.Event()

            def listener(message: Message) -> None:
                attempts.append(text_of(message))
                if text_of(message) == poison:
                    raise RuntimeError("this message always fails")
                if text_of(message) == "b":
                    finished.set()

            session = await connection.createSession(AioSession.DUPS_OK_ACKNOWLEDGE)
            (await session.createConsumer(session.createQueue(unique_name))).setMessageListener(listener)
            async with asyncio.timeout(RECEIVE_MS / 1000 * 2):
                await finished.wait()
            await session.close()

    run(body)
    assert attempts == ["a"] + [poison] * 7 + ["b"]
    left = [text_of(m) for m in drain(connect(), unique_name, 1000)]
    if broker_kind == "activemq":
        assert left == []
        dead = [text_of(m) for m in drain(connect(), "ActiveMQ.DLQ", 1000)]
        assert poison in dead, f"the poison message is neither in the queue nor in ActiveMQ.DLQ: {dead}"
    else:
        assert left == [poison]

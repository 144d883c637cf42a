"""The byte bound on what a connection's consumers hold undelivered (jmslike/flow.py), on the real brokers.

A backlog far bigger than ``buffer_bytes`` waits on a queue; a consumer that takes nothing must leave the
connection holding about the bound (not the backlog, as prefetch alone would), with the broker held back by TCP.
Meanwhile a send on the same connection still completes (its receipt is behind the held-back messages: the wire
reads on while a call waits), no heart-beat timeout drops the connection although nothing is read, and the
whole backlog then arrives in order, every message intact.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from aio_support import open_connection, run

from jmslike import Connection, ConnectionFactory, DeliveryMode, Session
from jmslike.conformance.suite.helpers import wait_until
from jmslike.messages import BytesMessage

MESSAGES = 60
SIZE = 256 * 1024  # a 15 MiB backlog
BOUND = 2 * 1024 * 1024
# Past the hold decision one socket read (64 KiB) may still complete a message or two.
SLACK = 2 * SIZE
HELD_S = 3.5  # longer than the heart-beat timeout of heartbeat_ms=1000 would allow a silent broker
# prefetch high enough that the broker's own window (Artemis: prefetch x 2 KiB) is not what stops it.
OPTIONS = f"buffer_bytes={BOUND}&prefetch=5000&heartbeat_ms=1000"
RECEIVE_MS = 10_000


@pytest.fixture(autouse=True)
def _byte_bound(broker: Any, url: str) -> None:
    """Where the adapter declares no byte bound (RabbitMQ 3.10 drops a connection that stops reading: raw
    control ``python -m jmslike.conformance.held_reader``), the connection must not hold back at all."""
    adapter = ConnectionFactory(url).createConnection(broker.user, broker.password)
    try:
        if not adapter.adapter.capabilities.byte_bound:
            assert adapter.buffer.limit == 0, "a byte bound on a broker that drops held connections"
            pytest.skip(
                f"{broker.kind}: no byte bound (its adapter declares byte_bound=False), prefetch only"
            )
    finally:
        adapter.close()


def body_of(i: int) -> bytes:
    return i.to_bytes(4, "big") * (SIZE // 4)


def fill(connect: Callable[..., Connection], queue: str) -> None:
    session = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createQueue(queue))
    producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)
    for i in range(MESSAGES):
        message = session.createBytesMessage()
        message.writeBytes(body_of(i))
        producer.send(message)
    session.close()  # returns once the broker has every send


def observe_bounded(total: Callable[[], int], seconds: float) -> int:
    """The most the consumers held over ``seconds`` of watching (an observation window, not a wait for an
    event: the claim is that nothing happens)."""
    most = total()
    deadline = time.monotonic() + seconds
    pause = threading.Event()
    while time.monotonic() < deadline:
        most = max(most, total())
        pause.wait(0.05)
    return most


def check_intact(messages: list[Any]) -> None:
    assert len(messages) == MESSAGES, f"{len(messages)} of {MESSAGES} arrived"
    for i, message in enumerate(messages):
        assert isinstance(message, BytesMessage)
        data = bytearray(message.getBodyLength())
        message.readBytes(data)
        assert bytes(data) == body_of(i), f"message {i} is not the {i}th sent, or not intact"


def test_a_consumer_that_takes_nothing_holds_the_bound_not_the_backlog(
    broker: Any, connect: Callable[..., Connection]
) -> None:
    queue = f"bound-{uuid.uuid4().hex[:8]}"
    fill(connect, queue)
    errors: list[Exception] = []
    connection = connect(url_options=OPTIONS)
    connection.setExceptionListener(errors.append)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(queue))
    gauge = connection.buffer
    wait_until(lambda: gauge.over, 30, "the consumer's buffer to reach its byte bound")
    most = observe_bounded(lambda: gauge.total, HELD_S)
    assert most <= BOUND + SLACK, f"held {most} bytes with a bound of {BOUND}"
    sender = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    side = sender.createProducer(sender.createQueue(f"{queue}-side"))
    started = time.monotonic()
    side.send(sender.createTextMessage("a PERSISTENT send while reading is held"))
    assert time.monotonic() - started < 10, "the send waited behind the held-back messages"
    if connection.adapter.capabilities.browsing:  # a browse is no consumer's: it must not wait behind either
        side_messages = list(sender.createBrowser(sender.createQueue(f"{queue}-side")))
        assert len(side_messages) == 1, f"the browse saw {len(side_messages)} messages"
    assert errors == [], f"the held connection was dropped: {errors}"
    got = []
    for _ in range(MESSAGES):
        message = consumer.receive(RECEIVE_MS)
        assert message is not None, f"only {len(got)} of {MESSAGES} arrived"
        got.append(message)
    check_intact(got)
    assert gauge.total == 0


def test_the_asyncio_api_holds_the_bound_too(
    broker: Any, url: str, connect: Callable[..., Connection]
) -> None:
    queue = f"bound-aio-{uuid.uuid4().hex[:8]}"
    fill(connect, queue)
    target = url + ("&" if "?" in url else "?") + OPTIONS

    async def body() -> None:
        errors: list[Exception] = []
        async with await open_connection(broker, target) as connection:
            connection.setExceptionListener(errors.append)
            session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
            consumer = await session.createConsumer(session.createQueue(queue))
            gauge = connection.buffer
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while not gauge.over:  # the loop's reader fills it; polled on the loop
                assert loop.time() < deadline, "the consumer's buffer never reached its byte bound"
                await asyncio.sleep(0.05)
            most = gauge.total
            watch_until = loop.time() + HELD_S
            while loop.time() < watch_until:  # an observation window: nothing should happen
                most = max(most, gauge.total)
                await asyncio.sleep(0.05)
            assert most <= BOUND + SLACK, f"held {most} bytes with a bound of {BOUND}"
            sender = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
            side = sender.createProducer(sender.createQueue(f"{queue}-side"))
            async with asyncio.timeout(10):  # the send must not wait behind the held-back messages
                await side.send(sender.createTextMessage("a PERSISTENT send while reading is held"))
            assert errors == [], f"the held connection was dropped: {errors}"
            got = []
            for _ in range(MESSAGES):
                message = await consumer.receive(RECEIVE_MS)
                assert message is not None, f"only {len(got)} of {MESSAGES} arrived"
                got.append(message)
            check_intact(got)
            assert gauge.total == 0

    run(body, deadline_s=120)

"""Heart-beats against each real broker: an idle connection stays up between the broker's heart-beats.

ActiveMQ 5.17 lets two whole periods pass before its first heart-beat and after anything else it writes (raw
control: ``python -m jmslike.conformance.heartbeat_gaps``). jmslike used to drop a broker silent for 1.5 periods,
so every idle ActiveMQ connection was dropped 1.5 periods in, and with ``reconnect=true`` again after each
reconnect: unacknowledged messages came back every 1.5 periods. Each test lets a message go both ways (the
broker writes), then waits six periods in which nothing but heart-beats pass, and fails as soon as the
connection is reported lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from typing import Any

import aio_support

from jmslike import ConnectionFactory, Session
from jmslike.aio import ConnectionFactory as AioConnectionFactory
from jmslike.exceptions import JMSException

PERIOD_MS = 500
IDLE_S = 6 * PERIOD_MS / 1000


def _url(url: str) -> str:
    return url + ("&" if "?" in url else "?") + f"heartbeat_ms={PERIOD_MS}"


def test_an_idle_connection_outlives_the_brokers_heartbeat_gaps(broker: Any, url: str) -> None:
    connection = ConnectionFactory(_url(url)).createConnection(broker.user, broker.password)
    heard: list[JMSException] = []
    lost = threading.Event()
    connection.setExceptionListener(lambda error: (heard.append(error), lost.set()))
    try:
        connection.start()
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        queue = session.createQueue(f"heartbeats-{uuid.uuid4().hex[:8]}")
        consumer = session.createConsumer(queue)
        producer = session.createProducer(queue)
        producer.send(session.createTextMessage("before"))
        assert consumer.receive(10_000) is not None
        assert not lost.wait(IDLE_S), f"the connection was lost while idle: {heard}"
        producer.send(session.createTextMessage("after"))
        received = consumer.receive(10_000)
        assert received is not None and received.getText() == "after"
    finally:
        connection.close()


def test_an_idle_asyncio_connection_outlives_the_brokers_heartbeat_gaps(broker: Any, url: str) -> None:
    async def body() -> None:
        connection = await AioConnectionFactory(_url(url)).createConnection(broker.user, broker.password)
        heard: list[JMSException] = []
        lost = asyncio.Event()

        def on_exception(error: JMSException) -> None:
            heard.append(error)
            lost.set()

        connection.setExceptionListener(on_exception)
        try:
            await connection.start()
            session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
            queue = session.createQueue(f"heartbeats-{uuid.uuid4().hex[:8]}")
            consumer = await session.createConsumer(queue)
            producer = session.createProducer(queue)
            await producer.send(session.createTextMessage("before"))
            assert await consumer.receive(10_000) is not None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lost.wait(), IDLE_S)
            assert not lost.is_set(), f"the connection was lost while idle: {heard}"
            await producer.send(session.createTextMessage("after"))
            received = await consumer.receive(10_000)
            assert received is not None and received.getText() == "after"
        finally:
            await connection.close()

    aio_support.run(body)

"""The asyncio API's side of four workloads (benchmarks/workloads.py has the threaded and raw sides).

The same work as the threaded jmslike side of each: synchronous PERSISTENT sends, PERSISTENT sends with a JMS 2.0
CompletionListener timed until the last completion, unwaited NON_PERSISTENT sends timed until the broker confirmed the
last one, and an AUTO_ACKNOWLEDGE drain of a backlog. Each runs its
own event loop (``asyncio.run``) in this process, so ``time.process_time()`` counts the loop's work.
"""

from __future__ import annotations

import asyncio
import time

from jmslike import DeliveryMode, Session
from jmslike.aio import Connection, ConnectionFactory
from jmslike.aio.producer import MessageProducer
from jmslike.aio.session import Session as AioSession
from jmslike.exceptions import JMSException
from jmslike.messages import Message

from .workloads import WARMUP, Bench, Completions, Stopwatch, discard, fill, payload


async def _connect(bench: Bench) -> tuple[Connection, AioSession]:
    connection = await ConnectionFactory(bench.url).createConnection(bench.user, bench.password)
    return connection, await connection.createSession(Session.AUTO_ACKNOWLEDGE)


async def _send(session: AioSession, producer: MessageProducer, body: bytes) -> None:
    message = session.createBytesMessage()
    message.writeBytes(body)
    await producer.send(message)


def publish(bench: Bench, size: int, persistent: bool, drain: bool = True) -> float:
    """PERSISTENT: each send awaits its receipt, for ``duration_s``. NON_PERSISTENT: unwaited sends, timed until
    ``producer.close()`` returns (the broker confirmed the last). msg/s. The queue is emptied afterwards, untimed
    (``drain=False``: not, for a peer that keeps nothing; benchmarks/null_peer.py)."""
    body = payload(size)
    queue_name = bench.name("aio-pub")

    async def run() -> tuple[float, int]:
        connection, session = await _connect(bench)
        try:
            queue = session.createQueue(queue_name)
            producer = session.createProducer(queue)
            mode = DeliveryMode.PERSISTENT if persistent else DeliveryMode.NON_PERSISTENT
            producer.setDeliveryMode(mode)
            for _ in range(WARMUP):
                await _send(session, producer, body)
            await session.settle_sends()
            count, clock = 0, Stopwatch()
            deadline = time.perf_counter() + bench.duration_s
            while time.perf_counter() < deadline:
                await _send(session, producer, body)
                count += 1
            await producer.close()
            return clock.rate(count), WARMUP + count
        finally:
            await connection.close()

    rate, sent = asyncio.run(run())
    if drain:
        discard(bench, queue_name, sent)  # untimed (workloads.discard says why)
    return rate


class _AioCompletions(Completions):
    """The threaded workloads' counting CompletionListener (the same work per callback as theirs and raw's), which
    also lets a coroutine wait for the last one."""

    def __init__(self) -> None:
        super().__init__()
        self.target = 0
        self.reached = asyncio.Event()

    def onCompletion(self, message: Message) -> None:
        super().onCompletion(message)
        if self.target and self.done >= self.target:
            self.reached.set()

    def onException(self, message: Message, exception: JMSException) -> None:
        super().onException(message, exception)
        self.reached.set()  # wait_until raises it

    async def wait_until(self, count: int) -> None:
        self.target = count
        self.reached = asyncio.Event()  # the warm-up's target set the last one
        if self.done < count and self.failed is None:
            await asyncio.wait_for(self.reached.wait(), 60)
        if self.failed is not None:
            raise self.failed


def publish_async(bench: Bench, size: int, drain: bool = True) -> float:
    """JMS 2.0 asynchronous PERSISTENT sends with a CompletionListener for ``duration_s``, timed until the last
    completion, as the threaded side's (workloads.publish_async); msg/s. The queue is emptied afterwards, untimed."""
    body = payload(size)
    queue_name = bench.name("aio-async")

    async def run() -> tuple[float, int]:
        connection, session = await _connect(bench)
        try:
            producer = session.createProducer(session.createQueue(queue_name))
            listener = _AioCompletions()

            async def send() -> None:
                message = session.createBytesMessage()
                message.writeBytes(body)
                await producer.send(message, completionListener=listener)

            for _ in range(WARMUP):
                await send()
            await listener.wait_until(WARMUP)
            count, clock = 0, Stopwatch()
            deadline = time.perf_counter() + bench.duration_s
            while time.perf_counter() < deadline:
                await send()
                count += 1
            await listener.wait_until(WARMUP + count)
            return clock.rate(count), WARMUP + count
        finally:
            await connection.close()

    rate, sent = asyncio.run(run())
    if drain:
        discard(bench, queue_name, sent)
    return rate


def consume_auto(bench: Bench, size: int) -> float:
    """Drain a backlog of ``bench.backlog`` messages with ``await consumer.receive()``, AUTO_ACKNOWLEDGE; msg/s."""
    count = bench.backlog
    queue_name = bench.name("aio-consume")
    fill(bench, queue_name, count, payload(size))

    async def run() -> float:
        connection, session = await _connect(bench)
        try:
            clock = Stopwatch()
            consumer = await session.createConsumer(session.createQueue(queue_name))
            await connection.start()
            for i in range(1, count + 1):
                if await consumer.receive(60_000) is None:
                    raise TimeoutError(f"backlog drained after {i - 1} of {count}")
            return clock.rate(count)
        finally:
            await connection.close()

    return asyncio.run(run())

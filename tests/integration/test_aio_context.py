"""jmslike.aio's JMS 2.0 simplified API (JMSContext, JMSProducer, JMSConsumer) on the real brokers: the
threaded API's rules (jmslike/context.py), awaited, with unchecked exceptions."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from aio_support import run

from jmslike import DeliveryMode
from jmslike import JMSContext as ThreadedContext
from jmslike.aio import ConnectionFactory, JMSContext
from jmslike.exceptions import (
    IllegalStateRuntimeException,
    MessageFormatRuntimeException,
)
from jmslike.messages import Message

RECEIVE_MS = 10_000


def unique(kind: str) -> str:
    return f"aio-ctx-{kind}-{uuid.uuid4().hex[:8]}"


async def open_context(broker: Any, url: str, mode: int = ThreadedContext.AUTO_ACKNOWLEDGE) -> JMSContext:
    return await ConnectionFactory(url).createContext(broker.user, broker.password, mode)


def test_bodies_go_out_as_jms_2_says_and_come_back_through_receive_body(broker: Any, url: str) -> None:
    async def body() -> None:
        async with await open_context(broker, url) as context:
            queue = context.createQueue(unique("q"))
            consumer = await context.createConsumer(queue)  # autoStart starts the connection
            producer = context.createProducer().setProperty("colour", "blue").setJMSType("order")
            await producer.send(queue, "text")
            await producer.send(queue, b"\x00\x01")
            await producer.send(queue, {"k": 1})
            assert await consumer.receiveBody(str, RECEIVE_MS) == "text"
            assert await consumer.receiveBody(bytes, RECEIVE_MS) == b"\x00\x01"
            got = await consumer.receive(RECEIVE_MS)
            assert got is not None and got.getBody(dict) == {"k": 1}
            assert got.getStringProperty("colour") == "blue" and got.getJMSType() == "order"
            assert got.getJMSDeliveryMode() == DeliveryMode.PERSISTENT
            assert await consumer.receiveBodyNoWait(str) is None

    run(body)


def test_a_body_of_the_wrong_type_stays_in_place_in_auto_mode(broker: Any, url: str) -> None:
    async def body() -> None:
        async with await open_context(broker, url) as context:
            queue = context.createQueue(unique("q"))
            consumer = await context.createConsumer(queue)
            await context.createProducer().send(queue, "not bytes")
            with pytest.raises(MessageFormatRuntimeException, match="stays in place"):
                await consumer.receiveBody(bytes, RECEIVE_MS)
            assert await consumer.receiveBody(str, RECEIVE_MS) == "not bytes", (
                "the same message, next receive"
            )

    run(body)


def test_a_transacted_context_commits_and_rolls_back(broker: Any, url: str) -> None:
    async def body() -> None:
        name = unique("q")
        async with await open_context(broker, url, ThreadedContext.SESSION_TRANSACTED) as context:
            assert context.getTransacted()
            queue = context.createQueue(name)
            producer = context.createProducer()
            await producer.send(queue, "rolled back")
            await context.rollback()
            await producer.send(queue, "committed")
            await context.commit()
            consumer = await context.createConsumer(queue)
            assert await consumer.receiveBody(str, RECEIVE_MS) == "committed"
            await context.rollback()
            again = await consumer.receive(RECEIVE_MS)
            assert again is not None and again.getJMSRedelivered(), "a rolled-back receive comes back flagged"
            await context.commit()
            assert await consumer.receiveNoWait() is None

    run(body)


def test_siblings_share_the_connection_which_closes_with_the_last(broker: Any, url: str) -> None:
    async def body() -> None:
        first = await open_context(broker, url)
        second = first.createContext(ThreadedContext.CLIENT_ACKNOWLEDGE)
        queue = first.createQueue(unique("q"))
        await first.createProducer().send(queue, "one")
        second.setAutoStart(False)
        consumer = await second.createConsumer(queue)
        assert await consumer.receiveNoWait() is None, "autoStart off: the connection is not started"
        await second.start()
        message = await consumer.receive(RECEIVE_MS)
        assert message is not None
        await second.acknowledge()
        await first.close()
        assert await second.createProducer().send(queue, "still open") is not None
        await second.close()
        with pytest.raises(IllegalStateRuntimeException):
            first.createQueue("closed")

    run(body)


def test_a_listener_may_not_close_its_own_context(broker: Any, url: str) -> None:
    async def body() -> None:
        async with await open_context(broker, url) as context:
            queue = context.createQueue(unique("q"))
            refused: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()

            async def listener(message: Message) -> None:
                try:
                    await context.close()
                except BaseException as exc:  # the refusal is the test's result
                    refused.set_result(exc)

            consumer = await context.createConsumer(queue)
            consumer.setMessageListener(listener)
            await context.createProducer().send(queue, "close yourself")
            assert isinstance(await refused, IllegalStateRuntimeException)

    run(body)


def test_an_asynchronous_send_completes_through_its_listener_in_send_order(broker: Any, url: str) -> None:
    async def body() -> None:
        async with await open_context(broker, url) as context:
            queue = context.createQueue(unique("q"))
            completed: list[str] = []
            failed: list[BaseException] = []

            class Listener:
                async def onCompletion(self, message: Message) -> None:  # a coroutine: awaited in order
                    await asyncio.sleep(0)
                    completed.append(message.getBody(str))

                def onException(self, message: Message, exception: BaseException) -> None:
                    failed.append(exception)

            producer = context.createProducer().setAsync(Listener())
            for i in range(90):  # Artemis 2.21 answers PERSISTENT sends out of order now and then
                await producer.send(queue, f"m{i}")
            await context.close()  # returns only once every callback has returned (JMS 2.0 §7.3.7)
            assert completed == [f"m{i}" for i in range(90)] and not failed, "in send order (§7.3.8)"
        async with await open_context(broker, url) as reader:
            consumer = await reader.createConsumer(reader.createQueue(queue.name))
            got = [await consumer.receiveBody(str, RECEIVE_MS) for _ in range(90)]
            assert got == [f"m{i}" for i in range(90)]

    run(body)

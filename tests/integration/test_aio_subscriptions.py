"""Durable and shared subscriptions through jmslike.aio on the real brokers: the threaded API's rules (one
plan, jmslike/subscription_plans.py), awaited, and one set of records for both APIs."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from aio_support import open_connection, run
from expectations import expected

from jmslike import ConnectionFactory as ThreadedFactory
from jmslike import DeliveryMode
from jmslike.aio import Connection, MessageConsumer, Session
from jmslike.exceptions import IllegalStateException, InvalidDestinationException, JMSException
from jmslike.messages import TextMessage

PERSISTENT, NON_PERSISTENT = DeliveryMode.PERSISTENT, DeliveryMode.NON_PERSISTENT
RECEIVE_MS = 10_000
QUIET_MS = 500


def unique(kind: str) -> str:
    return f"aio-{kind}-{uuid.uuid4().hex[:8]}"


async def publish(connection: Connection, topic: str, texts: list[str]) -> None:
    session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createTopic(topic))
    for body in texts:
        await producer.send(session.createTextMessage(body))
    await session.close()


async def texts_of(consumer: MessageConsumer, first_ms: int = RECEIVE_MS) -> list[str]:
    """What the consumer gets until it stays quiet (the first message may take ``first_ms``)."""
    got: list[str] = []
    while (message := await consumer.receive(QUIET_MS if got else first_ms)) is not None:
        assert isinstance(message, TextMessage)
        got.append(message.getText() or "")
    return got


def test_a_durable_subscription_keeps_what_is_published_while_away_until_unsubscribed(
    broker: Any, url: str
) -> None:
    topic_name, client_id = unique("t"), unique("c")

    async def body() -> None:
        async with await open_connection(broker, url, client_id) as owner:
            session = await owner.createSession(Session.AUTO_ACKNOWLEDGE)
            topic = session.createTopic(topic_name)
            subscriber = await session.createDurableSubscriber(topic, "kept")
            async with await open_connection(broker, url) as publisher:
                await publish(publisher, topic_name, ["live"])
                assert await texts_of(subscriber) == ["live"]
                await subscriber.close()
                await publish(publisher, topic_name, ["away-1", "away-2"])
                resumed = await session.createDurableSubscriber(topic, "kept")
                assert await texts_of(resumed) == ["away-1", "away-2"], (
                    "kept while no subscriber was attached"
                )
                await resumed.close()
                await publish(publisher, topic_name, ["dropped with the subscription"])
                await session.unsubscribe("kept")
                again = await session.createDurableSubscriber(topic, "kept")
                assert await texts_of(again, QUIET_MS) == [], "unsubscribe deleted the subscription's backlog"
                await again.close()
                await session.unsubscribe("kept")

    run(body)


def test_the_durable_subscription_rules_refuse_as_in_the_threaded_api(broker: Any, url: str) -> None:
    topic_name, client_id = unique("t"), unique("c")

    async def body() -> None:
        async with await open_connection(broker, url) as anonymous:
            session = await anonymous.createSession(Session.AUTO_ACKNOWLEDGE)
            with pytest.raises(IllegalStateException, match="without a client ID"):
                await session.createDurableSubscriber(session.createTopic(topic_name), "s")
        async with await open_connection(broker, url, client_id) as owner:
            session = await owner.createSession(Session.AUTO_ACKNOWLEDGE)
            topic = session.createTopic(topic_name)
            with pytest.raises(InvalidDestinationException, match="needs a \\(non-temporary\\) Topic"):
                await session.createDurableSubscriber(session.createQueue(topic_name), "s")  # type: ignore[arg-type]
            with pytest.raises(JMSException, match="non-empty string"):
                await session.createDurableSubscriber(topic, " ")
            subscriber = await session.createDurableSubscriber(topic, "s")
            with pytest.raises(JMSException, match="already has an active consumer"):
                await session.createDurableSubscriber(topic, "s")
            with pytest.raises(IllegalStateException, match="has an open consumer"):
                await session.unsubscribe("s")
            await subscriber.close()
            await session.unsubscribe("s")
            with pytest.raises(InvalidDestinationException):
                await session.resumeDurableSubscriber("s")

    run(body)


def test_a_closed_subscriber_with_unacknowledged_messages_keeps_its_subscription_until_they_are_settled(
    broker: Any, url: str
) -> None:
    topic_name, client_id = unique("t"), unique("c")

    async def body() -> None:
        async with await open_connection(broker, url, client_id) as owner:
            session = await owner.createSession(Session.CLIENT_ACKNOWLEDGE)
            topic = session.createTopic(topic_name)
            subscriber = await session.createDurableSubscriber(topic, "held")
            async with await open_connection(broker, url) as publisher:
                await publish(publisher, topic_name, ["one"])
            message = await subscriber.receive(RECEIVE_MS)
            assert message is not None
            await subscriber.close()
            with pytest.raises(IllegalStateException, match="still has unacknowledged messages"):
                await session.createDurableSubscriber(topic, "held")
            with pytest.raises(IllegalStateException, match="unacknowledged or in an open transaction"):
                await session.unsubscribe("held")
            await message.acknowledge()
            resumed = await session.createDurableSubscriber(topic, "held")
            assert await texts_of(resumed, QUIET_MS) == [], "the acknowledged message does not come back"
            await resumed.close()
            await session.unsubscribe("held")

    run(body)


def test_one_record_for_both_apis_a_threaded_subscription_is_resumed_by_name_in_asyncio(
    broker: Any, url: str
) -> None:
    topic_name, client_id = unique("t"), unique("c")
    threaded = ThreadedFactory(url).createConnection(broker.user, broker.password)
    try:
        threaded.setClientID(client_id)
        session = threaded.createSession()
        session.createDurableSubscriber(
            session.createTopic(topic_name), "shared-record", "colour = 'red'"
        ).close()
    finally:
        threaded.close()

    async def body() -> None:
        async with await open_connection(broker, url) as publisher:
            session = await publisher.createSession(Session.AUTO_ACKNOWLEDGE)
            producer = session.createProducer(session.createTopic(topic_name))
            for colour in ("red", "blue", "red"):
                message = session.createTextMessage(colour)
                message.setStringProperty("colour", colour)
                await producer.send(message)
        async with await open_connection(broker, url, client_id) as owner:
            session = await owner.createSession(Session.AUTO_ACKNOWLEDGE)
            resumed = await session.resumeDurableSubscriber("shared-record")
            assert resumed.getMessageSelector() == "colour = 'red'", "the recorded selector, not restated"
            assert await texts_of(resumed) == ["red", "red"]
            await resumed.close()
            await session.unsubscribe("shared-record")
            with pytest.raises(InvalidDestinationException):
                await session.resumeDurableSubscriber("shared-record")

    run(body)


@pytest.mark.parametrize("durable", [False, True], ids=["non-durable", "durable"])
def test_shared_consumers_in_two_connections_share_the_messages(broker: Any, url: str, durable: bool) -> None:
    topic_name = unique("t")

    async def body() -> None:
        connections = [await open_connection(broker, url) for _ in range(3)]
        try:
            consumers = []
            for connection in connections[:2]:
                session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
                topic = session.createTopic(topic_name)
                create = session.createSharedDurableConsumer if durable else session.createSharedConsumer
                consumers.append(await create(topic, "together"))
            sent = [f"m{i}" for i in range(20)]
            await publish(connections[2], topic_name, sent)
            first, second = await texts_of(consumers[0]), await texts_of(consumers[1], QUIET_MS)
            assert sorted(first + second) == sorted(sent), "every message once across the consumers"
            assert first and second, f"both consumers should get a share: {first} / {second}"
            for consumer in consumers:
                await consumer.close()
            if durable:
                session = await connections[2].createSession(Session.AUTO_ACKNOWLEDGE)
                await session.unsubscribe("together")  # no client ID: found by name alone
        finally:
            for connection in connections:
                await connection.close()

    with expected("shared-subscriptions", broker.kind):
        run(body)


def test_close_removing_the_subscription_deletes_it_with_its_backlog(broker: Any, url: str) -> None:
    topic_name, client_id = unique("t"), unique("c")

    async def body() -> None:
        async with await open_connection(broker, url, client_id) as owner:
            session = await owner.createSession(Session.AUTO_ACKNOWLEDGE)
            topic = session.createTopic(topic_name)
            subscriber = await session.createDurableSubscriber(topic, "gone")
            async with await open_connection(broker, url) as publisher:
                await publish(publisher, topic_name, ["one"])
                assert await texts_of(subscriber) == ["one"]
                await subscriber.close(removeSubscription=True)
                with pytest.raises(IllegalStateException, match="already closed"):
                    await subscriber.close(removeSubscription=True)
                with pytest.raises(InvalidDestinationException):
                    await session.resumeDurableSubscriber("gone")
                await publish(publisher, topic_name, ["after"])
            fresh = await session.createDurableSubscriber(topic, "gone")
            assert await texts_of(fresh, QUIET_MS) == [], "a new subscription, without the old one's messages"
            plain = await session.createConsumer(topic)
            with pytest.raises(IllegalStateException, match="needs a durable subscriber"):
                await plain.close(removeSubscription=True)
            await fresh.close(removeSubscription=True)

    run(body)


def test_a_persistence_filter_delivers_everything_while_attached_and_keeps_only_what_it_selects_while_away(
    broker: Any, url: str
) -> None:
    """The threaded API's persistence filter (jmslike.subscriptions): a durable subscription selecting
    (S) AND (I), and a non-durable companion delivering, through the subscriber, what I does not keep."""
    topic_name, client_id = unique("t"), unique("c")
    persistent = "JMSDeliveryMode = 'PERSISTENT'"

    async def send(publisher: Connection, texts: list[tuple[str, int]]) -> None:
        session = await publisher.createSession(Session.AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createTopic(topic_name))
        for body, mode in texts:
            await producer.send(session.createTextMessage(body), mode, 4, 0)
        await session.close()

    async def body() -> None:
        async with (
            await open_connection(broker, url, client_id) as owner,
            await open_connection(broker, url) as publisher,
        ):
            session = await owner.createSession(Session.AUTO_ACKNOWLEDGE)
            topic = session.createTopic(topic_name)
            subscriber = await session.createDurableSubscriber(topic, "filtered", inactiveSelector=persistent)
            assert subscriber.getMessageSelector() is None and subscriber.getInactiveSelector() == persistent
            await send(publisher, [("c-p1", PERSISTENT), ("c-np1", NON_PERSISTENT), ("c-p2", PERSISTENT)])
            got = await texts_of(subscriber)
            assert sorted(got) == ["c-np1", "c-p1", "c-p2"], "everything while attached, exactly once"
            assert [t for t in got if "-p" in t] == ["c-p1", "c-p2"], "in order within each stream"
            await subscriber.close()
            await send(publisher, [("a-p1", PERSISTENT), ("a-np1", NON_PERSISTENT), ("a-p2", PERSISTENT)])
            resumed = await session.resumeDurableSubscriber("filtered")
            assert resumed.getInactiveSelector() == persistent, "the record keeps the filter"
            assert await texts_of(resumed) == ["a-p1", "a-p2"], "only what the filter keeps, while away"
            await resumed.close(removeSubscription=True)

    run(body)


def test_a_persistence_filtered_subscriber_whose_close_is_cancelled_still_ends_its_companion(
    broker: Any, url: str
) -> None:
    """Review finding: a close() cancelled during its round trip to the broker (asyncio.wait_for around it) left
    the subscriber registered and its non-durable companion subscribed, taking every message published until the
    connection closed and keeping it unacknowledged. The close now runs to its end."""

    async def body() -> None:
        async with await open_connection(broker, url, unique("c")) as owner:
            session = await owner.createSession(Session.AUTO_ACKNOWLEDGE)
            subscriber = await session.createDurableSubscriber(
                session.createTopic(unique("t")),
                "filtered",
                inactiveSelector="JMSDeliveryMode = 'PERSISTENT'",
            )
            companion = subscriber.companion
            assert companion is not None
            closing = asyncio.ensure_future(subscriber.close())
            await asyncio.sleep(0)  # a yield: the close is in its round trip (a worker thread)
            closing.cancel()
            with pytest.raises(asyncio.CancelledError):
                await closing
            deadline = asyncio.get_running_loop().time() + 10
            while (
                owner.subscriber_for(companion.spec.sub_id) is not None
                or owner.subscriber_for(subscriber.spec.sub_id) is not None
            ):
                assert asyncio.get_running_loop().time() < deadline, (
                    "the cancelled close never ended its subscriptions"
                )
                await asyncio.sleep(0.01)
            await session.unsubscribe("filtered")

    run(body)

"""Retained publications, subscriptions on request only and request update through jmslike.aio, on the real
brokers: the threaded API's store and rules (jmslike.retained), so what one API retains the other reads."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from aio_support import open_connection, run
from expectations import EXPECTATIONS

from jmslike import ConnectionFactory as ThreadedFactory
from jmslike import DeliveryMode
from jmslike.aio import Connection, MessageConsumer, Session
from jmslike.exceptions import IllegalStateException, JMSException, NoRetainedMessageException
from jmslike.messages import TextMessage
from jmslike.retained import RETAINED_PROPERTY

RECEIVE_MS = 10_000
QUIET_MS = 500


@pytest.fixture(autouse=True)
def _retained_supported(broker: Any) -> None:
    entry = EXPECTATIONS.get(("retained", broker.kind))
    if entry is not None and entry.kind == "unsupported":
        pytest.skip(f"retained publications are unsupported on {broker.kind}: {entry.reason}")


def unique(kind: str) -> str:
    return f"aio-{kind}-{uuid.uuid4().hex[:8]}"


async def retain(connection: Connection, topic: str, text: str, transacted: bool = False) -> Session:
    """One retained publication from a fresh session (left open when transacted: the caller decides)."""
    session = await connection.createSession(transacted, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createTopic(topic))
    await producer.send(session.createTextMessage(text), retain=True)
    if not transacted:
        await session.close()
    return session


async def on_request(connection: Connection, topic: str) -> MessageConsumer:
    session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
    return await session.createConsumer(session.createTopic(topic), onRequestOnly=True)


async def texts_of(consumer: MessageConsumer, first_ms: int = RECEIVE_MS) -> list[str]:
    got: list[str] = []
    while (message := await consumer.receive(QUIET_MS if got else first_ms)) is not None:
        assert isinstance(message, TextMessage)
        got.append(message.getText() or "")
    return got


async def updates(consumer: MessageConsumer) -> list[str]:
    """requestUpdate(), then the texts it delivered (exactly that many, each marked retained)."""
    count = await consumer.requestUpdate()
    got: list[TextMessage] = []
    while (message := await consumer.receive(QUIET_MS if got else RECEIVE_MS)) is not None:
        assert isinstance(message, TextMessage) and message.getBooleanProperty(RETAINED_PROPERTY) is True
        got.append(message)
    assert len(got) == count, f"requestUpdate said {count}, {len(got)} arrived"
    return [m.getText() or "" for m in got]


def test_retain_replace_and_clear(broker: Any, url: str) -> None:
    topic = unique("t")

    async def body() -> None:
        async with await open_connection(broker, url) as connection:
            subscriber = await on_request(connection, topic)
            with pytest.raises(NoRetainedMessageException):
                await subscriber.requestUpdate()
            await retain(connection, topic, "v1")
            await retain(connection, topic, "v2")
            assert await updates(subscriber) == ["v2"], "only the latest publication is retained"
            await retain(connection, topic, "")
            with pytest.raises(NoRetainedMessageException):
                await subscriber.requestUpdate()

    run(body)


def test_what_one_api_retains_the_other_reads(broker: Any, url: str) -> None:
    from_aio, from_threaded = unique("a"), unique("t")

    async def body() -> None:
        threaded = ThreadedFactory(url).createConnection(broker.user, broker.password)
        try:
            session = threaded.createSession(False, 1)
            session.createProducer(session.createTopic(from_threaded)).send(
                session.createTextMessage("threaded"), retain=True
            )
            async with await open_connection(broker, url) as connection:
                await retain(connection, from_aio, "aio")
                assert await updates(await on_request(connection, from_threaded)) == ["threaded"]
                threaded.start()
                reader = session.createConsumer(session.createTopic(from_aio), onRequestOnly=True)
                assert reader.requestUpdate() == 1
                got = reader.receive(RECEIVE_MS)
                assert isinstance(got, TextMessage) and got.getText() == "aio"
        finally:
            threaded.close()

    run(body)


def test_a_retained_send_is_live_too_and_keeps_send_order(broker: Any, url: str) -> None:
    """The retained publication goes on a private connection, after the session's unwaited sends."""
    topic = unique("t")

    async def body() -> None:
        async with (
            await open_connection(broker, url) as connection,
            await open_connection(broker, url) as listener,
        ):
            session = await listener.createSession(Session.AUTO_ACKNOWLEDGE)
            live = await session.createConsumer(session.createTopic(topic))
            sender = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
            producer = sender.createProducer(sender.createTopic(topic))
            producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)  # unwaited sends: the window
            for i in range(20):
                await producer.send(sender.createTextMessage(f"before-{i}"))
            await producer.send(sender.createTextMessage("retained"), retain=True)
            await producer.send(sender.createTextMessage("after"))
            expected = [f"before-{i}" for i in range(20)] + ["retained", "after"]
            assert await texts_of(live) == expected

    run(body)


def test_transacted_retained_send_commits_or_rolls_back_with_the_session(broker: Any, url: str) -> None:
    topic = unique("t")

    async def body() -> None:
        async with await open_connection(broker, url) as connection:
            subscriber = await on_request(connection, topic)
            await retain(connection, topic, "first")
            tx = await retain(connection, topic, "rolled back", transacted=True)
            await tx.rollback()
            assert await updates(subscriber) == ["first"]
            producer = tx.createProducer(tx.createTopic(topic))
            await producer.send(tx.createTextMessage("committed"), retain=True)
            await tx.commit()
            assert await updates(subscriber) == ["committed"]
            await retain(connection, topic, "later")  # the store holds one latest copy to replace
            assert await updates(subscriber) == ["later"]
            await tx.close()

    run(body)


def test_an_on_request_durable_subscription_gets_no_live_traffic_and_resumes_on_request(
    broker: Any, url: str
) -> None:
    topic, client_id = unique("t"), unique("c")

    async def body() -> None:
        async with (
            await open_connection(broker, url, client_id) as owner,
            await open_connection(broker, url) as publisher,
        ):
            session = await owner.createSession(Session.AUTO_ACKNOWLEDGE)
            subscriber = await session.createDurableSubscriber(
                session.createTopic(topic), "on-request", onRequestOnly=True
            )
            assert subscriber.onRequestOnly and subscriber.getTopic().name == topic  # type: ignore[attr-defined]
            await retain(publisher, topic, "kept")
            live = await publisher.createSession(Session.AUTO_ACKNOWLEDGE)
            await live.createProducer(live.createTopic(topic)).send(live.createTextMessage("live"))
            assert await updates(subscriber) == ["kept"], "the live publication never reached it"
            await subscriber.close()
            with pytest.raises(IllegalStateException):
                subscriber.getTopic()  # type: ignore[attr-defined]
            resumed = await session.resumeDurableSubscriber("on-request")
            assert resumed.onRequestOnly, "the record keeps on-request-only"  # type: ignore[attr-defined]
            assert await texts_of(resumed, QUIET_MS) == [], "nothing built up while away"
            assert await updates(resumed) == ["kept"]
            await resumed.close(removeSubscription=True)

    run(body)


def test_bad_requests_are_refused_with_the_jms_exception(broker: Any, url: str) -> None:
    topic = unique("t")

    async def body() -> None:
        async with await open_connection(broker, url) as connection:
            session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
            producer = session.createProducer(session.createTopic(topic))
            producer.setDeliveryDelay(1000)
            with pytest.raises(JMSException, match="cannot be delayed"):
                await producer.send(session.createTextMessage("x"), retain=True)
            subscriber = await on_request(connection, topic)
            with pytest.raises(JMSException, match="control characters"):
                await subscriber.requestUpdate("bad\x01id")
            await subscriber.close()
            with pytest.raises(IllegalStateException):
                await subscriber.requestUpdate()

    run(body)


def test_no_local_holds_for_the_live_publication_of_a_retained_send(broker: Any, url: str) -> None:
    """The pair goes on the sender's own wire, so the broker's noLocal (ActiveMQ, Artemis) sees the sender."""
    topic = unique("t")

    async def body() -> None:
        async with (
            await open_connection(broker, url) as connection,
            await open_connection(broker, url) as other,
        ):
            session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
            own = await session.createConsumer(session.createTopic(topic), noLocal=True)
            watcher_session = await other.createSession(Session.AUTO_ACKNOWLEDGE)
            watcher = await watcher_session.createConsumer(watcher_session.createTopic(topic))
            await retain(connection, topic, "mine")
            assert await texts_of(watcher) == ["mine"]
            assert await own.receive(QUIET_MS) is None, "noLocal: its own retained send reached it"

    run(body)


def test_no_retained_message_names_the_application_selector(broker: Any, url: str) -> None:
    topic, client_id = unique("t"), unique("c")

    async def body() -> None:
        async with await open_connection(broker, url, client_id) as connection:
            await retain(connection, topic, "v")
            session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
            subscriber = await session.createDurableSubscriber(
                session.createTopic(topic), "sel", "league = 1", onRequestOnly=True
            )
            with pytest.raises(NoRetainedMessageException, match="passes the selector 'league = 1'"):
                await subscriber.requestUpdate()
            await subscriber.close(removeSubscription=True)

    run(body)

"""A transaction whose end fails at the broker (ABORT unanswered or refused, COMMIT refused): what the session,
its completion listeners and the next transaction see, in both APIs. A scripted peer answering as RabbitMQ does
(transaction_peer.py): no broker fails ABORT or COMMIT on demand.

The rules: a rollback happens locally whatever ABORT's outcome (the sends are never committed; their
completion listeners hear TransactionRolledBackException, and a later send's listener is not stuck behind
theirs), and rollback() then raises the broker's failure; a refused COMMIT of one transaction leaves alone the
next one, begun meanwhile by a caller whose commit was cancelled (asyncio).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from transaction_peer import TransactionPeer

from jmslike import ConnectionFactory, JMSException, Session, aio
from jmslike.exceptions import JMSTimeoutException
from jmslike.messages import Message

pytestmark = pytest.mark.timeout(90)

ABORT_FAILURES = [("silent", JMSTimeoutException), ("error", JMSException)]


class Heard:
    """A CompletionListener per send, recording what each hears, in order."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def listener(self, name: str) -> _Listener:
        return _Listener(name, self.events)


class _Listener:
    def __init__(self, name: str, events: list[str]) -> None:
        self.name = name
        self.events = events

    def onCompletion(self, message: Message) -> None:
        self.events.append(f"{self.name}: completed")

    def onException(self, message: Message, exception: Exception) -> None:
        self.events.append(f"{self.name}: {type(exception).__name__}")


@pytest.fixture
def peers() -> Iterator[list[TransactionPeer]]:
    made: list[TransactionPeer] = []
    yield made
    for peer in made:
        peer.stop()


@pytest.mark.parametrize(("abort", "raised"), ABORT_FAILURES)
def test_a_failed_abort_still_rolls_back_and_tells_the_listeners(
    peers: list[TransactionPeer], abort: str, raised: type[JMSException]
) -> None:
    peer = TransactionPeer(abort=abort)
    peers.append(peer)
    heard = Heard()
    connection = ConnectionFactory(peer.url(receipt_timeout_ms="1000")).createConnection()
    try:
        session = connection.createSession(True, Session.SESSION_TRANSACTED)
        producer = session.createProducer(session.createQueue("q"))
        producer.send(session.createTextMessage("rolled back"), completionListener=heard.listener("first"))
        with pytest.raises(raised):
            session.rollback()
        producer.send(session.createTextMessage("committed"), completionListener=heard.listener("second"))
        session.commit()  # returns once the callbacks of its sends, and of earlier ones, have returned
        assert heard.events == ["first: TransactionRolledBackException", "second: completed"]
    finally:
        connection.close()


@pytest.mark.parametrize(("abort", "raised"), ABORT_FAILURES)
def test_the_asyncio_api_rolls_back_and_tells_the_listeners_when_abort_fails(
    peers: list[TransactionPeer], abort: str, raised: type[JMSException]
) -> None:
    peer = TransactionPeer(abort=abort)
    peers.append(peer)
    heard = Heard()

    async def scenario() -> None:
        async with await aio.ConnectionFactory(
            peer.url(receipt_timeout_ms="1000")
        ).createConnection() as connection:
            session = await connection.createSession(True, Session.SESSION_TRANSACTED)
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(
                session.createTextMessage("rolled back"), completionListener=heard.listener("first")
            )
            with pytest.raises(raised):
                await session.rollback()
            await producer.send(
                session.createTextMessage("committed"), completionListener=heard.listener("second")
            )
            await session.commit()
            assert heard.events == ["first: TransactionRolledBackException", "second: completed"]

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_refused_commit_leaves_the_next_transaction_alone_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """A commit runs to its end even when its caller is cancelled, so a send on the session can begin the
    next transaction while COMMIT is in flight. The broker refusing that COMMIT rolls back the first
    transaction only: the second one's send is neither told it was rolled back nor aborted."""
    peer = TransactionPeer(refuse_first_commit=True)
    peers.append(peer)
    heard = Heard()

    async def scenario() -> None:
        async with await aio.ConnectionFactory(
            peer.url(receipt_timeout_ms="5000")
        ).createConnection() as connection:
            session = await connection.createSession(True, Session.SESSION_TRANSACTED)
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(
                session.createTextMessage("first"), completionListener=heard.listener("first")
            )
            first_commit = asyncio.ensure_future(session.commit())
            await asyncio.to_thread(peer.wait_for, "COMMIT")
            await producer.send(
                session.createTextMessage("second"), completionListener=heard.listener("second")
            )
            with pytest.raises(JMSException, match="refused COMMIT"):
                await first_commit
            await session.commit()
            assert heard.events == ["first: TransactionRolledBackException", "second: completed"]
            assert peer.commands[1:] == ["BEGIN", "SEND", "COMMIT", "BEGIN", "SEND", "ABORT", "COMMIT"]

    asyncio.run(asyncio.wait_for(scenario(), 60))

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

import aio_support
import pytest
from transaction_peer import TransactionPeer, transacted

from jmslike import ConnectionFactory, DeliveryMode, JMSException, Session, aio
from jmslike.conformance.suite.helpers import text_of
from jmslike.exceptions import (
    ConnectionLostException,
    IllegalStateException,
    JMSTimeoutException,
    TransactionRolledBackException,
)
from jmslike.messages import Message

pytestmark = pytest.mark.timeout(90)

ABORT_FAILURES = [("silent", JMSTimeoutException), ("error", JMSException)]
# Larger than what the kernel buffers on both sides of a loopback connection whose peer does not read (the
# sender's socket buffer grows to at most 4 MiB here): the rest stays in the asyncio transport, above its
# high-water mark, and the send waits to drain.
LARGE = "x" * (8 * 1024 * 1024)


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


async def commit_cancelled_in_flight(session: aio.Session, peer: TransactionPeer) -> None:
    """Commit and cancel the caller once COMMIT has reached ``peer`` (which holds its answer): the commit runs
    on in the background (jmslike.aio runs a cancelled commit to its end)."""
    committing = asyncio.ensure_future(session.commit())
    await asyncio.to_thread(peer.wait_for, "COMMIT")
    committing.cancel()
    await asyncio.gather(committing, return_exceptions=True)


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
        async with transacted(peer, receipt_timeout_ms="1000") as (_connection, session):
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

    aio_support.run(scenario, 60)


def test_a_refused_commit_leaves_the_next_transaction_alone_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """A commit runs to its end even when its caller is cancelled, and the session can be used meanwhile. The
    broker refusing that COMMIT rolls back the first transaction only: a send made while it was in flight
    waits for it, then begins and commits the next one (its listener used to be told it was rolled back)."""
    peer = TransactionPeer(refuse_first_commit=True, hold_first="COMMIT")
    peers.append(peer)
    heard = Heard()

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(
                session.createTextMessage("first"), completionListener=heard.listener("first")
            )
            await commit_cancelled_in_flight(session, peer)
            second = asyncio.ensure_future(
                producer.send(
                    session.createTextMessage("second"), completionListener=heard.listener("second")
                )
            )
            peer.release()
            await second
            await session.commit()
            assert heard.events == ["first: TransactionRolledBackException", "second: completed"]
        assert peer.commands[1:8] == ["BEGIN", "SEND", "COMMIT", "ABORT", "BEGIN", "SEND", "COMMIT"], (
            peer.commands
        )

    aio_support.run(scenario, 60)


def test_a_send_made_while_a_commit_is_under_way_waits_for_it_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """A commit runs to its end even when its caller is cancelled, so the session can be used while COMMIT is
    in flight. A send then waits for the commit and begins the next transaction after it (it used to begin
    one during the COMMIT, which a loss of the connection then left looking committed)."""
    peer = TransactionPeer(hold_first="COMMIT")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(session.createTextMessage("first"))
            await commit_cancelled_in_flight(session, peer)
            second = asyncio.ensure_future(producer.send(session.createTextMessage("second")))
            for _ in range(10):  # yields: the send is waiting, nothing of it reached the peer
                await asyncio.sleep(0)
            assert not second.done() and peer.commands.count("BEGIN") == 1, peer.commands
            peer.release()
            await second
            await session.commit()
        assert peer.commands[1:] == ["BEGIN", "SEND", "COMMIT", "BEGIN", "SEND", "COMMIT", "DISCONNECT"], (
            peer.commands
        )

    aio_support.run(scenario, 60)


def test_a_cancelled_commit_acknowledges_its_messages_once_and_close_waits_for_it(
    peers: list[TransactionPeer],
) -> None:
    """A commit whose caller was cancelled runs on: a second commit waits for it and then has nothing to
    acknowledge again, and close() lets it end before the consumer's subscription goes (no NACK of a message
    it acknowledges)."""
    peer = TransactionPeer(hold_first="COMMIT", deliver=b"hello")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (connection, session):
            await connection.start()
            consumer = await session.createConsumer(session.createQueue("q"))
            assert text_of(await consumer.receive(5000)) == "hello"
            await commit_cancelled_in_flight(session, peer)
            second_commit = asyncio.ensure_future(session.commit())
            closing = asyncio.ensure_future(session.close())
            peer.release()
            await second_commit  # nothing consumed since: nothing to acknowledge
            await closing
        assert peer.acks == [peer.acks[0]] and peer.acks[0] is not None, (
            peer.acks
        )  # one ACK, in the transaction
        after = peer.commands[peer.commands.index("SUBSCRIBE") :]
        assert after.index("ACK") < after.index("COMMIT") < after.index("UNSUBSCRIBE"), after
        assert "NACK" not in after, after

    aio_support.run(scenario, 60)


def test_sends_waiting_for_one_begin_join_one_transaction_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """Two sends of a transacted session made while its BEGIN is unanswered: one BEGIN, both in that
    transaction, both committed (a second BEGIN used to replace the first, whose send was then never
    committed)."""
    peer = TransactionPeer(hold_first="BEGIN")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            first = asyncio.ensure_future(producer.send(session.createTextMessage("first")))
            await asyncio.to_thread(peer.wait_for, "BEGIN")
            second = asyncio.ensure_future(producer.send(session.createTextMessage("second")))
            await asyncio.sleep(0)  # a yield: the second send is waiting for the BEGIN under way
            peer.release()
            await asyncio.gather(first, second)
            await session.commit()
        assert peer.commands.count("BEGIN") == 1, peer.commands
        assert peer.commands[1:5] == ["BEGIN", "SEND", "SEND", "COMMIT"], peer.commands

    aio_support.run(scenario, 60)


def test_a_send_cancelled_while_its_begin_is_unanswered_leaves_no_transaction_behind_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """The caller of a send is cancelled while its BEGIN is on the way. The BEGIN runs to its end and its
    transaction is the session's: the next send joins it and commit() ends it (before, the next send began a
    second transaction and the first stayed open on the broker until the connection closed)."""
    peer = TransactionPeer(hold_first="BEGIN")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            cancelled = asyncio.ensure_future(producer.send(session.createTextMessage("never sent")))
            await asyncio.to_thread(peer.wait_for, "BEGIN")
            cancelled.cancel()
            await asyncio.gather(cancelled, return_exceptions=True)
            assert cancelled.cancelled()
            peer.release()
            await producer.send(session.createTextMessage("sent"))
            await session.commit()
        assert peer.commands[1:4] == ["BEGIN", "SEND", "COMMIT"], peer.commands
        assert "ABORT" not in peer.commands and peer.commands.count("BEGIN") == 1, peer.commands

    aio_support.run(scenario, 60)


@pytest.mark.parametrize("held", ["COMMIT", "BEGIN"])
def test_a_message_received_while_a_lost_commit_ran_rolls_its_transaction_back_in_the_asyncio_api(
    peers: list[TransactionPeer], held: str
) -> None:
    """Receiving needs no transaction boundary, so a message can be consumed while a commit is in flight; that
    message belongs to the next transaction. When the connection is then lost, the commit's outcome is unknown
    and the next commit must say its transaction was rolled back (the broker has that message again), not
    return as if it had been acknowledged."""
    peer = TransactionPeer(hold_first=held, deliver=b"first")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (connection, session):
            await connection.start()
            consumer = await session.createConsumer(session.createQueue("q"))
            assert text_of(await consumer.receive(5000)) == "first"
            first_commit = asyncio.ensure_future(session.commit())
            await asyncio.to_thread(peer.wait_for, held)  # the commit's own BEGIN, or its COMMIT
            peer.push(b"second")
            assert text_of(await consumer.receive(5000)) == "second"
            peer.drop()
            with pytest.raises(
                ConnectionLostException if held == "COMMIT" else TransactionRolledBackException
            ):
                await first_commit
            with pytest.raises(TransactionRolledBackException):
                await session.commit()

    aio_support.run(scenario, 60)


def test_sends_made_during_a_reconnect_wait_for_it_side_by_side_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """Transacted sends made while the connection is being re-established each wait for it (bounded by the
    receipt timeout) at the same time, not one after another behind the session's transaction boundary."""
    peer = TransactionPeer()
    peers.append(peer)
    timeout_s = 1.0

    async def scenario() -> None:
        async with transacted(
            peer,
            receipt_timeout_ms=str(int(timeout_s * 1000)),
            reconnect="true",
            reconnect_attempts="1000",
            reconnect_delay_ms="100",
            reconnect_max_delay_ms="200",
        ) as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            peer.drop()  # no reconnect can succeed
            loop = asyncio.get_running_loop()
            started = loop.time()
            outcomes = await asyncio.gather(
                *(producer.send(session.createTextMessage(str(i))) for i in range(5)), return_exceptions=True
            )
            elapsed = loop.time() - started
            # The first to BEGIN waits for the reconnect once more and hears the loss; those behind it give up
            # within a receipt timeout of waiting for it, each saying so.
            assert all(
                isinstance(outcome, (ConnectionLostException, JMSTimeoutException)) for outcome in outcomes
            ), outcomes
            assert elapsed < 3 * timeout_s, f"five sends took {elapsed:.1f}s: they waited in turn"

    aio_support.run(scenario, 60)


def test_sends_behind_an_unanswered_begin_give_up_together_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """One BEGIN, never answered: the send that made it times out, and the sends waiting behind it give up
    within the same receipt timeout instead of each sending a BEGIN of its own and waiting in turn."""
    peer = TransactionPeer(hold_first="BEGIN")  # never released
    peers.append(peer)
    timeout_s = 1.0

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms=str(int(timeout_s * 1000))) as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            loop = asyncio.get_running_loop()
            started = loop.time()
            outcomes = await asyncio.gather(
                *(producer.send(session.createTextMessage(str(i))) for i in range(5)), return_exceptions=True
            )
            elapsed = loop.time() - started
            assert all(isinstance(outcome, JMSTimeoutException) for outcome in outcomes), outcomes
            assert elapsed < 2 * timeout_s, f"five sends took {elapsed:.1f}s: they waited in turn"
        assert peer.commands.count("BEGIN") == 1, peer.commands

    aio_support.run(scenario, 60)


def test_a_send_waiting_for_a_commit_lost_with_the_connection_goes_out_after_the_reconnect_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """reconnect=true: a send waits at the transaction boundary while COMMIT is in flight; the connection is
    lost and re-established. The send then begins its transaction on the new connection, not on the dead one
    it saw before it waited."""
    peer = TransactionPeer(hold_first="COMMIT")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(
            peer, receipt_timeout_ms="5000", reconnect="true", reconnect_delay_ms="100"
        ) as (
            _connection,
            session,
        ):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(session.createTextMessage("first"))
            first_commit = asyncio.ensure_future(session.commit())
            await asyncio.to_thread(peer.wait_for, "COMMIT")
            second = asyncio.ensure_future(producer.send(session.createTextMessage("second")))
            peer.drop(come_back=True)
            with pytest.raises(ConnectionLostException):
                await first_commit
            await second
            await session.commit()
        assert peer.commands.count("CONNECT") == 2, peer.commands
        assert peer.commands[peer.commands.index("CONNECT", 1) :][:4] == [
            "CONNECT",
            "BEGIN",
            "SEND",
            "COMMIT",
        ], peer.commands

    aio_support.run(scenario, 60)


def test_a_loss_while_rollback_awaits_abort_leaves_the_next_transaction_usable_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """reconnect=true: the connection is lost while rollback() waits for ABORT's receipt. What was rolled back
    is the broker's again; the next transaction starts clean instead of being 'rollback only' for it."""
    peer = TransactionPeer(hold_first="ABORT", deliver=b"first")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(
            peer, receipt_timeout_ms="5000", reconnect="true", reconnect_delay_ms="100"
        ) as (
            connection,
            session,
        ):
            await connection.start()
            consumer = await session.createConsumer(session.createQueue("q"))
            producer = session.createProducer(session.createQueue("q"))
            assert text_of(await consumer.receive(5000)) == "first"
            await producer.send(session.createTextMessage("rolled back"))
            rolling_back = asyncio.ensure_future(session.rollback())
            await asyncio.to_thread(peer.wait_for, "ABORT")
            peer.drop(come_back=True)
            await rolling_back  # ABORT lost with the connection: the broker discards the transaction anyway
            await producer.send(session.createTextMessage("after the reconnect"))
            await session.commit()

    aio_support.run(scenario, 60)


def test_a_commit_waits_for_both_sends_of_a_retained_send_whose_caller_was_cancelled_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """A retained send's two SENDs (the live message and its stored copy) go into the session's transaction and
    run to their end when the caller is cancelled. A commit made meanwhile waits for the second: before, COMMIT
    went out between them and the copy went into a transaction already committed."""
    peer = TransactionPeer(broker="activemq", hold_first="SEND")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createTopic("t"))
            sending = asyncio.ensure_future(producer.send(session.createTextMessage("latest"), retain=True))
            await asyncio.to_thread(peer.wait_for, "SEND")
            sending.cancel()
            await asyncio.gather(sending, return_exceptions=True)
            committing = asyncio.ensure_future(session.commit())
            done, _ = await asyncio.wait({committing}, timeout=0.5)
            assert not done and "COMMIT" not in peer.commands, peer.commands
            peer.release()
            await committing
        assert peer.commands[1:5] == ["BEGIN", "SEND", "SEND", "COMMIT"], peer.commands

    aio_support.run(scenario, 60)


def test_a_commit_waits_for_the_answer_to_a_synchronous_send_in_its_transaction(
    peers: list[TransactionPeer],
) -> None:
    """A synchronous transactional send is in hand until its answer, so a commit from another task goes out only
    after it: a connection lost before that answer (or a refusal, after which a broker closes) leaves the commit
    a definite rollback. aa3db20 let COMMIT follow the SEND at once, and its review showed commit() then
    reporting an outcome in doubt for a transaction the broker never got to commit; it is reverted."""
    peer = TransactionPeer(broker="activemq")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="10000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(session.createTextMessage("begins the transaction"))
            peer.hold_first = "SEND"
            sending = asyncio.ensure_future(producer.send(session.createTextMessage("never answered")))
            await asyncio.to_thread(peer.wait_for, "SEND", 2)
            committing = asyncio.ensure_future(session.commit())
            for _ in range(10):
                await asyncio.sleep(0)  # yields: the commit waits for the send's answer
            assert not committing.done()
            peer.drop()
            with pytest.raises(ConnectionLostException):
                await sending
            with pytest.raises(TransactionRolledBackException):
                await committing
        assert "COMMIT" not in peer.commands, peer.commands

    aio_support.run(scenario, 60)


def test_a_transaction_holding_half_a_retained_send_can_only_roll_back(peers: list[TransactionPeer]) -> None:
    """The first of a retained send's two SENDs gets no receipt in time: the transaction may hold the live
    message without its stored copy, so commit() rolls it back and says why (both APIs); the next commits."""
    threaded, asyncio_api = (
        TransactionPeer(broker="activemq", hold_first="SEND"),
        TransactionPeer(broker="activemq", hold_first="SEND"),
    )
    peers.extend([threaded, asyncio_api])
    connection = ConnectionFactory(threaded.url(receipt_timeout_ms="1000")).createConnection()
    try:
        session = connection.createSession(True, Session.SESSION_TRANSACTED)
        producer = session.createProducer(session.createTopic("t"))
        with pytest.raises(JMSTimeoutException):
            producer.send(session.createTextMessage("latest"), retain=True)
        with pytest.raises(TransactionRolledBackException, match="retained send"):
            session.commit()
        producer.send(session.createTextMessage("next"))
        session.commit()
    finally:
        connection.close()

    async def scenario() -> None:
        async with transacted(asyncio_api, receipt_timeout_ms="1000") as (_connection, session):
            producer = session.createProducer(session.createTopic("t"))
            with pytest.raises(JMSTimeoutException):
                await producer.send(session.createTextMessage("latest"), retain=True)
            with pytest.raises(TransactionRolledBackException, match="retained send"):
                await session.commit()
            await producer.send(session.createTextMessage("next"))
            await session.commit()

    aio_support.run(scenario, 60)
    for peer in (threaded, asyncio_api):
        assert peer.commands[1:7] == ["BEGIN", "SEND", "ABORT", "BEGIN", "SEND", "COMMIT"], peer.commands


def test_sends_of_a_commit_in_doubt_are_told_and_hold_back_no_later_completion(
    peers: list[TransactionPeer],
) -> None:
    """COMMIT goes unanswered within the receipt timeout (in doubt), and with it the receipts RabbitMQ sends only
    at COMMIT. The transaction's CompletionListeners hear a JMSException saying so, and the next transaction's
    listener runs before its commit returns (both APIs); before, the first was never told and the second waited
    behind it until the connection closed."""
    threaded, asyncio_api = TransactionPeer(hold_first="COMMIT"), TransactionPeer(hold_first="COMMIT")
    peers.extend([threaded, asyncio_api])
    expected = ["first: JMSException", "second: completed"]
    heard = Heard()
    connection = ConnectionFactory(threaded.url(receipt_timeout_ms="1000")).createConnection()
    try:
        session = connection.createSession(True, Session.SESSION_TRANSACTED)
        producer = session.createProducer(session.createQueue("q"))
        producer.send(session.createTextMessage("in doubt"), completionListener=heard.listener("first"))
        with pytest.raises(JMSException, match="in doubt") as raised:
            session.commit()
        assert not isinstance(raised.value, TransactionRolledBackException)
        producer.send(session.createTextMessage("committed"), completionListener=heard.listener("second"))
        session.commit()
        assert heard.events == expected
    finally:
        connection.close()

    heard = Heard()

    async def scenario() -> None:
        async with transacted(asyncio_api, receipt_timeout_ms="1000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(
                session.createTextMessage("in doubt"), completionListener=heard.listener("first")
            )
            with pytest.raises(JMSException, match="in doubt") as raised:
                await session.commit()
            assert not isinstance(raised.value, TransactionRolledBackException)
            await producer.send(
                session.createTextMessage("committed"), completionListener=heard.listener("second")
            )
            await session.commit()
            assert heard.events == expected

    aio_support.run(scenario, 60)


def test_a_send_queued_behind_close_raises_and_sends_nothing_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """A commit whose caller was cancelled holds the transaction boundary, close() waits behind it, and a send
    waits behind close(). Once close() is under way the send is refused; before, it began a transaction on the
    closing session and returned, and its message was lost with that transaction at DISCONNECT."""
    peer = TransactionPeer(hold_first="COMMIT")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(session.createTextMessage("committed"))
            await commit_cancelled_in_flight(session, peer)
            closing = asyncio.ensure_future(session.close())
            await asyncio.sleep(0)  # a yield: close() is waiting at the boundary
            sending = asyncio.ensure_future(producer.send(session.createTextMessage("too late")))
            await asyncio.sleep(0)  # a yield: the send is waiting behind close()
            peer.release()
            await closing
            with pytest.raises(IllegalStateException):
                await sending
        assert peer.commands.count("SEND") == 1, peer.commands

    aio_support.run(scenario, 60)


def test_a_commit_waiting_for_its_sends_while_close_rolls_back_says_so_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """Review finding: close() and commit() both waited for an unanswered asynchronous send of the transaction;
    close() took the transaction boundary first and sent ABORT, and commit() then found nothing open and returned
    as if it had committed. It must raise TransactionRolledBackException: nothing was committed. Which of the two
    takes the boundary first is the event loop's order of waking them: close() (called first) on asyncio's loop;
    commit() on uvloop (JMSLIKE_TEST_EVENT_LOOP=uvloop), which then commits, and close() has nothing to roll back.
    Either way commit() says what happened."""
    peer = TransactionPeer(broker="activemq", hold_first="SEND")
    peers.append(peer)
    committed: list[bool] = []

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            heard = Heard()
            await producer.send(
                session.createTextMessage("rolled back"), completionListener=heard.listener("m")
            )
            await asyncio.to_thread(peer.wait_for, "SEND")
            closing = asyncio.ensure_future(session.close())
            await asyncio.sleep(0)  # a yield: close() waits for the send
            committing = asyncio.ensure_future(session.commit())
            await asyncio.sleep(0)  # a yield: commit() waits for it too
            peer.release()
            await closing
            try:
                await committing
                committed.append(True)
            except TransactionRolledBackException as exc:
                assert "closed" in str(exc), exc
                committed.append(False)
            if isinstance(asyncio.get_running_loop(), asyncio.BaseEventLoop):
                assert committed == [False], (
                    "on asyncio's loop close(), called first, takes the boundary first"
                )

    aio_support.run(scenario, 60)
    if committed == [True]:
        assert "COMMIT" in peer.commands and "ABORT" not in peer.commands, peer.commands
    else:
        assert "COMMIT" not in peer.commands and "ABORT" in peer.commands, peer.commands


@pytest.mark.parametrize("ending", ["rollback", "commit"])
def test_a_send_after_a_cancelled_commit_or_rollback_joins_the_next_transaction_in_the_asyncio_api(
    peers: list[TransactionPeer], ending: str
) -> None:
    """Review finding: a commit or rollback whose caller was cancelled while it waited for the transaction's
    asynchronous sends took the open transaction only later, so a send made after the cancel joined it: after a
    cancelled rollback that send was aborted with it and lost without a word, and the next commit found nothing to
    commit. A send made after the call waits for it to end and goes into the next transaction."""
    peer = TransactionPeer(broker="activemq", hold_first="SEND")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            heard = Heard()
            await producer.send(
                session.createTextMessage("first"), completionListener=heard.listener("first")
            )
            await asyncio.to_thread(peer.wait_for, "SEND")
            ending_call = asyncio.ensure_future(getattr(session, ending)())
            await asyncio.sleep(0)  # a yield: it waits for the first send's answer
            ending_call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await ending_call
            sending = asyncio.ensure_future(producer.send(session.createTextMessage("after")))
            await asyncio.sleep(0)  # a yield: the send waits for the cancelled call to end
            peer.release()
            await sending
            await session.commit()
        first_end = "ABORT" if ending == "rollback" else "COMMIT"
        begun = peer.commands.index("BEGIN")
        assert peer.commands[begun : begun + 6] == ["BEGIN", "SEND", first_end, "BEGIN", "SEND", "COMMIT"], (
            peer.commands
        )
        assert heard.events == ["first: completed"]  # answered before the transaction ended either way

    aio_support.run(scenario, 60)


def test_a_retained_send_cancelled_while_its_begin_is_in_flight_sends_nothing_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """The BEGIN runs to its end (the transaction is the session's), but the retained pair is sent only if its
    caller still waits: a cancelled send never publishes behind the caller's back."""
    peer = TransactionPeer(broker="activemq", hold_first="BEGIN")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createTopic("t"))
            sending = asyncio.ensure_future(
                producer.send(session.createTextMessage("cancelled"), retain=True)
            )
            await asyncio.to_thread(peer.wait_for, "BEGIN")
            sending.cancel()
            await asyncio.gather(sending, return_exceptions=True)
            peer.release()
            await session.commit()
        assert peer.commands[1:3] == ["BEGIN", "COMMIT"] and "SEND" not in peer.commands, peer.commands

    aio_support.run(scenario, 60)


def test_a_transacted_send_cancelled_before_it_is_handed_over_still_hears_the_rollback_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """RabbitMQ answers a transactional SEND only at COMMIT. A send whose caller is cancelled just after it starts
    still goes out (its hand-over runs on), so it belongs to the transaction: a rollback tells its
    CompletionListener, and the next send's listener is not held behind it."""
    peer = TransactionPeer()
    peers.append(peer)
    heard = Heard()

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(session.createTextMessage("begins the transaction"))
            sending = asyncio.ensure_future(
                producer.send(
                    session.createTextMessage("cancelled"), completionListener=heard.listener("first")
                )
            )
            await asyncio.sleep(0)  # a yield: the send hands its frame over in a task of its own
            sending.cancel()
            await asyncio.gather(sending, return_exceptions=True)
            await asyncio.to_thread(peer.wait_for, "SEND", 2)
            await session.rollback()
            await producer.send(
                session.createTextMessage("committed"), completionListener=heard.listener("second")
            )
            await session.commit()
            assert heard.events == ["first: TransactionRolledBackException", "second: completed"]

    aio_support.run(scenario, 60)


@pytest.mark.parametrize("ending", ["commit", "close"])
def test_a_send_that_waited_at_the_boundary_never_goes_into_a_transaction_already_ended_in_the_asyncio_api(
    peers: list[TransactionPeer], ending: str
) -> None:
    """A send waits behind a commit whose caller was cancelled; a second commit (or close) waits behind the
    send. The send begins a transaction, and the second commit or close ends it before the send's task runs
    again: the SEND then goes into the next transaction (close: is refused), never after the COMMIT or ABORT of
    its own (which committed or aborted nothing, and the broker refuses a SEND for an ended transaction)."""
    peer = TransactionPeer(broker="activemq", hold_first="COMMIT")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(session.createTextMessage("first"))
            await commit_cancelled_in_flight(session, peer)
            sending = asyncio.ensure_future(producer.send(session.createTextMessage("second")))
            await asyncio.sleep(0)  # a yield: the send waits at the boundary
            ended = asyncio.ensure_future(session.commit() if ending == "commit" else session.close())
            await asyncio.sleep(0)  # a yield: the commit or close waits behind the send
            peer.release()
            await ended
            if ending == "commit":
                await sending
                await session.commit()
            else:
                with pytest.raises(IllegalStateException):
                    await sending
        commands = [c for c in peer.commands if c in ("BEGIN", "SEND", "COMMIT", "ABORT")]
        for position, command in enumerate(commands):
            if command == "SEND":
                assert commands[position - 1] in ("BEGIN", "SEND"), commands  # inside an open transaction
        assert commands.count("SEND") == (2 if ending == "commit" else 1), commands

    aio_support.run(scenario, 60)


def test_closing_a_session_tells_the_listeners_of_its_rolled_back_sends_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """RabbitMQ answers a transactional SEND only at COMMIT; close() rolls the transaction back, and the send's
    CompletionListener hears so before close() returns (its callback was queued, then dropped with the
    dispatch task)."""
    peer = TransactionPeer()
    peers.append(peer)
    heard = Heard()

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(
                session.createTextMessage("rolled back"), completionListener=heard.listener("only")
            )
            await session.close()
            assert heard.events == ["only: TransactionRolledBackException"]

    aio_support.run(scenario, 60)


def test_a_transactional_send_that_yields_before_its_hand_over_is_written_before_a_commit_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """An unwaited transactional send (a CompletionListener on ActiveMQ) yields to the loop after 32 sends in one
    turn (loop_turns) and may wait for its send window, after it joined the open transaction. A commit queued
    meanwhile waits for it (the send is "in hand"): before, COMMIT went out first and the SEND followed into the
    committed transaction (fourth review of the listener scope)."""
    peer = TransactionPeer(broker="activemq")
    peers.append(peer)
    heard = Heard()

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (connection, session):
            other = await connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
            unwaited = other.createProducer(other.createQueue("other"))
            unwaited.setDeliveryMode(DeliveryMode.NON_PERSISTENT)
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(session.createTextMessage("begins the transaction"))
            committing = asyncio.ensure_future(session.commit())
            await asyncio.sleep(0)  # a yield: the commit's own task is queued
            for number in range(32):  # this turn's budget of sends without a yield, on another session
                await unwaited.send(other.createTextMessage(str(number)))
            await producer.send(
                session.createTextMessage("in hand"), completionListener=heard.listener("in hand")
            )
            await committing
            await session.commit()
        last_send = max(i for i, command in enumerate(peer.commands) if command == "SEND")
        assert "COMMIT" in peer.commands[last_send:], peer.commands
        assert heard.events == ["in hand: completed"]

    aio_support.run(scenario, 60)


def test_close_waits_for_an_unanswered_send_once_in_the_asyncio_api(peers: list[TransactionPeer]) -> None:
    """close() waits for the session's unwaited sends at most one receipt timeout, then rolls back and runs the
    callbacks its rollback queued: that second wait is for callbacks only (it waited out the same unanswered
    send a second time, fourth review)."""
    peer = TransactionPeer(broker="activemq", hold_first="SEND")
    peers.append(peer)
    timeout_s = 1.0

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms=str(int(timeout_s * 1000))) as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(
                session.createTextMessage("never answered"), completionListener=Heard().listener("x")
            )
            loop = asyncio.get_running_loop()
            started = loop.time()
            await session.close()
            elapsed = loop.time() - started
            assert elapsed < 1.8 * timeout_s, f"close() took {elapsed:.2f}s"

    aio_support.run(scenario, 60)


@pytest.mark.parametrize("broker", ["activemq", "rabbitmq"])
def test_a_commit_gets_through_while_another_task_keeps_sending_in_the_asyncio_api(
    peers: list[TransactionPeer], broker: str
) -> None:
    """A commit waits for the sends already in hand, not for those made while it waits: these go into the next
    transaction (fifth review: a task sending in a loop kept the commit waiting for as long as it sent, and on
    RabbitMQ, whose transactional sends never yielded to the loop, blocked the loop altogether)."""
    peer = TransactionPeer(broker=broker)
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(session.createTextMessage("begins the transaction"))
            sending = True

            async def keep_sending() -> None:
                while sending:
                    await producer.send(session.createTextMessage("more"))

            sender = asyncio.ensure_future(keep_sending())
            await asyncio.sleep(0)  # a yield: the sender runs
            await asyncio.wait_for(session.commit(), 10)
            sending = False
            await sender
            await session.commit()

    aio_support.run(scenario, 60)


def test_a_send_made_while_a_commit_waits_for_the_sends_in_it_waits_for_the_commit_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """The broker takes 1.2 s to read a large send in the transaction (its write waits to drain: in hand), then
    1.2 s to answer COMMIT (each within the 2 s receipt timeout). A send made while the commit waits goes into
    the next transaction once the commit is done: it may wait for both, and must not time out (sixth review: it
    had one receipt timeout for both)."""
    peer = TransactionPeer(broker="activemq")
    peers.append(peer)

    async def scenario() -> None:
        async with transacted(peer, receipt_timeout_ms="2000") as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(session.createTextMessage("begins the transaction"))
            peer.pause_reading()
            slow = asyncio.ensure_future(producer.send(session.createTextMessage(LARGE)))
            committing = asyncio.ensure_future(session.commit())
            for _ in range(10):
                await asyncio.sleep(0)  # yields: the large send waits to drain, the commit for its hand
            assert not slow.done() and not committing.done()
            later = asyncio.ensure_future(producer.send(session.createTextMessage("next transaction")))
            await asyncio.sleep(1.2)  # the broker's pace, not a synchronisation
            peer.hold_first = "COMMIT"
            peer.resume_reading()
            await slow
            await asyncio.to_thread(peer.wait_for, "COMMIT")
            await asyncio.sleep(1.2)
            peer.release()
            await committing
            await later
            await session.commit()
        assert [c for c in peer.commands if c in ("BEGIN", "SEND", "COMMIT")] == [
            "BEGIN", "SEND", "SEND", "COMMIT", "BEGIN", "SEND", "COMMIT",
        ]  # fmt: skip

    aio_support.run(scenario, 60)


def test_a_connection_lost_while_a_commit_waits_for_the_sends_in_it_rolls_back_that_commit_only_in_the_asyncio_api(
    peers: list[TransactionPeer],
) -> None:
    """The connection drops while a commit waits for a send in its transaction (a large one, waiting to drain):
    that commit raises TransactionRolledBackException (it raised AssertionError), and after the reconnect the
    next transaction commits without a rollback() first (the loss had marked it 'rollback only')."""
    peer = TransactionPeer(broker="activemq")
    peers.append(peer)

    async def scenario() -> None:
        options = {"reconnect": "true", "reconnect_delay_ms": "100", "reconnect_max_delay_ms": "200"}
        async with transacted(peer, receipt_timeout_ms="5000", **options) as (_connection, session):
            producer = session.createProducer(session.createQueue("q"))
            await producer.send(session.createTextMessage("begins the transaction"))
            peer.pause_reading()
            held = asyncio.ensure_future(producer.send(session.createTextMessage(LARGE)))
            committing = asyncio.ensure_future(session.commit())
            for _ in range(10):
                await asyncio.sleep(0)  # yields: the large send waits to drain, the commit for its hand
            assert not held.done() and not committing.done()
            peer.drop(come_back=True)
            with pytest.raises(ConnectionLostException):
                await held
            with pytest.raises(TransactionRolledBackException):
                await committing
            await producer.send(session.createTextMessage("after the reconnect"))
            await session.commit()

    aio_support.run(scenario, 60)

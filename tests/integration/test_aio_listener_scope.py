"""jmslike.aio: what counts as a session's MessageListener or CompletionListener, when the code runs outside the
dispatch task. A listener's commit runs the completion callbacks queued behind it in a task of its own, and an
application wraps calls in ``asyncio.wait_for`` (a task of its own too): the JMS rules still apply there. A
callback may not close, commit, roll back, stop or close its connection (JMS 2.0 §7.3.8: it would wait for
itself), and callbacks run one at a time, in send order.

Against a scripted peer answering as RabbitMQ does (transaction_peer.py): what is tested is the session's own
bookkeeping, with a transactional SEND's receipt arriving at COMMIT.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from transaction_peer import TransactionPeer

from jmslike import Session, aio
from jmslike.exceptions import IllegalStateException
from jmslike.messages import Message

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def peer() -> Iterator[TransactionPeer]:
    made = TransactionPeer(deliver=b"request")
    yield made
    made.stop()


def test_callbacks_run_one_at_a_time_in_send_order_when_a_listeners_commit_is_cut_short(
    peer: TransactionPeer,
) -> None:
    """The listener's commit runs its sends' callbacks; the listener stops waiting for it once the first callback
    runs and returns, so the dispatch task goes on to the next callback while the commit's task still runs the
    first. They must not overlap (before, they ran at once and the second was not refused commit())."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        events: list[str] = []
        first_started, listener_returned = asyncio.Event(), asyncio.Event()
        first_may_end = asyncio.Event()
        second_done: asyncio.Future[None] = loop.create_future()
        async with await aio.ConnectionFactory(
            peer.url(receipt_timeout_ms="5000")
        ).createConnection() as connection:
            session = await connection.createSession(True, Session.SESSION_TRANSACTED)
            producer = session.createProducer(session.createQueue("out"))

            class Callback:
                def __init__(self, name: str) -> None:
                    self.name = name

                async def onCompletion(self, message: Message) -> None:
                    events.append(f"{self.name} starts")
                    if self.name == "first":
                        first_started.set()
                        await first_may_end.wait()
                    try:
                        await session.commit()
                    except IllegalStateException:
                        events.append(f"{self.name} refused commit()")
                    events.append(f"{self.name} ends")
                    if self.name == "second":
                        second_done.set_result(None)

                def onException(self, message: Message, exception: Exception) -> None:
                    events.append(f"{self.name}: {exception!r}")

            async def on_message(message: Message) -> None:
                await producer.send(session.createTextMessage("1"), completionListener=Callback("first"))
                await producer.send(session.createTextMessage("2"), completionListener=Callback("second"))
                committing = asyncio.ensure_future(session.commit())
                await first_started.wait()
                committing.cancel()  # the listener stops waiting; the commit runs on
                await asyncio.gather(committing, return_exceptions=True)
                listener_returned.set()

            (await session.createConsumer(session.createQueue("q"))).setMessageListener(on_message)
            await connection.start()
            await listener_returned.wait()
            for _ in range(20):  # yields: the dispatch task, free again, would take the next callback now
                await asyncio.sleep(0)
            assert events == ["first starts"], events
            first_may_end.set()
            await second_done
        assert events == [
            "first starts",
            "first refused commit()",
            "first ends",
            "second starts",
            "second refused commit()",
            "second ends",
        ]

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_callback_run_by_a_listeners_commit_may_not_stop_or_close_the_connection(
    peer: TransactionPeer,
) -> None:
    """Both would wait for the listener, which waits for its commit, which waits for this callback: before, they
    hung. Also through ``asyncio.wait_for``, which runs the call in a task of its own."""

    async def scenario() -> None:
        refused: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        async with await aio.ConnectionFactory(
            peer.url(receipt_timeout_ms="5000")
        ).createConnection() as connection:
            session = await connection.createSession(True, Session.SESSION_TRANSACTED)
            producer = session.createProducer(session.createQueue("out"))

            class Callback:
                async def onCompletion(self, message: Message) -> None:
                    seen = []
                    for call in (connection.stop, connection.close, session.close):
                        try:
                            await asyncio.wait_for(call(), 10)
                        except IllegalStateException:
                            seen.append(call.__name__)
                    refused.set_result(seen)

                def onException(self, message: Message, exception: Exception) -> None:
                    refused.set_exception(exception)

            async def on_message(message: Message) -> None:
                await producer.send(session.createTextMessage("reply"), completionListener=Callback())
                await session.commit()

            (await session.createConsumer(session.createQueue("q"))).setMessageListener(on_message)
            await connection.start()
            assert await refused == ["stop", "close", "close"]

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_listener_may_not_stop_its_connection_and_a_task_it_leaves_running_is_no_listener(
    peer: TransactionPeer,
) -> None:
    """JMS 2.0 §6.1.5: stop() from a listener would wait for itself, so it is refused, as in the threaded API (it
    returned at once before). A task the listener started and left running is not the listener once the
    listener returned: its stop() waits for nothing and returns."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        outcome: asyncio.Future[str] = loop.create_future()
        later: asyncio.Future[None] = loop.create_future()
        left_running: list[asyncio.Task[None]] = []
        async with await aio.ConnectionFactory(
            peer.url(receipt_timeout_ms="5000")
        ).createConnection() as connection:
            session = await connection.createSession(True, Session.SESSION_TRANSACTED)

            async def stop_later() -> None:
                await later
                await connection.stop()

            async def on_message(message: Message) -> None:
                left_running.append(asyncio.ensure_future(stop_later()))
                try:
                    await connection.stop()
                    outcome.set_result("returned")
                except IllegalStateException:
                    outcome.set_result("refused")

            (await session.createConsumer(session.createQueue("q"))).setMessageListener(on_message)
            await connection.start()
            assert await outcome == "refused"
            later.set_result(None)
            await asyncio.wait_for(left_running[0], 10)

    asyncio.run(asyncio.wait_for(scenario(), 60))


def test_a_listeners_commit_wrapped_in_wait_for_runs_the_callbacks_queued_behind_the_listener(
    peer: TransactionPeer,
) -> None:
    """``asyncio.wait_for`` runs the commit in a task of its own; it still acts for the listener, so it runs the
    callbacks of the listener's sends before it returns (JMS 2.0 §7.3.7). Before, it left them to the dispatch
    task, busy in this very listener: the commit returned after the receipt timeout with the callback not run."""

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        events: list[str] = []
        handled: asyncio.Future[None] = loop.create_future()
        async with await aio.ConnectionFactory(
            peer.url(receipt_timeout_ms="3000")
        ).createConnection() as connection:
            session = await connection.createSession(True, Session.SESSION_TRANSACTED)
            producer = session.createProducer(session.createQueue("out"))

            class Callback:
                def onCompletion(self, message: Message) -> None:
                    events.append("callback")

                def onException(self, message: Message, exception: Exception) -> None:
                    events.append(f"callback: {exception!r}")

            async def on_message(message: Message) -> None:
                await producer.send(session.createTextMessage("reply"), completionListener=Callback())
                started = loop.time()
                await asyncio.wait_for(session.commit(), 10)
                events.append("commit returned" + (" late" if loop.time() - started > 2 else ""))
                handled.set_result(None)

            (await session.createConsumer(session.createQueue("q"))).setMessageListener(on_message)
            await connection.start()
            await handled
        assert events == ["callback", "commit returned"]

    asyncio.run(asyncio.wait_for(scenario(), 60))

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
import contextvars
from collections.abc import Iterator

import aio_support
import pytest
from transaction_peer import TransactionPeer, transacted

from jmslike import Session, aio
from jmslike.exceptions import IllegalStateException, IllegalStateRuntimeException
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
        async with transacted(peer, receipt_timeout_ms="5000") as (connection, session):
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

    aio_support.run(scenario, 60)


def test_a_callback_run_by_a_listeners_commit_may_not_stop_or_close_the_connection(
    peer: TransactionPeer,
) -> None:
    """Both would wait for the listener, which waits for its commit, which waits for this callback: before, they
    hung. Called in the callback, they are refused at once; wrapped in ``asyncio.wait_for`` (a task of its own,
    which the callback awaits) they are refused once the receipt timeout shows the callback waits for them."""

    async def scenario() -> None:
        refused: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        async with transacted(peer, receipt_timeout_ms="1000") as (connection, session):
            producer = session.createProducer(session.createQueue("out"))

            class Callback:
                async def onCompletion(self, message: Message) -> None:
                    seen = []
                    for call in (connection.stop, connection.close, session.close):
                        for wrapped in (False, True):
                            try:
                                await (asyncio.wait_for(call(), 10) if wrapped else call())
                            except IllegalStateException:
                                seen.append(call.__name__ + (" in wait_for" if wrapped else ""))
                    refused.set_result(seen)

                def onException(self, message: Message, exception: Exception) -> None:
                    refused.set_exception(exception)

            async def on_message(message: Message) -> None:
                await producer.send(session.createTextMessage("reply"), completionListener=Callback())
                await session.commit()

            (await session.createConsumer(session.createQueue("q"))).setMessageListener(on_message)
            await connection.start()
            assert await refused == [
                "stop",
                "stop in wait_for",
                "close",
                "close in wait_for",
                "close",
                "close in wait_for",
            ]

    aio_support.run(scenario, 60)


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
        async with transacted(peer, receipt_timeout_ms="5000") as (connection, session):

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

    aio_support.run(scenario, 60)


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
        async with transacted(peer, receipt_timeout_ms="3000") as (connection, session):
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

    aio_support.run(scenario, 60)


def test_a_task_a_listener_leaves_running_waits_for_it_to_close_or_stop(peer: TransactionPeer) -> None:
    """A task the listener starts and does not await is not the listener: its close() and stop() wait for the
    listener to return, as any other task's do (a first version of the scope refused them)."""

    async def scenario() -> None:
        outcomes: list[str] = []
        listener_may_return = asyncio.Event()
        spawned: list[asyncio.Task[None]] = []
        async with transacted(peer, receipt_timeout_ms="5000") as (connection, session):

            async def stop_and_close() -> None:
                listener_may_return.set()
                for call in (connection.stop, session.close):
                    await call()
                    outcomes.append(f"{call.__name__} returned")

            async def on_message(message: Message) -> None:
                spawned.append(asyncio.ensure_future(stop_and_close()))
                await listener_may_return.wait()
                outcomes.append("listener returns")

            (await session.createConsumer(session.createQueue("q"))).setMessageListener(on_message)
            await connection.start()
            while not spawned:
                await asyncio.sleep(0)  # a yield: the listener runs
            await asyncio.wait_for(spawned[0], 10)
        assert outcomes == ["listener returns", "stop returned", "close returned"]

    aio_support.run(scenario, 60)


def test_a_task_a_callback_starts_inside_a_listeners_commit_still_acts_for_that_listener(
    peer: TransactionPeer,
) -> None:
    """A listener's commit runs its send's callback, which starts a task and returns; the listener then awaits
    that task, which calls ``connection.stop()``. The task acts for the listener, which still runs, so stop() is
    refused once the receipt timeout shows the listener waits for it. Before, the callback's ended scope made
    the task one on its own: its stop() waited for the listener, which waited for it, until wait_for gave up."""

    async def scenario() -> None:
        outcome: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        started: list[asyncio.Task[None]] = []
        async with transacted(peer, receipt_timeout_ms="1000") as (connection, session):
            producer = session.createProducer(session.createQueue("out"))

            class Callback:
                def onCompletion(self, message: Message) -> None:
                    started.append(asyncio.ensure_future(connection.stop()))

                def onException(self, message: Message, exception: Exception) -> None:
                    outcome.set_exception(exception)

            async def on_message(message: Message) -> None:
                await producer.send(session.createTextMessage("reply"), completionListener=Callback())
                await session.commit()
                try:
                    await asyncio.wait_for(started[0], 10)
                    outcome.set_result("returned")
                except IllegalStateException:
                    outcome.set_result("refused")
                except TimeoutError:
                    outcome.set_result("waited for the listener")

            (await session.createConsumer(session.createQueue("q"))).setMessageListener(on_message)
            await connection.start()
            assert await outcome == "refused"

    aio_support.run(scenario, 60)


def test_a_callback_left_running_by_a_listeners_commit_holds_back_the_next_listener(
    peer: TransactionPeer,
) -> None:
    """The listener stops waiting for its commit (``asyncio.wait_for``) while the commit runs a callback, and
    returns. The next delivery waits for that callback: callbacks never run beside a MessageListener of the
    session (a first version of the scope let the next listener start inside it)."""

    async def scenario() -> None:
        events: list[str] = []
        callback_may_end, callback_started, second_listener_done = (
            asyncio.Event(),
            asyncio.Event(),
            asyncio.Event(),
        )
        async with transacted(peer, receipt_timeout_ms="5000") as (connection, session):
            producer = session.createProducer(session.createQueue("out"))

            class Callback:
                async def onCompletion(self, message: Message) -> None:
                    events.append("callback starts")
                    callback_started.set()
                    await callback_may_end.wait()
                    events.append("callback ends")

                def onException(self, message: Message, exception: Exception) -> None:
                    events.append(f"callback: {exception!r}")

            async def on_message(message: Message) -> None:
                events.append("listener starts")
                if len([e for e in events if e == "listener starts"]) == 1:
                    await producer.send(session.createTextMessage("reply"), completionListener=Callback())
                    committing = asyncio.ensure_future(session.commit())
                    await callback_started.wait()
                    committing.cancel()  # as asyncio.wait_for does at its timeout; the commit runs on
                    await asyncio.gather(committing, return_exceptions=True)
                    peer.push(b"second")
                else:
                    second_listener_done.set()
                events.append("listener returns")

            (await session.createConsumer(session.createQueue("q"))).setMessageListener(on_message)
            await connection.start()
            await callback_started.wait()
            with pytest.raises(TimeoutError):  # the second message arrives meanwhile; its listener must wait
                await asyncio.wait_for(second_listener_done.wait(), 1.0)
            callback_may_end.set()
            await second_listener_done.wait()
        assert events == [
            "listener starts",
            "callback starts",
            "listener returns",
            "callback ends",
            "listener starts",
            "listener returns",
        ]

    aio_support.run(scenario, 60)


def test_listeners_and_the_exception_listener_keep_the_applications_context_variables(
    peer: TransactionPeer,
) -> None:
    """jmslike starts the dispatch task and the ExceptionListener's calls from a copy of the caller's context
    without its listener scope: a tracing span or a correlation id set before still reaches them (a first
    version started them from an empty context)."""
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="<unset>")

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        seen: dict[str, str] = {}
        reported: asyncio.Future[None] = loop.create_future()
        request_id.set("app-42")
        async with transacted(peer, receipt_timeout_ms="5000") as (connection, session):

            def on_exception(exception: Exception) -> None:
                seen.setdefault("exception listener", request_id.get())
                if not reported.done():
                    reported.set_result(None)

            connection.setExceptionListener(on_exception)

            def on_message(message: Message) -> None:
                seen.setdefault("message listener", request_id.get())
                raise RuntimeError("reported to the ExceptionListener")

            (await session.createConsumer(session.createQueue("q"))).setMessageListener(on_message)
            await connection.start()
            await reported
        assert seen == {"message listener": "app-42", "exception listener": "app-42"}

    aio_support.run(scenario, 60)


def test_a_listener_still_running_when_close_is_called_may_send_and_commit() -> None:
    """close() waits for a running listener (JMS 1.1 §4.4.1), which may still begin a transaction, send and
    commit: only a send that would begin one after close's rollback is refused (a first version refused every
    send from the moment close() was called)."""
    peer = TransactionPeer(deliver=b"request", broker="activemq")
    try:

        async def scenario() -> None:
            outcome: list[str] = []
            started, may_go_on = asyncio.Event(), asyncio.Event()
            async with transacted(peer, receipt_timeout_ms="5000") as (connection, session):
                producer = session.createProducer(session.createQueue("replies"))

                async def on_message(message: Message) -> None:
                    started.set()
                    await may_go_on.wait()
                    await producer.send(session.createTextMessage("reply"))
                    await session.commit()
                    outcome.append("sent and committed")

                (await session.createConsumer(session.createQueue("q"))).setMessageListener(on_message)
                await connection.start()
                await started.wait()
                closing = asyncio.ensure_future(session.close())
                await asyncio.sleep(0)  # a yield: close() waits for the listener
                may_go_on.set()
                await closing
                assert outcome == ["sent and committed"]
            assert [c for c in peer.commands if c in ("BEGIN", "SEND", "COMMIT")] == [
                "BEGIN",
                "SEND",
                "COMMIT",
            ]

        aio_support.run(scenario, 60)
    finally:
        peer.stop()


def test_a_contexts_close_awaited_by_its_own_listener_is_refused_and_leaves_the_context_closable(
    peer: TransactionPeer,
) -> None:
    """``asyncio.wait_for(context.close())`` in the context's own listener: the listener waits for the close,
    which waits for the listener, so the close is refused once the receipt timeout shows it, with nothing marked
    closed; the context closes normally afterwards (a first version left it marked closed, unclosable)."""

    async def scenario() -> None:
        refused: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        factory = aio.ConnectionFactory(peer.url(receipt_timeout_ms="1000"))
        context = await factory.createContext(Session.SESSION_TRANSACTED)
        consumer = await context.createConsumer(context.createQueue("q"))

        async def on_message(message: Message) -> None:
            try:
                await asyncio.wait_for(context.close(), 10)
                refused.set_result(None)
            except Exception as exc:
                refused.set_result(exc)

        consumer.setMessageListener(on_message)
        assert isinstance(await refused, IllegalStateRuntimeException)
        await context.close()
        await asyncio.to_thread(peer.wait_for, "DISCONNECT")

    aio_support.run(scenario, 60)


def test_a_producer_closed_from_a_task_a_callback_started_waits_for_the_callback(
    peer: TransactionPeer,
) -> None:
    """producer.close() returns only once every callback has returned: from a task the callback started, it waits
    for that callback (it returned while the callback still ran)."""

    async def scenario() -> None:
        events: list[str] = []
        spawned: list[asyncio.Task[None]] = []
        callback_may_end = asyncio.Event()
        async with transacted(peer, receipt_timeout_ms="5000") as (_connection, session):
            producer = session.createProducer(session.createQueue("out"))

            async def close_producer() -> None:
                callback_may_end.set()
                await producer.close()
                events.append("producer.close() returned")

            class Callback:
                async def onCompletion(self, message: Message) -> None:
                    events.append("callback starts")
                    spawned.append(asyncio.ensure_future(close_producer()))
                    await callback_may_end.wait()
                    events.append("callback ends")

                def onException(self, message: Message, exception: Exception) -> None:
                    events.append(f"callback: {exception!r}")

            await producer.send(session.createTextMessage("reply"), completionListener=Callback())
            await session.commit()  # the receipt comes with COMMIT; the commit waits for the callback
            await asyncio.wait_for(spawned[0], 10)
        assert events == ["callback starts", "callback ends", "producer.close() returned"]

    aio_support.run(scenario, 60)

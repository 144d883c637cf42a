"""``jmslike.aio``'s ConnectionFactory and Connection: JMS's names, awaited, on one asyncio STOMP wire.

The data path -- sends, deliveries, acknowledgements, transactions -- runs on the caller's event loop with no
thread of jmslike's (:mod:`~jmslike.adapters.async_wire`). The adapters' round trips at connect, subscribe and
unsubscribe (client-ID claims, RabbitMQ's HTTP management, Artemis's management connection) are written
against the blocking adapter contract; they run in asyncio's default executor through
:meth:`~jmslike.contract.AsyncWire.blocking` view while the loop keeps serving the wire. So adapters are
the same for both APIs.

Recovery as in the threaded Connection: with ``?reconnect=true`` one supervisor task reconnects with a bounded
exponential back-off over every host, with the same client ID, and re-subscribes every open consumer (durable
subscriptions by the same names) before the new wire becomes the connection's. Meanwhile receives wait, calls
that talk to the broker wait for it (bounded by the receipt timeout), and what was delivered and not
acknowledged belongs to the broker again (an open transaction can only roll back). Giving up is reported to
the ExceptionListener as a ConnectionLostException.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from jmslike.aio import listener_scope
from jmslike.aio.context import JMSContext
from jmslike.aio.private_link import PrivateLink
from jmslike.aio.session import Session
from jmslike.aio.session_engine import SessionEngine
from jmslike.config import ConnectionConfig, parse_url
from jmslike.connection import (
    RECONNECTING_CLIENT_ID,
    ConnectionMetaData,
    check_client_id,
    check_client_id_settable,
    context_arguments,
    private_connection,
    warn_not_started,
)
from jmslike.connection import Connection as ThreadedConnection
from jmslike.connection_listener import AsyncConnectionListener, ConnectionListener, check_connection_listener
from jmslike.context import SharedConnection, unchecked_async
from jmslike.contract import Adapter, AsyncWire, SilentConnectRefusal, Wire
from jmslike.delivery_delay import DelayCheck
from jmslike.error_reports import ReportBacklog
from jmslike.exceptions import (
    ConnectionLostException,
    IllegalStateException,
    JMSException,
)
from jmslike.failover import open_first_async
from jmslike.flow import BufferGauge
from jmslike.registry import adapter_names, load_adapter
from jmslike.serializers import SerializerRegistry
from jmslike.session_mode import session_mode
from jmslike.temporary import TemporaryDestinations
from jmslike.wire_events import WireEventRouter

if TYPE_CHECKING:
    from jmslike.aio.consumer import MessageConsumer

log = logging.getLogger(__name__)

#: What setConnectionListener takes: a ConnectionListener of either API (jmslike.connection_listener).
AnyConnectionListener = ConnectionListener | AsyncConnectionListener
#: An ExceptionListener: a plain function or a coroutine function, given the JMSException.
ExceptionListener = Callable[[JMSException], "Awaitable[None] | None"]

T = TypeVar("T")


class ConnectionFactory:
    """``ConnectionFactory("activemq://localhost:61613")``; ``await factory.createConnection()``."""

    def __init__(
        self, url: str, *, clientID: str | None = None, serializers: SerializerRegistry | None = None
    ) -> None:
        self._config = parse_url(url, known_schemes=adapter_names())
        load_adapter(self._config.scheme)  # fail now, not at createConnection, if the adapter is broken
        if clientID is not None:
            check_client_id(clientID)
        self._client_id = clientID
        self._serializers = serializers or SerializerRegistry()

    @property
    def config(self) -> ConnectionConfig:
        return self._config

    async def createConnection(self, userName: str | None = None, password: str | None = None) -> Connection:
        """A new, stopped Connection with these credentials (the URL's when None) and the factory's client ID."""
        config = self._config.with_credentials(userName, password)
        return await Connection.open(config, load_adapter(config.scheme), self._serializers, self._client_id)

    @unchecked_async
    async def createContext(self, *args: Any, **kwargs: Any) -> JMSContext:
        """JMS 2.0: ``createContext()``, ``createContext(sessionMode)``, ``createContext(userName, password)`` or
        ``createContext(userName, password, sessionMode)``: a JMSContext on a new connection
        (:mod:`jmslike.aio.context`). Raises the JMSRuntimeException forms, as the threaded API's does."""
        user, password, mode = context_arguments(args, kwargs)
        connection = await self.createConnection(user, password)
        try:
            return JMSContext(SharedConnection(connection), mode)
        except BaseException:
            await connection.close()
            raise

    def __repr__(self) -> str:
        return f"aio.ConnectionFactory({self._config.describe()!r})"


class Connection:
    """``javax.jms.Connection`` on the running event loop; ``async with`` closes it."""

    def __init__(
        self,
        config: ConnectionConfig,
        adapter: Adapter,
        serializers: SerializerRegistry,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        """Use ``await ConnectionFactory.createConnection()``."""
        self._config = config
        self.adapter = adapter
        self.serializers = serializers
        self.connection_id = f"jmslike-{uuid.uuid4().hex[:12]}"
        self._loop = loop
        self._client_id: str | None = None
        self._client_id_locked = False
        self._claiming_client_id = False  # a setClientID's broker claim under way (setClientID)
        self._server = ""  # CONNECTED's server header, for getMetaData
        self._started = asyncio.Event()
        self._stopped_hint_given = False
        self._closed = False
        self._failure: ConnectionLostException | None = None
        self._sessions: list[Session] = []
        self._consumers: dict[str, MessageConsumer] = {}
        self._sub_ids = itertools.count(1)
        self._exception_listener: ExceptionListener | None = None
        self._connection_listener: AnyConnectionListener | None = None
        self._listener_told: asyncio.Task[None] | None = None  # the last call queued for it: the next waits
        self._reports: set[asyncio.Task[None]] = set()
        self._report_backlog = ReportBacklog()  # bounded as the threaded API's (jmslike.error_reports)
        self._wire: AsyncWire | None = None
        self._closing: asyncio.Future[None] | None = None
        self.temporaries = TemporaryDestinations()
        self.delay_check = DelayCheck()  # JMS 2.0 delivery delay honoured by the broker? (found once)
        #: What the consumers hold undelivered, in bytes: the wire stops reading past it (jmslike.flow).
        self.buffer = BufferGauge(self._config.buffer_bytes if adapter.capabilities.byte_bound else 0)
        self._private = PrivateLink(self.open_private)  # retained-publication stores (jmslike.aio.retained)
        self._ready = asyncio.Event()  # clear while a reconnect is under way
        self._ready.set()
        self._supervisor: asyncio.Task[None] | None = None
        self._generation = 0

    @classmethod
    async def open(
        cls,
        config: ConnectionConfig,
        adapter: Adapter,
        serializers: SerializerRegistry,
        client_id: str | None,
    ) -> Connection:
        connection = cls(config, adapter, serializers, asyncio.get_running_loop())
        connection._wire = await connection._open_wire(client_id)
        connection._client_id = client_id
        connection._client_id_locked = client_id is not None
        return connection

    async def _open_wire(self, client_id: str | None) -> AsyncWire:
        return await open_first_async(
            self._config.hosts,
            lambda host: self._open_host(host, client_id),
            f"no broker of {self._config.describe()} could be reached",
        )

    async def _open_host(
        self, host: tuple[str, int], client_id: str | None, *, ask_again: bool = True
    ) -> AsyncWire:
        """CONNECT to one host, then the adapter's connect hook (in a worker thread); a silent refusal is asked
        once more, as the threaded connection does (contract.SilentConnectRefusal)."""
        adapter = self.adapter
        events = WireEventRouter(self)
        wire = adapter.new_async_wire(self._config, host, events)
        events.wire = wire
        try:
            connected = await wire.open(adapter.connect_headers(self._config, client_id))
            view = wire.blocking(self.worker_timeout_s)
            await self.in_worker(adapter.on_connected, view, connected, client_id)
            self._server = connected.get("server", "")
        except SilentConnectRefusal:
            await wire.close(timeout_s=0.5)
            if not ask_again:
                raise
            log.info(
                "broker at %s:%d closed the connection during CONNECT without a reason; asking again", *host
            )
            return await self._open_host(host, client_id, ask_again=False)
        except BaseException:
            await wire.close(timeout_s=0.5)
            raise
        return wire

    # -- what sessions and consumers use -------------------------------------------------------------------

    @property
    def config(self) -> ConnectionConfig:
        return self._config

    @property
    def wire(self) -> AsyncWire:
        """The open wire; ConnectionLostException once it is lost, IllegalStateException once closed."""
        self.check_open()
        if self._failure is not None:
            raise ConnectionLostException(
                f"the connection to the broker is lost: {self._failure}"
            ) from self._failure
        assert self._wire is not None
        return self._wire

    def owns(self, wire: object) -> bool:
        """Whether ``wire`` is this open connection's own (not a client-ID claim under way, not one replaced)."""
        return wire is self._wire and not self._closed

    @property
    def wire_closed(self) -> bool:
        """The wire is gone: closed by us, or lost (nothing more can be sent on it)."""
        return self._wire is None or not self._wire.is_open

    def blocking_wire(self) -> Wire:
        """The wire as the adapters' blocking contract has it, for :meth:`in_worker`."""
        return self.wire.blocking(self.worker_timeout_s)

    async def blocking_wire_for_use(self) -> Wire:
        """:meth:`blocking_wire` for a call to the broker made now: a reconnect under way is waited for first
        (:meth:`use_wire`), as the threaded API's calls do, rather than the call going to the lost wire."""
        return (await self.use_wire()).blocking(self.worker_timeout_s)

    @property
    def worker_timeout_s(self) -> float:
        """How long a worker thread waits for the loop: a round trip's receipt timeout and then some, so a
        loop that stopped serving (closed under it) cannot keep the thread, and the process, forever."""
        return self._config.receipt_timeout_ms / 1000 + self._config.connect_timeout_ms / 1000

    async def in_worker(self, function: Callable[..., T], *args: Any) -> T:
        """Run an adapter's blocking round trip in the default executor while the loop serves the wire."""
        return await asyncio.to_thread(function, *args)

    @property
    def failure(self) -> ConnectionLostException | None:
        return self._failure

    @property
    def started(self) -> asyncio.Event:
        return self._started

    def hint_if_stopped(self, call: str) -> None:
        """Log once per connection why a receive waits (JMS: delivery starts with ``start()``), as the threaded
        connection does: a new user's first script otherwise just waits without a word."""
        if self._started.is_set() or self._stopped_hint_given:
            return
        self._stopped_hint_given = True
        warn_not_started(call, self.connection_id)

    def next_sub_id(self) -> str:
        return f"{self.connection_id}-{next(self._sub_ids)}"

    def register_consumer(self, consumer: MessageConsumer) -> None:
        self._consumers[consumer.spec.sub_id] = consumer

    def unregister_consumer(self, consumer: MessageConsumer) -> None:
        self._consumers.pop(consumer.spec.sub_id, None)

    def subscriber_for(self, sub_id: str) -> MessageConsumer | None:
        return self._consumers.get(sub_id)

    def consumers(self) -> list[MessageConsumer]:
        """Every consumer this connection delivers to (closed ones too, until they detach)."""
        return list(self._consumers.values())

    def sessions(self) -> list[Session]:
        return list(self._sessions)

    def open_private(self) -> ThreadedConnection:
        """A threaded connection to the same broker with the same credentials, without client ID, for
        jmslike's own checks (the delivery-delay check, run in a worker thread); never this one's state."""
        return private_connection(self._config, self.serializers)

    async def on_private(self, work: Callable[[ThreadedConnection], T]) -> T:
        """Run ``work`` in a worker thread on this connection's private threaded connection (opened on first
        use, jmslike.aio.private_link): the retained-publication store's blocking round trips."""
        await self.use_wire()  # a lost connection raises, one reconnecting is waited for (as a send would)
        return await self.in_worker(self._private.run, work)

    @property
    def generation(self) -> int:
        """Incremented on every reconnect (the client ID was free for a while: what a subscription registry
        remembers of it may be stale, :class:`jmslike.catalogue.RegistryOwner`)."""
        return self._generation

    @property
    def ready(self) -> asyncio.Event:
        """Set while the wire is usable; clear while a reconnect is under way (deliveries wait for it)."""
        return self._ready

    def wire_if_ready(self) -> AsyncWire | None:
        """The open wire when it can be used at once (no reconnect under way), else None: then ``use_wire``."""
        if self._ready.is_set() and not self._closed:
            return self.wire
        return None

    async def use_wire(self) -> AsyncWire:
        """The open wire; while a reconnect is under way, wait for it (bounded by the receipt timeout) rather
        than fail, as the threaded connection's ``wire_for_use`` does."""
        self.check_open()
        if not self._ready.is_set() and self._failure is None:
            try:
                async with asyncio.timeout(self._config.receipt_timeout_ms / 1000):
                    await self._ready.wait()
            except TimeoutError:
                pass  # the wire property says why it cannot be used
        return self.wire

    def remove_session(self, session: SessionEngine) -> None:
        """A session closed (called by its engine, hence the base type)."""
        self._sessions = [kept for kept in self._sessions if kept is not session]

    def check_open(self) -> None:
        if self._closed:
            raise IllegalStateException("the connection is closed")

    # -- JMS API --------------------------------------------------------------------------------------------

    def getClientID(self) -> str | None:
        """The client ID, or None when none was set; IllegalStateException once closed, as in the threaded API."""
        self.check_open()
        return self._client_id

    async def setClientID(self, clientID: str) -> None:
        """Set the client ID; only right after the connection was created (JMS 1.1 §4.3.2). The broker claim
        happens now: InvalidClientIDException if another connection holds it."""
        self._check_client_id_claim(clientID)
        # A reconnect under way is waited for (its supervisor would replace the new wire); a lost connection raises.
        await self.use_wire()
        self._check_client_id_claim(clientID)  # again: the wait let other calls in
        if not self._ready.is_set():
            raise IllegalStateException(RECONNECTING_CLIENT_ID)
        # A second setClientID meanwhile is refused; a failed claim leaves the ID settable.
        self._claiming_client_id = True
        try:
            new_wire = await self._open_wire(clientID)
        finally:
            self._claiming_client_id = False
        if self._closed or self._failure is not None or not self._ready.is_set() or not new_wire.is_open:
            # Lost meanwhile (a reconnect would replace the new wire), or as it opened.
            await new_wire.close(timeout_s=2.0)
            self.check_open()
            if self._failure is None and not self._ready.is_set():
                raise IllegalStateException(RECONNECTING_CLIENT_ID)
            raise ConnectionLostException(
                f"the connection that claimed client ID {clientID!r} was lost"
            ) from self._failure
        self._client_id_locked = True
        old_wire, self._wire = self._wire, new_wire
        self._client_id = clientID
        if old_wire is not None:
            await old_wire.close(timeout_s=2.0)

    def _check_client_id_claim(self, client_id: str) -> None:
        self.check_open()
        check_client_id_settable(self._client_id, self._client_id_locked or self._claiming_client_id)
        check_client_id(client_id)

    def getMetaData(self) -> ConnectionMetaData:
        """What is known about the provider and the broker (CONNECTED ``server``), as in the threaded API."""
        self.check_open()
        return ConnectionMetaData(self.adapter, self._server, self.adapter.stomp_version)

    def setExceptionListener(self, listener: ExceptionListener | None) -> None:
        """Called (a task of its own, never inside jmslike's reader) with asynchronous errors: a refused
        unwaited send, an ERROR frame nobody waited for, the loss of the connection. Like the threaded API (and
        Qpid JMS), this leaves the client ID settable."""
        self.check_open()
        self._exception_listener = listener

    def getExceptionListener(self) -> ExceptionListener | None:
        """The listener of asynchronous errors, or None; IllegalStateException once closed."""
        self.check_open()
        return self._exception_listener

    def setConnectionListener(self, listener: AnyConnectionListener | None) -> None:
        """jmslike extra (Qpid JMS's ``JmsConnectionListener``): told when a ``reconnect=true`` connection loses
        its broker and when it is back, in tasks of their own, one call at a time and in order
        (:mod:`jmslike.connection_listener`); its methods may be coroutines."""
        self.check_open()
        check_connection_listener(listener, coroutines=True)
        self._connection_listener = listener

    def getConnectionListener(self) -> AnyConnectionListener | None:
        """The listener of interruptions and restorations, or None; IllegalStateException once closed."""
        self.check_open()
        return self._connection_listener

    async def createSession(self, *args: Any, **kwargs: Any) -> Session:
        """``createSession()``, ``createSession(sessionMode)`` or ``createSession(transacted, acknowledgeMode)``."""
        return self.session_now(session_mode(*args, **kwargs))

    def session_now(self, mode: int) -> Session:
        """A new session, made without waiting (a JMSContext makes its session on first use, in plain calls)."""
        self.check_open()
        self._client_id_locked = True
        session = Session(self, mode)
        self._sessions.append(session)
        return session

    @property
    def closed(self) -> bool:
        return self._closed

    def in_listener(self) -> bool:
        """Whether the caller is a listener or completion callback of one of this connection's sessions."""
        return any(session.in_listener() for session in self._sessions)

    async def wait_out_listeners(self, action: str) -> None:
        """From a task a listener or callback of this connection started: wait for it to return before
        ``action``, which waits for it (listener_scope.wait_out)."""
        for session in list(self._sessions):
            await session.wait_out_listener(action)

    async def start(self) -> None:
        """Start (or restart) delivery to this connection's consumers."""
        self.check_open()
        self._client_id_locked = True
        self._started.set()
        for session in list(self._sessions):
            session.wake()

    async def stop(self) -> None:
        """Pause delivery; returns once no listener of this connection is running (JMS 1.1 §4.3.4). Refused
        from a listener or completion callback of this connection (JMS 2.0 §6.1.5, §7.3.8: it would wait for
        itself)."""
        if self.in_listener():
            raise IllegalStateException(
                "stop() may not be called from a message listener or completion listener of this connection (it "
                "would wait for itself); call it from another task"
            )
        await self.wait_out_listeners("stop()")
        self.check_open()
        self._client_id_locked = True
        self._started.clear()
        for session in list(self._sessions):
            await session.idle()

    async def close(self) -> None:
        """Close every session (rolling back open transactions, handing unacknowledged messages back), then
        DISCONNECT: it returns once the broker has every frame sent before it. A second close waits for the
        first; a MessageListener of this connection may not close it (close waits for listeners)."""
        if self._closed:
            return
        if self.in_listener():
            raise IllegalStateException(
                "a MessageListener or CompletionListener may not close its own connection (close waits for it "
                "to return); close it from another task"
            )
        await self.wait_out_listeners("close()")
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        for session in list(self._sessions):
            try:
                await session.close()
            except JMSException as exc:  # the connection closes all the same
                log.warning("closing a session of %s failed: %s", self._config.describe(), exc)
        self._closed = True
        self._started.set()  # wake receivers: they see the connection closed
        if self._supervisor is not None and not self._supervisor.done():
            self._supervisor.cancel()  # a reconnect under way: it must not outlive the connection
        try:
            if self._wire is not None:
                await self._wire.close()
        finally:
            # In a worker: it may wait for a private connection being opened, then DISCONNECT it.
            await self.in_worker(self._private.close)
        # ExceptionListener calls still running are not waited for: one of them may be what closes.

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "lost" if self._failure else "open"
        return f"<aio.Connection {self._config.describe()} {state}>"

    # -- asynchronous errors -----------------------------------------------------------------------------

    def report(self, error: JMSException) -> None:
        """Hand ``error`` to the ExceptionListener in a task of its own (logged when there is none); how many may
        wait for a slow listener is :class:`~jmslike.error_reports.ReportBacklog`'s rule."""
        listener = self._exception_listener
        if listener is None:
            log.warning("asynchronous JMS error and no ExceptionListener: %s", error)
            return
        if not self._report_backlog.admit(error):
            self._report_backlog.log_dropped(self._report_backlog.dropped, error)
            return
        # Reported from a listener, it does not act for that listener (it may close: listener_scope).
        try:
            task = self._loop.create_task(
                _call_listener(listener, error), context=listener_scope.detached_context()
            )
        except BaseException:  # the loop is closed: nothing will run it
            self._report_backlog.done()
            raise
        self._reports.add(task)
        task.add_done_callback(self._report_ran)

    def _tell_connection_listener(self, call: Callable[[AnyConnectionListener], object]) -> None:
        """Run ``call`` for the ConnectionListener in a task of its own, after the calls queued before it."""
        listener = self._connection_listener
        if listener is None:
            return
        task = self._loop.create_task(
            _tell_in_turn(self._listener_told, lambda: call(listener)),
            context=listener_scope.detached_context(),
        )
        self._listener_told = task
        self._reports.add(task)
        task.add_done_callback(self._reports.discard)

    def _report_ran(self, task: asyncio.Task[None]) -> None:
        self._reports.discard(task)
        self._report_backlog.done()

    def on_lost(self, error: ConnectionLostException, wire: object | None = None) -> None:
        """From the wire's reader: what was delivered belongs to the broker again; reconnect, or fail for good.
        (``wire``: on the loop nothing replaces the wire between the router's check and this call.)"""
        if self._closed:
            return
        if not self._config.reconnect:
            self._failure = error  # before waking receivers, so they raise instead of waiting on
        in_use = self._ready.is_set()  # once per wire lost (not again for one never in use)
        self._ready.clear()
        for session in list(self._sessions):
            session.on_connection_lost()
        if not self._config.reconnect:
            self.report(error)
            return
        if in_use:
            self._tell_connection_listener(lambda listener: listener.onConnectionInterrupted(error))
        if self._supervisor is None or self._supervisor.done():
            self._supervisor = asyncio.ensure_future(self._reconnect(error))

    async def _reconnect(self, error: ConnectionLostException) -> None:
        """The one reconnect supervisor: bounded exponential back-off, or give up (module docstring)."""
        config = self._config
        delay = config.reconnect_delay_ms / 1000
        for attempt in range(1, config.reconnect_attempts + 1):
            if self._closed:
                return
            wire: AsyncWire | None = None
            try:
                wire = await self._open_wire(self._client_id)
                # Re-subscribe before the wire becomes the connection's: a failed attempt leaves no
                # half-subscribed wire in use.
                view = wire.blocking(self.worker_timeout_s)
                subscribed = []
                for consumer in list(self._consumers.values()):
                    if not consumer.closed:
                        await self.in_worker(self.adapter.subscribe, view, consumer.spec)
                        subscribed.append(consumer)
                for consumer in subscribed:  # closed meanwhile: its detach found no wire to unsubscribe on
                    if consumer.closed and self.subscriber_for(consumer.spec.sub_id) is not consumer:
                        await self.in_worker(self.adapter.detach, view, consumer.spec, list)
                if self._closed:  # closed meanwhile: this wire must not outlive the connection
                    await wire.close(timeout_s=1.0)
                    return
                if not wire.is_open:  # lost after its last receipt: the router ignored it, not ours yet
                    raise ConnectionLostException("the new connection was lost while re-subscribing")
                # No await from here on: nothing can happen between installing the wire and returning.
                self._wire = wire
                self._generation += 1
                self._ready.set()
                reached = config.describe([wire.host])
                log.info("reconnected to %s after %d attempt(s)", reached, attempt)
                for session in list(self._sessions):
                    session.wake()
                # B023: the loop returns right after, so `reached` is this attempt's
                self._tell_connection_listener(lambda listener: listener.onConnectionRestored(reached))  # noqa: B023
                return
            except asyncio.CancelledError:  # the connection closed under the attempt
                if wire is not None:
                    await wire.close(timeout_s=1.0)
                raise
            except Exception as exc:  # an adapter's own failure too: the supervisor must not die of it
                log.info("reconnect attempt %d failed: %s", attempt, exc)
                if wire is not None:
                    await wire.close(timeout_s=1.0)
                    for session in list(self._sessions):
                        session.on_connection_lost()  # what that wire delivered cannot be acknowledged now
                await asyncio.sleep(delay)
                delay = min(delay * 2, config.reconnect_max_delay_ms / 1000)
        failure = ConnectionLostException(
            f"gave up reconnecting to {config.describe()} after {config.reconnect_attempts} attempts"
        )
        failure.__cause__ = error
        self._failure = failure
        for session in list(self._sessions):
            session.wake()
        self.report(failure)


async def _tell_in_turn(previous: asyncio.Task[None] | None, call: Callable[[], object]) -> None:
    """Call a ConnectionListener method once the call before it ended (however it ended), awaiting a coroutine."""
    if previous is not None:
        await asyncio.wait([previous])
    try:
        result = call()
        if inspect.isawaitable(result):
            await result
    except Exception:  # the application's: logged, never raised into jmslike
        log.exception("the ConnectionListener raised")


async def _call_listener(listener: ExceptionListener, error: JMSException) -> None:
    try:
        result = listener(error)
        if inspect.isawaitable(result):
            await result
    except Exception:  # the application's: logged, never raised into jmslike
        log.exception("the ExceptionListener raised")

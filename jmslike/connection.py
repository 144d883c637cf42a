"""ConnectionFactory and Connection: the JMS connection state machine over one STOMP connection.

What the connection owns:

- the client-ID rule (JMS 1.1 §4.3.2): settable once, only before anything else is done. STOMP puts the
  client ID on CONNECT, so ``setClientID`` opens a second STOMP connection carrying it and swaps it in
  only when the broker accepted it; a refused ID leaves the connection exactly as it was;
- routing of incoming frames to consumers (the receiver thread only enqueues);
- the ExceptionListener, called from a connection event thread, never from the receiver thread;
- recovery: with ``?reconnect=true`` one supervisor thread reconnects with a bounded back-off, over every
  host of a failover list, with the same client ID, and re-subscribes every open consumer. Work that the
  loss made uncertain is not hidden: open transactions fail on commit with
  TransactionRolledBackException, unacknowledged messages come back from the broker flagged redelivered.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from jmslike.config import ConnectionConfig, parse_url
from jmslike.connection_listener import ConnectionListener, check_connection_listener
from jmslike.constants import AcknowledgeMode
from jmslike.context import JMSContext, SharedConnection, unchecked
from jmslike.contract import Adapter, SilentConnectRefusal, Wire
from jmslike.delivery_delay import DelayCheck
from jmslike.destinations import Destination, TemporaryQueue, TemporaryTopic
from jmslike.domain_methods import ConnectionDomainMethods

# MAX_QUEUED_EVENTS was defined here until 2026-11-28: still importable from here.
from jmslike.error_reports import MAX_QUEUED_EVENTS as MAX_QUEUED_EVENTS
from jmslike.error_reports import ReportBacklog
from jmslike.exceptions import (
    ConnectionLostException,
    IllegalStateException,
    InvalidClientIDException,
    JMSException,
)
from jmslike.failover import open_first
from jmslike.flow import BufferGauge
from jmslike.registry import adapter_names, load_adapter
from jmslike.serializers import SerializerRegistry
from jmslike.session import Session
from jmslike.session_engine import SessionEngine
from jmslike.session_mode import check_session_mode, session_mode
from jmslike.subscription_plans import open_durable_names, open_shared_durable_names
from jmslike.temporary import TemporaryDestinations
from jmslike.wire_events import WireEventRouter

if TYPE_CHECKING:
    from jmslike.consumer import MessageConsumer

log = logging.getLogger(__name__)

ExceptionListener = Callable[[JMSException], None]

#: setClientID while a reconnect outlasts the wait for it (both APIs): its supervisor would replace the new wire.
RECONNECTING_CLIENT_ID = (
    "the connection is reconnecting to its broker: set the client ID once it is back (or on a new connection)"
)


def warn_not_started(call: str, connection_id: str) -> None:
    """The hint both APIs log once per connection when a receive waits on a connection not started."""
    log.warning(
        "%s waits: connection %s is not started, so nothing is delivered until connection.start() is "
        "called (JMS 1.1 §4.3.3)",
        call,
        connection_id,
    )


class ConnectionMetaData:
    """``javax.jms.ConnectionMetaData``: what is known about the provider and the broker."""

    def __init__(self, adapter: Adapter, server: str, stomp_version: str) -> None:
        self._adapter = adapter
        self._server = server
        self._stomp_version = stomp_version

    def getJMSVersion(self) -> str:
        """2.0: the JMS 2.0 API is here (docs/jms2.md lists what a broker refuses)."""
        return "2.0"

    def getJMSMajorVersion(self) -> int:
        return 2

    def getJMSMinorVersion(self) -> int:
        return 0

    def getJMSProviderName(self) -> str:
        return f"jmslike ({self._adapter.display_name})"

    def getProviderVersion(self) -> str:
        from importlib.metadata import version

        return version("jmslike")

    def getJMSXPropertyNames(self) -> list[str]:
        return ["JMSXDeliveryCount"]

    def getBrokerServer(self) -> str:
        """The broker's CONNECTED ``server`` header (e.g. ``ActiveMQ/5.17.2``)."""
        return self._server

    def getStompVersion(self) -> str:
        return self._stomp_version


class ConnectionFactory:
    """``ConnectionFactory(url)``; the URL scheme picks the broker adapter.

    ``clientID`` is a Pythonic extra (as ActiveMQConnectionFactory.setClientID): connections are then
    created with that client ID directly.
    """

    def __init__(
        self,
        url: str,
        *,
        clientID: str | None = None,
        serializers: SerializerRegistry | None = None,
    ) -> None:
        self._config = parse_url(url, known_schemes=adapter_names())
        load_adapter(self._config.scheme)  # fail now, not at createConnection, if the adapter is broken
        self._client_id = clientID
        self._serializers = serializers or SerializerRegistry()

    @property
    def config(self) -> ConnectionConfig:
        return self._config

    def createConnection(self, userName: str | None = None, password: str | None = None) -> Connection:
        """A new Connection with these credentials (the URL's when None)."""
        config = self._config.with_credentials(userName, password)
        connection = Connection(config, load_adapter(config.scheme), self._serializers)
        if self._client_id is not None:
            try:
                connection.setClientID(self._client_id)
            except BaseException:
                connection.close()
                raise
        return connection

    @unchecked
    def createContext(self, *args: Any, **kwargs: Any) -> JMSContext:
        """JMS 2.0: ``createContext()``, ``createContext(sessionMode)``, ``createContext(userName, password)``
        or ``createContext(userName, password, sessionMode)``: a JMSContext on a new connection. Raises, as
        every simplified-API call does, the JMSRuntimeException forms (a refused login:
        JMSSecurityRuntimeException)."""
        user, password, mode = context_arguments(args, kwargs)
        connection = self.createConnection(user, password)
        try:
            return JMSContext(SharedConnection(connection), mode)
        except BaseException:
            connection.close()
            raise

    def __repr__(self) -> str:
        return f"ConnectionFactory({self._config.describe()!r})"


class Connection(ConnectionDomainMethods):
    """``javax.jms.Connection`` over one STOMP connection (plus a supervisor when reconnecting)."""

    _ids = itertools.count(1)

    def __init__(self, config: ConnectionConfig, adapter: Adapter, serializers: SerializerRegistry) -> None:
        self._config = config
        self.adapter = adapter
        self.serializers = serializers
        self.connection_id = f"jmslike-{uuid.uuid4().hex[:12]}"
        self._lock = threading.RLock()
        self._client_id: str | None = None
        self._client_id_locked = False
        self._started = threading.Event()
        self._stopped_hint_given = False
        self._closed = False
        self._failed: ConnectionLostException | None = None
        self._ready = threading.Event()  # set while a usable wire exists
        self._sessions: list[Session] = []
        self._consumers: dict[str, MessageConsumer] = {}
        self._sub_ids = itertools.count(1)
        self._temporary = TemporaryDestinations()
        self._exception_listener: ExceptionListener | None = None
        self._connection_listener: ConnectionListener | None = None
        #: Calls for the listeners, run in order on the event thread: (call, whose, for log lines).
        self._events: queue.SimpleQueue[tuple[Callable[[], None], str] | None] = queue.SimpleQueue()
        self._reports = ReportBacklog()  # reports queued or running, bounded (jmslike.error_reports)
        self._event_thread: threading.Thread | None = None
        self._generation = 0
        self._supervising = False
        self._server = ""
        self.delay_check = DelayCheck()  # JMS 2.0 delivery delay honoured by the broker? (found once)
        #: What the consumers hold undelivered, in bytes: the wire stops reading past it (jmslike.flow).
        self.buffer = BufferGauge(self._config.buffer_bytes if adapter.capabilities.byte_bound else 0)
        self.wire: Wire = self._open_wire(None)
        self._ready.set()

    # -- wire management ------------------------------------------------------------------------------

    def _open_wire(self, client_id: str | None) -> Wire:
        """Open a STOMP connection, trying each host of the list once, in order."""
        return open_first(
            self._config.hosts,
            lambda host: self._open_host(host, client_id),
            f"no broker of {self._config.describe()} could be reached",
        )

    def _open_host(self, host: tuple[str, int], client_id: str | None, *, ask_again: bool = True) -> Wire:
        """CONNECT to one host, through the adapter. A broker that closes the socket without an ERROR frame
        is asked once more, as the ERROR with its reason may have raced the close (SilentConnectRefusal); the
        answer says why."""
        events = WireEventRouter(self)
        try:
            wire, connected = self.adapter.open_wire(self._config, host, client_id, events)
        except SilentConnectRefusal:
            if not ask_again:
                raise
            log.info(
                "broker at %s:%d closed the connection during CONNECT without a reason; asking again", *host
            )
            return self._open_host(host, client_id, ask_again=False)
        events.wire = wire
        self._server = connected.get("server", "")
        return wire

    def owns(self, wire: object) -> bool:
        """Whether ``wire`` is this connection's current wire (not a client-ID claim, not one replaced)."""
        return getattr(self, "wire", None) is wire  # None while the first wire is being opened

    def awaiting_answers(self) -> AbstractContextManager[None]:
        """Around a session's wait for answers its wire cannot see (Wire.awaiting_answers): a full send window,
        sends draining at commit or close. During a reconnect the lost wire's: its sends are settled with the loss,
        which ends the wait, and the next one enters the new wire's."""
        wire: Wire | None = getattr(self, "wire", None)
        return wire.awaiting_answers() if wire is not None else contextlib.nullcontext()

    def wire_for_use(self) -> Wire:
        """The current wire; while a reconnect is under way, wait for it (bounded) rather than fail."""
        self.check_open()
        if self._ready.is_set():
            return self.wire
        if self._config.reconnect and self._ready.wait(self._config.receipt_timeout_ms / 1000):
            return self.wire
        self.check_open()
        raise self._failed or ConnectionLostException("the connection to the broker is lost")

    @property
    def generation(self) -> int:
        """Incremented on every reconnect; lets sessions tell pre-loss deliveries from new ones."""
        return self._generation

    # -- JMS API --------------------------------------------------------------------------------------

    def getClientID(self) -> str | None:
        """The client ID, or None when none was set; IllegalStateException once closed (JMS: a closed
        connection is not to be used; Qpid JMS checks here too)."""
        self.check_open()
        return self._client_id

    def setClientID(self, clientID: str) -> None:
        """Set the client ID; only right after the connection was created (JMS 1.1 §4.3.2). A reconnect under way
        is waited for (up to the receipt timeout): its supervisor would replace the wire this opens."""
        self._check_client_id_claim(clientID)
        if self._config.reconnect and not self._ready.is_set():
            self._ready.wait(self._config.receipt_timeout_ms / 1000)
        with self._lock:
            self._check_client_id_claim(clientID)  # again: the wait let other calls in
            # Not ready: the reconnect outlasted the wait (once ready, no supervisor replaces the wire).
            if not self._ready.is_set():
                raise IllegalStateException(RECONNECTING_CLIENT_ID)
            new_wire = self._open_wire(clientID)  # raises InvalidClientIDException if the broker refuses
            if not new_wire.is_open:  # lost as it opened: its router ignored that (the wire was not ours yet)
                new_wire.close(timeout_s=1.0)
                raise ConnectionLostException(
                    f"the connection that claimed client ID {clientID!r} was lost at once"
                )
            old_wire, self.wire = self.wire, new_wire
            self._client_id = clientID
            self._client_id_locked = True
        old_wire.close(timeout_s=2.0)

    def _check_client_id_claim(self, client_id: str) -> None:
        self.check_open()
        check_client_id_settable(self._client_id, self._client_id_locked)
        check_client_id(client_id)
        if self._failed is not None:
            raise self._failed

    def _lock_client_id(self) -> None:
        self._client_id_locked = True

    def start(self) -> None:
        """Start (or restart) delivery of messages to this connection's consumers."""
        with self._lock:
            self.check_open()
            self._lock_client_id()
            self._started.set()
        for session in list(self._sessions):
            session.wake_waiters()

    def stop(self) -> None:
        """Pause delivery; returns once no listener of this connection is running (JMS 1.1 §4.3.4)."""
        if self.on_dispatch_thread():
            raise IllegalStateException(
                "stop() may not be called from a message listener of this connection (it would wait for "
                "itself); call it from another thread"
            )
        with self._lock:
            self.check_open()
            self._lock_client_id()
            self._started.clear()
        for session in list(self._sessions):
            session.wait_idle()

    def on_dispatch_thread(self) -> bool:
        """Whether the caller is the listener / callback thread of one of this connection's sessions."""
        return any(session.on_dispatch_thread() for session in list(self._sessions))

    @property
    def started(self) -> bool:
        return self._started.is_set()

    def hint_if_stopped(self, call: str) -> None:
        """Log once per connection why a receive waits (JMS: delivery starts with ``start()``): a new user's
        first script otherwise just hangs there without a word."""
        if self._started.is_set() or self._stopped_hint_given:
            return
        self._stopped_hint_given = True
        warn_not_started(call, self.connection_id)

    def wait_started(self, timeout_s: float | None) -> bool:
        return self._started.wait(timeout_s)

    def createSession(self, *args: Any, **kwargs: Any) -> Session:
        """JMS 2.0's three forms: ``createSession()`` (AUTO_ACKNOWLEDGE), ``createSession(sessionMode)`` and
        ``createSession(transacted, acknowledgeMode)``; a ``transacted`` that is not a bool is refused
        (see jmslike.session_mode: an int there would otherwise silently mean "transacted")."""
        mode = session_mode(*args, **kwargs)
        with self._lock:
            self.check_open()
            self._lock_client_id()
            session = Session(self, mode)
            self._sessions.append(session)
            return session

    def setExceptionListener(self, listener: ExceptionListener | None) -> None:
        """Called on a connection thread with asynchronous errors (a lost connection, a listener that raised)."""
        self.check_open()
        self._exception_listener = listener

    def getExceptionListener(self) -> ExceptionListener | None:
        """The listener of asynchronous errors, or None; IllegalStateException once closed."""
        self.check_open()
        return self._exception_listener

    def setConnectionListener(self, listener: ConnectionListener | None) -> None:
        """jmslike extra (Qpid JMS's ``JmsConnectionListener``): told when a ``reconnect=true`` connection loses
        its broker and when it is back, on the ExceptionListener's thread (:mod:`jmslike.connection_listener`)."""
        self.check_open()
        check_connection_listener(listener, coroutines=False)
        self._connection_listener = listener

    def getConnectionListener(self) -> ConnectionListener | None:
        """The listener of interruptions and restorations, or None; IllegalStateException once closed."""
        self.check_open()
        return self._connection_listener

    def getMetaData(self) -> ConnectionMetaData:
        """What is known about the provider and the broker (CONNECTED ``server``)."""
        self.check_open()
        return ConnectionMetaData(self.adapter, self._server, self.adapter.stomp_version)

    def close(self) -> None:
        """Close sessions (rolling back transactions), then the STOMP connection. Idempotent. Refused from a
        listener or completion callback of this connection (JMS 2.0 §6.1.8: it would wait for itself)."""
        if not self._closed and self.on_dispatch_thread():
            raise IllegalStateException(
                "a MessageListener or CompletionListener may not close its own connection (close waits for "
                "them to return); close it from another thread"
            )
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._started.clear()
        for session in list(self._sessions):
            try:
                session.close()
            except JMSException:
                log.debug("session close failed during connection close", exc_info=True)
        self.wire.close()
        self._ready.clear()
        if self._event_thread is not None:
            self._events.put(None)

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("started" if self.started else "stopped")
        return f"<Connection {self._config.describe()} clientID={self._client_id!r} {state}>"

    # -- for sessions and consumers -------------------------------------------------------------------

    @property
    def config(self) -> ConnectionConfig:
        return self._config

    @property
    def closed(self) -> bool:
        return self._closed

    def check_open(self) -> None:
        if self._closed:
            raise IllegalStateException("the connection is closed")

    def open_private(self) -> Connection:
        """A new connection to the same broker with the same credentials, without client ID, for jmslike's
        own checks (delivery_delay): it never shares state with this one."""
        return private_connection(self._config, self.serializers)

    def next_sub_id(self) -> str:
        return f"{self.connection_id}-{next(self._sub_ids)}"

    def register_consumer(self, consumer: MessageConsumer) -> None:
        self._consumers[consumer.spec.sub_id] = consumer

    def unregister_consumer(self, consumer: MessageConsumer) -> None:
        self.unregister_consumer_id(consumer.spec.sub_id)

    def subscriber_for(self, sub_id: str) -> MessageConsumer | None:
        """Who a MESSAGE with this subscription ID goes to (None: it detached)."""
        return self._consumers.get(sub_id)

    @property
    def failure(self) -> ConnectionLostException | None:
        """Why the connection is lost for good (no reconnect, or attempts used up); None while usable."""
        return self._failed

    def unregister_consumer_id(self, sub_id: str) -> None:
        self._consumers.pop(sub_id, None)

    def active_durable_names(self) -> set[str]:
        return open_durable_names(self._consumers.values())

    def active_shared_durable_names(self) -> set[str]:
        """Names of the shared durable subscriptions this connection has open consumers on."""
        return open_shared_durable_names(self._consumers.values())

    def remove_session(self, session: SessionEngine) -> None:
        """A session closed (called by its engine, hence the base type)."""
        with self._lock:
            self._sessions = [kept for kept in self._sessions if kept is not session]

    def sessions(self) -> list[Session]:
        return list(self._sessions)

    @property
    def temporaries(self) -> TemporaryDestinations:
        """The temporary destinations this connection created (jmslike.temporary)."""
        return self._temporary

    def new_temporary(self, kind: type[TemporaryQueue] | type[TemporaryTopic]) -> Destination:
        return self._temporary.new(kind)

    def owns_temporary(self, destination: Destination) -> bool:
        return self._temporary.owns(destination)

    def check_temporary_use(self, destination: Destination) -> None:
        """A temporary destination of another connection may be used only in the broker's form (temporary.py)."""
        self._temporary.check_use(destination, self.adapter)

    def report(self, error: JMSException) -> None:
        """Hand an asynchronous error to the ExceptionListener, on the event thread; how many may wait for a slow
        listener is :class:`~jmslike.error_reports.ReportBacklog`'s rule."""
        listener = self._exception_listener
        if listener is None:
            log.warning("asynchronous JMS error with no ExceptionListener set: %s", error)
            return
        with self._lock:
            admitted = self._reports.admit(error)
            dropped = self._reports.dropped
        if not admitted:
            self._reports.log_dropped(dropped, error)
            return

        def deliver() -> None:
            try:
                listener(error)
            finally:
                with self._lock:
                    self._reports.done()

        try:
            self._run_event(deliver, "ExceptionListener")
        except RuntimeError:  # no thread can start (the interpreter is ending): it will never run
            with self._lock:
                self._reports.done()
            raise

    def _tell_connection_listener(self, call: Callable[[ConnectionListener], None]) -> None:
        """Queue ``call`` for the ConnectionListener, behind the reports already queued (never dropped: there
        is one per loss and one per reconnect)."""
        listener = self._connection_listener
        if listener is None:
            return
        try:
            self._run_event(lambda: call(listener), "ConnectionListener")
        except RuntimeError as exc:  # no thread can start: the loss and the reconnect go on without it
            log.warning("the ConnectionListener could not be told (%s)", exc)

    def _run_event(self, task: Callable[[], None], whose: str) -> None:
        with self._lock:
            if self._event_thread is None:
                thread = threading.Thread(
                    target=self._event_loop, name=f"jmslike-events-{self.connection_id}", daemon=True
                )
                thread.start()  # may raise (the interpreter is ending): then none is recorded, and the next tries
                self._event_thread = thread
        self._events.put((task, whose))

    def _event_loop(self) -> None:
        while True:
            event = self._events.get()
            if event is None:
                return
            task, whose = event
            try:
                task()
            except BaseException:  # sys.exit() too: escaping, it ended this thread and every later report
                log.exception("%s raised", whose)

    # -- recovery -------------------------------------------------------------------------------------

    def on_lost(self, error: ConnectionLostException, wire: object | None = None) -> None:
        """``wire`` was lost (the router, on its receiver thread, or the supervisor saw it was ours): record the
        loss, wake waiters, start the supervisor; nothing if ``wire`` is no longer this connection's."""
        # Under the lock, which the restoration is told under too: the listener hears them in the order they were.
        with self._lock:
            if self._closed or (wire is not None and not self.owns(wire)):
                return  # closed meanwhile, or setClientID replaced the wire since the router looked
            in_use = self._ready.is_set()
            self._ready.clear()
            if in_use and self._config.reconnect:  # once per wire lost (not again for one never in use)
                self._tell_connection_listener(lambda listener: listener.onConnectionInterrupted(error))
        if not self._config.reconnect:
            self._failed = error  # before waking receivers, so they raise instead of waiting on
        for session in list(self._sessions):
            session.on_connection_lost()
        if self._config.reconnect:
            with self._lock:
                if self._supervising:
                    return  # the running supervisor's attempt fails and it tries again
                self._supervising = True
            threading.Thread(
                target=self._supervise, args=(error,), name="jmslike-reconnect", daemon=True
            ).start()
        else:
            self.report(error)

    def _supervise(self, error: ConnectionLostException) -> None:
        """The one reconnect supervisor (see on_lost): bounded exponential back-off, or give up."""
        try:
            self._reconnect(error)
        finally:
            with self._lock:
                self._supervising = False
                lost = self.wire
                lost_again = not self._closed and self._failed is None and not lost.is_open
        if lost_again:  # lost between installing the new wire and here: on_lost saw a supervisor running
            self.on_lost(
                ConnectionLostException("the connection was lost again right after reconnecting"), lost
            )

    def _reconnect(self, error: ConnectionLostException) -> None:
        delay = self._config.reconnect_delay_ms / 1000
        for attempt in range(1, self._config.reconnect_attempts + 1):
            if self._closed:
                return
            wire: Wire | None = None
            try:
                wire = self._open_wire(self._client_id)
                # Re-subscribe on the new wire before it becomes the connection's: no lock is held across
                # receipts, and a failed attempt leaves no half-subscribed wire in use.
                subscribed = []
                for consumer in list(self._consumers.values()):
                    if not consumer.closed:
                        self.adapter.subscribe(wire, consumer.spec)
                        subscribed.append(consumer)
                for consumer in subscribed:  # closed meanwhile: its detach found no wire to unsubscribe on
                    if consumer.closed and self.subscriber_for(consumer.spec.sub_id) is not consumer:
                        self.adapter.detach(wire, consumer.spec, list)
                with self._lock:
                    if self._closed:  # closed meanwhile: this wire must not outlive the connection
                        wire.close(timeout_s=1.0)
                        return
                    if not wire.is_open:  # lost after its last receipt: the router ignored it, not ours yet
                        raise ConnectionLostException("the new connection was lost while re-subscribing")
                    self.wire = wire
                    self._generation += 1
                    self._ready.set()
                    reached = self._config.describe([wire.host])
                    # B023: the loop returns right after, so `reached` is this attempt's
                    self._tell_connection_listener(lambda listener: listener.onConnectionRestored(reached))  # noqa: B023
                log.info("reconnected to %s after %d attempt(s)", reached, attempt)
                for session in list(self._sessions):
                    session.wake_waiters()
                return
            except Exception as exc:  # an adapter's own failure too: the supervisor must not die of it
                log.info("reconnect attempt %d failed: %s", attempt, exc)
                if wire is not None:
                    wire.close(timeout_s=1.0)
                    for session in list(self._sessions):
                        session.on_connection_lost()  # what that wire delivered cannot be acked now
                deadline = time.monotonic() + delay
                while time.monotonic() < deadline and not self._closed:
                    threading.Event().wait(min(0.05, delay))
                delay = min(delay * 2, self._config.reconnect_max_delay_ms / 1000)
        self._failed = ConnectionLostException(
            f"gave up reconnecting to {self._config.describe()} after {self._config.reconnect_attempts} attempts"
        )
        self._failed.__cause__ = error
        for session in list(self._sessions):
            session.wake_waiters()
        self.report(self._failed)


def context_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str | None, str | None, int]:
    """``createContext``'s forms, read: (userName, password, sessionMode)."""
    unknown = set(kwargs) - {"userName", "password", "sessionMode"}
    if unknown or len(args) > 3:
        raise JMSException(
            "createContext takes (), (sessionMode), (userName, password) or (userName, password, sessionMode)"
        )
    if len(args) == 1:
        given = {"sessionMode": args[0]}
    else:
        given = dict(zip(("userName", "password", "sessionMode"), args, strict=False))
    for name, value in kwargs.items():
        if name in given:
            raise JMSException(f"createContext() got {name} twice (by position and by keyword)")
        given[name] = value
    mode = check_session_mode(given.get("sessionMode", AcknowledgeMode.AUTO_ACKNOWLEDGE))
    return given.get("userName"), given.get("password"), mode


def check_client_id_settable(current: str | None, locked: bool) -> None:
    """JMS 1.1 §4.3.2: a client ID is set once, right after the connection is created, before any other call."""
    if current is not None:
        raise IllegalStateException(
            f"client ID is already set to {current!r}; it can be set only once per connection"
        )
    if locked:
        raise IllegalStateException(
            "setClientID must be called right after the connection is created, before any other "
            "call on it (JMS 1.1 §4.3.2); create a new connection and set the ID first"
        )


def private_connection(config: ConnectionConfig, serializers: SerializerRegistry) -> Connection:
    """A new threaded connection from ``config`` (its credentials, no client ID), for jmslike's own checks;
    ``jmslike.aio`` opens it in a worker thread."""
    return Connection(config, load_adapter(config.scheme), serializers)


def check_client_id(client_id: Any) -> None:
    if not isinstance(client_id, str) or not client_id.strip():
        raise InvalidClientIDException(f"client ID must be a non-empty string, got {client_id!r}")
    if any(ord(ch) < 32 or ch == "\x7f" for ch in client_id):
        raise InvalidClientIDException(f"client ID {client_id!r} contains control characters")
    if len(client_id) > 256:
        raise InvalidClientIDException("client ID is longer than 256 characters")

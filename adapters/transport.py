"""The threaded STOMP wire: JMS's receipts, errors and connection loss on one STOMP connection.

The socket, its threads and the protocol are :mod:`~jmslike.adapters.stomp_socket`'s (the threaded driver of
the sans-IO :mod:`~jmslike.adapters.stomp_core`). What this module adds is what JMS needs and STOMP leaves
to clients:

- every frame that must be confirmed carries a receipt, and the caller waits on that receipt with a
  deadline; an ERROR frame answering the receipt fails exactly that call (errors are matched to the
  frame that caused them, on the thread that sent it);
- the reader thread never runs user code: it hands MESSAGE frames to a sink, resolves receipts, and
  reports a lost connection once;
- a connection lost while calls wait for receipts fails those calls at once instead of letting them
  run into their timeouts;
- a malformed or oversized frame (the bounded decoder, :mod:`~jmslike.adapters.stomp_reader`) drops the
  connection and the reason reaches the application (``ConnectionLostException`` whose message says what
  the peer sent);
- TLS: one ``ssl.SSLContext`` that verifies the broker's certificate against ``ssl_ca_file`` (or the system
  CAs) and its host name (unless ``ssl_check_hostname=false``), an optional client certificate, and a
  failed handshake is a ``JMSSecurityException`` at once -- there is no retry and never a fall-back to
  plain TCP;
- RabbitMQ's ERROR frames that answer no receipt (a refused SEND or SUBSCRIBE, then the connection closes)
  are attributed to the frame that caused them.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Mapping

from jmslike.adapters.stomp_core import (
    Connected,
    ConnectRefused,
    ErrorReceived,
    Event,
    MessageReceived,
    Receipt,
    ReceiptReceived,
    Version,
)
from jmslike.adapters.stomp_socket import (
    DriverSettings,
    SocketClosed,
    SocketConnectError,
    StompSocket,
    TLSConnectError,
    WriteStalled,
)
from jmslike.config import ConnectionConfig
from jmslike.contract import Frame, SilentConnectRefusal, WireEvents
from jmslike.exceptions import (
    ConnectionLostException,
    JMSException,
    JMSSecurityException,
    JMSTimeoutException,
)

log = logging.getLogger(__name__)

ErrorMapper = Callable[[str, "Frame | None"], type[JMSException]]

#: How long receipts are held after an ERROR frame that answered no receipt (see StompWire.handle_receipt).
_HOLD_AFTER_ERROR_S = 0.5


class Done:
    """A one-shot signal: ``set()`` once, ``wait()`` from any number of threads.

    What ``threading.Event`` offers for a receipt, at a fraction of its cost: an Event builds a Condition
    and every ``wait`` allocates and takes a lock of its own, on every synchronous send (measured in
    docs/performance.md). Here a lock held from birth is released by ``set``; a waiter takes it and passes
    it on at once. ``set`` is called by whoever removed the receipt from the pending table, so at most one
    thread sets a given signal; a second ``set`` from that thread is ignored.
    """

    __slots__ = ("_flag", "_lock")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._flag = False

    def set(self) -> None:
        if not self._flag:
            self._flag = True
            self._lock.release()

    def is_set(self) -> bool:
        return self._flag

    def wait(self, timeout: float | None = None) -> bool:
        """True once set; False if ``timeout`` seconds pass first."""
        if self._flag:
            return True
        if not self._lock.acquire(timeout=-1 if timeout is None else max(0.0, timeout)):
            return False
        self._lock.release()
        return True


class _Pending:
    """One frame waiting for its receipt."""

    __slots__ = ("callback", "done", "error", "frame")

    def __init__(self, frame: Frame, callback: Callable[[JMSException | None], None] | None) -> None:
        self.frame = frame
        self.done = Done()
        self.error: JMSException | None = None
        self.callback = callback

    def wait(self, timeout_s: float) -> bool:
        return self.done.wait(timeout_s)

    def finish(self, error: JMSException | None) -> None:
        self.error = error
        self.done.set()
        if self.callback is not None:
            self.callback(error)


class StompWire:
    """One STOMP connection to one broker host. Not reconnecting: recovery lives a layer above."""

    _ids = itertools.count(1)

    def __init__(
        self,
        config: ConnectionConfig,
        host: tuple[str, int],
        stomp_version: Version,
        events: WireEvents,
        error_for: ErrorMapper,
        default_vhost: str | None = None,
        quick_ack: bool = False,
    ) -> None:
        self._config = config
        self._host = host
        self._events = events
        self._error_for = error_for
        self._vhost = config.vhost or default_vhost or host[0]
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()
        self._connected = threading.Event()
        self._connect_error: str | None = None
        self._closed_silently = False  # closed by the broker during CONNECT, no ERROR frame
        self._connected_headers: dict[str, str] = {}
        self._closing = False
        self._lost = False
        # An ERROR frame that answers no receipt; RabbitMQ sends those for refused frames, then closes.
        self._unmatched_error: str | None = None
        self._held: list[_Pending] = []
        self._hold_until = 0.0
        self._hold_timer: threading.Timer | None = None
        self._socket = StompSocket(
            DriverSettings.from_config(config, host, stomp_version, f"r{next(self._ids)}-"),
            on_event=self._on_event,
            on_closed=self.handle_disconnected,
            quick_ack=quick_ack,
        )

    # -- connection lifecycle -------------------------------------------------------------------------

    def open(self, headers: Mapping[str, str]) -> dict[str, str]:
        """Connect and wait for CONNECTED; return its headers. Errors are mapped, never hang."""
        creds = self._config.credentials
        where = f"{self._host[0]}:{self._host[1]}"
        connect_headers = dict(headers)
        if creds.user is not None:
            connect_headers["login"] = creds.user
        if creds.password is not None:
            connect_headers["passcode"] = creds.password
        try:
            self._socket.connect(self._vhost, connect_headers)
        except ValueError as exc:  # a header value with a line break: STOMP cannot carry it, nothing was sent
            raise JMSException(f"cannot connect to {where}: {exc}") from None
        except TLSConnectError as exc:
            raise JMSSecurityException(
                f"TLS handshake with {where} failed: {exc.cause}; check ssl_ca_file (the CA that signed "
                "the broker's certificate) and that the URL's host name is in that certificate"
            ) from exc.cause
        except SocketConnectError as exc:
            raise ConnectionLostException(
                f"cannot reach broker at {where} ({self._config.scheme}): {exc.cause}; "
                "check that the broker runs and the port is its STOMP port"
            ) from exc.cause
        except (SocketClosed, WriteStalled) as exc:
            self._abandon()
            if self._socket.tls_error is not None:
                raise self._tls_session_error(where) from exc
            raise ConnectionLostException(f"cannot reach broker at {where}: {exc}") from exc
        deadline = self._config.connect_timeout_ms / 1000
        if not self._connected.wait(deadline):
            self._abandon()
            raise JMSTimeoutException(f"broker at {where} did not answer CONNECT within {deadline:.1f}s")
        if self._socket.tls_error is not None and self._connected_headers == {}:
            self._abandon()
            raise self._tls_session_error(where)
        if self._connect_error is not None:
            self._abandon()
            if self._closed_silently:
                raise SilentConnectRefusal(
                    f"broker at {where} closed the connection during CONNECT without saying why; check the "
                    "credentials, the client ID and the broker's log"
                )
            error_class = self._error_for(self._connect_error, None)
            raise error_class(f"broker at {where} refused the connection: {self._connect_error}")
        return self._connected_headers

    def _tls_session_error(self, where: str) -> JMSSecurityException:
        return JMSSecurityException(
            f"TLS session with {where} failed during CONNECT: {self._socket.tls_error}; if the broker requires "
            "a client certificate, give one signed by a CA it trusts (ssl_cert_file, ssl_key_file)"
        )

    def _abandon(self) -> None:
        self._closing = True
        self._socket.abort()

    def close(self, timeout_s: float = 5.0) -> None:
        """Graceful DISCONNECT (with receipt, so every frame before it has reached the broker), then drop the
        socket."""
        if self._closing:
            return
        self._closing = True
        if self._lost:
            self._fail_all(ConnectionLostException("connection closed"))
            return
        try:
            self._socket.disconnect(timeout_s)
        finally:
            self._fail_all(ConnectionLostException("connection closed"))

    def kill_socket(self) -> None:
        """Drop the TCP connection without DISCONNECT (tests of recovery, failover)."""
        self._socket.abort()

    @property
    def host(self) -> tuple[str, int]:
        """The broker host and port this wire is connected to."""
        return self._host

    @property
    def is_open(self) -> bool:
        return self._connected.is_set() and not self._lost and not self._closing

    # -- frames ---------------------------------------------------------------------------------------

    def _prepare(self, frame: Frame) -> Frame:
        """The frame as it goes out (a subclass may adjust how it is encoded)."""
        return frame

    def _write(self, frame: Frame, pending: _Pending | None, recorded: list[str] | None = None) -> None:
        """Hand ``frame`` to the socket, recording ``pending`` under its receipt (and the receipt in
        ``recorded``) before any byte is written."""

        def record(receipt: Receipt) -> None:
            if pending is not None:
                with self._lock:
                    self._pending[receipt.receipt_id] = pending
                if recorded is not None:
                    recorded.append(receipt.receipt_id)

        try:
            self._socket.send(self._prepare(frame), receipt=pending is not None, on_sent=record)
        except WriteStalled as exc:
            # Part of the frame may be on the wire, so the stream is unusable: drop it; every waiter hears why.
            reason = (
                f"could not write {frame.command} within {self._config.receipt_timeout_ms / 1000:.1f}s "
                "(receipt_timeout_ms): the broker stopped reading or is unreachable"
            )
            self._socket.abort(reason)
            raise ConnectionLostException(f"jmslike dropped the connection: {reason}") from exc
        except SocketClosed as exc:
            self._socket.abort()  # the reader may not have noticed yet (TLS): it reports the loss
            raise ConnectionLostException(f"connection lost while sending {frame.command}") from exc

    def _check_usable(self, frame: Frame) -> None:
        if self._lost or self._closing:
            raise ConnectionLostException(f"cannot send {frame.command}: the connection is closed or lost")

    def request(self, frame: Frame, timeout_s: float | None = None) -> None:
        """Send ``frame`` with a receipt and wait; raise the mapped exception on ERROR or timeout."""
        sock = self._socket
        sock.quick_ack_begin()
        try:
            pending = self.submit(frame, None)
            timeout = self._config.receipt_timeout_ms / 1000 if timeout_s is None else timeout_s
            if not pending.done.wait(timeout):
                raise JMSTimeoutException(f"no receipt for {frame.command} within {timeout:.1f}s")
        finally:
            sock.quick_ack_end()
        if pending.error is not None:
            raise pending.error

    def submit(self, frame: Frame, callback: Callable[[JMSException | None], None] | None) -> _Pending:
        """Send with a receipt, return at once; ``callback`` runs on the reader thread when answered.

        Exactly one outcome: either this raises and ``callback`` never runs, or it returns and ``callback``
        runs once. A write that fails because the connection just died races the end of the connection,
        which fails every pending receipt (``_fail_all``): if that took this one first, its ``callback``
        reports the loss and this returns normally (raising too would settle the send twice)."""
        self._check_usable(frame)
        pending = _Pending(frame, callback)
        recorded: list[str] = []
        try:
            self._write(frame, pending, recorded)
        except JMSException:
            if not recorded:
                raise  # never recorded: nothing else can answer it
            with self._lock:
                still_ours = self._pending.pop(recorded[0], None) is not None
            if still_ours:
                raise
            # The end of the connection took it first (_fail_all): its callback reports the loss.
        return pending

    def post(self, frame: Frame) -> None:
        """Send without a receipt."""
        self._check_usable(frame)
        self._write(frame, None)

    # -- called on the reader thread --------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        """One protocol event; MESSAGE first, it is the hot path."""
        if isinstance(event, MessageReceived):
            self._events.on_message(event.frame)
        elif isinstance(event, ReceiptReceived):
            self.handle_receipt(event.receipt.receipt_id)
        elif isinstance(event, ErrorReceived):
            self.handle_error(event)
        elif isinstance(event, Connected):
            self._connected_headers = dict(event.headers)
            self._connected.set()
        elif isinstance(event, ConnectRefused):
            self._closed_silently = event.silent
            self._connect_error = event.text
            self._connected.set()
        # UnknownReceipt: answered twice or never asked; nothing waits for it.

    def handle_receipt(self, receipt: str) -> None:
        with self._lock:
            pending = self._pending.pop(receipt, None)
            if pending is not None and self._unmatched_error is not None and not self._lost:
                # RabbitMQ answers a refused SUBSCRIBE with an ERROR without receipt-id, then the
                # receipt, then closes the connection: hold receipts briefly after such an ERROR, so
                # the refused call gets the error instead of a success on a connection about to die.
                self._held.append(pending)
                return
        if pending is not None:
            pending.finish(None)

    def _hold_receipts(self, error: str) -> None:
        """Hold receipts for :data:`_HOLD_AFTER_ERROR_S` after the latest unmatched ERROR. One timer per wire,
        re-armed from the deadline, however many ERROR frames arrive: a flood of them creates no threads."""
        with self._lock:
            self._unmatched_error = error
            self._hold_until = time.monotonic() + _HOLD_AFTER_ERROR_S
            if self._hold_timer is not None:
                return
            timer = self._hold_timer = threading.Timer(_HOLD_AFTER_ERROR_S, self._release_held)
        timer.daemon = True
        timer.start()

    def _release_held(self) -> None:
        """The connection survived the unmatched ERROR (ActiveMQ keeps it): the held receipts stand, and
        a later loss of the connection is not blamed on that ERROR. A later ERROR moved the deadline: wait on."""
        with self._lock:
            remaining = self._hold_until - time.monotonic()
            if remaining > 0 and not self._lost:
                timer = self._hold_timer = threading.Timer(remaining, self._release_held)
                timer.daemon = True
                timer.start()
                return
            self._hold_timer = None
            held, self._held = self._held, []
            self._unmatched_error = None
        for pending in held:
            pending.finish(None)

    def handle_error(self, event: ErrorReceived) -> None:
        text = event.text
        pending = None
        if event.refused is not None:
            with self._lock:
                pending = self._pending.pop(event.refused.receipt_id, None)
        if pending is None:
            self._hold_receipts(text)
        source = pending.frame if pending is not None else None
        error_class = self._error_for(text, source)
        what = f"{source.command} " if source is not None else ""
        error = error_class(f"broker refused {what}frame: {text}")
        if pending is not None:
            pending.finish(error)
        else:
            self._events.on_error(error)

    def handle_disconnected(self, reason: str | None, unanswered: list[Receipt]) -> None:
        """The connection ended (once): ``reason`` is why jmslike dropped it, None when the broker closed it,
        answered our DISCONNECT, or we aborted."""
        if self._lost:
            return
        self._lost = True
        if not self._connected.is_set():
            if self._connect_error is None:
                self._closed_silently = reason is None
                self._connect_error = (
                    "connection closed by the broker during CONNECT"
                    if reason is None
                    else f"jmslike dropped the connection during CONNECT: {reason}"
                )
            self._connected.set()
        if reason is not None:
            lost = ConnectionLostException(f"jmslike dropped the connection: {reason}")
        else:
            lost = ConnectionLostException(
                "connection to the broker was closed"
                if self._closing
                else "connection to the broker was lost"
            )
        if self._unmatched_error is not None and not self._closing:
            self._fail_culprit(self._unmatched_error)
        self._fail_all(lost)
        if not self._closing:
            self._events.on_lost(lost)

    def _fail_culprit(self, text: str) -> None:
        """The broker sent an ERROR answering no receipt and closed the connection (RabbitMQ does this
        for a refused SEND or SUBSCRIBE): it processes frames in order, so the refused frame is the
        oldest one still waiting for its receipt. That call gets the broker's error; the others get
        ConnectionLostException (their outcome is unknown)."""
        with self._lock:
            if self._held:
                pending = self._held.pop(0)
            elif self._pending:
                pending = self._pending.pop(next(iter(self._pending)))
            else:
                return
        error_class = self._error_for(text, pending.frame)
        pending.finish(
            error_class(f"broker refused {pending.frame.command} frame and closed the connection: {text}")
        )

    def _fail_all(self, error: JMSException) -> None:
        with self._lock:
            # Receipts held after an unmatched ERROR did arrive: those frames were processed.
            held, self._held = self._held, []
            pending = list(self._pending.values())
            self._pending.clear()
        for item in held:
            item.finish(None)
        for item in pending:
            item.finish(error)

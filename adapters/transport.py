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
from collections.abc import Callable, Mapping

from jmslike.adapters.stomp_core import Version
from jmslike.adapters.stomp_socket import (
    DriverSettings,
    SocketClosed,
    SocketConnectError,
    StompSocket,
    TLSConnectError,
    WriteStalled,
)
from jmslike.adapters.wire_base import ErrorMapper, WireBase
from jmslike.config import ConnectionConfig
from jmslike.contract import Frame, WireEvents
from jmslike.exceptions import ConnectionLostException, JMSException, JMSTimeoutException

log = logging.getLogger(__name__)

__all__ = ["Done", "ErrorMapper", "StompWire"]


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


class _Pending(Done):
    """One frame waiting for its receipt, and the signal of its answer (a :class:`Done` itself rather than holding
    one: a send window keeps one per send in flight, and each object in flight makes the garbage collector run
    more often; jmslike.contract says why that counts)."""

    __slots__ = ("callback", "error", "frame", "socket")

    def __init__(
        self, frame: Frame, callback: Callable[[JMSException | None], None] | None, socket: StompSocket
    ) -> None:
        super().__init__()
        self.frame = frame
        self.error: JMSException | None = None
        self.callback = callback
        self.socket = socket

    def wait(self, timeout_s: float | None = None) -> bool:  # the contract's name (PendingReceipt.wait)
        """Wait for the answer (a deferred receipt, at commit): a waiter the reader must not keep waiting."""
        self.socket.waiting_begins()
        try:
            return super().wait(timeout_s)
        finally:
            self.socket.waiting_ends()

    def finish(self, error: JMSException | None) -> None:
        self.error = error
        self.set()
        if self.callback is not None:
            self.callback(error)


class _Waiting:
    """``with``: a caller waits for answers the socket cannot see (StompWire.awaiting_answers). One object per
    wire, no generator: a sender blocked on its full window enters it once per send."""

    __slots__ = ("_socket",)

    def __init__(self, socket: StompSocket) -> None:
        self._socket = socket

    def __enter__(self) -> None:
        self._socket.waiting_begins()

    def __exit__(self, *exc: object) -> None:
        self._socket.waiting_ends()


class StompWire(WireBase[_Pending]):
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
        tx_sends_answered_at_commit: bool = False,
    ) -> None:
        super().__init__(config, host, events, error_for, default_vhost, tx_sends_answered_at_commit)
        self._lock = threading.Lock()
        self._connected = threading.Event()
        self._socket = StompSocket(
            DriverSettings.from_config(config, host, stomp_version, f"r{next(self._ids)}-"),
            on_event=self._on_event,
            on_closed=self._ended,
            quick_ack=quick_ack,
            hold=self._hold_reading,
        )
        self._waiting = _Waiting(self._socket)

    # -- connection lifecycle -------------------------------------------------------------------------

    def open(self, headers: Mapping[str, str]) -> dict[str, str]:
        """Connect and wait for CONNECTED; return its headers. Errors are mapped, never hang."""
        try:
            self._socket.connect(self._vhost, self._with_credentials(headers))
        except ValueError as exc:
            raise self._connect_failure(exc, None) from None
        except (TLSConnectError, SocketConnectError) as exc:
            raise self._connect_failure(exc, None) from exc.cause
        except (SocketClosed, WriteStalled) as exc:
            self._abandon()
            raise self._connect_failure(exc, self._socket.tls_error) from exc
        if not self._connected.wait(self._config.connect_timeout_ms / 1000):
            self._abandon()
            raise self._connect_timeout()
        refusal = self._connect_outcome(self._socket.tls_error)
        if refusal is not None:
            self._abandon()
            raise refusal
        return self._connected_headers

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
        self._wake_reader()  # a held reader reads on: DISCONNECT's receipt is behind what it holds back
        try:
            self._socket.disconnect(timeout_s)
        finally:
            self._fail_all(ConnectionLostException("connection closed"))

    def kill_socket(self) -> None:
        """Drop the TCP connection without DISCONNECT (tests of recovery, failover)."""
        self._socket.abort()

    # -- frames ---------------------------------------------------------------------------------------

    def _write(
        self, frame: Frame, pending: _Pending | None, recorded: list[str], *, coalesce: bool = False
    ) -> None:
        """Hand ``frame`` to the socket, recording ``pending`` under its receipt (and the receipt in
        ``recorded``) before any byte is written. ``coalesce``: nobody waits for it, so the socket may write it
        with the frames that follow (``send_coalesce_us``)."""
        try:
            self._socket.send(
                self._prepare(frame),
                receipt=pending is not None,
                on_sent=self._recorder(pending, recorded),
                coalesce=coalesce,
            )
        except (WriteStalled, SocketClosed) as exc:
            error, reason = self._write_failure(frame, exc)
            self._socket.abort(reason)  # the reader may not have noticed yet (TLS): it reports the loss
            raise error from exc

    def request(self, frame: Frame, timeout_s: float | None = None) -> None:
        """Send ``frame`` with a receipt and wait; raise the mapped exception on ERROR or timeout."""
        sock = self._socket
        quick = sock.waiting_begins(quick=True)
        try:
            pending = self._submit(frame, None, coalesce=False)
            timeout = self._config.receipt_timeout_ms / 1000 if timeout_s is None else timeout_s
            if not Done.wait(pending, timeout):  # the signal alone: this request already told the socket
                self._gave_up(pending)
                raise JMSTimeoutException(f"no receipt for {frame.command} within {timeout:.1f}s")
        finally:
            sock.waiting_ends(quick=quick)
        if pending.error is not None:
            raise pending.error

    def submit(self, frame: Frame, callback: Callable[[JMSException | None], None] | None) -> _Pending:
        """Send with a receipt, return at once; ``callback`` runs on the reader thread when answered.

        Exactly one outcome: either this raises and ``callback`` never runs, or it returns and ``callback``
        runs once (see WireBase._still_ours). The frame may be written a little later, with those after it
        (``send_coalesce_us``): at the latest when someone waits for an answer on this connection."""
        return self._submit(frame, callback, coalesce=True)

    def _submit(
        self, frame: Frame, callback: Callable[[JMSException | None], None] | None, *, coalesce: bool
    ) -> _Pending:
        self._check_usable(frame)
        pending = _Pending(frame, callback, self._socket)
        recorded: list[str] = []
        try:
            self._write(frame, pending, recorded, coalesce=coalesce)
        except JMSException:
            if self._still_ours(recorded):
                raise
        return pending

    def awaiting_answers(self) -> _Waiting:
        """A caller blocks until earlier submits are answered (Wire.awaiting_answers): what is held is written now."""
        return self._waiting

    def post(self, frame: Frame) -> None:
        """Send without a receipt."""
        self._check_usable(frame)
        self._write(frame, None, [])

    # -- the driver's hooks -----------------------------------------------------------------------------

    def _connect_answered_hook(self) -> None:
        self._connected.set()

    def _forget_receipts(self, receipt_ids: list[str]) -> None:
        self._socket.forget(receipt_ids)

    def _wake_reader(self) -> None:
        self._socket.wake_reader()

    def _call_later(self, delay_s: float, callback: Callable[[], None]) -> None:
        timer = threading.Timer(delay_s, callback)
        timer.daemon = True
        timer.start()

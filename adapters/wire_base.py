"""What both STOMP wires do the same: turn the sans-IO core's events into JMS outcomes.

A wire is one STOMP connection as the JMS layer sees it. The threaded wire
(:mod:`~jmslike.adapters.transport`) and the asyncio wire (:mod:`~jmslike.adapters.async_wire`) differ only in
how they wait (a lock per receipt or a future), how they schedule the receipt hold (a timer thread or the
loop) and whether they need a lock. Everything else lives here once:

- the CONNECT headers with the credentials, and what a failed or refused CONNECT raises (the message says what
  to check; credentials never appear in it);
- the protocol events: MESSAGE to the connection above, RECEIPT and ERROR to the call they answer
  (:class:`~jmslike.adapters.receipts.ReceiptBook` holds the rules), CONNECTED or a refusal to ``open``;
- the end of the connection: every waiting call answered once, the loss reported once (not when we closed).

Subclasses call :meth:`_on_event` and :meth:`_ended` from their driver and implement the hooks at the end.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, Protocol, TypeVar

from jmslike.adapters.receipts import HOLD_AFTER_ERROR_S, Ending, ReceiptBook
from jmslike.adapters.stomp_core import (
    Connected,
    ConnectRefused,
    ErrorReceived,
    Event,
    MessageReceived,
    Receipt,
    ReceiptReceived,
)
from jmslike.adapters.stomp_socket import (
    SocketClosed,
    SocketConnectError,
    TLSConnectError,
    WriteStalled,
    kernel_bound_reason,
)
from jmslike.config import ConnectionConfig
from jmslike.contract import Frame, SilentConnectRefusal, WireEvents
from jmslike.exceptions import (
    ConnectionLostException,
    JMSException,
    JMSSecurityException,
    JMSTimeoutException,
)
from jmslike.flow import BufferGauge

ErrorMapper = Callable[[str, "Frame | None"], type[JMSException]]


class Answerable(Protocol):
    """A call waiting for its receipt, as the wire answers it."""

    frame: Frame

    def finish(self, error: JMSException | None) -> None: ...


P = TypeVar("P", bound=Answerable)


class WireBase(Generic[P]):
    """The driver-neutral half of a wire; see the module docstring."""

    def __init__(
        self,
        config: ConnectionConfig,
        host: tuple[str, int],
        events: WireEvents,
        error_for: ErrorMapper,
        default_vhost: str | None,
        tx_sends_answered_at_commit: bool = False,
    ) -> None:
        self._config = config
        #: The broker answers a transactional SEND only at COMMIT (the adapter's ``transactional_send_receipts`` is
        #: False: RabbitMQ), so such a SEND waiting is never what an ERROR naming no receipt refused (_fail_all).
        self._tx_sends_answered_at_commit = tx_sends_answered_at_commit
        self._host = host
        self._where = f"{host[0]}:{host[1]}"
        self._events = events
        self._error_for = error_for
        self._vhost = config.vhost or default_vhost or host[0]
        # Guarded by _lock (a real lock in the threaded wire); answered outside it.
        self._receipts: ReceiptBook[P] = ReceiptBook()
        self._lock: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
        self._connect_answered = False
        self._connect_error: str | None = None
        self._closed_silently = False  # closed by the broker during CONNECT, no ERROR frame
        self._refused_in_words = False  # _connect_error is the broker's ERROR, not a text jmslike made up
        self._connected_headers: dict[str, str] = {}
        self._closing = False
        self._lost = False
        # The connection's undelivered bytes (jmslike.flow), when its events offer them (contract.WireEvents).
        self._buffer: BufferGauge | None = getattr(events, "buffer", None)

    @property
    def host(self) -> tuple[str, int]:
        """The broker host and port this wire is connected to."""
        return self._host

    @property
    def is_open(self) -> bool:
        """Connected, and neither closed nor lost."""
        return self._connect_answered and self._connect_error is None and not self._lost and not self._closing

    # -- opening --------------------------------------------------------------------------------------------

    def _with_credentials(self, headers: Mapping[str, str]) -> dict[str, str]:
        creds = self._config.credentials
        connect_headers = dict(headers)
        if creds.user is not None:
            connect_headers["login"] = creds.user
        if creds.password is not None:
            connect_headers["passcode"] = creds.password
        return connect_headers

    def _connect_failure(self, exc: Exception, tls_error: str | None) -> JMSException:
        """What a CONNECT that could not be written raises (the caller has abandoned the socket)."""
        where = self._where
        if isinstance(
            exc, ValueError
        ):  # a header value with a line break: STOMP cannot carry it, nothing sent
            return JMSException(f"cannot connect to {where}: {exc}")
        if isinstance(exc, TLSConnectError):
            return JMSSecurityException(
                f"TLS handshake with {where} failed: {exc.cause}; check ssl_ca_file (the CA that signed "
                "the broker's certificate) and that the URL's host name is in that certificate"
            )
        if isinstance(exc, SocketConnectError):
            return ConnectionLostException(
                f"cannot reach broker at {where} ({self._config.scheme}): {exc.cause}; "
                "check that the broker runs and the port is its STOMP port"
            )
        if tls_error is not None:
            return self._tls_session_error(tls_error)
        if self._refused_in_words and self._connect_error is not None:
            return self._refusal(self._connect_error)  # it said why before it reset the connection
        # A bare SocketClosed says nothing; what ended the connection meanwhile (a protocol violation) may.
        detail = str(exc) or self._connect_error or "the connection ended"
        return ConnectionLostException(f"cannot reach broker at {where}: {detail}")

    def _connect_timeout(self) -> JMSTimeoutException:
        return JMSTimeoutException(
            f"broker at {self._where} did not answer CONNECT within {self._config.connect_timeout_ms / 1000:.1f}s"
        )

    def _connect_outcome(self, tls_error: str | None) -> JMSException | None:
        """Once CONNECT was answered (or the connection ended): the refusal to raise, or None (connected)."""
        if tls_error is not None and not self._connected_headers:
            return self._tls_session_error(tls_error)
        if self._connect_error is None:
            return None
        if self._closed_silently:
            return SilentConnectRefusal(
                f"broker at {self._where} closed the connection during CONNECT without saying why; check the "
                "credentials, the client ID and the broker's log"
            )
        if not self._refused_in_words:  # jmslike ended it (bytes that are no STOMP frame): no refusal, a lost
            # connection, as _connect_failure says when the same bytes end it before CONNECT is drained
            return ConnectionLostException(f"cannot reach broker at {self._where}: {self._connect_error}")
        return self._refusal(self._connect_error)

    def _refusal(self, text: str) -> JMSException:
        """The broker's refusal of CONNECT, in its words."""
        return self._error_for(text, None)(f"broker at {self._where} refused the connection: {text}")

    def _tls_session_error(self, tls_error: str) -> JMSSecurityException:
        return JMSSecurityException(
            f"TLS session with {self._where} failed during CONNECT: {tls_error}; if the broker requires "
            "a client certificate, give one signed by a CA it trusts (ssl_cert_file, ssl_key_file)"
        )

    # -- writing --------------------------------------------------------------------------------------------

    def _prepare(self, frame: Frame) -> Frame:
        """The frame as it goes out (a subclass may adjust how it is encoded)."""
        return frame

    def _check_usable(self, frame: Frame) -> None:
        if self._lost or self._closing:
            raise ConnectionLostException(f"cannot send {frame.command}: the connection is closed or lost")

    def _recorder(self, pending: P | None, recorded: list[str]) -> Callable[[Receipt], None]:
        """The driver's ``on_sent``: records ``pending`` under its receipt before any byte is written."""

        def record(receipt: Receipt) -> None:
            if pending is not None:
                with self._lock:
                    self._receipts.record(receipt.receipt_id, pending)
                recorded.append(receipt.receipt_id)
                if self._buffer is not None and self._buffer.over:
                    self._wake_reader()  # its answer is behind the messages: read on (jmslike.flow)

        return record

    def _write_failure(self, frame: Frame, exc: Exception) -> tuple[ConnectionLostException, str | None]:
        """What a failed write raises, and the reason to abort the socket with (None: the reader reports)."""
        if isinstance(exc, WriteStalled):
            # Part of the frame may be on the wire, so the stream is unusable: drop it; every waiter hears why.
            timeout_s = self._config.receipt_timeout_ms / 1000
            reason = (
                kernel_bound_reason(timeout_s, frame.command)
                if exc.by_kernel
                else f"could not write {frame.command} within {timeout_s:.1f}s "
                "(receipt_timeout_ms): the broker stopped reading or is unreachable"
            )
            return ConnectionLostException(f"jmslike dropped the connection: {reason}"), reason
        assert isinstance(exc, SocketClosed)
        return ConnectionLostException(f"connection lost while sending {frame.command}"), None

    def _gave_up(self, pending: P) -> None:
        """A request's caller stopped waiting (receipt timeout, or a cancelled asyncio caller): its late answer
        still settles it, but the reader no longer reads on for it past the byte bound (ReceiptBook.abandon)."""
        with self._lock:
            self._receipts.abandon(pending)

    def discard(self, pending: Sequence[object]) -> None:
        """The broker will never answer ``pending``: it dropped their frames with the transaction they were sent
        in (RabbitMQ answers a transactional SEND only at COMMIT, and never after ABORT). Forgotten unanswered,
        so a later refused frame is still matched to its broker error (ReceiptBook.end), the byte bound holds
        again, and the connection stops counting them as due."""
        if not pending:
            return
        with self._lock:
            receipt_ids = self._receipts.discard(pending)
        if receipt_ids:
            self._forget_receipts(receipt_ids)

    def _still_ours(self, recorded: list[str]) -> bool:
        """After a failed write: whether the call must raise. Exactly one outcome per call: if the end of the
        connection already took it from the book, its answer (the loss) stands and raising would settle it twice."""
        if not recorded:
            return True  # never recorded: nothing else can answer it
        with self._lock:
            return self._receipts.withdraw(recorded[0]) is not None

    # -- events (the driver's reader) -----------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        """One protocol event; MESSAGE first, it is the hot path."""
        if isinstance(event, MessageReceived):
            self._events.on_message(event.frame)
        elif isinstance(event, ReceiptReceived):
            self._handle_receipt(event.receipt.receipt_id)
        elif isinstance(event, ErrorReceived):
            self._handle_error(event)
        elif isinstance(event, Connected):
            self._connected_headers = dict(event.headers)
            self._watch_buffer()
            self._answer_connect()
        elif isinstance(event, ConnectRefused):
            self._closed_silently = event.silent
            self._refused_in_words = not event.silent
            self._connect_error = event.text
            self._answer_connect()
        # UnknownReceipt: answered twice or never asked; nothing waits for it.

    def _answer_connect(self) -> None:
        self._connect_answered = True
        self._connect_answered_hook()

    def _handle_receipt(self, receipt: str) -> None:
        with self._lock:
            pending = self._receipts.receipt(receipt)
        if pending is not None:
            pending.finish(None)

    def _release_held(self) -> None:
        """The hold after an unmatched ERROR is due: the held receipts stand, or a later ERROR moved the
        deadline and the release is scheduled again."""
        with self._lock:
            held, remaining = self._receipts.release_due(time.monotonic())
            if remaining is not None:
                self._call_later(remaining, self._release_held)
        for pending in held:
            pending.finish(None)

    def _handle_error(self, event: ErrorReceived) -> None:
        text = event.text
        with self._lock:
            pending = self._receipts.refused(event.refused.receipt_id if event.refused is not None else None)
            if pending is None and self._receipts.unmatched(text, time.monotonic()):
                self._call_later(HOLD_AFTER_ERROR_S, self._release_held)
        source = pending.frame if pending is not None else None
        error_class = self._error_for(text, source)
        what = f"{source.command} " if source is not None else ""
        error = error_class(f"broker refused {what}frame: {text}")
        if pending is not None:
            pending.finish(error)
        else:
            self._events.on_error(error)

    def _ended(self, reason: str | None, unanswered: list[Receipt]) -> None:
        """The connection ended (once): ``reason`` is why jmslike dropped it, None when the broker closed it,
        answered our DISCONNECT, or we aborted."""
        if self._lost:
            return
        self._lost = True
        self._unwatch_buffer()
        if not self._connect_answered:
            if self._connect_error is None:
                self._closed_silently = reason is None
                self._connect_error = (
                    "connection closed by the broker during CONNECT"
                    if reason is None
                    else f"jmslike dropped the connection during CONNECT: {reason}"
                )
            self._answer_connect()
        if reason is not None:
            lost = ConnectionLostException(f"jmslike dropped the connection: {reason}")
        else:
            lost = ConnectionLostException(
                "connection to the broker was closed"
                if self._closing
                else "connection to the broker was lost"
            )
        self._fail_all(lost)
        if not self._closing:
            self._events.on_lost(lost)

    def _fail_all(self, error: JMSException) -> None:
        """Answer everything still waiting: the frame an unmatched ERROR refused gets the broker's error (it is
        the oldest waiting, see receipts.py), calls whose receipts arrived succeed, the rest get ``error``."""
        with self._lock:
            ending: Ending[P] = self._receipts.end(
                self._closing, _answered_at_commit if self._tx_sends_answered_at_commit else None
            )
        if ending.culprit is not None:
            frame = ending.culprit.frame
            error_class = self._error_for(ending.culprit_text, frame)
            ending.culprit.finish(
                error_class(
                    f"broker refused {frame.command} frame and closed the connection: {ending.culprit_text}"
                )
            )
        for item in ending.arrived:
            item.finish(None)
        for item in ending.unanswered:
            item.finish(error)

    # -- the byte bound on what the consumers hold (jmslike.flow) -------------------------------------------

    def _hold_reading(self) -> bool:
        """The driver's question before each read: stop reading while the connection's consumers hold their
        byte bound (and no browse waits, BufferGauge.holding), unless CONNECT is unanswered, a call waits for a
        receipt or an ERROR's outcome (it is behind the messages), or the wire is closing. Read without the
        lock: a stale answer is corrected by the wake-up that follows every change that can end a hold (a
        change that only ends one, such as an abandoned receipt, is seen before the next read)."""
        buffer = self._buffer
        return (
            buffer is not None
            and buffer.holding
            and self._connect_answered
            and not self._closing
            and not self._receipts.busy
        )

    def _watch_buffer(self) -> None:
        """Connected: wake the reader whenever the consumers' buffer drops back under its bound."""
        if self._buffer is not None:
            self._buffer.watch(self._wake_reader)

    def _unwatch_buffer(self) -> None:
        if self._buffer is not None:
            self._buffer.unwatch(self._wake_reader)

    # -- the driver's hooks ---------------------------------------------------------------------------------

    def _wake_reader(self) -> None:
        """A reader holding back (``_hold_reading``) asks again; called from any thread (threaded API) or on the
        loop (jmslike.aio)."""
        raise NotImplementedError

    def _forget_receipts(self, receipt_ids: list[str]) -> None:
        """The driver's protocol forgets ``receipt_ids`` (StompProtocol.forget)."""
        raise NotImplementedError

    def _connect_answered_hook(self) -> None:
        """Wake whoever waits in ``open`` (CONNECTED, a refusal, or the end of the connection)."""
        raise NotImplementedError

    def _call_later(self, delay_s: float, callback: Callable[[], None]) -> None:
        """Run ``callback`` after ``delay_s`` (it takes the lock itself)."""
        raise NotImplementedError


def _answered_at_commit(call: Answerable) -> bool:
    """A transactional SEND, on a broker that answers it only at COMMIT (RabbitMQ, ``transactional_send_receipts``):
    while it waits it cannot be the frame an ERROR naming no receipt refused (ReceiptBook.end)."""
    frame = call.frame
    return bool(frame.command == "SEND" and "transaction" in frame.headers)

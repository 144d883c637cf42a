"""The threaded driver of the sans-IO STOMP core: one connection's socket, reader thread and heart-beats.

:class:`~jmslike.adapters.stomp_core.StompProtocol` decides everything about the protocol; this module owns
what it leaves to a driver -- the socket, the threads, the clock -- and nothing else. jmslike owns its socket
instead of running on stomp.py because what it needs lived in stomp.py's private parts (its name-mangled
reader, its socket lock, its heart-beat listener's clock) and because stomp.py's close gave a socket's
descriptor back while its reader could still be reading it (a TLS reader then took the first bytes of the
next connection; see :meth:`StompSocket._release`). stomp.py stays the reference peer of tests and the raw
baseline of the benchmarks.

How the threads share one socket:

- TLS: the socket is non-blocking and every SSL call is made under ``_io_lock``, never waiting inside it, so
  the reader and a writer never run the same SSL object at once (OpenSSL forbids that) and never block each
  other; waiting for readiness (``poll``) happens outside the lock. Plain TCP: the reader waits in ``recv``
  and writers never block in ``send`` (``MSG_DONTWAIT``), waiting in ``poll`` instead, as the kernel
  serialises a socket's reads and writes itself;
- one frame is written at a time (``_write_lock``), with a deadline for the whole frame: a broker that stops
  reading makes the write fail after ``write_timeout_s`` (:class:`WriteStalled`), part of the frame possibly
  sent, so the connection is then dropped;
- the reader thread reads, feeds the protocol and hands its events to the owner's ``on_event``; it never
  writes and never runs user code (the owner's callbacks must not block);
- a frame sent without waiting (``send(..., coalesce=True)``) while the broker still owes a receipt for a frame
  already written may wait in a buffer, up to ``coalesce_s``, to be written with the frames that follow it
  (:func:`may_coalesce`); a small flusher thread writes the buffer when that time is up or at once when a caller
  starts waiting for an answer, and every other write (any frame not coalesced, DISCONNECT, a heart-beat)
  takes the buffer with it, so frames reach the broker in the order they were sent;
- heart-beats, when negotiated, are written by a small thread that sleeps until the protocol's next deadline,
  and that thread also notices a broker gone silent;
- the connection ends once: the end of the stream, a socket error, a protocol violation, the broker's
  silence, the receipt of our DISCONNECT, or :meth:`StompSocket.abort`. The owner hears ``on_closed`` once,
  on the reader thread whenever the reader has started, with the reason (None when jmslike did not decide
  it) and the frames that got no answer.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import logging
import os
import select
import socket
import ssl
import struct
import termios
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, NoReturn

from jmslike.adapters.stomp_core import (
    Connected,
    Event,
    MessageReceived,
    ProtocolViolation,
    Receipt,
    StompProtocol,
    Version,
)
from jmslike.config import ConnectionConfig
from jmslike.contract import Frame
from jmslike.exceptions import JMSSecurityException

log = logging.getLogger(__name__)

_RECV_BYTES: Final = 64 * 1024
_DONTWAIT: Final[int | None] = getattr(socket, "MSG_DONTWAIT", None)
# Linux only; elsewhere the option is not there and quick ACKs do nothing.
_TCP_QUICKACK: Final[int | None] = getattr(socket, "TCP_QUICKACK", None)
#: TCP keepalive on every connection: a broker that turned heart-beats off (``heart-beat:0,0``) and then
#: vanished without a FIN (host down, cable cut) is noticed within about idle + interval x count seconds,
#: instead of never, so a blocked ``receive()`` ends with a ConnectionLostException.
KEEPALIVE_IDLE_S: Final = 10
KEEPALIVE_INTERVAL_S: Final = 5
KEEPALIVE_COUNT: Final = 3
#: How long a closing thread waits for the reader to end before leaving the close to it.
_READER_EXIT_WAIT_S: Final = 1.0
#: How often a write that cannot proceed on TLS (the SSL object wants to read first) looks again.
_TLS_RETRY_S: Final = 0.05


class SocketConnectError(Exception):
    """The TCP connection could not be made; ``cause`` is the OSError."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class TLSConnectError(Exception):
    """The TLS handshake failed (certificate, host name, protocol, no answer); ``cause`` says why."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class SocketClosed(Exception):
    """A write on a connection that has ended (or is ending)."""


class WriteStalled(Exception):
    """The broker took no more of a frame before the write deadline; part of it may be on the wire.
    ``by_kernel``: the kernel's time bound ended the connection first (:func:`kernel_gave_up`)."""

    def __init__(self, reason: str, by_kernel: bool = False) -> None:
        super().__init__(reason)
        self.by_kernel = by_kernel


def tls_context(config: ConnectionConfig) -> ssl.SSLContext:
    """The client TLS context for ``config``: broker certificate always verified, host name by default."""
    try:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=config.tls.ca_file)
        context.check_hostname = config.tls.check_hostname
        context.verify_mode = ssl.CERT_REQUIRED
        if config.tls.cert_file:
            context.load_cert_chain(config.tls.cert_file, config.tls.key_file, config.tls.key_password)
    except (OSError, ssl.SSLError) as exc:
        files = [f for f in (config.tls.ca_file, config.tls.cert_file, config.tls.key_file) if f]
        raise JMSSecurityException(
            f"cannot load the TLS files {files}: {exc}; check ssl_ca_file, ssl_cert_file and ssl_key_file "
            "(PEM; the key must belong to the certificate)"
        ) from exc
    return context


def bound_socket_in_time(sock: socket.socket, write_timeout_s: float) -> None:
    """Put the kernel's limits on a connected socket (Linux; elsewhere what exists of them).

    * ``TCP_USER_TIMEOUT``: data the peer has not acknowledged for twice the write timeout aborts the
      connection (twice: a peer that stops reading is then usually reported by the stalled write, which knows
      what it was writing; when the kernel ends it first, :func:`kernel_gave_up` says why);
    * keepalive: see :data:`KEEPALIVE_IDLE_S`.

    The write deadline itself is :meth:`StompSocket._write_all`'s: the socket is non-blocking.
    """
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (
        ("TCP_KEEPIDLE", KEEPALIVE_IDLE_S),
        ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL_S),
        ("TCP_KEEPCNT", KEEPALIVE_COUNT),
        ("TCP_USER_TIMEOUT", int(write_timeout_s * 2000)),
    ):
        option = getattr(socket, name, None)
        if option is not None:
            sock.setsockopt(socket.IPPROTO_TCP, option, value)


def kernel_gave_up(exc: BaseException | None, write_timeout_s: float, state: str) -> str | None:
    """Why the kernel ended a connection that :func:`bound_socket_in_time` bounded, or None when ``exc`` says
    something else, or the STOMP ``state`` is not "connected" yet (a failed CONNECT keeps the rules of
    jmslike.adapters.wire_base: this changes what an established connection's loss says, nothing else).
    ETIMEDOUT on an established connection: data went unacknowledged for ``TCP_USER_TIMEOUT`` (twice the write
    timeout), or keep-alive probes went unanswered.

    The stalled-write deadline usually reports a broker that stopped reading first, naming the frame it was
    writing. Not always: small frames (a consumer's ACKs) to a broker that stopped reading fill the kernel's
    send buffer slowly, and Linux 6.18 counts the time the broker's window has been shut toward
    ``TCP_USER_TIMEOUT``, so it ends the connection before any write waits in jmslike (seen 2026-11-27; the
    kernels CI ran on before did not). Both drivers say why instead of a bare "connection lost"."""
    if (
        state == "connected"
        and isinstance(exc, OSError)
        and exc.errno == errno.ETIMEDOUT
        and hasattr(socket, "TCP_USER_TIMEOUT")  # elsewhere the bound is not ours to name
    ):
        return kernel_bound_reason(write_timeout_s)
    return None


def kernel_bound_reason(write_timeout_s: float, what: str = "") -> str:
    """The words for :func:`kernel_gave_up`'s case; ``what``: the frame whose write it failed, if known."""
    return (
        f"could not write{' ' + what if what else ''} within {write_timeout_s * 2:.1f}s (the broker acknowledged "
        "nothing written: TCP_USER_TIMEOUT) or keep-alive probes went unanswered: the broker stopped reading or is "
        "unreachable"
    )


#: At most this much is read of what a broker said before it reset a connection CONNECT could not be written to.
_REFUSAL_BYTES: Final = 65536


def unread_refusal(fileno: int) -> bytes:
    """What the broker sent on a plain TCP connection before resetting it, still in the kernel's buffer: Linux
    keeps it readable after the reset has failed our CONNECT write. A broker refusing a connection as it accepts
    it (ERROR, then a reset) is heard this way. Read without blocking through a duplicate of ``fileno``, so the
    owner's socket object (asyncio's, say) is left as it is; b"" when nothing is there."""
    if _DONTWAIT is None:
        return b""
    try:
        with socket.socket(fileno=os.dup(fileno)) as duplicate:
            return duplicate.recv(_REFUSAL_BYTES, _DONTWAIT)
    except OSError:
        return b""


# struct tcp_info (linux/tcp.h): tcpi_bytes_acked, a u64 at byte 120 since Linux 4.1 (older kernels return less).
_TCP_INFO_BYTES_ACKED = struct.Struct("=Q")
_TCP_INFO_BYTES_ACKED_AT = 120


def bytes_acked(sock: Any) -> int | None:
    """Bytes of this connection the peer's TCP has acknowledged so far (Linux ``TCP_INFO``), or None where the
    kernel does not say. The stall watch of unawaited writes counts progress in it: unlike the transport's
    buffer, it moves as the broker reads whatever sits between (TLS layers, the kernel's send buffer)."""
    option = getattr(socket, "TCP_INFO", None)
    if option is None:
        return None
    try:
        info = sock.getsockopt(socket.IPPROTO_TCP, option, _TCP_INFO_BYTES_ACKED_AT + 8)
    except (OSError, AttributeError):
        return None
    if len(info) < _TCP_INFO_BYTES_ACKED_AT + 8:
        return None
    return int(_TCP_INFO_BYTES_ACKED.unpack_from(info, _TCP_INFO_BYTES_ACKED_AT)[0])


def unread_bytes(sock: Any) -> int | None:
    """Bytes the kernel holds for this socket that nobody has read yet (``FIONREAD``; with TLS, ciphertext, and
    not what OpenSSL decrypted already), or None where it cannot say (no socket, a closed one). Said at a
    heart-beat timeout whose reader had stopped reading: how much of the broker's it left waiting."""
    if sock is None:
        return None
    try:
        answer = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
    except (OSError, ValueError):
        return None
    return int(_FIONREAD_COUNT.unpack(answer)[0])


_FIONREAD_COUNT = struct.Struct("i")


def open_socket(
    host: tuple[str, int], context: ssl.SSLContext | None, timeout_s: float, write_timeout_s: float
) -> socket.socket:
    """A connected, non-blocking socket to ``host``, TLS-wrapped and handshaken when ``context`` is given.
    Never falls back to plain TCP."""
    try:
        sock = socket.create_connection(host, timeout_s)
    except OSError as exc:
        raise SocketConnectError(exc) from exc
    if context is not None:
        try:
            sock = context.wrap_socket(sock, server_hostname=host[0])
        except (ssl.SSLError, ssl.CertificateError) as exc:
            sock.close()
            raise TLSConnectError(exc) from exc
        except TimeoutError as exc:
            # TCP works but no TLS answer: most likely a plain STOMP port.
            sock.close()
            raise TLSConnectError(
                TimeoutError(f"no TLS handshake answer within {timeout_s:.1f}s (is this a TLS port?)")
            ) from exc
        except OSError as exc:  # reset during the handshake
            sock.close()
            raise SocketConnectError(exc) from exc
    try:
        # TLS: non-blocking, every SSL call under the socket's I/O lock. Plain TCP: blocking reads, and writes
        # that never block (MSG_DONTWAIT) where the platform has it.
        sock.setblocking(context is None and _DONTWAIT is not None)
        bound_socket_in_time(sock, write_timeout_s)
    except OSError as exc:
        sock.close()
        raise SocketConnectError(exc) from exc
    return sock


def _wait_until(sock: socket.socket, events: int, timeout_s: float | None) -> bool:
    """Wait (outside every lock) until ``sock`` may be ready for ``events``, an error or hang-up included, or
    ``timeout_s`` passes; False once the socket is closed. poll, not select: descriptors above 1023 work."""
    try:
        poller = select.poll()
        poller.register(sock, events | select.POLLERR | select.POLLHUP)
        poller.poll(None if timeout_s is None else max(0, int(timeout_s * 1000) + 1))
    except (OSError, ValueError):  # closed under us (fileno -1)
        return False
    return True


@dataclass(frozen=True)
class DriverSettings:
    """One connection's settings, for either driver of the core (this module's :class:`StompSocket`, or
    :class:`~jmslike.adapters.stomp_async.AsyncStompConnection`): where, which STOMP, which limits, how long."""

    host: tuple[str, int]
    version: Version
    heartbeat_ms: int
    max_frame_bytes: int
    max_header_bytes: int
    context: ssl.SSLContext | None
    connect_timeout_s: float
    write_timeout_s: float
    receipt_prefix: str
    #: How long the threaded driver may hold a frame sent without waiting, to write it with the frames that follow
    #: (:func:`may_coalesce`); 0 = write every frame at once. The asyncio driver holds such frames to the end of
    #: the loop's turn instead, when this is not 0.
    coalesce_s: float = 0.0

    @classmethod
    def from_config(
        cls, config: ConnectionConfig, host: tuple[str, int], version: Version, receipt_prefix: str
    ) -> DriverSettings:
        """A URL's settings for ``host``: heart-beat, frame limits, TLS, and its timeouts (the write deadline is
        ``receipt_timeout_ms``)."""
        return cls(
            host=host,
            version=version,
            heartbeat_ms=config.heartbeat_ms,
            max_frame_bytes=config.max_frame_bytes,
            max_header_bytes=config.max_header_bytes,
            context=tls_context(config) if config.ssl else None,
            connect_timeout_s=config.connect_timeout_ms / 1000,
            write_timeout_s=config.receipt_timeout_ms / 1000,
            receipt_prefix=receipt_prefix,
            coalesce_s=config.send_coalesce_us / 1_000_000,
        )

    def new_protocol(self) -> StompProtocol:
        return StompProtocol(
            version=self.version,
            heartbeat_ms=(self.heartbeat_ms, self.heartbeat_ms),
            max_frame_bytes=self.max_frame_bytes,
            max_header_bytes=self.max_header_bytes,
            receipt_prefix=self.receipt_prefix,
        )


def log_end(host: tuple[str, int], reason: str | None) -> None:
    """How either driver logs the end of a connection: a warning when jmslike dropped it, else debug."""
    if reason is not None:
        log.warning("dropping the connection to %s:%s: %s", host[0], host[1], reason)
    else:
        log.debug("connection to %s:%s ended", host[0], host[1])


#: Bytes of coalesced frames held at most: a frame that would take the buffer past this is written at once, with
#: the buffer. Small enough that holding it costs nothing, large enough that a batch of small sends is one write.
COALESCE_BYTES: Final = 64 * 1024


def may_coalesce(
    *,
    coalesce: bool,
    due_written: int,
    buffered_bytes: int,
    frame_bytes: int,
    batch_age_s: float,
    since_write_s: float,
    hold_s: float,
) -> bool:
    """Whether a frame may wait in the send batch rather than be written now (``send_coalesce_us``).

    Why: the socket write is the dearest step of an unwaited send in Python -- the system call, and the GIL handed
    to the reader that wakes for the answer -- and frames written together cost one. Against a null peer this took
    a NON_PERSISTENT send from 44 to 24 µs of client CPU, below raw stomp.py's 32 (docs/performance.md).

    Only a frame whose sender does not wait for it (``coalesce``: an unwaited send), and only while the application
    streams: the broker owes a receipt for a frame already written (``due_written``), and a frame was written
    less than ``hold_s`` ago or a batch is open. An application sending now and then has every frame written at
    once, even when a receipt stays due for good (a receipt timed out, a RabbitMQ transaction rolled back before
    its sends were answered). The batch is bounded in bytes (:data:`COALESCE_BYTES`) and in age: once its first
    frame has waited ``hold_s``, the next send writes it. The flusher thread writes a batch nobody adds to; it
    needs the GIL for that, which a thread busy in Python gives up only every switch interval (5 ms), so the age
    bound is kept by the sender itself."""
    return (
        coalesce
        and due_written > 0
        and (buffered_bytes > 0 or since_write_s < hold_s)
        and buffered_bytes + frame_bytes <= COALESCE_BYTES
        and batch_age_s < hold_s
    )


def next_flush(
    *, held: bool, batch_age_s: float, since_write_s: float, hold_s: float, asked: bool
) -> float | None:
    """What the flusher thread does when it looks (without the write lock, and again under it before it writes or
    goes idle): 0.0 = write the batch now; a time = look again after it; None = sleep until a sender holds a frame (``held``: a batch is held; ``asked``: a caller
    waits for an answer, :meth:`StompSocket.waiting_begins`).

    Why it sleeps from one batch's due time to the next while the application streams, rather than being woken
    per batch: the sender writes most batches itself (:func:`may_coalesce`'s age bound), and a wake-up per batch
    (an ``Event.set`` by the sender, then this thread's timed wait) was ~1 µs of CPU per send and interrupted the
    sending thread on a two-core machine (RabbitMQ NON_PERSISTENT 4 KB sends, docs/performance.md). It sleeps until
    woken only once no frame was written for ``hold_s``: then the next send is written at once or wakes it."""
    # A look reads the clock before the state it looks at, without the write lock: a frame held or written in
    # between has a negative age here, and the next look must still come within a hold (review of 70adfef).
    since_write_s = max(since_write_s, 0.0)
    batch_age_s = max(batch_age_s, 0.0)
    if not held:
        return hold_s - since_write_s if since_write_s < hold_s else None
    if asked or batch_age_s >= hold_s:
        return 0.0
    return hold_s - batch_age_s


class SendBatch:
    """Coalesced frames not yet written, for either driver (which serialises the calls: the threaded driver's write
    lock, the asyncio driver's loop). Every frame in it waits for a receipt (:func:`may_coalesce`), so its length
    is also the number of receipts due for frames the broker cannot have seen."""

    __slots__ = ("_frames", "bytes", "since")

    def __init__(self) -> None:
        self._frames: list[bytes] = []
        self.bytes = 0
        self.since = 0.0  # when its first frame was added

    def __len__(self) -> int:
        return len(self._frames)

    def add(self, data: bytes, now: float) -> bool:
        """Keep ``data``; True when it is the first frame of the batch."""
        first = not self._frames
        if first:
            self.since = now
        self._frames.append(data)
        self.bytes += len(data)
        return first

    def age(self, now: float) -> float:
        return now - self.since if self._frames else 0.0

    def before(self, data: bytes) -> bytes:
        """``data`` behind the frames held so far, which are then no longer held: what the caller writes."""
        if not self._frames:
            return data
        self._frames.append(data)
        joined = b"".join(self._frames)
        self._frames.clear()
        self.bytes = 0
        return joined


#: How long, at interpreter exit, writing what a connection holds may take (``StompSocket._write_batches_at_exit``).
_EXIT_WRITE_S: Final = 1.0


class StompSocket:
    """One STOMP connection: :meth:`connect`, then :meth:`send` from any thread; events arrive on the reader.

    ``on_event`` gets every protocol event (CONNECTED or the refusal, messages, receipts, errors) on the
    reader thread, in order. ``on_closed(reason, unanswered)`` is called once when the connection ends, on
    whichever thread ended it; ``reason`` says why jmslike dropped it, None when jmslike did not decide it (the
    broker closed or reset the stream, answered DISCONNECT, or :meth:`abort` was called without a reason). ``on_sent(receipt)`` is called under the write lock, before the frame's bytes
    are written, so the owner has recorded a receipt before its answer can arrive.
    """

    #: Sockets whose flusher started: what they hold is written at interpreter exit (the hook registered below the
    #: class, when this module is imported).
    _batching: ClassVar[weakref.WeakSet[StompSocket]] = weakref.WeakSet()
    _batching_lock: ClassVar[threading.Lock] = threading.Lock()
    #: The exit hook ran: from then on nothing is held (only the frozen daemon flusher could write it).
    _exited: ClassVar[bool] = False

    def __init__(
        self,
        settings: DriverSettings,
        *,
        on_event: Callable[[Event], None],
        on_closed: Callable[[str | None, list[Receipt]], None],
        quick_ack: bool = False,
        hold: Callable[[], bool] | None = None,
    ) -> None:
        self._host = settings.host
        self._context = settings.context
        self._connect_timeout_s = settings.connect_timeout_s
        self._write_timeout_s = settings.write_timeout_s
        self._on_event = on_event
        self._on_closed = on_closed
        self._protocol = settings.new_protocol()
        self._sock: socket.socket | None = None
        self._reader_away_since: float | None = None  # when the reader left the socket with data; None: at it
        self._io_lock = threading.Lock()  # one socket call at a time; never held while waiting
        self._write_lock = threading.Lock()  # one frame at a time
        self._proto_lock = threading.Lock()  # the protocol object is not thread-safe
        self._end_lock = threading.Lock()
        self._ended = False
        self._abort_reason: str | None = None  # why abort() asked the reader to end the connection
        self._stall_reason = (
            False  # _abort_reason is only _stalled's: a writer's abort(reason) says it better
        )
        self._stop = threading.Event()  # wakes the heart-beat thread
        self._reader: threading.Thread | None = None
        self._quick_ack = quick_ack and _TCP_QUICKACK is not None
        self._quick_waiters = 0  # synchronous requests waiting, on a quick-ACK broker (waiting_begins/ends)
        self._delivered_to = False  # a MESSAGE has arrived: quick ACKs from now on (waiting_begins)
        self._waiters_lock = threading.Lock()
        self._coalesce_s = settings.coalesce_s
        self._batch = SendBatch()  # coalesced frames not yet written (under _write_lock)
        #: When frames were last written: a stream coalesces, an occasional send does not.
        self._last_write = 0.0
        self._flush_wake = threading.Event()  # frames are held: the flusher starts its wait
        self._flush_now = threading.Event()  # a caller waits for an answer: the flusher writes at once
        self._flusher: threading.Thread | None = None
        #: The flusher sleeps until woken (nothing was held when it last looked); under _write_lock.
        self._flusher_idle = True
        self._hold = hold  # asked before each read: True stops reading until wake_reader (jmslike.flow)
        self._resume = threading.Event()
        #: A TLS failure after the handshake (TLS 1.3: the broker refusing our client certificate).
        self.tls_error: str | None = None

    # -- lifecycle -----------------------------------------------------------------------------------------

    def connect(self, vhost: str, headers: Mapping[str, str]) -> None:
        """Open the socket, write CONNECT and start reading. The answer arrives as an event (Connected or
        ConnectRefused) or as ``on_closed``. Raises ValueError (a header STOMP cannot carry: nothing is opened),
        SocketConnectError, TLSConnectError, SocketClosed, WriteStalled."""
        with self._proto_lock:
            data = self._protocol.connect(vhost, headers, time.monotonic())
        self._sock = open_socket(self._host, self._context, self._connect_timeout_s, self._write_timeout_s)
        log.debug(
            "CONNECT to %s:%s, virtual host %r (login and passcode not shown)",
            self._host[0],
            self._host[1],
            vhost,
        )
        with self._write_lock:
            try:
                self._write_all(data, self._connect_timeout_s)
            except SocketClosed:
                self._hear_refusal()
                raise
        with self._end_lock:  # abort() sees no reader, or a started one
            if self._ended:
                raise SocketClosed()
            reader = threading.Thread(
                target=self._read_loop, name=f"jmslike-stomp-{self._host[0]}:{self._host[1]}", daemon=True
            )
            reader.start()
            self._reader = reader

    def _hear_refusal(self) -> None:
        """CONNECT could not be written: the broker may have refused the connection as it accepted it, then reset
        it. What it said is handed on as events (a ConnectRefused with its words), here on the caller's thread,
        since no reader runs yet. Plain TCP only: a TLS session that failed cannot be read on."""
        sock = self._sock
        if sock is None or self._context is not None:
            return
        data = unread_refusal(sock.fileno())
        if not data:
            return
        with self._proto_lock:
            events = self._protocol.receive_data(data, time.monotonic())
        violation = next((event for event in events if isinstance(event, ProtocolViolation)), None)
        self._dispatch(events, upto=violation)

    def disconnect(self, timeout_s: float) -> None:
        """DISCONNECT with a receipt (everything sent before it has reached the broker once it answers), wait
        for that answer up to ``timeout_s``, then close."""
        try:
            with self._write_lock:
                with self._proto_lock:
                    if self._protocol.state != "connected":
                        raise SocketClosed()
                    data = self._protocol.disconnect(time.monotonic())
                self._write_all(self._batch.before(data), timeout_s)
            self._resume.set()  # a reader holding back (jmslike.flow) asks again: DISCONNECT's receipt must be read
        except (SocketClosed, WriteStalled, OSError):
            self.abort()
            return
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout_s)
        self.abort()

    def abort(self, reason: str | None = None) -> None:
        """End the connection now, without DISCONNECT (``reason``: why jmslike drops it; None: no failure).

        While the reader runs, the end is its to report: the socket is shut down, which wakes it, and it calls
        ``on_closed`` -- so the owner always hears of the end on the reader thread, never on a caller's thread
        that may hold the owner's locks. Without a reader (CONNECT not yet written), it ends here."""
        with self._end_lock:
            reader = self._reader
            delegate = reader is not None and reader is not threading.current_thread() and reader.is_alive()
            if reason is not None and not self._ended and (self._abort_reason is None or self._stall_reason):
                self._abort_reason, self._stall_reason = reason, False
        if delegate:
            assert reader is not None
            self._shutdown()
            reader.join(_READER_EXIT_WAIT_S)
            if reader.is_alive():
                return  # still in the owner's callback: it ends the connection and releases the socket itself
        else:
            self._end(reason)
        self._release()

    # -- writing -------------------------------------------------------------------------------------------

    def send(
        self,
        frame: Frame,
        *,
        receipt: bool,
        on_sent: Callable[[Receipt], None] | None = None,
        coalesce: bool = False,
    ) -> None:
        """Write ``frame`` (with a receipt when asked: ``on_sent`` gets it before any byte is written).
        Raises SocketClosed, or WriteStalled after the write deadline (the connection is then dropped).

        ``coalesce``: the sender does not wait for this frame's answer, so it may be held up to ``coalesce_s`` and
        written with the frames after it (:func:`may_coalesce`); a frame held is written by the flusher thread, and
        a failure to write it ends the connection (its receipt then fails with the others)."""
        with self._write_lock:
            with self._proto_lock:
                if self._protocol.state != "connected":
                    raise SocketClosed()
                due_written = self._protocol.receipts_due - len(self._batch)
                now = time.monotonic()
                data, pending = self._protocol.send(frame, now, receipt=receipt)
                if pending is not None and on_sent is not None:
                    on_sent(pending)
            if (
                self._coalesce_s
                and may_coalesce(
                    coalesce=coalesce and pending is not None,
                    due_written=due_written,
                    buffered_bytes=self._batch.bytes,
                    frame_bytes=len(data),
                    batch_age_s=self._batch.age(now),
                    since_write_s=now - self._last_write,
                    hold_s=self._coalesce_s,
                )
                and self._flusher_started()
            ):
                self._add_to_batch(data, now)
                return
            self._write_all(self._batch.before(data), self._write_timeout_s)
            self._last_write = now

    def _add_to_batch(self, data: bytes, now: float) -> None:
        """Keep a coalesced frame for the flusher (the caller holds the write lock), waking it only when it sleeps
        with nothing held: while batches keep coming it is already timing them (:meth:`_flush_loop`)."""
        if self._batch.add(data, now) and self._flusher_idle:
            self._flusher_idle = False
            self._flush_wake.set()

    def _flusher_started(self) -> bool:
        """The flusher thread runs (started on first need); False when no thread can start (the interpreter is
        shutting down, or out of threads) or the exit hook has run (an exit handler of the application's, run after
        it, may still send), and then nothing may be held: the frame is written at once."""
        if StompSocket._exited:
            return False
        if self._flusher is None:
            flusher = threading.Thread(
                target=self._flush_loop, name=f"jmslike-flush-{self._host[0]}:{self._host[1]}", daemon=True
            )
            try:
                flusher.start()
            except RuntimeError:
                return False
            self._flusher = flusher
            with StompSocket._batching_lock:
                if StompSocket._exited:  # the hook took its list meanwhile: this socket is not on it
                    return False
                StompSocket._batching.add(self)
        return True

    @classmethod
    def install_process_hooks(cls) -> None:
        """Register the exit hook and the fork hook below, once, when this module is imported (its last line)."""
        atexit.register(cls._write_batches_at_exit)
        if hasattr(os, "register_at_fork"):  # POSIX
            os.register_at_fork(after_in_child=cls._forget_batches_in_fork_child)

    @classmethod
    def _write_batches_at_exit(cls) -> None:
        """``atexit``: write what is held. The flusher is a daemon thread (a connection nobody closes must not
        keep the process alive), frozen when the interpreter ends; a send that returned must not be lost with
        it when the process exits without closing the connection (before coalescing the kernel had its bytes)."""
        with cls._batching_lock:
            cls._exited = True
            sockets = list(cls._batching)
        for sock in sockets:
            if not sock._write_lock.acquire(timeout=_EXIT_WRITE_S):
                continue
            try:
                data = sock._batch.before(b"")
                if data:
                    sock._write_all(data, _EXIT_WRITE_S)
            except (SocketClosed, WriteStalled):
                pass
            finally:
                sock._write_lock.release()

    @classmethod
    def _forget_batches_in_fork_child(cls) -> None:
        """``os.register_at_fork``: a forked child shares its parent's sockets, but what they hold is the parent's
        to write (a child writing it at its own exit sent those frames twice: second review of the exit hook)."""
        cls._batching = weakref.WeakSet()
        cls._batching_lock = threading.Lock()  # another thread of the parent may have held it at the fork

    def _flush_loop(self) -> None:
        """Write a held batch once its first frame has waited ``coalesce_s``, or at once when a caller starts
        waiting for an answer (:meth:`waiting_begins`); when to look is :func:`next_flush`'s."""
        wait_s: float | None = None
        while True:
            if wait_s is None:
                self._flush_wake.wait()
            else:
                self._flush_now.wait(wait_s)
            if self._stop.is_set():
                return
            # First a look without the write lock, which the sender holds for most of each send: taking it for
            # every look had the two threads hand it back and forth. A stale read can only bring the next look
            # forward (a batch begins after the last write), so only a write, going idle or an ask (which only
            # the lock may clear: the Event would otherwise keep the wait from waiting) needs the lock.
            asked = self._flush_now.is_set()
            wait_s = self._next_flush(asked)
            if wait_s and not asked:
                continue
            with self._write_lock:
                if self._stop.is_set():
                    return
                asked = self._flush_now.is_set()
                wait_s = self._next_flush(asked)
                if wait_s is None:  # under the lock: a frame held after this finds the flusher idle, wakes it
                    self._flusher_idle = True
                    self._flush_wake.clear()
                if asked or wait_s is None:
                    self._flush_now.clear()
                    # After the clears: _shutdown sets the stop before the events, so a stop the check above
                    # missed is seen here, or wakes the next wait.
                    if self._stop.is_set():
                        return
                if wait_s != 0.0:  # None or a time: nothing to write yet
                    continue
                wait_s = self._coalesce_s  # then look again: the sender may begin another batch meanwhile
                data = self._batch.before(b"")
                end, reason = False, None  # reason None: the end is not jmslike's decision
                try:
                    self._write_all(data, self._write_timeout_s)
                    self._last_write = time.monotonic()
                except SocketClosed:  # as StompWire._write reports it: no reason
                    end = True
                except WriteStalled as exc:
                    end, reason = True, str(exc)
            # Outside the write lock, which ending the connection takes to close the socket. A closed socket ends
            # it too: the reader may not have noticed yet (TLS), as in StompWire._write.
            if end:
                self.abort(reason)
                return

    def _next_flush(self, asked: bool) -> float | None:
        """:func:`next_flush` for this socket now."""
        now = time.monotonic()
        return next_flush(
            held=bool(self._batch),
            batch_age_s=self._batch.age(now),
            since_write_s=now - self._last_write,
            hold_s=self._coalesce_s,
            asked=asked,
        )

    def _write_all(self, data: bytes, timeout_s: float) -> None:
        """Write all of ``data`` (the caller holds the write lock) before ``timeout_s`` passes."""
        sock = self._sock
        if sock is None:
            raise SocketClosed()
        blocking = sock.getblocking()
        deadline = time.monotonic() + timeout_s
        view = memoryview(data)
        while view:
            wait_for_read = False
            try:
                if blocking:  # plain TCP: the kernel serialises this with the reader's recv
                    view = view[sock.send(view, _DONTWAIT or 0) :]
                    continue
                with self._io_lock:
                    view = view[sock.send(view) :]
                    continue
            except (BlockingIOError, ssl.SSLWantWriteError):
                pass
            except ssl.SSLWantReadError:
                wait_for_read = True
            except OSError as exc:
                gave_up = kernel_gave_up(exc, self._write_timeout_s, self._protocol.state)
                if gave_up is not None:  # the broker stopped reading, by the kernel's bound: said as a stall
                    self._stalled(sock, timeout_s, gave_up)
                raise SocketClosed(str(exc)) from exc
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._stalled(sock, timeout_s)
            if wait_for_read:  # TLS wants the reader's data first; look again shortly
                time.sleep(min(_TLS_RETRY_S, remaining))
                continue
            if not _wait_until(sock, select.POLLOUT, remaining):
                raise SocketClosed("socket closed")

    def _stalled(self, sock: socket.socket, timeout_s: float, reason: str | None = None) -> NoReturn:
        """A write missed its deadline (the caller holds the write lock), or the kernel's bound ended it first
        (``reason``: :func:`kernel_gave_up`'s); raises WriteStalled.

        Part of a frame may be out, so nothing may follow it on this stream: the write side is shut before the
        lock is released. The writer drops the connection only after that, and a writer waiting for the lock
        would have written its frame behind the partial one; it now fails at once (EPIPE: SocketClosed). The
        stall is recorded first as the reason the connection ends with, so a writer failing that way, or the
        reader seeing the end, cannot report a bare loss before the stalled writer gets to ``abort``; the
        stalled writer's own reason (which names its frame) replaces it if it gets there first. Not while
        connecting or disconnecting: a stalled CONNECT raises to ``open``, and a stalled DISCONNECT ends a
        connection being closed, which is no failure."""
        by_kernel = reason is not None
        if reason is None:
            reason = f"could not write within {timeout_s:.1f}s: the broker stopped reading or is unreachable"
        with self._end_lock:
            if self._abort_reason is None and not self._ended and self._protocol.state == "connected":
                self._abort_reason, self._stall_reason = reason, True
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_WR)
        raise WriteStalled(reason, by_kernel=by_kernel)

    # -- callers waiting for an answer: quick TCP ACKs, and no frame held back --------------------------------
    #
    # ActiveMQ Classic's TCP transport leaves Nagle's algorithm on (``tcpNoDelay=false``): a small frame it
    # writes while an earlier one is unacknowledged waits for our TCP ACK, which Linux delays (up to 40 ms).
    # A CLIENT_ACKNOWLEDGE ``acknowledge()`` waits for such a receipt every time; quick ACKs took its receipt
    # p90 from 45 to 24 ms (docs/performance.md). Only while someone waits: when frames flow both ways
    # (pipelined asynchronous sends) our ACKs ride on them, and a pure ACK per received segment instead cost
    # ActiveMQ a quarter of its asynchronous publish rate. Linux leaves quick-ACK mode by itself, so the
    # reader re-arms it after every read while a synchronous request waits (``quick=True``). A sender blocked
    # on its full send window is not one: that is pipelined sending, where quick ACKs cost the rate. Every
    # waiter, synchronous or not, has the frames held for coalescing written at once (:func:`may_coalesce`).
    #
    # And only once the broker has delivered a MESSAGE on the connection. Before, the broker sends nothing but
    # answers (and heart-beats), each of which our next frame acknowledges: nothing of its is unacknowledged
    # when it writes a receipt, so Nagle holds nothing back, and a quick ACK only adds a pure ACK packet per
    # receipt. Synchronous sends of a producer-only connection on ActiveMQ, alternating: 5-22 µs less client
    # CPU per send without, latency as low or lower (p99 0.46-0.61 against 0.61-2.73 ms; docs/performance.md).

    def waiting_begins(self, *, quick: bool = False) -> bool:
        """A caller blocks until an answer arrives: a synchronous request (``quick``), a deferred receipt's wait,
        a session's full send window or its sends draining (Wire.awaiting_answers). Returns whether quick ACKs
        were armed for it: what the caller passes to :meth:`waiting_ends` as ``quick``."""
        quick = quick and self._quick_ack and self._delivered_to
        if self._batch:  # what the caller waits for may be behind frames held for the flusher
            self._flush_now.set()
        if not quick:
            return False
        with self._waiters_lock:
            self._quick_waiters += 1
        self._arm_quick_ack()
        return True

    def waiting_ends(self, *, quick: bool = False) -> None:
        """The wait :meth:`waiting_begins` began is over; ``quick``: what it returned."""
        if not quick:
            return
        with self._waiters_lock:
            self._quick_waiters -= 1

    def _arm_quick_ack(self) -> None:
        sock = self._sock
        if sock is not None and _TCP_QUICKACK is not None:
            with contextlib.suppress(OSError):  # closed under us: the reader sees that on its next recv
                sock.setsockopt(socket.IPPROTO_TCP, _TCP_QUICKACK, 1)

    # -- reading -------------------------------------------------------------------------------------------

    def _read_loop(self) -> None:
        reason: str | None = None
        try:
            reason = self._read_until_end()
        except BaseException as exc:  # a bug in an owner's callback must still end the connection once
            reason = f"the reader failed: {exc!r}"
            raise
        finally:
            try:
                self._end(reason)
            finally:
                self._release()

    def _read_until_end(self) -> str | None:
        """Read and dispatch until the connection ends. Returns why jmslike ends it (a protocol violation, or
        the kernel's time bound jmslike set: :func:`kernel_gave_up`), or None when it was not jmslike's decision:
        the broker closed or reset the stream, answered DISCONNECT, or the connection was aborted."""
        sock = self._sock
        if sock is None:
            return None
        protocol = self._protocol
        blocking = sock.getblocking()
        poller = select.poll()
        poller.register(sock, select.POLLIN | select.POLLERR | select.POLLHUP)
        heartbeats_started = False
        while not self._stop.is_set():
            self._reader_away_since = None  # back at the socket (a heart-beat timeout asks: silence_reason)
            if self._hold is not None and self._hold() and not self._wait_while_held(self._hold):
                return None
            try:
                if blocking:  # plain TCP: wait in recv itself; _end's shutdown wakes it with EOF
                    data: bytes | None = sock.recv(_RECV_BYTES)
                else:
                    with self._io_lock:
                        data = sock.recv(_RECV_BYTES)
            except (BlockingIOError, ssl.SSLWantReadError):
                data = None
            except ssl.SSLWantWriteError:  # TLS must write first (a key update) and the send buffer is full
                if not _wait_until(sock, select.POLLOUT, None):
                    return None
                continue
            except ssl.SSLError as exc:
                if not self._stop.is_set():  # our own shutdown interrupting a read is no TLS failure
                    self.tls_error = str(exc)
                return None
            except OSError as exc:  # reset (the broker's or the network's doing), or the kernel's time bound
                return kernel_gave_up(exc, self._write_timeout_s, protocol.state)
            if self._stop.is_set():  # aborted: what was still queued is not delivered
                return None
            if data is None:
                poller.poll()  # TLS: outside the lock, so writers go on
                continue
            now = time.monotonic()
            self._reader_away_since = now
            if self._quick_waiters:  # no lock: a stale value costs one early or late re-arm
                self._arm_quick_ack()
            with self._proto_lock:
                events = protocol.receive_data(data, now)
                state = protocol.state
            if not self._delivered_to and self._quick_ack:
                self._delivered_to = any(isinstance(event, MessageReceived) for event in events)
            for event in events:
                if isinstance(event, ProtocolViolation):
                    self._dispatch(events, upto=event)
                    return event.reason
            if not heartbeats_started and any(isinstance(event, Connected) for event in events):
                heartbeats_started = True  # before the events: a callback that blocks is then still watched
                self._start_heartbeats()
            self._dispatch(events)
            if not data or state == "closed":
                # The broker closed the stream, answered DISCONNECT, or refused CONNECT (the event says so).
                return None
        return None

    def forget(self, receipt_ids: list[str]) -> None:
        """Receipts the broker will never send (StompProtocol.forget)."""
        with self._proto_lock:
            self._protocol.forget(receipt_ids)

    def wake_reader(self) -> None:
        """Have a reader that holds back (``hold``) ask again; from any thread."""
        self._resume.set()

    def _wait_while_held(self, hold: Callable[[], bool]) -> bool:
        """Read nothing while ``hold()`` says so (the kernel's buffers fill, TCP holds the broker back); the
        broker's silence is not measured meanwhile. False when the connection is being ended."""
        with self._proto_lock:
            self._protocol.hold_reading(True, time.monotonic())
        try:
            while True:
                self._resume.clear()  # before looking at _stop: abort()'s wake-up after it must not be lost
                if self._stop.is_set():
                    return False
                if not hold():
                    return True
                self._resume.wait()
        finally:
            with self._proto_lock:
                self._protocol.hold_reading(False, time.monotonic())

    def _dispatch(self, events: list[Event], upto: Event | None = None) -> None:
        for event in events:
            if event is upto:
                return
            self._on_event(event)

    # -- heart-beats ---------------------------------------------------------------------------------------

    def _start_heartbeats(self) -> None:
        with self._proto_lock:
            wanted = self._protocol.send_every_s or self._protocol.expect_every_s
        if wanted:
            threading.Thread(
                target=self._heartbeat_loop, name=f"jmslike-heartbeat-{self._host[1]}", daemon=True
            ).start()

    def _heartbeat_loop(self) -> None:
        """Write a heart-beat when one is due, end the connection when the broker has gone silent."""
        protocol = self._protocol
        while not self._stop.is_set():
            # Before the silence: a reader coming back in between leaves the earlier value, not a fresh one.
            away_since = self._reader_away_since  # no lock: a stale value is at most one recv old
            now = time.monotonic()
            with self._proto_lock:
                silent = protocol.peer_silent(now)
                deadline = protocol.next_deadline(now)
            if silent:
                away_s = None if away_since is None else now - away_since
                unread = unread_bytes(self._sock) if away_s is not None else None
                with self._proto_lock:
                    reason = protocol.silence_reason(away_s, unread)
                self.abort(reason)
                return
            if deadline is None:
                return
            stalled: str | None = None
            closed = False
            if self._write_lock.acquire(blocking=False):  # a writer holding it is writing: that counts
                try:
                    with self._proto_lock:
                        beat = protocol.heartbeat_due(time.monotonic())
                    if beat:
                        self._write_all(self._batch.before(beat), self._write_timeout_s)
                except SocketClosed:
                    closed = True
                except WriteStalled as exc:
                    stalled = str(exc)
                finally:
                    self._write_lock.release()
            if closed:
                # Ended here, as the flusher does: the reader may not notice (held while the consumers' buffer is
                # full, it polls nothing), and nothing else would report the loss or start a reconnect.
                self.abort()
                return
            if stalled is not None:
                self.abort(stalled)
                return
            with self._proto_lock:
                deadline = protocol.next_deadline(time.monotonic())
            if deadline is None:
                return
            self._stop.wait(max(0.01, deadline - time.monotonic()))

    # -- the end -------------------------------------------------------------------------------------------

    def _end(self, reason: str | None) -> None:
        """The connection is over: say so once, with the frames that got no answer."""
        with self._end_lock:
            if self._ended:
                return
            self._ended = True
            if self._abort_reason is not None:  # abort() asked the reader to end it: its reason stands
                reason = self._abort_reason
        self._shutdown()
        with self._proto_lock:
            unanswered = self._protocol.connection_lost()
        log_end(self._host, reason)
        self._on_closed(reason, unanswered)

    def _shutdown(self) -> None:
        """Wake the reader (EOF), any writer (EPIPE) and the heart-beat thread; the descriptor stays ours until
        :meth:`_release`."""
        self._stop.set()
        self._resume.set()  # a reader holding back (jmslike.flow) sees the stop
        self._flush_wake.set()  # the flusher sees the stop
        self._flush_now.set()
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                # The TCP shutdown itself: SSLSocket.shutdown would first drop its SSL object, without the I/O
                # lock, and the reader would then read TLS records as plain bytes.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def _release(self) -> None:
        """Close the socket, once nothing can still use it.

        A descriptor number goes to the next socket the process opens. Closing one while another thread is
        still inside a read lets that read land on the new connection: stomp.py's close did that, and a TLS
        reader (OpenSSL reads by number) took the first 5 bytes, one TLS record header, of the next
        connection's answer. So the socket is closed by the reader on its way out, or by the closing thread
        once the reader has ended, and always under both locks (no writer is inside a send)."""
        reader = self._reader
        if reader is not None and reader.is_alive() and reader is not threading.current_thread():
            return
        locked = self._write_lock.acquire(timeout=self._write_timeout_s)
        try:
            with self._io_lock:
                sock, self._sock = self._sock, None
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.close()
        finally:
            if locked:
                self._write_lock.release()


# Registered at import, not at the first held frame: exit handlers run in the reverse order of registration, so one
# the application registers later (after importing jmslike) runs before this and its held frames are written here;
# and a hook registered while exit handlers run is never called (a first held frame sent from an exit handler).
StompSocket.install_process_hooks()

"""The STOMP transport: a thin, typed shell around stomp.py, and the only module that imports it.

What it adds to stomp.py is what JMS needs and stomp.py leaves to callers:

- every frame that must be confirmed carries a receipt, and the caller waits on that receipt with a
  deadline; an ERROR frame answering the receipt fails exactly that call (errors are matched to the
  frame that caused them, on the thread that sent it);
- the receiver thread never runs user code: it hands MESSAGE frames to a sink, resolves receipts, and
  reports a lost connection once;
- a connection lost while calls wait for receipts fails those calls at once instead of letting them
  run into their timeouts;
- what the broker sends is read by :class:`~jmslike.adapters.stomp_reader.FrameDecoder`, bounded by
  ``max_frame_bytes`` / ``max_header_bytes``, instead of stomp.py's unbounded buffer; a malformed or
  oversized frame drops the connection and the reason reaches the application (``ConnectionLostException``
  whose message says what the peer sent), instead of stomp.py's silent skip of the frame;
- TLS is set up here, not by stomp.py: one ``ssl.SSLContext`` that verifies the broker's certificate
  against ``ssl_ca_file`` (or the system CAs) and its host name (unless ``ssl_check_hostname=false``), an
  optional client certificate, and a failed handshake is a ``JMSSecurityException`` at once -- there is no
  retry and never a fall-back to plain TCP;
- on the hot path stomp.py is only the socket and heart-beat owner: frames are encoded by
  :mod:`~jmslike.adapters.stomp_writer` and MESSAGE, RECEIPT and heart-beat frames go from the decoder
  straight to the wire, skipping stomp.py's per-frame listener walks (measured in docs/performance.md);
- where the adapter asks (ActiveMQ, whose transport writes with Nagle's algorithm on), the socket sends TCP
  ACKs at once while a caller waits for a receipt, instead of letting Linux delay them;
- stomp.py's DEBUG log of the CONNECT frame would show the passcode (its redaction pattern misses
  ``passcode:secret``); :class:`_RedactConnectFrames` replaces that log line.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import logging
import selectors
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import stomp
import stomp.connect
import stomp.exception
import stomp.protocol
import stomp.transport
import stomp.utils

from jmslike.adapters.stomp_core import error_text, wire_headers
from jmslike.adapters.stomp_reader import HEARTBEAT, DecodedFrame, FrameDecodeError, FrameDecoder
from jmslike.adapters.stomp_writer import encode_frame
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


class _RedactConnectFrames(logging.Filter):
    """stomp.py logs every frame it sends at DEBUG; the CONNECT frame's passcode must not reach a log."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == "sending frame: %s" and "passcode" in str(record.args):
            record.msg = "sending frame: CONNECT (not shown: it carries the passcode)"
            record.args = None
        return True


logging.getLogger("stomp.py").addFilter(_RedactConnectFrames())

# The receive path below replaces BaseTransport.__read_frames (name-mangled, hence the spelling); fail at
# import, not silently at run time, if a stomp.py release renames it.
_READ_FRAMES = "_BaseTransport__read_frames"
if not hasattr(stomp.transport.BaseTransport, _READ_FRAMES):  # pragma: no cover - stomp.py upgrade guard
    raise ImportError(
        f"stomp.py {stomp.__version__}: BaseTransport has no {_READ_FRAMES}; jmslike needs updating"
    )


class TLSConnectError(stomp.exception.ConnectFailedException):  # type: ignore[misc]
    """The TLS handshake failed (certificate, host name, protocol); ``cause`` is the ssl error."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class SocketConnectError(stomp.exception.ConnectFailedException):  # type: ignore[misc]
    """The TCP connection could not be made; ``cause`` is the OSError."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


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


_RECV_BYTES = 64 * 1024
# Linux only; elsewhere the option is not there and ``quick_ack`` does nothing.
_TCP_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)
#: How long a disconnect waits for the io thread to end before leaving the close to it (see disconnect_socket).
_READER_EXIT_WAIT_S = 1.0
#: How long receipts are held after an ERROR frame that answered no receipt (see StompWire.handle_receipt).
_HOLD_AFTER_ERROR_S = 0.5
#: TCP keepalive on every connection: a broker that turned heart-beats off (``heart-beat:0,0``) and then
#: vanished without a FIN (host down, cable cut) is noticed within about idle + interval x count seconds,
#: instead of never, so a blocked ``receive()`` ends with a ConnectionLostException.
KEEPALIVE_IDLE_S = 10
KEEPALIVE_INTERVAL_S = 5
KEEPALIVE_COUNT = 3


def bound_socket_in_time(sock: socket.socket, write_timeout_s: float) -> None:
    """Put the kernel's limits on a connected socket (Linux; elsewhere what exists of them).

    * ``SO_SNDTIMEO``: no single ``send()`` blocks for long, so :meth:`BoundedTransport.send` can give up on a
      frame the peer does not take within ``write_timeout_s`` (a broker that stops reading must not hang
      ``send``, ``acknowledge`` or ``close``). Reads are untouched: the reader thread blocks in ``recv`` by design.
    * ``TCP_USER_TIMEOUT``: data the peer has not acknowledged for twice that long aborts the connection (twice:
      a peer that stops reading is then reported by the blocked write, which knows what it was writing).
    * keepalive: see :data:`KEEPALIVE_IDLE_S`.
    """
    # Each send() call blocks at most a quarter of the deadline (it returns what it wrote so far, or EAGAIN);
    # BoundedTransport.send checks the deadline of the whole frame between calls.
    slice_s = write_timeout_s / 4
    seconds = int(slice_s)
    micros = int((slice_s - seconds) * 1_000_000)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", seconds, micros))
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


class BoundedTransport(stomp.transport.Transport):  # type: ignore[misc]
    """stomp.py's transport with jmslike's socket set-up (TLS) and bounded frame reader.

    One host per transport (the wire above handles failover); stomp.py's own retry loop is not used.
    """

    def __init__(
        self,
        host: tuple[str, int],
        *,
        timeout_s: float,
        vhost: str,
        max_frame_bytes: int,
        max_header_bytes: int,
        context: ssl.SSLContext | None,
        quick_ack: bool = False,
        write_timeout_s: float = 30.0,
    ) -> None:
        super().__init__(
            [host],
            prefer_localhost=False,
            try_loopback_connect=False,
            timeout=timeout_s,
            vhost=vhost,
            auto_decode=False,
        )
        self.socket: socket.socket | None = None
        self.current_host_and_port: tuple[str, int] | None = None
        self._jl_host = host
        self._jl_timeout_s = timeout_s
        self._jl_write_timeout_s = write_timeout_s
        self._jl_context = context
        self._jl_quick_ack = quick_ack and _TCP_QUICKACK is not None
        self._jl_quick_waiters = 0
        self._jl_quick_lock = threading.Lock()
        self._jl_decoder = FrameDecoder(max_frame_bytes, max_header_bytes)
        self._jl_closing = False
        #: Why the reader dropped the connection (a malformed or oversized frame), for the error raised above.
        self.protocol_error: str | None = None
        #: A TLS error after the handshake (TLS 1.3: the broker refusing our client certificate).
        self.tls_error: str | None = None
        #: Set by the wire: takes a frame straight from the decoder, True if it handled it; what it leaves
        #: goes through stomp.py's ``process_frame`` and listeners.
        self.frame_sink: Callable[[DecodedFrame], bool] | None = None

    def attempt_connection(self) -> None:
        self.connection_error = False
        host, port = self._jl_host
        try:
            sock = socket.create_connection((host, port), self._jl_timeout_s)
        except OSError as exc:
            raise SocketConnectError(exc) from exc
        if self._jl_context is not None:
            try:
                sock = self._jl_context.wrap_socket(sock, server_hostname=host)
            except (ssl.SSLError, ssl.CertificateError) as exc:
                sock.close()
                raise TLSConnectError(exc) from exc
            except TimeoutError as exc:
                # TCP works but no TLS answer: most likely a plain STOMP port. Never fall back to plain.
                sock.close()
                raise TLSConnectError(
                    TimeoutError(
                        f"no TLS handshake answer within {self._jl_timeout_s:.1f}s (is this a TLS port?)"
                    )
                ) from exc
            except OSError as exc:  # reset during the handshake
                sock.close()
                raise SocketConnectError(exc) from exc
            # As stomp.py does for TLS: non-blocking socket, writes go through the io thread's queue,
            # so reads and writes never run on the same SSL object from two threads.
            self.send_queue = stomp.transport.PollableQueue()
            self.sel = selectors.DefaultSelector()
            self.sel.register(self.send_queue, selectors.EVENT_READ)
            self.sel.register(sock, selectors.EVENT_READ)
            self.blocking = False
            sock.setblocking(False)
        else:
            sock.settimeout(None)
        bound_socket_in_time(sock, self._jl_write_timeout_s)
        self.socket = sock
        self.current_host_and_port = self._jl_host

    # Quick TCP ACKs while a caller waits for a receipt.
    #
    # ActiveMQ Classic's TCP transport leaves Nagle's algorithm on (``tcpNoDelay=false``): a small frame it
    # writes while an earlier one is unacknowledged waits for our TCP ACK, which Linux delays (up to 40 ms).
    # A CLIENT_ACKNOWLEDGE ``acknowledge()`` waits for such a receipt every time; quick ACKs took its receipt
    # p90 from 45 to 24 ms (docs/performance.md). Only while someone waits: when frames flow both ways
    # (pipelined asynchronous sends) our ACKs ride on them, and a pure ACK per received segment instead cost
    # ActiveMQ a quarter of its asynchronous publish rate. Linux leaves quick-ACK mode by itself, so the
    # reader re-arms it after every read while the count of waiters is above zero.

    def quick_ack_begin(self) -> None:
        if self._jl_quick_ack:
            with self._jl_quick_lock:
                self._jl_quick_waiters += 1
            self._arm_quick_ack()

    def quick_ack_end(self) -> None:
        if self._jl_quick_ack:
            with self._jl_quick_lock:
                self._jl_quick_waiters -= 1

    def _arm_quick_ack(self) -> None:
        sock = self.socket
        if sock is not None and _TCP_QUICKACK is not None:
            with contextlib.suppress(OSError):  # closed under us: the reader sees that on its next recv
                sock.setsockopt(socket.IPPROTO_TCP, _TCP_QUICKACK, 1)

    def send(self, encoded_frame: bytes) -> None:
        """stomp.py's socket write (plain TCP), with a deadline for the whole frame: ``BlockingIOError`` (EAGAIN)
        when the peer has not taken it within the write timeout, part of it possibly written. TLS writes go
        through stomp.py's io thread, which never blocks a caller. The socket is read under the write lock, so
        a socket being released (:meth:`_release_socket`) is never written after it is closed."""
        if not self.blocking:
            super().send(encoded_frame)
            return
        deadline = time.monotonic() + self._jl_write_timeout_s
        # stomp.py's own lock (its heart-beat thread writes too), taken with the same deadline.
        lock = self._write_lock()
        if not lock.acquire(timeout=self._jl_write_timeout_s):
            raise BlockingIOError(errno.EAGAIN, "another write to the broker has been blocked too long")
        sock = self.socket
        if sock is None:
            lock.release()
            super().send(encoded_frame)  # stomp.py's answer to a write without a socket (NotConnected)
            return
        try:
            view = memoryview(encoded_frame)
            while view:
                with contextlib.suppress(BlockingIOError):  # SO_SNDTIMEO's slice ran out with nothing written
                    view = view[sock.send(view) :]
                if view and time.monotonic() >= deadline:
                    raise BlockingIOError(errno.EAGAIN, "the broker took no data before the write deadline")
        finally:
            lock.release()

    def _write_lock(self) -> threading.BoundedSemaphore:
        lock: threading.BoundedSemaphore = self._Transport__socket_semaphore
        return lock

    # Closing without giving the descriptor back too early.
    #
    # A descriptor number is reused by the next socket the process opens. stomp.py closes the socket from
    # whichever thread disconnects while its io thread may still be inside a read, and OpenSSL reads by number:
    # a TLS reader that outlived its close took the first 5 bytes (one TLS record header) of the next
    # connection's answer, and that connection saw an ERROR frame without "ERROR" (seen in CI on ActiveMQ, and
    # 23 times in 700 TLS-then-plain refused CONNECTs under CPU load). So a socket is shut down first (its
    # reader wakes with EOF, its writers with EPIPE, the number stays ours), and closed only by the io thread,
    # or by the disconnecting thread once the io thread has ended, always under the write lock.

    def disconnect_socket(self) -> None:
        """stomp.py's disconnect without the early close (above) and without the TLS close_notify, which would
        run the SSL object on this thread while the io thread reads it."""
        self.running = False
        self._jl_closing = True
        sock = self.socket
        if sock is not None:
            if not self.blocking:
                self.shutdown_queue()
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            reader: threading.Thread | None = getattr(self, "io_thread", None)
            if reader is not None and reader is not threading.current_thread():
                reader.join(_READER_EXIT_WAIT_S)
            if reader is None or not reader.is_alive() or reader is threading.current_thread():
                self._release_socket()
            # else: the io thread is still in a listener; it releases the socket on its way out (cleanup).
        self.current_host_and_port = None
        if not self.notified_on_disconnect:
            self.notify("disconnected")

    def cleanup(self) -> None:
        """On the io thread when it stops reading (stomp.py's hook): release the socket."""
        if not self.blocking:
            self.shutdown_queue()
        self._release_socket()

    def _release_socket(self) -> None:
        sock = self.socket
        if sock is None:
            return
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)  # a writer blocked in send() returns now and lets go of the lock
        lock = self._write_lock()
        locked = lock.acquire(timeout=self._jl_write_timeout_s)
        try:
            with contextlib.suppress(OSError):
                sock.close()
            self.socket = None
        finally:
            if locked:
                lock.release()

    def _dispatch(self, frames: list[DecodedFrame]) -> None:
        sink = self.frame_sink
        for frame in frames:
            if sink is not None and sink(frame):
                continue
            if frame is HEARTBEAT:
                self.process_frame(stomp.utils.HEARTBEAT_FRAME, b"\n")
            else:
                self.process_frame(stomp.utils.Frame(frame.command, frame.headers, frame.body), frame.body)

    def _drop(self, reason: str) -> None:
        self.protocol_error = reason
        log.warning("dropping the connection to %s:%s: %s", self._jl_host[0], self._jl_host[1], reason)
        raise stomp.exception.ConnectionClosedException()

    def receive(self) -> bytes:
        # stomp.py's version returns None for any socket error before CONNECTED, which hides the TLS
        # alert a broker sends when it refuses our client certificate; errors are handled by the reader.
        sock = self.socket
        if sock is None:
            raise stomp.exception.ConnectionClosedException()
        data: bytes = sock.recv(_RECV_BYTES)
        if self._jl_quick_waiters:  # read without the lock: a stale value costs one early or late re-arm
            self._arm_quick_ack()
        return data

    def _BaseTransport__read_frames(self) -> None:
        """Replaces stomp.py's private reader: bounded decoding, EOF seen on TLS sockets too."""
        while self.running:
            try:
                data = self.receive()
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                return
            except InterruptedError:
                continue
            except ssl.SSLError as exc:
                if not self._jl_closing:  # our own shutdown() interrupting a read is no TLS failure
                    self.tls_error = str(exc)
                log.debug("TLS read failed: %s", exc)
                raise stomp.exception.ConnectionClosedException() from exc
            except OSError as exc:
                log.debug("socket read failed: %s", exc)
                raise stomp.exception.ConnectionClosedException() from exc
            if not data:
                # EOF. (stomp.py 9 misses it on TLS sockets and spins until the heart-beat times out.)
                raise stomp.exception.ConnectionClosedException()
            try:
                frames = self._jl_decoder.feed(data)
            except FrameDecodeError as exc:
                self._dispatch(exc.frames)
                self._drop(str(exc))
            self._dispatch(frames)
            if self.blocking:
                return


class _Connection11(stomp.connect.StompConnection11):  # type: ignore[misc]
    def __init__(self, transport: BoundedTransport, heartbeats: tuple[int, int]) -> None:
        stomp.connect.BaseConnection.__init__(self, transport)
        stomp.protocol.Protocol11.__init__(self, transport, heartbeats, auto_content_length=False)


class _Connection12(stomp.connect.StompConnection12):  # type: ignore[misc]
    def __init__(self, transport: BoundedTransport, heartbeats: tuple[int, int]) -> None:
        stomp.connect.BaseConnection.__init__(self, transport)
        stomp.protocol.Protocol12.__init__(self, transport, heartbeats, auto_content_length=False)


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
        stomp_version: str,
        events: WireEvents,
        error_for: ErrorMapper,
        default_vhost: str | None = None,
        quick_ack: bool = False,
    ) -> None:
        self._config = config
        self._host = host
        self._events = events
        self._error_for = error_for
        self._version = stomp_version
        self._prefix = f"r{next(self._ids)}-"
        self._receipt_ids = itertools.count(1)
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
        heartbeat = config.heartbeat_ms
        self._transport = BoundedTransport(
            host,
            timeout_s=config.connect_timeout_ms / 1000,
            vhost=config.vhost or default_vhost or host[0],
            max_frame_bytes=config.max_frame_bytes,
            max_header_bytes=config.max_header_bytes,
            context=tls_context(config) if config.ssl else None,
            quick_ack=quick_ack,
            write_timeout_s=config.receipt_timeout_ms / 1000,
        )
        conn_class: type[Any] = _Connection12 if stomp_version == "1.2" else _Connection11
        self._conn: Any = conn_class(self._transport, (heartbeat, heartbeat))
        self._conn.set_listener("jmslike", _Listener(self))
        self._transport.frame_sink = self._take_frame
        self._disconnect_receipt: str | None = None

    # -- connection lifecycle -------------------------------------------------------------------------

    def open(self, headers: Mapping[str, str]) -> dict[str, str]:
        """Connect and wait for CONNECTED; return its headers. Errors are mapped, never hang."""
        creds = self._config.credentials
        where = f"{self._host[0]}:{self._host[1]}"
        try:
            self._conn.connect(creds.user, creds.password, wait=False, headers=dict(headers))
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
        except stomp.exception.ConnectFailedException as exc:
            raise ConnectionLostException(
                f"cannot reach broker at {where} ({self._config.scheme}): connection refused or timed out; "
                "check that the broker runs and the port is its STOMP port"
            ) from exc
        except (OSError, ssl.SSLError, stomp.exception.NotConnectedException, AttributeError) as exc:
            # NotConnected/AttributeError: the receiver thread tore the connection down (a TLS alert
            # right after the handshake) before CONNECT was handed over; it records why first.
            if self._transport.tls_error is not None:
                raise JMSSecurityException(
                    f"TLS session with {where} failed during CONNECT: {self._transport.tls_error}; if the broker "
                    "requires a client certificate, give one signed by a CA it trusts (ssl_cert_file, ssl_key_file)"
                ) from exc
            raise self._socket_error(where, exc) from exc
        deadline = self._config.connect_timeout_ms / 1000
        if not self._connected.wait(deadline):
            self._abandon()
            raise JMSTimeoutException(f"broker at {where} did not answer CONNECT within {deadline:.1f}s")
        tls_error = self._transport.tls_error
        if tls_error is not None and self._connected_headers == {}:
            self._abandon()
            raise JMSSecurityException(
                f"TLS session with {where} failed during CONNECT: {tls_error}; if the broker requires a "
                "client certificate, give one signed by a CA it trusts (ssl_cert_file, ssl_key_file)"
            )
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

    def _socket_error(self, where: str, exc: BaseException) -> JMSException:
        if isinstance(exc, ssl.SSLError):
            return JMSSecurityException(f"TLS handshake with {where} failed: {exc}")
        return ConnectionLostException(f"cannot reach broker at {where}: {exc}")

    def _abandon(self) -> None:
        self._closing = True
        try:
            self._conn.disconnect()
        except Exception:
            log.debug("disconnect after failed connect raised", exc_info=True)
        # stomp.py's disconnect does nothing before CONNECTED, which would leave the socket open and
        # the receiver thread blocked on a peer that never answered: close it ourselves.
        try:
            self._transport.disconnect_socket()
        except Exception:
            log.debug("socket close after failed connect raised", exc_info=True)

    def close(self, timeout_s: float = 5.0) -> None:
        """Graceful DISCONNECT (with receipt, so queued frames are flushed), then drop the socket."""
        if self._closing:
            return
        self._closing = True
        if self._lost:
            self._fail_all(ConnectionLostException("connection closed"))
            return
        try:
            receipt = self._next_receipt()
            self._disconnect_receipt = receipt
            pending = _Pending(Frame("DISCONNECT"), None)
            with self._lock:
                self._pending[receipt] = pending
            self._conn.disconnect(receipt=receipt)
            pending.done.wait(timeout_s)
        except Exception:
            log.debug("disconnect failed", exc_info=True)
        finally:
            self._fail_all(ConnectionLostException("connection closed"))
            try:
                self._conn.transport.disconnect_socket()
            except Exception:
                log.debug("socket close failed", exc_info=True)

    def kill_socket(self) -> None:
        """Drop the TCP connection without DISCONNECT (tests of recovery, failover)."""
        self._conn.transport.disconnect_socket()

    @property
    def host(self) -> tuple[str, int]:
        """The broker host and port this wire is connected to."""
        return self._host

    @property
    def is_open(self) -> bool:
        return self._connected.is_set() and not self._lost and not self._closing

    # -- frames ---------------------------------------------------------------------------------------

    def _next_receipt(self) -> str:
        return f"{self._prefix}{next(self._receipt_ids)}"

    def _transmit(self, frame: Frame, receipt: str | None) -> None:
        self._write(frame.command, wire_headers(frame, receipt), frame.body)

    def _write(self, command: str, headers: Mapping[str, str], body: bytes) -> None:
        """Encode the frame here (stomp_writer) and hand the bytes to stomp.py's socket writer, which
        serialises them with its heart-beats; CONNECT and DISCONNECT never come this way."""
        data = encode_frame(command, headers, body, self._version)
        transport = self._transport
        try:
            if transport.blocking:
                transport.send(data)
            else:
                # TLS: stomp.py's io thread owns the SSL object and writes what its queue hands it.
                transport.send_queue.put(data)
        except (stomp.exception.NotConnectedException, OSError, AttributeError) as exc:
            # AttributeError: on TLS, stomp.py sets that queue to None once the connection is gone.
            if isinstance(exc, OSError) and exc.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.ETIMEDOUT):
                # SO_SNDTIMEO or TCP_USER_TIMEOUT ran out (bound_socket_in_time). Part of the frame may be on
                # the wire, so the stream is unusable: drop it; the reader reports the loss to every waiter.
                reason = (
                    f"could not write {command} within {self._config.receipt_timeout_ms / 1000:.1f}s "
                    "(receipt_timeout_ms): the broker stopped reading or is unreachable"
                )
                transport.protocol_error = reason  # what every waiter hears when the reader reports the loss
                with contextlib.suppress(Exception):
                    transport.disconnect_socket()
                raise ConnectionLostException(f"jmslike dropped the connection: {reason}") from exc
            raise ConnectionLostException(f"connection lost while sending {command}") from exc

    def _check_usable(self, frame: Frame) -> None:
        if self._lost or self._closing:
            raise ConnectionLostException(f"cannot send {frame.command}: the connection is closed or lost")

    def request(self, frame: Frame, timeout_s: float | None = None) -> None:
        """Send ``frame`` with a receipt and wait; raise the mapped exception on ERROR or timeout."""
        transport = self._transport
        transport.quick_ack_begin()
        try:
            pending = self.submit(frame, None)
            timeout = self._config.receipt_timeout_ms / 1000 if timeout_s is None else timeout_s
            if not pending.done.wait(timeout):
                raise JMSTimeoutException(f"no receipt for {frame.command} within {timeout:.1f}s")
        finally:
            transport.quick_ack_end()
        if pending.error is not None:
            raise pending.error

    def submit(self, frame: Frame, callback: Callable[[JMSException | None], None] | None) -> _Pending:
        """Send with a receipt, return at once; ``callback`` runs on the receiver thread when answered.

        Exactly one outcome: either this raises and ``callback`` never runs, or it returns and ``callback``
        runs once. A write that fails because the connection just died races the receiver thread, which
        fails every pending receipt (``_fail_all``): if it took this one first, its ``callback`` reports
        the loss and this returns normally (raising too would settle the send twice)."""
        self._check_usable(frame)
        receipt = self._next_receipt()
        pending = _Pending(frame, callback)
        with self._lock:
            self._pending[receipt] = pending
        try:
            self._transmit(frame, receipt)
        except JMSException:
            with self._lock:
                still_ours = self._pending.pop(receipt, None) is not None
            if still_ours:
                raise
        return pending

    def post(self, frame: Frame) -> None:
        """Send without a receipt."""
        self._check_usable(frame)
        self._transmit(frame, None)

    # -- called on the receiver thread -----------------------------------------------------------------

    def _take_frame(self, frame: DecodedFrame) -> bool:
        """MESSAGE, RECEIPT and heart-beat frames come here straight from the decoder: stomp.py's
        ``process_frame`` walks a sorted copy of its listener table twice per MESSAGE (and once per
        heart-beat, which ActiveMQ sends after every frame), a visible share of the receive path's time
        per message. CONNECTED, ERROR and DISCONNECT's receipt still go through stomp.py, which changes
        its own state on them. Any frame proves the broker alive, as stomp.py's heart-beat listener
        would have noted."""
        if frame is HEARTBEAT:
            self._broker_alive()
            return True
        command = frame.command
        if command == "MESSAGE":
            self._broker_alive()
            self._events.on_message(Frame("MESSAGE", frame.headers, frame.body))
            return True
        if command == "RECEIPT":
            receipt = frame.headers.get("receipt-id", "")
            if receipt == self._disconnect_receipt:
                return False
            self._broker_alive()
            self.handle_receipt(receipt)
            return True
        return False

    def _broker_alive(self) -> None:
        # What stomp.py's HeartbeatListener does for every received frame (a grace period set at
        # CONNECTED is kept: the time only moves forward).
        heartbeat = self._conn
        last = heartbeat.received_heartbeat
        if last is not None:
            now = time.monotonic()
            if now > last:
                heartbeat.received_heartbeat = now

    def handle_connected(self, frame: Any) -> None:
        self._connected_headers = dict(frame.headers)
        self._connected.set()

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

    def handle_error(self, frame: Any) -> None:
        headers: dict[str, str] = dict(frame.headers)
        body = frame.body if isinstance(frame.body, bytes) else str(frame.body).encode("utf-8", "replace")
        text = error_text(headers, body)
        if not self._connected.is_set():
            self._connect_error = text
            self._connected.set()
            return
        receipt = headers.get("receipt-id")
        pending = None
        if receipt is not None:
            with self._lock:
                pending = self._pending.pop(receipt, None)
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

    def handle_disconnected(self) -> None:
        if self._lost:
            return
        self._lost = True
        reason = self._transport.protocol_error
        if not self._connected.is_set():
            self._closed_silently = reason is None
            self._connect_error = (
                f"jmslike dropped the connection during CONNECT: {reason}"
                if reason
                else "connection closed by the broker during CONNECT"
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
            if item.frame.command == "DISCONNECT":
                item.finish(None)
            else:
                item.finish(error)


class _Listener(stomp.ConnectionListener):  # type: ignore[misc]
    """Bridges stomp.py callbacks (receiver thread) to the wire; never runs user code."""

    def __init__(self, wire: StompWire) -> None:
        self._wire = wire

    def on_connected(self, frame: Any) -> None:
        self._wire.handle_connected(frame)

    def on_receipt(self, frame: Any) -> None:
        self._wire.handle_receipt(frame.headers.get("receipt-id", ""))

    def on_error(self, frame: Any) -> None:
        self._wire.handle_error(frame)

    def on_disconnected(self) -> None:
        self._wire.handle_disconnected()

    def on_heartbeat_timeout(self) -> None:
        log.warning("heart-beat timeout: the broker stopped answering")

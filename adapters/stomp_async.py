"""The asyncio driver of the sans-IO STOMP core: one connection's stream, reader task and heart-beats.

The second driver of :mod:`~jmslike.adapters.stomp_core` (issue #20), beside the threaded
:mod:`~jmslike.adapters.stomp_socket`, and the base an asyncio wire and ``jmslike.aio`` stand on. It keeps
the threaded driver's rules, the asyncio way:

- no threads: the connection is the transport's :class:`asyncio.Protocol`, so a read is parsed and its events
  handed on in the transport's own callback (a reader task on a stream took one more turn of the loop per
  read, about a third of a synchronous send's CPU: docs/performance.md); a heart-beat task runs when
  heart-beats are negotiated;
- a frame is encoded and handed to the transport with no ``await`` in between, so frames from concurrent
  coroutines never interleave; :meth:`AsyncStompConnection.send` then waits for the transport's buffer to
  drain, with a deadline for the frame (``write_timeout_s``): a broker that stops reading makes it fail
  (:class:`~jmslike.adapters.stomp_socket.WriteStalled`) and the connection is dropped;
- a frame handed over without waiting (:meth:`AsyncStompConnection.write` with ``coalesce``) while the broker
  owes a receipt for a frame already written joins a batch written at the end of the loop's turn (or by the
  next write of any other frame, in front of it): the threaded driver's rule, :func:`may_coalesce`, with the
  loop's turn for the hold, since nothing else runs on the loop while a coroutine sends without awaiting;
- ``on_event`` gets every protocol event on the loop, in order; it must not block (it is a plain function);
- the connection ends once, and ``on_closed(reason, unanswered)`` says so: ``reason`` is why jmslike dropped
  it (a protocol violation, a silent broker, a stalled write), None when jmslike did not decide it.

The socket errors, their exceptions and the kernel's limits on the socket are the threaded driver's (one home
for each rule): :func:`~jmslike.adapters.stomp_socket.bound_socket_in_time`,
:func:`~jmslike.adapters.stomp_socket.unread_refusal` (what a broker said before it reset a connection CONNECT
could not be written to) and its exception classes.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import ssl
import threading
from collections.abc import Callable, Mapping
from typing import Final, cast

from jmslike.adapters.stomp_core import (
    Connected,
    ConnectRefused,
    Event,
    ProtocolViolation,
    Receipt,
)
from jmslike.adapters.stomp_socket import (
    DriverSettings,
    SendBatch,
    SocketClosed,
    SocketConnectError,
    TLSConnectError,
    WriteStalled,
    bound_socket_in_time,
    bytes_acked,
    kernel_gave_up,
    log_end,
    may_coalesce,
    unread_refusal,
)
from jmslike.contract import Frame

log = logging.getLogger(__name__)

#: The most one read takes: asyncio's own (``max_size``) for a plain protocol. A backlog of 4 KB messages drained
#: 64 KiB at a time ran no better (ActiveMQ, 20,000 messages: 19.5 against 21.4 thousand a second, CPU the same).
READ_BYTES: Final = 256 * 1024

_buffers = threading.local()


def _read_buffer() -> memoryview:
    """The buffer reads land in, one per thread and so shared by the connections of a thread's event loop: the
    loop hands it to one connection at a time (get_buffer, the read and buffer_updated run back to back, on
    asyncio's loop and on uvloop's, TLS or not), and the decoder copies what arrived before anything else runs.
    One per connection would hold 256 KiB for each connection's whole life; a thread that ever ran a connection
    keeps its 256 KiB until it ends."""
    view: memoryview | None = getattr(_buffers, "view", None)
    if view is None:
        view = _buffers.view = memoryview(bytearray(READ_BYTES))
    return view


class AsyncStompConnection(asyncio.BufferedProtocol):
    """One STOMP connection on an asyncio loop: ``await connect()``, then ``await send()`` from any coroutine
    of that loop. Single use: a new connection for every attempt. It is its transport's protocol too
    (``connection_made`` ... ``connection_lost``: asyncio calls those).

    A buffered protocol: the loop reads into a buffer kept for it (:func:`_read_buffer`). Given a plain protocol,
    asyncio allocates 256 KiB for every read and shrinks it to what came, which glibc does with an mmap, an mremap
    and an munmap per read (strace of CompletionListener sends to ActiveMQ, where a read carries a few receipts)."""

    def __init__(
        self,
        settings: DriverSettings,
        *,
        on_event: Callable[[Event], None],
        on_closed: Callable[[str | None, list[Receipt]], None],
        hold: Callable[[], bool] | None = None,
    ) -> None:
        self._host = settings.host
        self._hold = hold  # asked after each read: True stops reading until wake_reader (jmslike.flow)
        self._held = False  # reading paused by hold
        self._context = settings.context
        self._connect_timeout_s = settings.connect_timeout_s
        self._write_timeout_s = settings.write_timeout_s
        self._on_event = on_event
        self._on_closed = on_closed
        self._protocol = settings.new_protocol()
        self._transport: asyncio.Transport | None = None
        self._write_paused = False  # the transport is above its high-water mark (pause_writing)
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._done: asyncio.Future[None] | None = None  # resolved when the connection ends
        # What the transport's callbacks run in: the context connect() was called in, as a reader task's was.
        self._reader_context: contextvars.Context | None = None
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._stall_watch: asyncio.TimerHandle | None = None
        # Bytes handed to the transport, ever: less what it still buffers, what the broker took.
        self._written = 0
        self._coalesce = settings.coalesce_s > 0
        self._batch = SendBatch()  # coalesced frames, written at the end of the loop's turn
        self._flush_scheduled = False
        self._ended = False
        # It ended on a ConnectRefused: the broker's ERROR answering CONNECT, or its silence.
        self._refused = False
        #: A TLS failure after the handshake (TLS 1.3: the broker refusing our client certificate).
        self.tls_error: str | None = None

    # -- lifecycle -----------------------------------------------------------------------------------------

    async def connect(self, vhost: str, headers: Mapping[str, str]) -> None:
        """Open the connection, write CONNECT and read; the answer arrives as an event (Connected or
        ConnectRefused) or as ``on_closed``. Raises ValueError (a header STOMP cannot carry: nothing is opened),
        SocketConnectError, TLSConnectError, WriteStalled."""
        loop = asyncio.get_running_loop()
        data = self._protocol.connect(vhost, headers, loop.time())
        self._done = loop.create_future()
        self._reader_context = contextvars.copy_context()
        host, port = self._host
        try:
            transport, _ = await asyncio.wait_for(
                loop.create_connection(
                    lambda: self,
                    host,
                    port,
                    ssl=self._context,
                    server_hostname=host if self._context is not None else None,
                ),
                self._connect_timeout_s,
            )
        except (ssl.SSLError, ssl.CertificateError) as exc:
            raise TLSConnectError(exc) from exc
        except TimeoutError as exc:
            if self._context is not None:
                raise TLSConnectError(
                    TimeoutError(
                        f"no TCP or TLS handshake answer within {self._connect_timeout_s:.1f}s (is this a TLS port?)"
                    )
                ) from exc
            raise SocketConnectError(exc) from exc
        except OSError as exc:
            raise SocketConnectError(exc) from exc
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                bound_socket_in_time(sock, self._write_timeout_s)
        log.debug("CONNECT to %s:%s, virtual host %r (login and passcode not shown)", host, port, vhost)
        # Closed before create_connection's caller ran again (uvloop: connection_made says why).
        if self._ended:
            self._raise_unless_refused()
            return
        self._put(transport, data)
        if transport.is_closing() and not self._ended and self._context is None:
            # The write failed: the broker reset the connection, maybe after refusing it as it accepted it. Its
            # words are still in the socket's buffer, which asyncio no longer reads.
            refusal = unread_refusal(sock.fileno()) if sock is not None else b""
            if refusal:
                self._received(refusal)
                if self._ended:
                    self._raise_unless_refused()
                    return
        transport.resume_reading()  # CONNECT is written: what the broker says now answers it
        try:
            await self._drain(self._connect_timeout_s)
        except (SocketClosed, WriteStalled):
            self.abort()
            raise

    def _raise_unless_refused(self) -> None:
        """For connect(), when the connection ended before CONNECT could be written or drained: if the broker
        refused it (an ERROR, or a close saying nothing), that went out as a ConnectRefused, the answer, as after
        CONNECT; any other end (bytes that are no STOMP, a reset) raises SocketClosed, as when the drain finds it
        ended, so that the caller learns it the same way on either event loop (the reason went out with on_closed)."""
        if not self._refused:
            raise SocketClosed()

    async def disconnect(self, timeout_s: float) -> None:
        """DISCONNECT with a receipt (everything before it has reached the broker once it answers), wait for
        that answer up to ``timeout_s``, then close."""
        transport = self._transport
        if transport is None or self._ended or self._protocol.state != "connected":
            self.abort()
            return
        loop = asyncio.get_running_loop()
        self._put(transport, self._protocol.disconnect(loop.time()))
        done = self._done
        try:
            await self._drain(timeout_s)
            if done is not None:
                await asyncio.wait_for(asyncio.shield(done), timeout_s)
        except (SocketClosed, WriteStalled, TimeoutError):
            pass
        self.abort()

    def abort(self, reason: str | None = None) -> None:
        """End the connection now, without DISCONNECT (``reason``: why jmslike drops it; None: no failure)."""
        self._end(reason)

    @property
    def is_open(self) -> bool:
        return not self._ended

    # -- writing -------------------------------------------------------------------------------------------

    async def send(
        self, frame: Frame, *, receipt: bool, on_sent: Callable[[Receipt], None] | None = None
    ) -> None:
        """Write ``frame`` (with a receipt when asked: ``on_sent`` gets it before the bytes are handed to the
        transport), then wait until the transport has taken it. Raises SocketClosed, or WriteStalled after the
        write deadline (the connection is then dropped)."""
        self.write(frame, receipt=receipt, on_sent=on_sent)
        await self._drain(self._write_timeout_s)

    async def drained(self) -> None:
        """Wait, under the write deadline, until the transport is back under its low-water mark: for a frame
        handed over by :meth:`write` that took it past its high-water mark. Raises as :meth:`send` does."""
        await self._drain(self._write_timeout_s)

    def write(
        self,
        frame: Frame,
        *,
        receipt: bool = False,
        on_sent: Callable[[Receipt], None] | None = None,
        coalesce: bool = False,
    ) -> None:
        """Hand ``frame`` to the transport now, without waiting for it to drain: for small frames that must not
        be split from what a coroutine does next by a cancellation point (an ACK of a message being returned).
        The next :meth:`send` drains them under its deadline. Raises SocketClosed.

        ``coalesce`` (an unwaited send): the frame may join a batch handed over at the end of the loop's turn
        (:func:`may_coalesce`; ``send_coalesce_us=0`` switches it off)."""
        transport = self._transport
        if transport is None or self._ended or self._protocol.state != "connected":
            raise SocketClosed()
        loop = asyncio.get_running_loop()
        due_written = self._protocol.receipts_due - len(self._batch)
        data, pending = self._protocol.send(frame, loop.time(), receipt=receipt)
        if pending is not None and on_sent is not None:
            on_sent(pending)
        if (
            coalesce
            and self._coalesce
            and may_coalesce(
                coalesce=pending is not None,
                due_written=due_written,
                buffered_bytes=self._batch.bytes,
                frame_bytes=len(data),
                batch_age_s=0.0,  # written at the end of this turn of the loop, before any hold could pass
                since_write_s=0.0,
                hold_s=1.0,
            )
        ):
            self._batch.add(data, 0.0)
            if not self._flush_scheduled:
                self._flush_scheduled = True
                loop.call_soon(self._flush_batch)
            return
        self._put(transport, data)  # no await since encoding: frames never interleave
        self._watch_if_backed_up(transport, loop)

    def _flush_batch(self) -> None:
        """The end of the loop's turn: hand the batch to the transport (unless a write took it already)."""
        self._flush_scheduled = False
        transport = self._transport
        if not self._batch or transport is None or self._ended:
            return
        self._put(transport, b"")
        self._watch_if_backed_up(transport, asyncio.get_running_loop())

    def _watch_if_backed_up(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        if self._stall_watch is None and self._write_paused:
            # Nobody may await these bytes (an ACK from write()): watch that the broker keeps taking them.
            self._stall_watch = loop.call_later(
                self._write_timeout_s, self._check_stall, self._progress(transport)
            )

    @property
    def takes_without_waiting(self) -> bool:
        """Whether the transport is open and not holding writes back (asyncio's ``pause_writing``: from above its
        high-water mark until back down to its low-water mark), so that an awaited :meth:`send` would not wait to
        drain (a frame written now may still take it past the mark). Not once the transport is closing: an awaited
        send then says why (:meth:`_drain`)."""
        transport = self._transport
        return (
            transport is not None
            and not self._ended
            and not self._write_paused
            and not transport.is_closing()
        )

    def _put(self, transport: asyncio.Transport, data: bytes) -> None:
        """Every write goes through here, so that bytes taken can be known where the kernel does not say
        (:meth:`_progress`), and behind the batch of coalesced frames, so that frames keep their order."""
        data = self._batch.before(data)
        transport.write(data)
        self._written += len(data)

    def _progress(self, transport: asyncio.Transport) -> int:
        """A count that grows while the broker takes bytes: what its TCP acknowledged (Linux), else what the
        transport handed to the socket (written, less still buffered: exact for plain TCP, blind under TLS to
        the layer below the TLS buffer, and moving in bursts as the kernel reports the socket writable)."""
        sock = transport.get_extra_info("socket")
        acked = bytes_acked(sock) if sock is not None else None
        if acked is not None:
            return acked
        return self._written - transport.get_write_buffer_size()

    def _check_stall(self, progress_then: int) -> None:
        """The write deadline for bytes nobody awaits: the buffer above its high-water mark, and the broker took
        none of it for ``write_timeout_s``: drop the connection (the same rule as a send's deadline). While a caller
        awaits the drain (:meth:`_drain`), its deadline decides instead.

        Progress is bytes taken (:meth:`_progress`), not the buffer's size: a broker reading slowly but steadily
        while senders keep writing has a buffer that does not shrink, and it is not stalled."""
        self._stall_watch = None
        transport = self._transport
        if transport is None or self._ended or not self._write_paused:
            return
        progress_now = self._progress(transport)
        if progress_now > progress_then or self._drain_waiters:
            # Taking bytes, slowly: watch on. Or a caller awaits the drain under its own deadline, which ends the
            # connection and tells that caller why (WriteStalled); ended here, it would hear only SocketClosed.
            self._stall_watch = asyncio.get_running_loop().call_later(
                self._write_timeout_s, self._check_stall, progress_now
            )
            return
        self.abort(
            f"could not write within {self._write_timeout_s:.1f}s: the broker stopped reading or is unreachable"
        )

    async def _drain(self, timeout_s: float) -> None:
        """Wait until the transport is back under its low-water mark (asyncio's ``pause_writing`` and
        ``resume_writing``), at most ``timeout_s``; at once when writing is not paused."""
        transport = self._transport
        if transport is None or self._ended:
            raise SocketClosed()
        if transport.is_closing():
            if not self._ended:
                # A failed socket write closes the transport and reports its error to connection_lost in the loop's
                # next turn: that turn first, so the end says why (kernel_gave_up) instead of a caller's bare loss.
                await asyncio.sleep(0)
            raise SocketClosed("the connection is closing")
        if not self._write_paused:
            return  # not paused: the transport takes more at once (the hot path)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._drain_waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout_s):
                await waiter
        except TimeoutError as exc:
            self.abort(
                f"could not write within {timeout_s:.1f}s: the broker stopped reading or is unreachable"
            )
            raise WriteStalled(f"the broker took no data for {timeout_s:.1f}s") from exc
        finally:
            self._drain_waiters.remove(waiter)
        if self._ended:
            raise SocketClosed()

    def _wake_drain_waiters(self) -> None:
        for waiter in self._drain_waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- asyncio's calls (asyncio.BufferedProtocol) ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport, though not necessarily an asyncio.Transport subclass: uvloop's (the loop uvicorn runs
        # when it is installed) provide the same methods without deriving from asyncio's classes.
        stream = self._transport = cast(asyncio.Transport, transport)
        # Nothing is read before CONNECT is written (connect() resumes): a broker refusing the connection as it
        # accepts it (an ERROR, or a close) then answers CONNECT, and the refusal keeps its words. On asyncio's loop;
        # uvloop starts reading a plain TCP connection once this returns, whatever it paused, so connect() may find
        # the refusal heard and the connection ended already (_raise_unless_refused).
        stream.pause_reading()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._wake_drain_waiters()

    def get_buffer(self, sizehint: int) -> memoryview:
        """Where the loop's next read goes (:func:`_read_buffer`). A view, not the bytearray: asyncio's TLS read
        fills it in pieces through slices, and a slice of a bytearray is a copy (what went there would be lost)."""
        return _read_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        """The read landed: the core's decoder copies it before this returns, so the buffer is free again."""
        self._received(_read_buffer()[:nbytes])

    def _received(self, data: bytes | memoryview) -> None:
        """A read: its events, in order, to ``on_event``; then stop reading if the consumers hold enough."""
        if self._ended:
            return
        protocol = self._protocol
        events = protocol.receive_data(data, asyncio.get_running_loop().time())
        if protocol.state == "closed":  # the end; maybe the answer to CONNECT (_raise_unless_refused asks)
            self._refused = any(isinstance(e, ConnectRefused) for e in events)
        for event in events:
            if isinstance(event, ProtocolViolation):
                self._dispatch(events, upto=event)
                self._end(event.reason)
                return
        self._dispatch(events)
        if protocol.state == "closed":  # DISCONNECT answered, CONNECT refused (the event says so), or EOF
            self._end(None)
            return
        negotiated = protocol.send_every_s or protocol.expect_every_s
        if negotiated and self._heartbeat_task is None and any(isinstance(e, Connected) for e in events):
            self._heartbeat_task = asyncio.create_task(self._heartbeat_loop())
        if self._hold is not None and not self._ended and self._hold():
            self._pause_reading()

    def eof_received(self) -> bool:
        """The broker closed its side: the end of the stream (closing ours too)."""
        self._received(b"")
        self._end(None)
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        """The transport is gone (reset, closed, or aborted by :meth:`_end`); a TLS failure is kept to say why."""
        if isinstance(exc, ssl.SSLError) and not self._ended:
            self.tls_error = str(exc)
        self._end(kernel_gave_up(exc, self._write_timeout_s, self._protocol.state))

    # -- holding back (jmslike.flow) -----------------------------------------------------------------------

    def forget(self, receipt_ids: list[str]) -> None:
        """Receipts the broker will never send (StompProtocol.forget)."""
        self._protocol.forget(receipt_ids)

    def wake_reader(self) -> None:
        """Have a reader that holds back (``hold``) ask again, in the loop's next turn (on the loop)."""
        if self._held:
            # In the reader's context, not the waker's: resume_reading() registers the reader in the current one,
            # and every later event would run in the context of whoever woke it (a listener's, say).
            asyncio.get_running_loop().call_soon(self._ask_hold_again, context=self._reader_context)

    def _ask_hold_again(self) -> None:
        if self._held and not self._ended and (self._hold is None or not self._hold()):
            self._resume_reading()

    def _pause_reading(self) -> None:
        """Read nothing while ``hold()`` says so (the socket's buffer fills, TCP holds the broker back); the
        broker's silence is not measured meanwhile."""
        transport = self._transport
        if transport is None or self._held:
            return
        self._held = True
        self._protocol.hold_reading(True, asyncio.get_running_loop().time())
        transport.pause_reading()

    def _resume_reading(self) -> None:
        transport = self._transport
        if not self._held or transport is None:
            return
        self._held = False
        self._protocol.hold_reading(False, asyncio.get_running_loop().time())
        if not self._ended:
            transport.resume_reading()

    def _dispatch(self, events: list[Event], upto: Event | None = None) -> None:
        for event in events:
            if event is upto:
                return
            self._on_event(event)

    # -- heart-beats ---------------------------------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        """Write a heart-beat when one is due, end the connection when the broker has gone silent."""
        protocol = self._protocol
        loop = asyncio.get_running_loop()
        looked_again = False
        while not self._ended:
            now = loop.time()
            if protocol.peer_silent(now):
                if looked_again:
                    self.abort(protocol.silence_reason())
                    return
                # Look once more after a timer: the loop reads what its selector found readable before it runs
                # due timers, so bytes that waited while the loop was blocked (by this connection's callbacks or
                # anything else) are read first, and a silence still there is the broker's. Without this, a
                # wake-up queued before the block ran ahead of that read and blamed the broker (review finding).
                looked_again = True
                await asyncio.sleep(0.001)
                continue
            looked_again = False
            transport = self._transport
            beat = protocol.heartbeat_due(now)
            if beat and transport is not None:
                # A full buffer is data in flight: the write deadline of that data decides.
                self._put(transport, beat)
            deadline = protocol.next_deadline(loop.time())
            if deadline is None:
                return
            await asyncio.sleep(max(0.01, deadline - loop.time()))

    # -- the end -------------------------------------------------------------------------------------------

    def _end(self, reason: str | None) -> None:
        """The connection is over: say so once, with the frames that got no answer."""
        if self._ended:
            return
        self._ended = True
        if self._stall_watch is not None:
            self._stall_watch.cancel()
        task = self._heartbeat_task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        transport = self._transport
        if transport is not None:
            transport.abort()  # the loop closes the socket; nothing else reads it
        self._wake_drain_waiters()  # they see the end and raise SocketClosed
        if self._done is not None and not self._done.done():
            self._done.set_result(None)
        unanswered = self._protocol.connection_lost()
        log_end(self._host, reason)
        self._on_closed(reason, unanswered)

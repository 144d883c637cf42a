"""The asyncio driver of the STOMP core (adapters/stomp_async.py) against the real brokers, and against
scripted peers for what no broker does on purpose (silence, a refused CONNECT answered by a close).

The frames are each adapter's own (destination names, SUBSCRIBE headers, CONNECT headers), so what is
tested is the driver: CONNECT, receipts, a MESSAGE, DISCONNECT, and every receipt answered exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import errno
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aio_support import LoopRunner
from receipt_peer import HELD_THEN_DISCONNECT, ReceiptPeer, driver_settings

from jmslike.adapters.stomp_async import AsyncStompConnection
from jmslike.adapters.stomp_core import (
    Connected,
    ConnectRefused,
    Event,
    MessageReceived,
    Receipt,
    ReceiptReceived,
)
from jmslike.adapters.stomp_socket import DriverSettings, SocketClosed, WriteStalled
from jmslike.config import parse_url
from jmslike.conformance.brokers import BrokerHandle
from jmslike.constants import DeliveryMode
from jmslike.contract import Frame, SubscriptionSpec
from jmslike.destinations import Queue
from jmslike.registry import load_adapter

DEADLINE_S = 20.0


class Recorder:
    """Collects the driver's events on the loop and lets a coroutine wait for the next one of a kind."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.closed: list[tuple[str | None, list[Receipt]]] = []
        self._changed = asyncio.Event()

    def on_event(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()

    def on_closed(self, reason: str | None, unanswered: list[Receipt]) -> None:
        self.closed.append((reason, unanswered))
        self._changed.set()

    async def until(self, done: Callable[[], bool], what: str) -> None:
        """Wait (on the loop, woken by each event) until ``done()``; fail if the connection closes first."""
        async with asyncio.timeout(DEADLINE_S):
            while not done():
                if self.closed:
                    raise AssertionError(f"closed ({self.closed[0][0]}) before {what}")
                self._changed.clear()
                await self._changed.wait()

    async def first(self, kind: type[Event]) -> Event:
        await self.until(lambda: any(isinstance(e, kind) for e in self.events), f"a {kind.__name__}")
        return next(e for e in self.events if isinstance(e, kind))

    async def until_closed(self) -> tuple[str | None, list[Receipt]]:
        async with asyncio.timeout(DEADLINE_S):
            while not self.closed:
                self._changed.clear()
                await self._changed.wait()
        return self.closed[0]

    def answered(self) -> list[str]:
        return [e.receipt.receipt_id for e in self.events if isinstance(e, ReceiptReceived)]


def _connection(
    host: tuple[str, int],
    recorder: Recorder,
    version: str = "1.2",
    heartbeat_ms: int = 0,
    write_timeout_s: float = 10.0,
    context: ssl.SSLContext | None = None,
) -> AsyncStompConnection:
    settings = _settings(host, version, heartbeat_ms, write_timeout_s, context)
    return AsyncStompConnection(settings, on_event=recorder.on_event, on_closed=recorder.on_closed)


def _settings(
    host: tuple[str, int],
    version: str = "1.2",
    heartbeat_ms: int = 0,
    write_timeout_s: float = 10.0,
    context: ssl.SSLContext | None = None,
) -> DriverSettings:
    return DriverSettings(
        host=host,
        version="1.1" if version == "1.1" else "1.2",
        heartbeat_ms=heartbeat_ms,
        max_frame_bytes=1024 * 1024,
        max_header_bytes=64 * 1024,
        context=context,
        connect_timeout_s=10.0,
        write_timeout_s=write_timeout_s,
        receipt_prefix="a-",
    )


def test_connect_subscribe_send_receive_and_disconnect(broker: BrokerHandle, run_loop: LoopRunner) -> None:
    """One queue, one message, every frame through the asyncio driver; the broker's receipts answer each
    frame exactly once, and DISCONNECT's receipt ends the connection cleanly (no reason, nothing unanswered)."""
    config = parse_url(broker.url)
    adapter = load_adapter(config.scheme)
    queue = Queue(f"async-driver-{uuid.uuid4().hex[:8]}")
    body = "över the asyncio driver".encode()

    async def scenario() -> None:
        recorder = Recorder()
        connection = _connection(config.hosts[0], recorder, adapter.stomp_version)
        vhost = config.vhost or adapter.default_vhost or broker.host
        await connection.connect(
            vhost,
            {**adapter.connect_headers(config, None), "login": broker.user, "passcode": broker.password},
        )
        connected = await recorder.first(Connected)
        assert isinstance(connected, Connected)
        sent: list[Receipt] = []
        spec = SubscriptionSpec(sub_id="1", destination=queue)
        await connection.send(
            Frame("SUBSCRIBE", adapter.subscribe_headers(spec)), receipt=True, on_sent=sent.append
        )
        send = Frame("SEND", {"destination": adapter.destination_name(queue)}, body)
        await connection.send(send, receipt=True, on_sent=sent.append)
        message = await recorder.first(MessageReceived)
        assert isinstance(message, MessageReceived) and message.frame.body == body
        ack = adapter.ack_frame(adapter.decode_message(message.frame), None)
        await connection.send(ack, receipt=True, on_sent=sent.append)
        await recorder.until(lambda: len(recorder.answered()) >= len(sent), "every receipt")
        assert sorted(recorder.answered()) == sorted(r.receipt_id for r in sent)
        await connection.disconnect(DEADLINE_S)
        assert await recorder.until_closed() == (None, [])
        with pytest.raises(SocketClosed):
            await connection.send(send, receipt=False)

    run_loop(scenario())


# -- scripted peers -----------------------------------------------------------------------------------------


class Peer:
    """Accepts one connection on loopback, reads CONNECT, then answers ``reply`` (and keeps the socket open
    until ``release`` is set, or closes it when ``close`` is True). ``at_accept``: answers as soon as it accepts,
    before the client can have written CONNECT (a broker at its connection limit)."""

    def __init__(
        self, reply: bytes, close: bool = False, at_accept: bool = False, beat_every_s: float | None = None
    ) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.release = threading.Event()
        self.received = b""
        self._reply, self._close, self._at_accept, self._beat = reply, close, at_accept, beat_every_s
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.listener.settimeout(DEADLINE_S)
        conn, _ = self.listener.accept()
        with conn:
            while b"\x00" not in self.received and not self._at_accept:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                self.received += chunk
            conn.sendall(self._reply)
            if self._beat is not None:  # a heart-beat every period until released
                with contextlib.suppress(OSError):
                    while not self.release.wait(self._beat):
                        conn.sendall(b"\n")
            elif not self._close:
                self.release.wait(DEADLINE_S)

    def stop(self) -> None:
        self.release.set()
        self.listener.close()
        self.thread.join(DEADLINE_S)


@pytest.fixture
def peers() -> Iterator[list[Peer]]:
    made: list[Peer] = []
    yield made
    for peer in made:
        peer.stop()


@pytest.mark.parametrize("at_accept", [False, True], ids=["after CONNECT", "at accept"])
def test_refused_connect_is_an_event_and_a_silent_close_too(
    peers: list[Peer], at_accept: bool, run_loop: LoopRunner
) -> None:
    """An ERROR answering CONNECT is a ConnectRefused with the broker's words; a close without one is a silent
    ConnectRefused. The passcode is never logged (nothing here logs frames). Also when the broker says so as it
    accepts, before CONNECT is written: on asyncio's loop nothing is read before that (the first protocol driver
    read from the start and raised SocketClosed from connect(), losing the broker's words; review of 3e62c75); uvloop
    reads at once, and connect() then finds the answer heard and the connection over, which must not make it raise
    (it did, after the refusal had gone out as an event)."""
    on_uvloop = run_loop is not asyncio.run
    refusing = Peer(b"ERROR\nmessage:bad login\n\n\x00", close=True, at_accept=at_accept)
    peers.append(refusing)

    async def attempt(peer: Peer) -> ConnectRefused:
        recorder = Recorder()
        if at_accept and on_uvloop:
            _heard_before_connect(asyncio.get_running_loop(), recorder)
        connection = _connection(("127.0.0.1", peer.port), recorder)
        await connection.connect("localhost", {"login": "u", "passcode": "p"})
        refused = await recorder.first(ConnectRefused)
        assert isinstance(refused, ConnectRefused)
        await recorder.until_closed()
        return refused

    assert run_loop(attempt(refusing)) == ConnectRefused("bad login", silent=False)
    # At accept on asyncio's loop, the CONNECT written into the closed socket may draw a reset before the EOF is read.
    if not at_accept or on_uvloop:
        silent = Peer(b"", close=True, at_accept=at_accept)
        peers.append(silent)
        assert run_loop(attempt(silent)).silent


def _heard_before_connect(loop: asyncio.AbstractEventLoop, recorder: Recorder) -> None:
    """uvloop reads a connection as soon as it is made: have create_connection return only once the peer's answer
    at accept and its close have been heard, so that connect() finds the connection over before it writes CONNECT
    (without this, which comes first is a race)."""
    opened = loop.create_connection

    async def heard_first(*args: Any, **kwargs: Any) -> Any:
        made = await opened(*args, **kwargs)
        await recorder.until_closed()
        return made

    loop.create_connection = heard_first  # type: ignore[method-assign]


def test_a_silent_broker_is_dropped_after_its_heartbeat_period(
    peers: list[Peer], run_loop: LoopRunner
) -> None:
    """``heart-beat:200,0`` promises something every 200 ms; the peer then says nothing. The driver drops the
    connection with the reason, and the client wrote heart-beats while it waited, when asked to."""
    peer = Peer(b"CONNECTED\nversion:1.2\nheart-beat:200,200\n\n\x00")
    peers.append(peer)

    async def scenario() -> tuple[str | None, list[Receipt]]:
        recorder = Recorder()
        connection = _connection(("127.0.0.1", peer.port), recorder, heartbeat_ms=200)
        await connection.connect("localhost", {})
        await recorder.first(Connected)
        return await recorder.until_closed()

    reason, unanswered = run_loop(scenario())
    assert reason is not None and "heart-beat" in reason and unanswered == []
    assert reason.startswith("the broker sent nothing for"), "the broker's silence, not this client's"


def test_a_loop_blocked_by_a_callback_is_not_taken_for_a_silent_broker(
    peers: list[Peer], run_loop: LoopRunner
) -> None:
    """Review finding: CONNECTED and a MESSAGE come in one read and the MESSAGE's callback blocks the loop for 1 s,
    while the broker beats every 50 ms (four times its promised 200 ms, so that beats keep coming however the
    machine schedules the peer's thread). The heart-beat task's wake-up, queued before the block, ran ahead of the
    read of those beats and dropped the connection as silent (5 of 5 runs). It now looks again after the loop has
    read: the connection stays up."""
    message = b"MESSAGE\nsubscription:1\nmessage-id:1\ndestination:/queue/a\n\nx\x00"
    peer = Peer(b"CONNECTED\nversion:1.1\nheart-beat:200,0\n\n\x00" + message, beat_every_s=0.05)
    peers.append(peer)

    async def scenario() -> str | None:
        loop = asyncio.get_running_loop()
        closed: asyncio.Future[str | None] = loop.create_future()
        blocked = asyncio.Event()

        def on_event(event: Event) -> None:
            if isinstance(event, MessageReceived):
                time.sleep(1.0)  # the owner's callback blocks the loop: twenty beats pile up unread
                blocked.set()

        def on_closed(reason: str | None, unanswered: list[Receipt]) -> None:
            if not closed.done():
                closed.set_result(reason)

        settings = _settings(("127.0.0.1", peer.port), version="1.1", heartbeat_ms=200)
        connection = AsyncStompConnection(settings, on_event=on_event, on_closed=on_closed)
        await connection.connect("localhost", {})
        try:
            await asyncio.wait_for(blocked.wait(), DEADLINE_S)
            # Five of the broker's heart-beat timeouts (500 ms each) after the block: any drop would have come.
            done, _ = await asyncio.wait({closed}, timeout=2.5)
            return closed.result() if done else None
        finally:
            connection.abort()

    reason = run_loop(scenario())
    assert reason is None, f"dropped while the broker's beats waited unread: {reason}"


def test_a_broker_that_stops_reading_fails_a_send_within_the_write_deadline(
    peers: list[Peer], run_loop: LoopRunner
) -> None:
    """The peer answers CONNECT, then reads nothing. Sends are written while the socket takes them (small frames
    without waiting at all); once the buffers are full, the next send waits at most the write deadline, raises
    WriteStalled, and the connection ends with the reason."""
    peer = Peer(b"CONNECTED\nversion:1.2\n\n\x00")
    peers.append(peer)
    deadline_s = 1.0

    async def scenario() -> tuple[float, str | None]:
        recorder = Recorder()
        connection = _connection(("127.0.0.1", peer.port), recorder, write_timeout_s=deadline_s)
        await connection.connect("localhost", {})
        await recorder.first(Connected)
        frame = Frame("SEND", {"destination": "/queue/stalled"}, b"x" * 256 * 1024)
        loop = asyncio.get_running_loop()
        with pytest.raises(WriteStalled):
            for _ in range(4096):  # 1 GiB: far more than any socket buffers
                started = loop.time()
                await connection.send(frame, receipt=False)
        waited = loop.time() - started
        reason, _ = await recorder.until_closed()
        return waited, reason

    waited, reason = run_loop(scenario())
    assert deadline_s * 0.9 <= waited < deadline_s + 5
    assert reason is not None and "could not write" in reason


def test_a_send_that_meets_the_kernels_time_bound_ends_the_connection_with_the_reason(
    peers: list[Peer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A socket write failing with ETIMEDOUT (the kernel's TCP_USER_TIMEOUT) closes asyncio's transport and reports
    the error a turn later: an awaited send that finds the transport closing must let that report come first, so
    the connection ends saying the broker stopped reading, not with a bare loss (review of 815187a). The peer is
    scripted; the kernel's timeout is stood in for by the socket's send raising it. On asyncio's event loop only:
    uvloop writes through libuv, not ``socket.send``, so nothing can stand in for the kernel there; the real stall
    (test_a_broker_that_stops_reading_acknowledgements_is_dropped_within_the_write_deadline) runs on both."""
    peer = Peer(b"CONNECTED\nversion:1.2\n\n\x00")
    peers.append(peer)

    async def scenario() -> str | None:
        recorder = Recorder()
        connection = _connection(("127.0.0.1", peer.port), recorder, write_timeout_s=1.0)
        await connection.connect("localhost", {})
        await recorder.first(Connected)

        def timed_out(self: socket.socket, data: bytes, flags: int = 0) -> int:
            raise TimeoutError(errno.ETIMEDOUT, "Connection timed out")

        monkeypatch.setattr(socket.socket, "send", timed_out)
        with pytest.raises(SocketClosed):
            await connection.send(Frame("SEND", {"destination": "/queue/q"}, b"x"), receipt=False)
        monkeypatch.undo()
        connection.abort()  # as the wire does on SocketClosed (AsyncStompWire._lost_writing): no reason of its own
        reason, _ = await recorder.until_closed()
        return reason

    reason = asyncio.run(scenario())
    assert reason is not None and "could not write" in reason and "TCP_USER_TIMEOUT" in reason, reason


def test_a_broker_that_stops_reading_acknowledgements_is_dropped_within_the_write_deadline(
    run_loop: LoopRunner,
) -> None:
    """jmslike.aio hands AUTO ACKs to the socket without awaiting them (so a cancelled receive takes nothing);
    a broker that keeps delivering but reads none of them must still be dropped within the write deadline
    (receipt_timeout_ms), not buffer ACKs without bound. A scripted peer: answers CONNECT and SUBSCRIBE, then
    only writes MESSAGE frames."""
    from jmslike.aio import ConnectionFactory, Session
    from jmslike.exceptions import ConnectionLostException

    async def flood(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen = b""
        while b"SUBSCRIBE" not in seen or not seen.endswith(b"\x00"):
            chunk = await reader.read(65536)
            if not chunk:
                return
            if b"CONNECT" in chunk and b"CONNECTED" not in seen:
                writer.write(b"CONNECTED\nversion:1.1\nheart-beat:0,0\n\n\x00")
            seen += chunk
        subscribe = seen.split(b"SUBSCRIBE", 1)[1]
        sub_id = subscribe.split(b"\nid:", 1)[1].split(b"\n", 1)[0]
        receipt = subscribe.split(b"\nreceipt:", 1)[1].split(b"\n", 1)[0]
        writer.write(b"RECEIPT\nreceipt-id:" + receipt + b"\n\n\x00")
        n = 0
        with contextlib.suppress(ConnectionError):
            while True:  # never reads again
                for _ in range(200):
                    n += 1
                    writer.write(
                        b"MESSAGE\nsubscription:%s\nmessage-id:m%d\ndestination:/queue/q\ncontent-length:2\n\nhi\x00"
                        % (sub_id, n)
                    )
                await writer.drain()

    async def scenario() -> tuple[float, BaseException | None]:
        server = await asyncio.start_server(flood, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        factory = ConnectionFactory(f"activemq://127.0.0.1:{port}?receipt_timeout_ms=1000")
        connection = await factory.createConnection()
        connection.setExceptionListener(lambda error: None)
        await connection.start()
        session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
        consumer = await session.createConsumer(session.createQueue("q"))
        loop = asyncio.get_running_loop()
        started, error = loop.time(), None
        try:
            while loop.time() - started < DEADLINE_S:
                await consumer.receive(1000)
        except ConnectionLostException as exc:
            error = exc
        elapsed = loop.time() - started
        await connection.close()
        server.close()
        return elapsed, error

    elapsed, error = run_loop(scenario())
    assert error is not None and "could not write" in str(error), error
    assert elapsed < DEADLINE_S


def _connected_peer(listener: socket.socket, context: ssl.SSLContext | None) -> socket.socket:
    """A scripted peer's side of one connection: accepted (TLS when ``context``), CONNECT read, CONNECTED answered."""
    listener.settimeout(DEADLINE_S)
    accepted, _ = listener.accept()
    conn = context.wrap_socket(accepted, server_side=True) if context else accepted
    seen = b""
    while b"\x00" not in seen:
        seen += conn.recv(4096)
    conn.sendall(b"CONNECTED\nversion:1.2\n\n\x00")
    return conn


def _peer_tls(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A scripted peer's TLS context and the client's that trusts it (certificates made in ``directory``)."""
    pytest.importorskip("cryptography", reason="generates the peer's certificate with `cryptography`")
    from jmslike.conformance.brokers.tls import generate

    material = generate(directory)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(str(material.broker_cert), str(material.broker_key))
    return server_context, ssl.create_default_context(cafile=str(material.ca_file))


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_a_broker_reading_slowly_but_steadily_is_not_dropped(
    tls: bool, tmp_path: Path, run_loop: LoopRunner
) -> None:
    """Bytes nobody awaits (ACKs from write()) are watched for a stall, and a stall is the broker taking nothing,
    not a buffer that fails to shrink: a peer that reads slowly but steadily while the client keeps writing
    faster has a growing buffer, and it must stay connected for several write deadlines. A scripted peer reads
    16 KiB every 2 ms; the client writes ~55 KiB every 2 ms. Under TLS the transport's buffer does not show
    what the socket takes below it (review of dcd36f8: dropped after ~1.9 s)."""
    deadline_s = 0.5
    taken = threading.Event()
    stop = threading.Event()
    listener = socket.create_server(("127.0.0.1", 0))
    server_context, client_context = _peer_tls(tmp_path) if tls else (None, None)

    def slow_reader() -> None:
        with _connected_peer(listener, server_context) as conn:
            while not stop.is_set():
                # The bytes on the wire, ciphertext under TLS: decrypting 20 MB/s in this process's thread would
                # pace the GIL, not the wire.
                if not socket.socket.recv(conn, 16384):
                    return
                taken.set()
                stop.wait(0.002)  # the pace of a slow broker, not synchronisation

    reader = threading.Thread(target=slow_reader, daemon=True)
    reader.start()

    async def scenario() -> tuple[list[tuple[str | None, list[Receipt]]], float]:
        recorder = Recorder()
        connection = _connection(
            ("127.0.0.1", listener.getsockname()[1]),
            recorder,
            write_timeout_s=deadline_s,
            context=client_context,
        )
        await connection.connect("localhost", {})
        await recorder.first(Connected)
        ack = Frame("ACK", {"id": "x" * 200})
        loop = asyncio.get_running_loop()
        started = loop.time()
        while loop.time() - started < 4 * deadline_s and not recorder.closed:
            for _ in range(256):  # ~55 KiB per round, faster than the peer reads
                connection.write(ack)
            await asyncio.sleep(0.002)  # the writer's pace: lets the loop run the stall watch
        elapsed = loop.time() - started
        closed = list(recorder.closed)
        connection.abort()
        return closed, elapsed

    try:
        closed, elapsed = run_loop(scenario())
    finally:
        stop.set()
        reader.join(DEADLINE_S)
        listener.close()
    assert taken.is_set(), "the peer never read: the scenario did not run"
    assert closed == [], f"dropped after {elapsed:.2f}s while the broker was still reading: {closed}"


@pytest.mark.parametrize("tls", [False, True], ids=["tcp", "tls"])
def test_frames_arriving_in_many_reads_and_records_come_out_whole(
    tls: bool, tmp_path: Path, run_loop: LoopRunner
) -> None:
    """Reads land in one buffer that every read reuses (stomp_async._read_buffer): what a read leaves half a frame
    of must have been copied out before the next read overwrites it. asyncio's TLS read fills the buffer in pieces
    through slices of it, so a buffer handed over as a bytearray, not a view, loses bytes there (a check of the
    change found frames of NULs after 9 messages). 3,000 MESSAGE frames of varied sizes, written in 3,000-byte
    pieces (TLS records under TLS) so that frames straddle reads; every body must arrive as sent, in order."""
    count = 3000
    listener = socket.create_server(("127.0.0.1", 0))
    server_context, client_context = _peer_tls(tmp_path) if tls else (None, None)

    def body(i: int) -> bytes:
        return f"{i:05d}".encode() * (1 + i % 97)

    frames = b"".join(
        b"MESSAGE\ndestination:/queue/b\nmessage-id:%d\nsubscription:1\ncontent-length:%d\n\n%s\x00\n"
        % (i, len(body(i)), body(i))
        for i in range(count)
    )
    done = threading.Event()

    def burst() -> None:
        with _connected_peer(listener, server_context) as conn:
            for start in range(0, len(frames), 3000):
                conn.sendall(frames[start : start + 3000])
            done.wait(DEADLINE_S)

    peer = threading.Thread(target=burst, daemon=True)
    peer.start()

    async def scenario() -> list[bytes]:
        recorder = Recorder()
        connection = _connection(("127.0.0.1", listener.getsockname()[1]), recorder, context=client_context)
        await connection.connect("localhost", {})
        received = lambda: [e.frame.body for e in recorder.events if isinstance(e, MessageReceived)]  # noqa: E731
        await recorder.until(lambda: len(received()) >= count, f"{count} messages")
        connection.abort()
        return received()

    try:
        bodies = run_loop(scenario())
    finally:
        done.set()
        peer.join(DEADLINE_S)
        listener.close()
    wrong = [i for i, got in enumerate(bodies) if got != body(i)]
    assert len(bodies) == count and wrong == [], (
        f"{len(wrong)} bodies differ from what was sent, first {wrong[:5]}"
    )


def test_a_tight_unwaited_send_loop_lets_the_reader_and_heartbeats_run(
    monkeypatch: pytest.MonkeyPatch,
    run_loop: LoopRunner,
) -> None:
    """An unwaited NON_PERSISTENT send that finds a place in the window and a transport that takes it suspends
    nowhere; with a window of 20,000, a loop of them would keep the event loop from reading for most of a
    second, and a connection with ``heartbeat_ms=100`` would be dropped as silent though the broker beat all
    along. A scripted peer answers CONNECT (heart-beat 100 ms both ways), answers every receipt and beats
    every 50 ms; 40,000 sends in a tight loop must end with the connection alive and everything confirmed."""
    from jmslike.aio import ConnectionFactory, Session

    async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async def beat() -> None:
            while not writer.is_closing():
                writer.write(b"\n")
                await asyncio.sleep(0.05)  # the peer's heart-beat period, not synchronisation

        beating: asyncio.Task[None] | None = None
        buffer = b""
        with contextlib.suppress(ConnectionError):
            while chunk := await reader.read(1 << 16):
                buffer += chunk
                *frames, buffer = buffer.split(b"\x00")
                for frame in frames:
                    head = frame.lstrip(b"\r\n").split(b"\n\n", 1)[0]
                    if head.startswith(b"CONNECT"):
                        writer.write(b"CONNECTED\nversion:1.1\nheart-beat:100,100\n\n\x00")
                        beating = asyncio.create_task(beat())
                    elif b"\nreceipt:" in head:
                        receipt = head.split(b"\nreceipt:", 1)[1].split(b"\n", 1)[0]
                        writer.write(b"RECEIPT\nreceipt-id:" + receipt + b"\n\n\x00")
        if beating is not None:
            beating.cancel()
        writer.close()

    async def scenario() -> list[BaseException]:
        server = await asyncio.start_server(peer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        factory = ConnectionFactory(f"activemq://127.0.0.1:{port}?heartbeat_ms=100&send_window=20000")
        connection = await factory.createConnection()
        errors: list[BaseException] = []
        connection.setExceptionListener(errors.append)
        session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createQueue("tight"))
        producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)
        message = session.createTextMessage("x" * 64)
        for _ in range(40_000):
            await producer.send(message)
        await producer.close()  # returns once every send is confirmed, or raises
        await connection.close()
        server.close()
        return errors

    assert run_loop(scenario()) == []


def test_unwaited_sends_to_a_broker_that_stops_reading_fail_within_the_write_deadline(
    run_loop: LoopRunner,
) -> None:
    """Unwaited sends hand their frame over without awaiting only while the transport is below its high-water
    mark; past it they wait to drain under the write deadline. So with windows that bound nothing
    (``send_window_bytes=0``), 64 KiB sends to a peer that reads nothing after CONNECT must fail within the write
    deadline, with no more buffered than the socket and the transport's high-water mark hold (61 sends of 64 KiB
    when measured; 3,423, 220 MiB, before the bound)."""
    from jmslike.aio import ConnectionFactory, Session
    from jmslike.exceptions import ConnectionLostException

    async def deaf(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\x00")
        writer.write(b"CONNECTED\nversion:1.1\nheart-beat:0,0\n\n\x00")
        await asyncio.sleep(DEADLINE_S)  # reads nothing more: the stalled broker under test
        writer.close()

    async def scenario() -> tuple[int, BaseException | None]:
        server = await asyncio.start_server(deaf, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        url = f"activemq://127.0.0.1:{port}?receipt_timeout_ms=1000&send_window=100000&send_window_bytes=0"
        connection = await ConnectionFactory(url).createConnection()
        connection.setExceptionListener(lambda error: None)
        session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createQueue("deaf"))
        producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)
        message = session.createBytesMessage()
        message.writeBytes(b"x" * 65536)
        sent, error = 0, None
        try:
            for _ in range(5_000):
                await producer.send(message)
                sent += 1
        except ConnectionLostException as exc:
            error = exc
        await connection.close()
        server.close()
        return sent, error

    sent, error = run_loop(scenario())
    assert error is not None and "could not write" in str(error), (sent, error)
    assert sent < 1_000, (
        f"{sent} sends of 64 KiB buffered for a broker that reads nothing"
    )  # 61 when measured


def test_a_synchronous_send_to_a_broker_that_stops_reading_is_a_loss_with_the_reason(
    peers: list[Peer],
    run_loop: LoopRunner,
) -> None:
    """The asyncio twin of test_hostile_network's test of a send bigger than every buffer to a peer that stops
    reading: ConnectionLostException saying so, within the write deadline. A synchronous send is written without an
    await when the transport is below its high-water mark; a frame that takes it past the mark must still get the
    write deadline before its receipt's (review of the no-await request: it raised JMSTimeoutException, with the
    connection up and the frame still going out, so a slow reader got the message the caller was told timed out)."""
    from jmslike.aio import ConnectionFactory, Session
    from jmslike.exceptions import ConnectionLostException

    peer = Peer(b"CONNECTED\nversion:1.1\nheart-beat:0,0\n\n\x00")
    peers.append(peer)

    async def scenario() -> float:
        url = f"activemq://127.0.0.1:{peer.port}?receipt_timeout_ms=1000&heartbeat_ms=0"
        connection = await ConnectionFactory(url).createConnection()
        connection.setExceptionListener(lambda error: None)
        try:
            session = await connection.createSession(Session.AUTO_ACKNOWLEDGE)
            producer = session.createProducer(session.createQueue("deaf"))
            loop = asyncio.get_running_loop()
            started = loop.time()
            with pytest.raises(ConnectionLostException, match="stopped reading"):
                await producer.send(session.createTextMessage("x" * (64 * 1024 * 1024)))
            return loop.time() - started
        finally:
            await connection.close()

    assert run_loop(scenario()) < 10


async def _one_receipt_due(peer: ReceiptPeer) -> AsyncStompConnection:
    """A coalescing asyncio driver connected to ``peer``, its first frame written and its receipt held back."""
    recorder = Recorder()
    connection = AsyncStompConnection(
        driver_settings(peer.port, coalesce_s=0.001, receipt_prefix="a-"),
        on_event=recorder.on_event,
        on_closed=recorder.on_closed,
    )
    await connection.connect("localhost", {"accept-version": "1.1"})
    await recorder.first(Connected)
    connection.write(_send_frame(b"first", **{"x-hold": "1"}), receipt=True, coalesce=True)
    return connection


class RecordingTransport:
    """Stands between the driver and the transport its event loop made (uvloop's cannot be patched: they are
    compiled) and records every write; everything else goes to the transport."""

    def __init__(self, transport: Any, writes: list[bytes]) -> None:
        self._transport = transport
        self._writes = writes

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._writes.append(bytes(data))
        self._transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _send_frame(body: bytes, **extra: str) -> Frame:
    return Frame("SEND", {"destination": "/queue/c", **extra}, body)


def test_unwaited_sends_in_one_turn_of_the_loop_are_written_together_in_order(
    monkeypatch: pytest.MonkeyPatch,
    run_loop: LoopRunner,
) -> None:
    """Send coalescing, the asyncio way: frames handed over without waiting while a receipt is due are written
    at the end of the loop's turn, as one write, behind any frame written at once in between. The writes are
    counted where the driver hands bytes to the stream (the peer's reads may merge separate writes)."""
    peer = ReceiptPeer()
    writes: list[bytes] = []
    made = AsyncStompConnection.connection_made

    def connection_made(driver: AsyncStompConnection, transport: asyncio.BaseTransport) -> None:
        made(driver, RecordingTransport(transport, writes))

    monkeypatch.setattr(AsyncStompConnection, "connection_made", connection_made)

    async def scenario() -> None:
        connection = await _one_receipt_due(peer)
        for n in range(3):
            connection.write(_send_frame(f"m{n}".encode()), receipt=True, coalesce=True)
        connection.write(_send_frame(b"direct"), receipt=True)  # an ACK, a synchronous send
        for n in range(3, 6):
            connection.write(_send_frame(f"m{n}".encode()), receipt=True, coalesce=True)
        await asyncio.to_thread(peer.wait_for, 8)
        await connection.disconnect(DEADLINE_S)

    try:
        run_loop(scenario())
        arrived = peer.wait_for(8)
        assert [a.body for a in arrived] == [b"first", b"m0", b"m1", b"m2", b"direct", b"m3", b"m4", b"m5"]
        sends = [data.count(b"SEND\n") for data in writes if b"SEND\n" in data]
        # nothing was due for the first: written at once; then three held that went with the direct one; then
        # the three of the turn's end, together
        assert sends == [1, 4, 3], sends
    finally:
        peer.stop()


def test_disconnect_writes_the_batch_before_it(run_loop: LoopRunner) -> None:
    peer = ReceiptPeer()

    async def scenario() -> None:
        connection = await _one_receipt_due(peer)
        for n in range(3):
            connection.write(_send_frame(f"m{n}".encode()), receipt=True, coalesce=True)
        await connection.disconnect(DEADLINE_S)

    try:
        run_loop(scenario())
        assert peer.frames_after_connect() == HELD_THEN_DISCONNECT
    finally:
        peer.stop()


APP_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("app_var", default="unset")


def test_events_after_a_hold_run_in_the_readers_context_not_the_wakers(run_loop: LoopRunner) -> None:
    """The driver holds back (the consumers hold enough) and a task with context variables of its own wakes it:
    the events read after that run in the context connect() was called in, as before the hold. Before, they ran
    in the waker's (a listener's scope, say, for everything the connection did next; review of 3e62c75)."""

    async def scenario() -> list[str]:
        writers: list[asyncio.StreamWriter] = []

        async def peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writers.append(writer)
            await reader.readuntil(b"\x00")
            writer.write(b"CONNECTED\nversion:1.2\nheart-beat:0,0\n\n\x00")
            await reader.read()

        server = await asyncio.start_server(peer, "127.0.0.1", 0)
        seen: list[str] = []
        arrived = asyncio.Event()
        holding = [False]

        def on_event(event: Event) -> None:
            if isinstance(event, MessageReceived):
                seen.append(APP_VAR.get())
            arrived.set()

        connection = AsyncStompConnection(
            _settings(server.sockets[0].getsockname()[:2]),
            on_event=on_event,
            on_closed=lambda reason, unanswered: None,
            hold=lambda: holding[0],
        )
        await connection.connect("localhost", {})
        await asyncio.wait_for(arrived.wait(), DEADLINE_S)  # CONNECTED
        arrived.clear()

        def message(n: int) -> bytes:
            return f"MESSAGE\ndestination:/queue/q\nmessage-id:m{n}\nsubscription:s\nack:a{n}\n\nbody\x00".encode()

        holding[0] = True
        while not writers:
            await asyncio.sleep(0)  # a yield: the peer's task starts
        writers[0].write(message(1))
        await asyncio.wait_for(arrived.wait(), DEADLINE_S)  # read, then held
        arrived.clear()

        async def waker() -> None:  # a consumer's task taking messages, in an application's context
            APP_VAR.set("the waker's")
            holding[0] = False
            connection.wake_reader()

        await asyncio.create_task(waker())
        writers[0].write(message(2))
        await asyncio.wait_for(arrived.wait(), DEADLINE_S)
        connection.abort()
        server.close()
        return seen

    assert run_loop(scenario()) == ["unset", "unset"]

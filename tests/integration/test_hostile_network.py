"""Hostile or broken input from the network: jmslike fails clearly, in bounded memory and time.

Two kinds of peer, neither a fake broker:

- a scripted *hostile peer* (a few lines of socket code per test) that reads our CONNECT and answers
  with something no broker should send: endless bodies and header blocks, invalid UTF-8, non-STOMP
  bytes, a CONNECTED that never finishes;
- a byte-by-byte relay in front of the real broker, so every frame the broker sends reaches jmslike
  split at every byte.

The expected outcome is always the same: a JMS exception whose message says what the peer did, the
connection dropped, the process fine, within seconds.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from receipt_peer import driver_settings

from jmslike import (
    Connection,
    ConnectionFactory,
    JMSException,
    Session,
    TextMessage,
)
from jmslike.adapters.stomp_core import Connected
from jmslike.adapters.stomp_socket import SocketClosed, StompSocket, WriteStalled
from jmslike.adapters.transport import StompWire
from jmslike.config import parse_url
from jmslike.contract import Frame
from jmslike.exceptions import ConnectionLostException, JMSTimeoutException

Script = Callable[[socket.socket], None]
DEADLINE_S = 20.0


class HostilePeer:
    """Accepts one connection on loopback, reads the client's first frame, then runs ``script``."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sent = 0
        self.dropped = threading.Event()  # the client closed on us while we were still talking
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, name="hostile-peer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.listener.settimeout(DEADLINE_S)
            conn, _ = self.listener.accept()
        except OSError:
            self.done.set()
            return
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn.settimeout(DEADLINE_S)
            try:
                received = b""
                while b"\x00" not in received:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    received += chunk
                self.script(conn)
            except OSError:
                self.dropped.set()
            finally:
                self.done.set()

    def send(self, conn: socket.socket, data: bytes) -> None:
        conn.sendall(data)
        self.sent += len(data)

    def close(self) -> None:
        self.listener.close()
        self.thread.join(DEADLINE_S)


@pytest.fixture
def hostile() -> Iterator[Callable[[Script], HostilePeer]]:
    peers: list[HostilePeer] = []

    def make(script: Script) -> HostilePeer:
        peer = HostilePeer(script)
        peers.append(peer)
        return peer

    yield make
    for peer in peers:
        peer.close()


CONNECTED = b"CONNECTED\nversion:1.2\nserver:hostile/0\nheart-beat:0,0\n\n\x00"


def _url(peer: HostilePeer, **query: str) -> str:
    options = {"heartbeat_ms": "0", "connect_timeout_ms": "5000", **query}
    return f"activemq://127.0.0.1:{peer.port}?" + "&".join(f"{k}={v}" for k, v in options.items())


def _answer_subscribe(peer: HostilePeer, conn: socket.socket) -> None:
    """Read frames until the client's SUBSCRIBE and confirm it, so the client sits in receive()."""
    buffered = b""
    while True:
        while b"\x00" not in buffered:
            chunk = conn.recv(4096)
            if not chunk:
                raise ConnectionResetError("client went away")
            buffered += chunk
        frame, _, buffered = buffered.partition(b"\x00")
        lines = frame.lstrip(b"\r\n").split(b"\n")
        if lines[0] == b"SUBSCRIBE":
            for line in lines:
                if line.startswith(b"receipt:"):
                    peer.send(conn, b"RECEIPT\nreceipt-id:" + line[len(b"receipt:") :] + b"\n\n\x00")
            return


def _stream_forever(peer: HostilePeer, conn: socket.socket, head: bytes, filler: bytes, cap: int) -> None:
    peer.send(conn, head)
    chunk = filler * (65536 // len(filler))
    while peer.sent < cap:
        peer.send(conn, chunk)


def _receive_until_dropped(url: str) -> ConnectionLostException:
    """Connect, subscribe, block in receive(): the peer's bad frame must end it with the reason."""
    connection = ConnectionFactory(url).createConnection()
    try:
        connection.start()
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        consumer = session.createConsumer(session.createQueue("x"))
        with pytest.raises(ConnectionLostException) as raised:
            consumer.receive(int(DEADLINE_S * 1000))
    finally:
        connection.close()
    return raised.value


def _after_subscribe(
    peer_ref: list[HostilePeer], data: bytes, then: Callable[[socket.socket], None]
) -> Script:
    """The peer's script: CONNECTED, confirm the SUBSCRIBE, send ``data``, then ``then(conn)``."""

    def script(conn: socket.socket) -> None:
        peer = peer_ref[0]
        peer.send(conn, CONNECTED)
        _answer_subscribe(peer, conn)
        peer.send(conn, data)
        then(conn)

    return script


def _wait_for_hang_up(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.recv(1)


def test_endless_message_body_is_cut_off_at_max_frame_bytes(hostile: Callable[[Script], HostilePeer]) -> None:
    cap = 512 * 1024 * 1024
    ref: list[HostilePeer] = []
    head = b"MESSAGE\ndestination:/queue/x\nsubscription:1\nmessage-id:1\n\n"
    peer = hostile(_after_subscribe(ref, b"", lambda conn: _stream_forever(ref[0], conn, head, b"A", cap)))
    ref.append(peer)
    started = time.monotonic()
    error = _receive_until_dropped(_url(peer, max_frame_bytes="65536"))
    assert "max_frame_bytes=65536" in str(error)
    assert peer.done.wait(DEADLINE_S) and peer.dropped.is_set(), "the peer was never cut off"
    # Loopback socket buffers hold a few MiB; everything beyond that the client refused to read.
    assert peer.sent < 64 * 1024 * 1024
    assert time.monotonic() - started < DEADLINE_S


def test_content_length_announcing_too_much_fails_before_the_body(
    hostile: Callable[[Script], HostilePeer],
) -> None:
    ref: list[HostilePeer] = []
    data = b"MESSAGE\ndestination:/queue/x\ncontent-length:99999999999\n\n"
    peer = hostile(_after_subscribe(ref, data, _wait_for_hang_up))
    ref.append(peer)
    error = _receive_until_dropped(_url(peer))
    assert "announces a 99999999999-byte body" in str(error)


def test_endless_header_block_during_connect(hostile: Callable[[Script], HostilePeer]) -> None:
    peer = hostile(
        lambda conn: _stream_forever(peer, conn, b"CONNECTED\nversion:1.2\nx:", b"h", 512 * 1024 * 1024)
    )
    started = time.monotonic()
    with pytest.raises(JMSException, match="max_header_bytes=4096"):
        ConnectionFactory(_url(peer, max_header_bytes="4096")).createConnection()
    assert time.monotonic() - started < DEADLINE_S
    assert peer.done.wait(DEADLINE_S) and peer.dropped.is_set()


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (b"CONNECTED\nversion:1.2\nserver:\xff\xfe\n\n\x00", "UTF-8"),
        (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "unknown or client-only"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)) + b"\n\n\x00", "UTF-8"),
        (b"CONNECTED\nversion:1.2\nthis line has no colon\n\n\x00", "name:value"),
        (b"CONNECTED\nversion:1.2\ncontent-length:2\n\nabc\x00", "not NUL"),
    ],
    ids=["invalid-utf8", "http", "binary", "no-colon", "bad-content-length"],
)
def test_malformed_answer_to_connect_is_a_clear_error(
    hostile: Callable[[Script], HostilePeer], answer: bytes, fragment: str
) -> None:
    def script(conn: socket.socket) -> None:
        peer.send(conn, answer)
        with contextlib.suppress(OSError):
            conn.recv(1)

    peer = hostile(script)
    started = time.monotonic()
    with pytest.raises(JMSException, match=fragment):
        ConnectionFactory(_url(peer)).createConnection()
    assert time.monotonic() - started < DEADLINE_S


def test_malformed_frame_after_connect_drops_the_connection_with_the_reason(
    hostile: Callable[[Script], HostilePeer],
) -> None:
    ref: list[HostilePeer] = []
    data = b"MESSAGE\ndestination:/queue/x\nbad:\xc3\x28\n\nbody\x00"
    peer = hostile(_after_subscribe(ref, data, _wait_for_hang_up))
    ref.append(peer)
    error = _receive_until_dropped(_url(peer))
    assert "UTF-8" in str(error)


def test_connected_that_never_finishes_times_out(hostile: Callable[[Script], HostilePeer]) -> None:
    def script(conn: socket.socket) -> None:
        peer.send(conn, b"CONNECTED\nversion:1.2\n")
        with contextlib.suppress(OSError):
            conn.recv(1)

    peer = hostile(script)
    started = time.monotonic()
    with pytest.raises(JMSTimeoutException):
        ConnectionFactory(_url(peer, connect_timeout_ms="2000")).createConnection()
    assert time.monotonic() - started < 10
    # The abandoned connection's socket is closed, not left to the peer (or to garbage collection).
    assert peer.done.wait(5), "jmslike left the socket of the timed-out connection open"


# -- peers that stop reading or flood: bounded in time and threads ---------------------------------------


def _connected_then_silent(
    peer_ref: list[HostilePeer],
    release: threading.Event,
    data: bytes = b"",
    go: threading.Event | None = None,
) -> Script:
    """The peer's script: CONNECTED, then (once ``go`` is set, if given) ``data``, then neither read nor
    write until ``release`` is set."""

    def script(conn: socket.socket) -> None:
        peer_ref[0].send(conn, CONNECTED)
        if go is not None:
            go.wait(DEADLINE_S)
        peer_ref[0].send(conn, data)
        release.wait(DEADLINE_S)

    return script


def test_send_to_a_peer_that_stops_reading_fails_within_the_receipt_timeout(
    hostile: Callable[[Script], HostilePeer],
) -> None:
    """The peer answers CONNECTED and never reads again: a send bigger than every socket buffer on the way
    must fail with ConnectionLostException after ``receipt_timeout_ms``, not block the caller for ever, and
    the connection must then close at once."""
    ref: list[HostilePeer] = []
    release = threading.Event()
    ref.append(hostile(_connected_then_silent(ref, release)))
    connection = ConnectionFactory(_url(ref[0], receipt_timeout_ms="2000")).createConnection()
    try:
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createQueue("x"))
        body = "x" * (64 * 1024 * 1024)  # far beyond the kernel's send and receive buffers on loopback
        started = time.monotonic()
        with pytest.raises(ConnectionLostException, match="stopped reading"):
            producer.send(session.createTextMessage(body))
        assert time.monotonic() - started < 10
    finally:
        started = time.monotonic()
        connection.close()
        release.set()
        assert time.monotonic() - started < 5, "close() waited on the dead connection"


def test_a_peer_that_stops_reading_acknowledgements_is_dropped_with_the_reason(
    hostile: Callable[[Script], HostilePeer],
) -> None:
    """The peer confirms the SUBSCRIBE, then only writes MESSAGE frames and never reads the consumer's AUTO ACKs:
    the connection must end within the write deadline, saying the broker stopped reading. Small ACKs fill the
    kernel's send buffer slowly, so which bound ends it depends on the kernel (a stalled write, or
    TCP_USER_TIMEOUT: adapters.stomp_socket.kernel_gave_up); both say why (the asyncio twin:
    tests/integration/test_async_driver.py)."""
    ref: list[HostilePeer] = []

    def script(conn: socket.socket) -> None:
        peer = ref[0]
        peer.send(conn, CONNECTED)
        buffered = b""
        while b"\nid:" not in buffered.partition(b"SUBSCRIBE")[2] or not buffered.rstrip(b"\r\n").endswith(
            b"\x00"
        ):
            chunk = conn.recv(4096)
            if not chunk:
                return
            buffered += chunk
        subscribe = buffered.partition(b"SUBSCRIBE")[2]
        sub_id = subscribe.split(b"\nid:", 1)[1].split(b"\n", 1)[0]
        receipt = subscribe.split(b"\nreceipt:", 1)[1].split(b"\n", 1)[0]
        peer.send(conn, b"RECEIPT\nreceipt-id:" + receipt + b"\n\n\x00")
        n = 0
        while True:  # never reads again; ends when the client's end makes a write fail (OSError: dropped)
            batch = []
            for _ in range(200):
                n += 1
                batch.append(
                    b"MESSAGE\nsubscription:%s\nmessage-id:m%d\ndestination:/queue/x\ncontent-length:2\n\nhi\x00"
                    % (sub_id, n)
                )
            peer.send(conn, b"".join(batch))

    ref.append(hostile(script))
    connection = ConnectionFactory(_url(ref[0], receipt_timeout_ms="1000")).createConnection()
    try:
        connection.start()
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        consumer = session.createConsumer(session.createQueue("x"))
        started = time.monotonic()
        with pytest.raises(ConnectionLostException) as raised:
            while time.monotonic() - started < DEADLINE_S:
                consumer.receive(1000)
        assert time.monotonic() - started < DEADLINE_S
        assert "could not write" in str(raised.value) and "stopped reading" in str(raised.value), raised.value
    finally:
        connection.close()


def test_after_a_write_stalls_no_frame_follows_the_partial_one(
    hostile: Callable[[Script], HostilePeer],
) -> None:
    """A frame cut off by the write deadline leaves part of itself on the stream. The wire drops the
    connection only once the driver's write lock is released, so a writer waiting for that lock came next:
    it must fail at once (SocketClosed), not write its frame behind the partial one, where the broker would
    read it as the rest of the cut-off body. And when that writer's wire drops the connection first (with no
    reason of its own: the socket was closed under it), the end still says why: the stall."""
    ref: list[HostilePeer] = []
    release = threading.Event()
    ref.append(hostile(_connected_then_silent(ref, release)))
    connected = threading.Event()
    ended: list[str | None] = []
    settings = driver_settings(ref[0].port, receipt_prefix="stall-", write_timeout_s=1.0)
    sock = StompSocket(
        settings,
        on_event=lambda event: connected.set() if isinstance(event, Connected) else None,
        on_closed=lambda reason, unanswered: ended.append(reason),
    )
    try:
        sock.connect("localhost", {})
        assert connected.wait(DEADLINE_S)
        with pytest.raises(WriteStalled):  # far beyond the kernel's buffers on loopback
            sock.send(Frame("SEND", {"destination": "/queue/x"}, b"x" * (64 * 1024 * 1024)), receipt=False)
        started = time.monotonic()
        with pytest.raises(SocketClosed):
            sock.send(Frame("SEND", {"destination": "/queue/x"}, b"behind the partial frame"), receipt=False)
        assert time.monotonic() - started < 0.5, "the second writer waited out a write deadline of its own"
        sock.abort()  # what the second writer's wire does (StompWire._write) before the first one's abort
        assert len(ended) == 1 and ended[0] is not None and "could not write within" in ended[0], ended
    finally:
        sock.abort()
        release.set()


def test_a_flood_of_error_frames_creates_no_thread_per_frame(
    hostile: Callable[[Script], HostilePeer],
) -> None:
    """2,000 ERROR frames that answer no receipt, all at once: jmslike holds receipts after them with one
    timer, not a timer thread per frame, and the ExceptionListener hears of them."""
    flood = b"".join(b"ERROR\nmessage:refused %d\n\n\x00" % i for i in range(2000))
    ref: list[HostilePeer] = []
    release = threading.Event()
    go = threading.Event()  # the flood starts once the ExceptionListener is set
    ref.append(hostile(_connected_then_silent(ref, release, flood, go)))
    heard: list[JMSException] = []
    baseline = threading.active_count()
    connection = ConnectionFactory(_url(ref[0])).createConnection()
    try:
        connection.setExceptionListener(heard.append)
        go.set()
        most = threading.active_count()
        deadline = time.monotonic() + DEADLINE_S
        while len(heard) < 1000 and time.monotonic() < deadline:
            most = max(most, threading.active_count())
            time.sleep(0.005)
        assert len(heard) >= 1000, f"the ExceptionListener heard of {len(heard)} of 2,000 ERROR frames"
        # The reader, the event thread and one hold timer, give or take one.
        assert most - baseline <= 6, f"{most - baseline} threads appeared for 2,000 ERROR frames"
    finally:
        connection.close()
        release.set()


# -- frames split at every byte, from the real broker --------------------------------------------------


class ByteRelay:
    """Forwards client -> broker as is and broker -> client one byte per send (TCP_NODELAY)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.bytes_to_client = 0
        self.sockets: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True, name="byte-relay").start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, one_by_one: bool) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if one_by_one:
                    for i in range(len(data)):
                        sink.sendall(data[i : i + 1])
                        self.bytes_to_client += 1
                else:
                    sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.close()


def test_frames_split_at_every_byte_arrive_intact(broker: Any, unique_name: str) -> None:
    if broker.kind == "artemis":
        pytest.skip("needs a locally reachable broker port for the relay")
    relay = ByteRelay((broker.host, broker.port))
    try:
        url = f"{broker.kind}://127.0.0.1:{relay.port}"
        connection: Connection = ConnectionFactory(url).createConnection(broker.user, broker.password)
        try:
            connection.start()
            session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
            queue = session.createQueue(unique_name)
            consumer = session.createConsumer(queue)
            producer = session.createProducer(queue)
            bodies = ["", "a", "with\nnewline", "x" * 3000, "nul\x00inside", "\u00e9\u4e2d\U0001f600"]
            for body in bodies:
                message = session.createTextMessage(body)
                message.setStringProperty("p", "colon:and\\back")
                producer.send(message)
            for body in bodies:
                got = consumer.receive(20_000)
                assert isinstance(got, TextMessage)
                assert got.getText() == body
                assert got.getStringProperty("p") == "colon:and\\back"
        finally:
            connection.close()
        assert relay.bytes_to_client > 3000
    finally:
        relay.close()


def _tls_peer(tmp_path: Any) -> tuple[Any, Any, socket.socket, int]:
    """A certificate for localhost, the peer's server TLS context, and a listening loopback socket and port."""
    pytest.importorskip("cryptography", reason="generates the peer's certificate with `cryptography`")
    import ssl

    from jmslike.conformance.brokers.tls import generate

    material = generate(tmp_path, names=("localhost",))
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(str(material.broker_cert), str(material.broker_key))
    listener = socket.create_server(("127.0.0.1", 0))
    return material, server_context, listener, listener.getsockname()[1]


@contextlib.contextmanager
def _tls_connected(listener: socket.socket, server_context: Any) -> Iterator[Any]:
    """Accept one TLS client, read its CONNECT, answer CONNECTED; the TLS socket is closed on leaving."""
    conn, _ = listener.accept()
    with server_context.wrap_socket(conn, server_side=True) as tls:
        received = b""
        while b"\x00" not in received:
            received += tls.recv(4096)
        tls.sendall(CONNECTED)
        yield tls


def test_tls_peer_closing_is_noticed_at_once_without_heartbeats(tmp_path: Any) -> None:
    """stomp.py 9 misses end-of-file on TLS sockets (it spins until a heart-beat times out, forever with
    heart-beats off); jmslike's reader sees it and reports the loss."""
    material, server_context, listener, port = _tls_peer(tmp_path)

    def serve() -> None:
        with _tls_connected(listener, server_context):
            listening.wait(DEADLINE_S)  # the client has its ExceptionListener: now go away

    listening = threading.Event()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    lost = threading.Event()
    url = f"activemq+ssl://localhost:{port}?ssl_ca_file={material.ca_file}&heartbeat_ms=0"
    connection = ConnectionFactory(url).createConnection()
    try:
        connection.setExceptionListener(lambda error: lost.set())
        listening.set()
        assert lost.wait(10), "the closed TLS connection went unnoticed"
    finally:
        connection.close()
        listener.close()
        thread.join(5)


@pytest.mark.parametrize("attempt", range(3))
def test_a_tls_connection_dropped_mid_stream_reads_no_ciphertext(
    tmp_path: Any, caplog: pytest.LogCaptureFixture, attempt: int
) -> None:
    """A TLS peer streams messages; the client drops the connection (``kill_socket``, as a network drop
    would) while records are still queued. The reader must stop, not read the queued TLS records as plain
    bytes: that happened while the socket was shut down through ``SSLSocket.shutdown`` (which unwraps first),
    3 times in 6, reported as "frame headers are not valid UTF-8" and once as a corrupted message."""
    material, server_context, listener, port = _tls_peer(tmp_path)
    body = b"y" * 2000
    message = b"MESSAGE\nsubscription:1\nmessage-id:m\ndestination:/queue/x\n\n" + body + b"\x00"

    def serve() -> None:
        with _tls_connected(listener, server_context) as tls, contextlib.suppress(OSError):
            while True:
                tls.sendall(message * 20)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    bodies: list[bytes] = []
    some = threading.Event()

    class Collect:
        def on_message(self, frame: Frame) -> None:
            bodies.append(frame.body)
            if len(bodies) >= 50:
                some.set()

        def on_error(self, error: JMSException) -> None:
            pass

        def on_lost(self, error: ConnectionLostException) -> None:
            pass

    config = parse_url(f"activemq+ssl://localhost:{port}?ssl_ca_file={material.ca_file}&heartbeat_ms=0")
    wire = StompWire(config, ("localhost", port), "1.2", Collect(), lambda text, frame: JMSException)
    try:
        wire.open({})
        assert some.wait(DEADLINE_S)
        with caplog.at_level(logging.WARNING, logger="jmslike"):
            wire.kill_socket()
        assert not [r.getMessage() for r in caplog.records if "dropping the connection" in r.getMessage()]
        assert all(received == body for received in bodies), "a message arrived corrupted"
    finally:
        wire.close(timeout_s=1.0)
        listener.close()
        thread.join(5)


# -- heart-beats -----------------------------------------------------------------------------------------


def test_an_idle_connection_writes_the_heartbeats_the_broker_asked_for(
    hostile: Callable[[Script], HostilePeer],
) -> None:
    """The peer asks for a heart-beat every 200 ms (``heart-beat:0,200``) and the client says nothing else:
    the client's heart-beats arrive, none of them late by more than the period again."""
    beats: list[float] = []
    five = threading.Event()
    release = threading.Event()
    ref: list[HostilePeer] = []

    def script(conn: socket.socket) -> None:
        ref[0].send(conn, b"CONNECTED\nversion:1.2\nheart-beat:0,200\n\n\x00")
        beats.append(time.monotonic())
        while len(beats) < 6:
            chunk = conn.recv(1)
            if not chunk:
                return
            if chunk == b"\n":
                beats.append(time.monotonic())
        five.set()
        release.wait(DEADLINE_S)

    ref.append(hostile(script))
    connection = ConnectionFactory(_url(ref[0], heartbeat_ms="200")).createConnection()
    try:
        assert five.wait(DEADLINE_S), f"{len(beats) - 1} heart-beats arrived"
        gaps = [later - earlier for earlier, later in itertools.pairwise(beats)]
        assert max(gaps) < 0.4, f"heart-beat gaps {gaps}"
    finally:
        connection.close()
        release.set()


@pytest.mark.parametrize("then", ["silent", "trickling"])
def test_a_broker_that_stops_sending_is_dropped_after_its_heartbeat_period(
    hostile: Callable[[Script], HostilePeer], then: str
) -> None:
    """``heart-beat:200,0`` promises something every 200 ms; the peer then sends nothing, or one byte of a
    frame every 100 ms (part of a frame is no sign of life: docs/security.md). The connection is dropped,
    and the ExceptionListener hears why, within a second or so."""
    release = threading.Event()
    ref: list[HostilePeer] = []

    def script(conn: socket.socket) -> None:
        ref[0].send(conn, b"CONNECTED\nversion:1.2\nheart-beat:200,0\n\n\x00")
        if then == "trickling":
            ref[0].send(conn, b"MESSAGE\n")
            while not release.wait(0.1):
                ref[0].send(conn, b"x")
        release.wait(DEADLINE_S)

    ref.append(hostile(script))
    heard: list[JMSException] = []
    dropped = threading.Event()
    connection = ConnectionFactory(_url(ref[0], heartbeat_ms="200")).createConnection()
    try:
        connection.setExceptionListener(lambda error: (heard.append(error), dropped.set()))
        started = time.monotonic()
        assert dropped.wait(DEADLINE_S), "the silent broker was never dropped"
        assert time.monotonic() - started < 3
        assert isinstance(heard[0], ConnectionLostException) and "heart-beat" in str(heard[0])
        assert "the broker sent nothing for" in str(heard[0]), "the broker's silence, not this client's"
        assert ("bytes of an unfinished frame came" in str(heard[0])) == (then == "trickling")
    finally:
        release.set()
        connection.close()


@pytest.mark.parametrize("broker_beats", [True, False], ids=["broker beating", "broker silent too"])
def test_a_reader_stuck_in_a_callback_is_told_from_a_silent_broker(
    hostile: Callable[[Script], HostilePeer], broker_beats: bool
) -> None:
    """Review findings on the heart-beat timeout's reason: the broker sends CONNECTED and a MESSAGE whose callback
    holds the reader for 2 s, so nothing is read. If the broker beats meanwhile (four times a promised 200 ms
    period, so that some beats wait however the machine schedules the peer's thread), its bytes wait in the
    socket and the reason says the client stopped reading, not the broker. If it sends nothing more, nothing
    waits, and the reason must not blame the client: both were quiet."""
    release = threading.Event()
    ref: list[HostilePeer] = []

    def script(conn: socket.socket) -> None:
        ref[0].send(conn, b"CONNECTED\nversion:1.1\nheart-beat:200,0\n\n\x00")
        ref[0].send(conn, b"MESSAGE\nsubscription:1\nmessage-id:1\ndestination:/queue/a\n\nx\x00")
        while not release.wait(0.05):
            if broker_beats:
                ref[0].send(conn, b"\n")

    ref.append(hostile(script))
    closed: list[str | None] = []
    ended = threading.Event()

    def on_event(event: Any) -> None:
        if not isinstance(event, Connected):  # the MESSAGE: the owner's callback blocks the reader for 2 s,
            release.wait(2.0)  # after which the reader reports the end the heart-beat watch decided

    sock = StompSocket(
        driver_settings(ref[0].port, heartbeat_ms=200),
        on_event=on_event,
        on_closed=lambda reason, unanswered: (closed.append(reason), ended.set()),
    )
    try:
        sock.connect("localhost", {"accept-version": "1.1"})
        assert ended.wait(DEADLINE_S), "the heart-beat timeout never came"
        reason = closed[0] or ""
        assert "this client's reader has not read for" in reason, reason
        if broker_beats:
            assert "so the client stopped reading, not the broker" in reason, reason
            assert "waiting unread in its socket" in reason and "with 0 bytes" not in reason, reason
        else:
            assert reason.startswith("the broker sent nothing for"), reason
            assert "nothing waits unread in its socket" in reason and "not the broker" not in reason, reason
    finally:
        release.set()
        sock.abort()


# -- a send that fails as the connection ends ---------------------------------------------------------------


class _NoEvents:
    def __init__(self) -> None:
        self.lost = threading.Event()

    def on_message(self, frame: Frame) -> None:
        pass

    def on_error(self, error: JMSException) -> None:
        pass

    def on_lost(self, error: ConnectionLostException) -> None:
        self.lost.set()


@pytest.mark.parametrize("attempt", range(5))
def test_a_send_failing_as_the_connection_ends_is_settled_exactly_once(
    hostile: Callable[[Script], HostilePeer], attempt: int
) -> None:
    """A send is blocked writing to a peer that stopped reading when the peer resets the connection: the end of
    the connection fails every pending receipt while the blocked write fails too. Exactly one of them settles
    the send: ``submit`` raises and its callback never runs, or it returns and the callback runs once. The
    first pending send's callback is held, so the end of the connection has taken the second send from the
    table before its write fails (the order that settled it twice, 6 times in 10, before the fix)."""
    ref: list[HostilePeer] = []

    def script(conn: socket.socket) -> None:
        ref[0].send(conn, CONNECTED)
        time.sleep(0.3)  # the peer's behaviour: silent for a while (the client's write blocks), then a reset
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    ref.append(hostile(script))
    config = parse_url(_url(ref[0], receipt_timeout_ms="10000"))
    events = _NoEvents()
    wire = StompWire(config, config.hosts[0], "1.2", events, lambda text, frame: JMSException)
    wire.open({})
    first_failed, hold = threading.Event(), threading.Event()

    def first_callback(error: JMSException | None) -> None:
        first_failed.set()
        hold.wait(DEADLINE_S)

    settled: list[JMSException | None] = []
    raised: list[JMSException] = []

    def second_send() -> None:
        try:
            wire.submit(Frame("SEND", {"destination": "/queue/a"}, b"x" * (16 * 1024 * 1024)), settled.append)
        except JMSException as exc:
            raised.append(exc)

    try:
        wire.submit(Frame("SEND", {"destination": "/queue/a"}, b"first"), first_callback)
        writer = threading.Thread(target=second_send)
        writer.start()
        assert first_failed.wait(DEADLINE_S), "the reset did not end the connection"
        writer.join(DEADLINE_S)
        hold.set()
        assert events.lost.wait(DEADLINE_S)
        assert len(raised) + len(settled) == 1, f"raised {raised}, callback {settled}"
        assert all(isinstance(error, ConnectionLostException) for error in raised + settled)
    finally:
        hold.set()
        wire.close(timeout_s=1.0)

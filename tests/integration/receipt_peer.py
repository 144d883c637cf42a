"""A scripted STOMP peer for the threaded driver's own timing (send coalescing, quick ACKs): no broker is
involved, because what is tested is when the client reads and writes, not what a broker does with the frames.

The peer is a few lines of socket code that answers CONNECT and every ``receipt`` header at once, except that it
holds back the receipt of a frame with an ``x-hold`` header (or a body starting with ``HOLD``, for frames sent
through the JMS API) until a frame with ``x-release`` comes: a receipt
that stays due, as one does while a stream of sends is under way. It records every frame with the read that
brought it, so a test can tell which frames were written together and when they arrived. A SUBSCRIBE to a
destination whose name starts with ``deliver`` is answered with one MESSAGE.
"""

from __future__ import annotations

import dataclasses
import re
import socket
import threading
import time

from jmslike.adapters.stomp_core import Connected, Event, Receipt, ReceiptReceived
from jmslike.adapters.stomp_socket import DriverSettings, StompSocket

DEADLINE_S = 30.0

#: What a peer reads when a frame whose receipt it holds back, three frames held behind it, then DISCONNECT
#: were sent: DISCONNECT comes after what was held.
HELD_THEN_DISCONNECT = [
    ("SEND", b"first"),
    ("SEND", b"m0"),
    ("SEND", b"m1"),
    ("SEND", b"m2"),
    ("DISCONNECT", b""),
]


@dataclasses.dataclass(frozen=True)
class Arrival:
    """One frame as the peer read it: its command, its body, which read brought it, and when."""

    command: str
    body: bytes
    read: int
    at: float


class ReceiptPeer:
    """Accepts one connection and answers it (see the module docstring); ``arrivals`` lists what it read."""

    def __init__(self, heart_beat: str = "0,0") -> None:
        #: What CONNECTED answers: "0,N" has the client write a heart-beat every N ms (the peer writes none).
        self.heart_beat = heart_beat.encode()
        self.conn: socket.socket | None = None
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.arrivals: list[Arrival] = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.listener.settimeout(DEADLINE_S)
        conn, _ = self.listener.accept()
        self.conn = conn
        buffer = b""
        held: list[bytes] = []
        reads = 0
        with conn:
            while True:
                try:
                    chunk = conn.recv(65536)
                except ConnectionResetError:  # a client process that exits without closing resets: the end
                    return
                if not chunk:
                    return
                reads += 1
                now = time.monotonic()
                buffer += chunk
                *frames, buffer = buffer.split(b"\x00")
                out = []
                for frame in frames:
                    frame = frame.lstrip(b"\r\n")
                    head, _, body = frame.partition(b"\n\n")
                    with self.cond:
                        self.arrivals.append(Arrival(head.split(b"\n", 1)[0].decode(), body, reads, now))
                        self.cond.notify_all()
                    if frame.startswith(b"CONNECT"):
                        out.append(b"CONNECTED\nversion:1.1\nheart-beat:" + self.heart_beat + b"\n\n\x00")
                    subscribed = (
                        re.search(rb"\nid:([^\n]*)\n", frame) if frame.startswith(b"SUBSCRIBE") else None
                    )
                    if subscribed is not None and re.search(rb"\ndestination:/queue/deliver", frame):
                        out.append(
                            b"MESSAGE\ndestination:/queue/deliver\nmessage-id:m0\nsubscription:"
                            + subscribed.group(1)
                            + b"\n\ndelivered\x00"
                        )
                    receipt = re.search(rb"\nreceipt:([^\n]*)\n", frame)
                    if receipt is None:
                        continue
                    answer = b"RECEIPT\nreceipt-id:" + receipt.group(1) + b"\n\n\x00"
                    if b"\nx-hold:" in frame or body.startswith(b"HOLD"):
                        held.append(answer)
                        continue
                    if b"\nx-release:" in frame:
                        out.extend(held)
                        held.clear()
                    out.append(answer)
                if out:
                    conn.sendall(b"".join(out))

    def wait_for(self, count: int, command: str = "SEND") -> list[Arrival]:
        """The first ``count`` frames of ``command`` once they have all arrived (fails after the deadline)."""
        with self.cond:
            assert self.cond.wait_for(
                lambda: sum(a.command == command for a in self.arrivals) >= count, DEADLINE_S
            ), f"only {[a.command for a in self.arrivals]} arrived"
            return [a for a in self.arrivals if a.command == command][:count]

    def frames_after_connect(self) -> list[tuple[str, bytes]]:
        """Every frame but CONNECT, as (command, body), in the order read."""
        with self.cond:
            return [(a.command, a.body) for a in self.arrivals if a.command != "CONNECT"]

    def hang_up(self) -> None:
        """Close the connection from the peer's side (FIN): a client that then writes twice gets EPIPE."""
        assert self.conn is not None
        self.conn.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        self.listener.close()
        self.thread.join(DEADLINE_S)


class Answers:
    """The reader's events, waited for with a condition (the reader thread records, the test waits)."""

    def __init__(self) -> None:
        self.receipts: list[str] = []
        self.connected = False
        self.closed: str | None = None
        self.cond = threading.Condition()

    def on_event(self, event: Event) -> None:
        with self.cond:
            if isinstance(event, ReceiptReceived):
                self.receipts.append(event.receipt.receipt_id)
            elif isinstance(event, Connected):
                self.connected = True
            self.cond.notify_all()

    def on_closed(self, reason: str | None, unanswered: list[Receipt]) -> None:
        with self.cond:
            self.closed = reason or "closed"
            self.cond.notify_all()


def driver_settings(
    port: int,
    *,
    coalesce_s: float = 0.0,
    receipt_prefix: str = "l-",
    write_timeout_s: float = 10.0,
    heartbeat_ms: int = 0,
) -> DriverSettings:
    """Settings for either driver against a peer on ``port``: STOMP 1.1, no heart-beats unless asked, the given
    hold."""
    return DriverSettings(
        host=("127.0.0.1", port),
        version="1.1",
        heartbeat_ms=heartbeat_ms,
        max_frame_bytes=1024 * 1024,
        max_header_bytes=64 * 1024,
        context=None,
        connect_timeout_s=10.0,
        write_timeout_s=write_timeout_s,
        receipt_prefix=receipt_prefix,
        coalesce_s=coalesce_s,
    )


def connected_socket(peer: ReceiptPeer, *, coalesce_s: float = 0.0) -> tuple[StompSocket, Answers]:
    """A threaded driver connected to ``peer``, holding frames for coalescing as long as given (beyond the
    URL's 10 ms ceiling when a test needs a time that cannot pass unnoticed)."""
    answers = Answers()
    sock = StompSocket(
        driver_settings(peer.port, coalesce_s=coalesce_s),
        on_event=answers.on_event,
        on_closed=answers.on_closed,
    )
    sock.connect("localhost", {"accept-version": "1.1"})
    with answers.cond:
        assert answers.cond.wait_for(lambda: answers.connected or answers.closed, DEADLINE_S)
    assert answers.connected, answers.closed
    return sock, answers

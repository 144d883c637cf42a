"""A scripted STOMP peer that answers transactions as RabbitMQ does, and fails ABORT or COMMIT on request.

RabbitMQ answers a transactional SEND's receipt only at COMMIT and never after ABORT (raw control against
RabbitMQ 3.10: BEGIN, SEND receipt:s1, ABORT receipt:a1, SEND receipt:s2 is answered with a1 and s2 only; the
real-broker tests are in test_security.py). What no broker does on demand is fail the end of a transaction, so
this peer does, to test jmslike's side of it:

- ``abort="silent"``: ABORT is never answered (its receipt times out); ``abort="error"``: an ERROR names it;
- ``refuse_first_commit``: the first COMMIT is answered with an ERROR naming its receipt;
- ``hold_first``: the answer to the first frame of that command (BEGIN, COMMIT) waits for :meth:`release`, so
  a test can act while that frame is in flight;
- ``deliver``: a SUBSCRIBE is answered with one MESSAGE of that body (ack id ``a0``); :meth:`push` sends
  another, :meth:`drop` ends the connection and stops listening;
- :meth:`pause_reading` stops reading until :meth:`resume_reading`, so that a large frame backs the client's
  transport up and its write waits to drain.

``broker="activemq"`` answers as ActiveMQ does instead: CONNECTED names ActiveMQ, and a transactional SEND's
receipt comes at once (``hold_first="SEND"`` then holds the first one). A second connection while one is served
(jmslike's private connection, which removes older retained copies on ActiveMQ) is refused with an ERROR.

It records every command it reads, across reconnections (``commands``, waited for with :meth:`wait_for`), and the transaction of every
ACK (``acks``).
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import AsyncIterator

from jmslike import Session, aio

DEADLINE_S = 30.0
SERVERS = {"rabbitmq": b"RabbitMQ/3.10.8", "activemq": b"ActiveMQ/5.17.2"}


def _header(frame: bytes, name: bytes) -> bytes | None:
    found = re.search(rb"\n" + name + rb":([^\n]*)\n", frame)
    return found.group(1) if found else None


def _receipt(receipt_id: bytes) -> bytes:
    return b"RECEIPT\nreceipt-id:" + receipt_id + b"\n\n\x00"


def _error(receipt_id: bytes, message: bytes) -> bytes:
    return b"ERROR\nreceipt-id:" + receipt_id + b"\nmessage:" + message + b"\n\n" + message + b"\x00"


class TransactionPeer:
    """Accepts one connection and answers it as the module docstring says."""

    def __init__(
        self,
        abort: str = "answer",
        refuse_first_commit: bool = False,
        hold_first: str | None = None,
        deliver: bytes | None = None,
        broker: str = "rabbitmq",
    ) -> None:
        assert abort in ("answer", "silent", "error") and broker in SERVERS
        self.broker = broker
        self.abort = abort
        self.refuse_first_commit = refuse_first_commit
        self.hold_first = hold_first
        self.deliver = deliver
        self.acks: list[bytes | None] = []
        self.held: list[bytes] = []
        self.conn: socket.socket | None = None
        self.subscription: bytes | None = None
        self.send_lock = threading.Lock()
        self.reading = threading.Event()
        self.reading.set()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.commands: list[str] = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def url(self, **options: str) -> str:
        query = "&".join(f"{k}={v}" for k, v in {"heartbeat_ms": "0", **options}.items())
        return f"{self.broker}://127.0.0.1:{self.port}?{query}"

    def wait_for(self, command: str, count: int = 1) -> None:
        """Until ``count`` frames of ``command`` have arrived (fails after the deadline)."""
        with self.cond:
            assert self.cond.wait_for(lambda: self.commands.count(command) >= count, DEADLINE_S), (
                self.commands
            )

    def release(self) -> None:
        """Send the answer held back (``hold_first``)."""
        with self.send_lock:
            assert self.conn is not None
            self.conn.sendall(b"".join(self.held))

    def pause_reading(self) -> None:
        """Read nothing more (what the client writes fills the socket buffers, then its transport's)."""
        self.reading.clear()

    def resume_reading(self) -> None:
        self.reading.set()

    def push(self, body: bytes) -> None:
        """Deliver one more MESSAGE on the subscription ``deliver`` answered (ack id ``a1``)."""
        with self.send_lock:
            assert self.conn is not None and self.subscription is not None
            self.conn.sendall(
                b"MESSAGE\ndestination:/queue/q\nmessage-id:m1\nack:a1\nsubscription:"
                + self.subscription
                + b"\n\n"
                + body
                + b"\x00"
            )

    def drop(self, come_back: bool = False) -> None:
        """Close the connection and stop listening: the broker is gone; or, ``come_back``, accept the client's
        reconnection (the next connection is answered as the first was)."""
        if not come_back:
            self._stop_listening()
        self.resume_reading()  # the serving thread sees the end
        with self.send_lock:
            assert self.conn is not None
            self.conn.shutdown(socket.SHUT_RDWR)

    def _run(self) -> None:
        self.listener.settimeout(DEADLINE_S)
        serving: threading.Thread | None = None
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # stopped, or gone for good (drop)
                if serving is not None:
                    serving.join(DEADLINE_S)
                return
            if serving is not None and serving.is_alive():  # one connection at a time
                with conn:
                    conn.sendall(b"ERROR\nmessage:one connection at a time\n\n\x00")
                continue
            serving = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            serving.start()

    def _serve(self, conn: socket.socket) -> None:
        self.conn = conn
        buffer = bytearray()  # a large frame arrives in many reads: appended in place, split once whole
        deferred: dict[bytes, list[bytes]] = {}  # transaction -> its SENDs' receipts (RabbitMQ: until COMMIT)
        with conn:
            while True:
                assert self.reading.wait(DEADLINE_S), "reading paused past the deadline"
                try:
                    chunk = conn.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                buffer += chunk
                if b"\x00" not in chunk:
                    continue
                *frames, rest = bytes(buffer).split(b"\x00")
                buffer = bytearray(rest)
                out: list[bytes] = []
                for frame in frames:
                    frame = frame.lstrip(b"\r\n")
                    if not frame:
                        continue
                    command = frame.split(b"\n", 1)[0].decode()
                    with self.cond:
                        self.commands.append(command)
                        self.cond.notify_all()
                    receipt, tx = _header(frame, b"receipt"), _header(frame, b"transaction")
                    if command in ("CONNECT", "STOMP"):
                        out.append(
                            b"CONNECTED\nversion:1.2\nserver:"
                            + SERVERS[self.broker]
                            + b"\nheart-beat:0,0\n\n\x00"
                        )
                        continue
                    if command == "SEND" and tx is not None and self.broker == "rabbitmq":
                        if receipt is not None:
                            deferred.setdefault(tx, []).append(receipt)
                        continue
                    answer = _receipt(receipt) if receipt is not None else b""
                    if command == "COMMIT" and tx is not None:
                        if self.refuse_first_commit:
                            self.refuse_first_commit = False
                            deferred.pop(tx, None)
                            answer = _error(receipt or b"", b"commit refused")
                        else:  # the SENDs' receipts, then COMMIT's (held together by hold_first)
                            answer = b"".join(_receipt(r) for r in deferred.pop(tx, [])) + answer
                    if command == "ACK":
                        self.acks.append(tx)
                    if command == "SUBSCRIBE" and self.deliver is not None:
                        self.subscription = _header(frame, b"id") or b""
                        out.append(
                            b"MESSAGE\ndestination:/queue/q\nmessage-id:m0\nack:a0\nsubscription:"
                            + (_header(frame, b"id") or b"")
                            + b"\n\n"
                            + self.deliver
                            + b"\x00"
                        )
                    if command == self.hold_first and answer:
                        self.hold_first = None
                        self.held.append(answer)
                        continue
                    if command == "ABORT" and tx is not None:
                        deferred.pop(tx, None)
                        if self.abort == "silent":
                            continue
                        if self.abort == "error" and receipt is not None:
                            out.append(_error(receipt, b"no such transaction"))
                            continue
                    if answer:
                        out.append(answer)
                    if command == "DISCONNECT":
                        with self.send_lock:
                            conn.sendall(b"".join(out))
                        return
                if out:
                    with self.send_lock:
                        conn.sendall(b"".join(out))

    def stop(self) -> None:
        self._stop_listening()
        self.thread.join(DEADLINE_S)

    def _stop_listening(self) -> None:
        """Close the listener; shutting it down first wakes an accept() under way (Linux), which close alone
        does not."""
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()


@contextlib.asynccontextmanager
async def transacted(
    peer: TransactionPeer, **options: str
) -> AsyncIterator[tuple[aio.Connection, aio.Session]]:
    """An asyncio connection to ``peer`` (its ExceptionListener set: some tests lose the connection on purpose)
    and a transacted session on it; closed on the way out."""
    async with await aio.ConnectionFactory(peer.url(**options)).createConnection() as connection:
        connection.setExceptionListener(lambda exc: None)
        yield connection, await connection.createSession(True, Session.SESSION_TRANSACTED)

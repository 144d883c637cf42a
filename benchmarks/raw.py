"""The baseline: plain stomp.py doing the protocol work jmslike does, frame for frame.

The frames were copied from what jmslike really sends (stomp.py's DEBUG log of a jmslike session):
STOMP 1.1 on ActiveMQ and 1.2 on RabbitMQ, the same heart-beats, ``client-individual`` subscriptions
with the broker's prefetch header, a receipt on every synchronous SEND, and the same SEND headers
(``persistent``, ``priority``, ``timestamp``, ``jmslike-type``, a fresh ``jmslike-id``,
``content-length``, ``amq-msg-type`` on ActiveMQ, ``jmslike-origin`` on RabbitMQ, no ``persistent``
header for a non-persistent send on RabbitMQ). So the ratio jmslike/raw measures jmslike's own cost,
not a difference in what the broker is asked to do.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import stomp

Frame = Any  # stomp.utils.Frame: command, headers, body


class RawClient:
    """One stomp.py connection, configured as jmslike configures its own for ``kind``."""

    _ids = itertools.count(1)

    def __init__(
        self,
        kind: str,
        host: str,
        port: int,
        user: str,
        password: str,
        *,
        client_id: str | None = None,
        heartbeat_ms: int = 10_000,
        on_message: Callable[[RawClient, Frame], None] | None = None,
        listener_thread: bool = False,
    ) -> None:
        """``listener_thread``: run ``on_message`` on a thread of its own, fed by a queue, instead of on
        stomp.py's receiver thread: the shape of a JMS session, whose listener runs on the session's
        thread (a control for the fan-out comparison, see docs/performance.md)."""
        self.kind = kind
        self.version = "1.1" if kind == "activemq" else "1.2"
        conn_class = stomp.Connection11 if self.version == "1.1" else stomp.Connection12
        self.conn = conn_class(
            host_and_ports=[(host, port)],
            heartbeats=(heartbeat_ms, heartbeat_ms),
            auto_decode=False,
            auto_content_length=False,
            reconnect_attempts_max=1,
            vhost="/" if kind == "rabbitmq" else host,
        )
        self.origin = f"raw-{uuid.uuid4().hex[:12]}"
        self.inbox: queue.SimpleQueue[Frame] = queue.SimpleQueue()
        self._on_message = on_message
        self._handoff: queue.SimpleQueue[Frame | None] | None = None
        if on_message is not None and listener_thread:
            self._handoff = queue.SimpleQueue()
            threading.Thread(target=self._run_listener, name="raw-listener", daemon=True).start()
        self._receipts: dict[str, Callable[[], None]] = {}
        self._lock = threading.Lock()
        self._receipt_ids = itertools.count(1)
        self._prefix = f"raw{next(self._ids)}-"
        self.conn.set_listener("raw", _Listener(self))
        headers = {"client-id": client_id} if client_id and kind == "activemq" else {}
        self.conn.connect(user, password, wait=True, headers=headers)

    # -- receipts -------------------------------------------------------------------------------------

    def _track(self, done: Callable[[], None]) -> str:
        receipt = f"{self._prefix}{next(self._receipt_ids)}"
        with self._lock:
            self._receipts[receipt] = done
        return receipt

    def resolve(self, receipt: str) -> None:
        """A RECEIPT from the receiver thread: run what waited for it."""
        with self._lock:
            done = self._receipts.pop(receipt, None)
        if done is not None:
            done()

    # -- sending --------------------------------------------------------------------------------------

    def send_headers(self, destination: str, body: bytes, persistent: bool) -> dict[str, str]:
        """The headers jmslike puts on a BytesMessage SEND (see the module docstring)."""
        headers = {
            "destination": destination,
            "priority": "4",
            "timestamp": str(int(time.time() * 1000)),
            "jmslike-type": "bytes",
            "jmslike-id": f"ID:{uuid.uuid4().hex}",
            "content-length": str(len(body)),
        }
        if self.kind == "activemq":
            headers["amq-msg-type"] = "bytes"
            headers["persistent"] = "true" if persistent else "false"
        else:
            headers["jmslike-origin"] = self.origin
            if persistent:
                headers["persistent"] = "true"
        return headers

    def send_sync(self, destination: str, body: bytes, persistent: bool = True) -> None:
        """SEND with a receipt and wait for it, as a JMS synchronous send does."""
        done = threading.Event()
        headers = self.send_headers(destination, body, persistent)
        headers["receipt"] = self._track(done.set)
        self.conn.send(destination, body, headers=headers)
        if not done.wait(30):
            raise TimeoutError("no receipt within 30 s")

    def send_async(self, destination: str, body: bytes, done: Callable[[], None], persistent: bool) -> None:
        """SEND with a receipt; ``done`` runs on the receiver thread when it arrives."""
        headers = self.send_headers(destination, body, persistent)
        headers["receipt"] = self._track(done)
        self.conn.send(destination, body, headers=headers)

    def send_unconfirmed(self, destination: str, body: bytes, persistent: bool = True) -> None:
        """SEND without a receipt: filling backlogs (set-up), and the fire-and-forget NON_PERSISTENT peer."""
        self.conn.send(destination, body, headers=self.send_headers(destination, body, persistent))

    def barrier(self, timeout_s: float = 300) -> None:
        """A receipted no-op frame: the broker answers it after everything sent before it."""
        done = threading.Event()
        receipt = self._track(done.set)
        self.conn.send_frame("BEGIN", {"transaction": f"barrier-{receipt}", "receipt": receipt})
        if not done.wait(timeout_s):
            raise TimeoutError("the broker did not answer the barrier")
        self.conn.send_frame("ABORT", {"transaction": f"barrier-{receipt}"})

    # -- consuming ------------------------------------------------------------------------------------

    def subscribe(
        self,
        destination: str,
        sub_id: str,
        prefetch: int = 1000,
        durable_name: str | None = None,
        ack: str = "client-individual",
    ) -> None:
        """SUBSCRIBE with a receipt, as jmslike's consumers do: ``client-individual`` acks, or ``client``
        (cumulative) as jmslike's CLIENT_ACKNOWLEDGE consumers on ActiveMQ."""
        headers = {"ack": ack}
        if self.kind == "activemq":
            headers["activemq.prefetchSize"] = str(prefetch)
            if durable_name is not None:
                headers["activemq.subscriptionName"] = durable_name
        else:
            headers["prefetch-count"] = str(prefetch)
            if durable_name is not None:
                headers.update({"durable": "true", "auto-delete": "false", "x-queue-name": durable_name})
        done = threading.Event()
        headers["receipt"] = self._track(done.set)
        self.conn.subscribe(destination, sub_id, ack=ack, headers=headers)
        if not done.wait(30):
            raise TimeoutError("no receipt for SUBSCRIBE")

    def ack(self, frame: Frame, wait: bool = False) -> None:
        """ACK one message; ``wait`` adds a receipt and waits (the last ACK of a CLIENT acknowledge())."""
        headers = frame.headers
        receipt = None
        done = threading.Event()
        if wait:
            receipt = self._track(done.set)
        if self.version == "1.1":
            self.conn.ack(headers["message-id"], headers["subscription"], receipt=receipt)
        else:
            self.conn.ack(headers["ack"], receipt=receipt)
        if wait and not done.wait(30):
            raise TimeoutError("no receipt for ACK")

    def _run_listener(self) -> None:
        assert self._handoff is not None and self._on_message is not None
        while (frame := self._handoff.get()) is not None:
            self._on_message(self, frame)

    def deliver(self, frame: Frame) -> None:
        """A MESSAGE from the receiver thread: to the listener's thread, the callback, or the inbox."""
        if self._handoff is not None:
            self._handoff.put(frame)
        elif self._on_message is not None:
            self._on_message(self, frame)
        else:
            self.inbox.put(frame)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # best effort at the end of a measurement
            self.conn.disconnect()
        if self._handoff is not None:
            self._handoff.put(None)


class _Listener(stomp.ConnectionListener):  # type: ignore[misc]
    """Receiver thread: resolve receipts, and either hand messages to a callback or queue them."""

    def __init__(self, client: RawClient) -> None:
        self._client = client

    def on_receipt(self, frame: Frame) -> None:
        self._client.resolve(frame.headers.get("receipt-id", ""))

    def on_message(self, frame: Frame) -> None:
        self._client.deliver(frame)

    def on_error(self, frame: Frame) -> None:
        print(f"raw client: ERROR frame {frame.headers} {frame.body!r}", flush=True)

"""The workloads, each written twice: through jmslike and through raw stomp.py (benchmarks/raw.py).

Every function measures one side once and returns a number (msg/s, or latencies in ms); the runner in
``__main__`` alternates the sides over several rounds so that a slow moment of the (shared) machine hits
both. Each measurement uses fresh destinations, so no round inherits another's backlog or subscriptions, and a
publish workload empties its queue afterwards (:func:`discard`), so the broker does not hold every round's messages.
Set-up that is not what a workload measures (filling a backlog, creating subscriptions) is done with
raw stomp.py and kept out of the timed section.
"""

from __future__ import annotations

import gc
import itertools
import math
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jmslike import ConnectionFactory, DeliveryMode, Session
from jmslike.config import ConnectionConfig
from jmslike.exceptions import JMSException
from jmslike.messages import Message

from .raw import RawClient

SIDES = ("jmslike", "raw")
CLIENT_ACK_BATCH = 100  # CLIENT_ACKNOWLEDGE: acknowledge() after this many messages
WARMUP = 20
#: jmslike's default send window, in sends and in body bytes: what the raw side's window of receipts pipelined
#: follows (:func:`window`).
WINDOW: int = ConnectionConfig.send_window
WINDOW_BYTES: int = ConnectionConfig.send_window_bytes


def window(size: int) -> int:
    """How many receipts the raw side pipelines for bodies of ``size`` bytes: as many sends as jmslike's default
    window lets be in flight, counted in sends (``send_window``) and in bytes (``send_window_bytes``), so both sides
    do the same work at any size."""
    return max(1, min(WINDOW, WINDOW_BYTES // max(1, size)))


_names = itertools.count(1)


@dataclass
class Bench:
    """Where and how long: the broker's coordinates and the sizes of the workloads."""

    kind: str
    host: str
    port: int
    user: str
    password: str
    url: str  # jmslike URL, with management_url on RabbitMQ
    duration_s: float
    backlog: int
    latency_rate: int
    latency_s: float
    subscribers: int = 10

    def factory(self, client_id: str | None = None) -> ConnectionFactory:
        return ConnectionFactory(self.url, clientID=client_id)

    def raw(self, **options: Any) -> RawClient:
        return RawClient(self.kind, self.host, self.port, self.user, self.password, **options)

    def name(self, what: str) -> str:
        """A fresh destination or subscription name (unique per run, so nothing is inherited)."""
        return f"bench.{what}.{uuid.uuid4().hex[:8]}.{next(_names)}"


class _CpuNote:
    """CPU microseconds per message of the last timed section (NaN when it recorded none), and how many full
    garbage collections (generation 2) it ran per 100,000 messages: objects a client keeps per send in flight
    make the collector run, and a full collection walks every object of the process (docs/performance.md); and
    how many messages that section had."""

    last = math.nan
    full_gcs = math.nan
    messages = 0  # of the last timed section (benchmarks.instructions divides by it)


CPU = _CpuNote()


class Stopwatch:
    """A timed section: wall-clock rate, and this process's CPU time per message (``time.process_time()``,
    every thread: the client's reader thread, and the JVM's when the Java client runs in-process), which
    is steadier than rates on a shared machine."""

    def __init__(self) -> None:
        self.wall = time.perf_counter()
        self.cpu = time.process_time()
        self.full_gcs = gc.get_stats()[2]["collections"]

    def rate(self, count: int, end: float | None = None) -> float:
        """msg/s from the start to ``end`` (a perf_counter time; default now); notes CPU µs per message
        in ``CPU.last``."""
        wall = (time.perf_counter() if end is None else end) - self.wall
        CPU.messages = count
        CPU.last = (time.process_time() - self.cpu) / count * 1e6 if count else math.nan
        CPU.full_gcs = (gc.get_stats()[2]["collections"] - self.full_gcs) / count * 1e5 if count else math.nan
        return count / wall


def payload(size: int) -> bytes:
    return b"x" * size


def stamped(size: int) -> bytes:
    """A body carrying its send time (perf_counter_ns) in its first 20 bytes, for latency."""
    return str(time.perf_counter_ns()).zfill(20).encode() + b"x" * max(0, size - 20)


def sent_ns(body: bytes) -> int:
    return int(body[:20])


# -- publish --------------------------------------------------------------------------------------------


def publish_sync(bench: Bench, size: int, side: str, persistent: bool = True, drain: bool = True) -> float:
    """Synchronous sends (each waits for its receipt) for ``duration_s``; returns msg/s. The queue is emptied
    afterwards, untimed (:func:`discard`; ``drain=False``: not, for a peer that keeps nothing)."""
    queue_name = bench.name("pub")
    rate, sent = _publish_sync(bench, payload(size), side, persistent, queue_name)
    if drain:
        discard(bench, queue_name, sent)
    return rate


def _publish_sync(
    bench: Bench, body: bytes, side: str, persistent: bool, queue_name: str
) -> tuple[float, int]:
    if side == "raw":
        client = bench.raw()
        dest = f"/queue/{queue_name}"
        try:
            for _ in range(WARMUP):
                client.send_sync(dest, body, persistent)
            count, clock = 0, Stopwatch()
            deadline = time.perf_counter() + bench.duration_s
            while time.perf_counter() < deadline:
                client.send_sync(dest, body, persistent)
                count += 1
            return clock.rate(count), WARMUP + count
        finally:
            client.close()
    with bench.factory().createConnection(bench.user, bench.password) as connection:
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createQueue(queue_name))
        producer.setDeliveryMode(DeliveryMode.PERSISTENT if persistent else DeliveryMode.NON_PERSISTENT)

        def send() -> None:
            message = session.createBytesMessage()
            message.writeBytes(body)
            producer.send(message)

        for _ in range(WARMUP):
            send()
        count, clock = 0, Stopwatch()
        deadline = time.perf_counter() + bench.duration_s
        while time.perf_counter() < deadline:
            send()
            count += 1
        return clock.rate(count), WARMUP + count


class Completions:
    """A JMS 2.0 CompletionListener that counts, and lets the benchmark wait for the last one."""

    def __init__(self) -> None:
        self.done = 0
        self.failed: JMSException | None = None
        self.cond = threading.Condition()

    def onCompletion(self, message: Message) -> None:
        with self.cond:
            self.done += 1
            self.cond.notify_all()

    def onException(self, message: Message, exception: JMSException) -> None:
        with self.cond:
            self.failed = exception
            self.done += 1
            self.cond.notify_all()

    def wait_for(self, count: int, timeout_s: float = 60) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: self.done >= count, timeout_s):
                raise TimeoutError(f"{count - self.done} completions missing")
        if self.failed is not None:
            raise self.failed


def publish_async(
    bench: Bench,
    size: int,
    side: str,
    *,
    callback_thread: bool = False,
    mark: Callable[[str], None] | None = None,
    drain: bool = True,
) -> float:
    """Asynchronous persistent sends for ``duration_s``, then wait for the last completion; msg/s. The queue is
    emptied afterwards, untimed, as :func:`publish_sync`'s.

    jmslike: JMS 2.0 completion listener (bounded by its default send window). raw: the same
    frames with receipts pipelined in a window of the same size (:func:`window`), which tells how much of the result is
    the broker's own ceiling (the issue compares jmslike's asynchronous sends with raw synchronous ones;
    the runner reports both). ``callback_thread``: the raw side runs its completion callback on a thread
    of its own, fed in receipt order by a queue, as JMS 2.0 §7.3.8 has a CompletionListener run (neither on
    the sending thread nor beside the session's other callbacks) and as fan-out's raw control runs listeners.
    ``mark`` is told "start" after the warm-up and "end" after the last completion (benchmarks.threads samples
    per-thread CPU with it)."""
    body = payload(size)
    queue_name = bench.name("async")
    if side == "raw":
        rate, sent = _raw_pipelined(
            bench, body, window(size), queue_name, callback_thread=callback_thread, mark=mark
        )
    else:
        rate, sent = _jmslike_async(bench, body, queue_name, mark)
    if drain:
        discard(bench, queue_name, sent)
    return rate


def _jmslike_async(
    bench: Bench, body: bytes, queue_name: str, mark: Callable[[str], None] | None
) -> tuple[float, int]:
    with bench.factory().createConnection(bench.user, bench.password) as connection:
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createQueue(queue_name))
        listener = Completions()

        def send() -> None:
            message = session.createBytesMessage()
            message.writeBytes(body)
            producer.send(message, completionListener=listener)

        for _ in range(WARMUP):
            send()
        listener.wait_for(WARMUP)
        if mark is not None:
            mark("start")
        count, clock = 0, Stopwatch()
        deadline = time.perf_counter() + bench.duration_s
        while time.perf_counter() < deadline:
            send()
            count += 1
        listener.wait_for(WARMUP + count)
        if mark is not None:
            mark("end")
        return clock.rate(count), WARMUP + count


def publish_non_persistent(bench: Bench, size: int, side: str, drain: bool = True) -> float:
    """NON_PERSISTENT sends outside a transaction for ``duration_s``, timed until the broker confirmed the
    last one (jmslike: ``producer.close()``, which waits for the window to drain); msg/s.

    jmslike does not wait for each receipt (issue #21). ``raw`` does the same work: a receipt per send,
    pipelined in jmslike's default window (:func:`window`). ``raw-ff`` is raw stomp.py as people usually write it: no receipts,
    one receipted frame at the end to know the broker has everything. The queue is emptied afterwards,
    untimed: ActiveMQ keeps NON_PERSISTENT messages in memory and blocks every producer once it is full
    (``drain=False``: not, for a peer that keeps nothing; benchmarks/null_peer.py)."""
    body = payload(size)
    queue_name = bench.name("nonpers")
    if side == "raw":
        rate, sent = _raw_pipelined(bench, body, window(size), queue_name, persistent=False)
    elif side == "raw-ff":
        rate, sent = _raw_fire_and_forget(bench, body, queue_name)
    else:
        rate, sent = _jmslike_non_persistent(bench, body, queue_name)
    if drain:
        discard(bench, queue_name, sent)
    return rate


def _jmslike_non_persistent(bench: Bench, body: bytes, queue_name: str) -> tuple[float, int]:
    with bench.factory().createConnection(bench.user, bench.password) as connection:
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        queue = session.createQueue(queue_name)
        warm = session.createProducer(queue)
        warm.setDeliveryMode(DeliveryMode.NON_PERSISTENT)

        def send(producer: Any) -> None:
            message = session.createBytesMessage()
            message.writeBytes(body)
            producer.send(message)

        for _ in range(WARMUP):
            send(warm)
        warm.close()
        producer = session.createProducer(queue)
        producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)
        count, clock = 0, Stopwatch()
        deadline = time.perf_counter() + bench.duration_s
        while time.perf_counter() < deadline:
            send(producer)
            count += 1
        producer.close()
        return clock.rate(count), WARMUP + count


def _raw_fire_and_forget(bench: Bench, body: bytes, queue_name: str) -> tuple[float, int]:
    client = bench.raw()
    dest = f"/queue/{queue_name}"
    try:
        for _ in range(WARMUP):
            client.send_unconfirmed(dest, body, persistent=False)
        client.barrier()
        count, clock = 0, Stopwatch()
        deadline = time.perf_counter() + bench.duration_s
        while time.perf_counter() < deadline:
            client.send_unconfirmed(dest, body, persistent=False)
            count += 1
        client.barrier()
        return clock.rate(count), WARMUP + count
    finally:
        client.close()


def discard(bench: Bench, queue_name: str, count: int) -> None:
    """Set-up: take ``count`` messages off a queue (``ack:auto``), so a measurement leaves no backlog. Every publish
    workload does this, untimed: when only NON_PERSISTENT ones did, ActiveMQ 5.17 (2 GB heap) ran out of heap in the
    last round of a default run (2026-11-29, OutOfMemoryError: every client's rate fell to about a tenth of the
    first round's, then the broker died), holding every earlier round's PERSISTENT publishes."""
    client = bench.raw()
    try:
        client.subscribe(f"/queue/{queue_name}", "discard", ack="auto")
        for _ in range(count):
            client.inbox.get(timeout=60)
    finally:
        client.close()


def _raw_pipelined(
    bench: Bench,
    body: bytes,
    in_flight: int,
    queue_name: str,
    persistent: bool = True,
    callback_thread: bool = False,
    mark: Callable[[str], None] | None = None,
) -> tuple[float, int]:
    """Receipted sends, at most ``in_flight`` awaiting their receipt; (msg/s, messages sent). ``callback_thread``:
    the completion is counted on a thread of its own, handed over by a queue (publish_async says why)."""
    client = bench.raw()
    dest = f"/queue/{queue_name}"
    slots = threading.BoundedSemaphore(in_flight)
    listener = Completions()
    handoff: queue.SimpleQueue[bool] | None = None
    if callback_thread:
        handoff = queue.SimpleQueue()

        def run_callbacks() -> None:
            while handoff.get():
                listener.onCompletion(None)  # type: ignore[arg-type]

        threading.Thread(target=run_callbacks, name="raw-completions", daemon=True).start()

    def done() -> None:  # receiver thread
        slots.release()
        if handoff is not None:
            handoff.put(True)
        else:
            listener.onCompletion(None)  # type: ignore[arg-type]

    def send() -> None:
        if not slots.acquire(timeout=30):
            raise TimeoutError("no receipt within 30 s")
        client.send_async(dest, body, done, persistent=persistent)

    try:
        for _ in range(WARMUP):
            send()
        listener.wait_for(WARMUP)
        if mark is not None:
            mark("start")
        count, clock = 0, Stopwatch()
        deadline = time.perf_counter() + bench.duration_s
        while time.perf_counter() < deadline:
            send()
            count += 1
        listener.wait_for(WARMUP + count)
        if mark is not None:
            mark("end")
        return clock.rate(count), WARMUP + count
    finally:
        if handoff is not None:
            handoff.put(False)
        client.close()


# -- consume a backlog ----------------------------------------------------------------------------------


def fill(bench: Bench, queue_name: str, count: int, body: bytes) -> None:
    """Set-up: ``count`` persistent messages in the jmslike/raw header format, confirmed by one barrier."""
    # No heart-beats: when the broker throttles a fast producer (flow control) it stops reading, and
    # ActiveMQ's inactivity monitor would then drop the connection in the middle of the fill.
    client = bench.raw(heartbeat_ms=0)
    dest = f"/queue/{queue_name}"
    try:
        for i in range(count):
            client.send_unconfirmed(dest, body)
            if i % 1000 == 999:
                client.barrier()  # keeps the socket buffers and the broker's queue of work bounded
        client.barrier()
    finally:
        client.close()


def consume(bench: Bench, size: int, side: str, mode: int, count: int | None = None) -> float:
    """Drain a backlog of ``count`` messages (default ``bench.backlog``); returns msg/s.

    AUTO_ACKNOWLEDGE acks each message as it is received; CLIENT_ACKNOWLEDGE calls acknowledge() every
    CLIENT_ACK_BATCH messages (jmslike then ACKs each delivered message and waits for the last receipt,
    or on ActiveMQ sends one cumulative ``ack:client`` ACK; the raw side does the same); DUPS_OK leaves
    acknowledging to jmslike (lazy). ``raw-auto`` is raw stomp.py as people usually write a consumer:
    ``ack:auto``, no ACK frames at all (the broker forgets each message as it sends it)."""
    count = bench.backlog if count is None else count
    queue_name = bench.name("consume")
    fill(bench, queue_name, count, payload(size))
    client_mode = mode == Session.CLIENT_ACKNOWLEDGE
    if side in ("raw", "raw-auto"):
        client = bench.raw()
        try:
            clock = Stopwatch()
            cumulative = client_mode and bench.kind == "activemq"
            ack = "auto" if side == "raw-auto" else "client" if cumulative else "client-individual"
            client.subscribe(f"/queue/{queue_name}", "raw-sub-1", ack=ack)
            for i in range(1, count + 1):
                frame = client.inbox.get(timeout=60)
                last_of_batch = i % CLIENT_ACK_BATCH == 0 or i == count
                if ack != "auto" and (not cumulative or last_of_batch):
                    client.ack(frame, wait=client_mode and last_of_batch)
            return clock.rate(count)
        finally:
            client.close()
    with bench.factory().createConnection(bench.user, bench.password) as connection:
        session = connection.createSession(False, mode)
        clock = Stopwatch()
        consumer = session.createConsumer(session.createQueue(queue_name))
        connection.start()
        for i in range(1, count + 1):
            message = consumer.receive(60_000)
            if message is None:
                raise TimeoutError(f"backlog drained after {i - 1} of {count}")
            if client_mode and (i % CLIENT_ACK_BATCH == 0 or i == count):
                message.acknowledge()
        return clock.rate(count)


# -- fan-out --------------------------------------------------------------------------------------------


class _Counter:
    """Deliveries across subscriber threads, and an event when the expected total is reached."""

    def __init__(self, probe: Callable[[int], None] | None = None) -> None:
        self.value = 0
        self.target: int | None = None
        self.lock = threading.Lock()
        self.reached = threading.Event()
        self.last = 0.0
        self.probe = probe  # told each new count (benchmarks.threads samples per-thread CPU with it)

    def add(self) -> None:
        with self.lock:
            self.value += 1
            if self.probe is not None:
                self.probe(self.value)
            if self.target is not None and self.value >= self.target:
                self.last = time.perf_counter()
                self.reached.set()

    def expect(self, total: int) -> None:
        with self.lock:
            self.target = total
            if self.value >= total:
                self.last = time.perf_counter()
                self.reached.set()


def fanout(
    bench: Bench,
    size: int,
    side: str,
    listener_thread: bool = False,
    probe: Callable[[int], None] | None = None,
) -> float:
    """One publisher (synchronous persistent sends for ``duration_s``) to a topic with ``subscribers``
    durable subscribers, each on its own connection with a listener that acknowledges (AUTO). Returns
    deliveries/s, from the first send to the last delivery. ``listener_thread``: the raw side runs its
    listeners on a thread per connection, as a JMS session does, instead of on stomp.py's reader.
    ``probe`` is told every delivery count."""
    topic = bench.name("fanout")
    body = payload(size)
    counter = _Counter(probe)
    closers: list[Callable[[], None]] = []
    try:
        if side == "raw":

            def on_message(client: RawClient, frame: Any) -> None:
                client.ack(frame)
                counter.add()

            for i in range(bench.subscribers):
                client = bench.raw(
                    client_id=f"{topic}-c{i}", on_message=on_message, listener_thread=listener_thread
                )
                closers.append(client.close)
                durable = f"{topic}.sub{i}" if bench.kind == "rabbitmq" else f"sub{i}"
                client.subscribe(f"/topic/{topic}", f"raw-sub-{i}", durable_name=durable)
            publisher = bench.raw()
            closers.append(publisher.close)

            def send() -> None:
                publisher.send_sync(f"/topic/{topic}", body)
        else:

            def on_jms(message: Message) -> None:
                counter.add()

            for i in range(bench.subscribers):
                connection = bench.factory(f"{topic}-c{i}").createConnection(bench.user, bench.password)
                closers.append(connection.close)
                session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
                subscriber = session.createDurableSubscriber(session.createTopic(topic), f"sub{i}")
                subscriber.setMessageListener(on_jms)
                connection.start()
            connection = bench.factory().createConnection(bench.user, bench.password)
            closers.append(connection.close)
            session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
            producer = session.createProducer(session.createTopic(topic))

            def send() -> None:
                message = session.createBytesMessage()
                message.writeBytes(body)
                producer.send(message)

        count, clock = 0, Stopwatch()
        deadline = time.perf_counter() + bench.duration_s
        while time.perf_counter() < deadline:
            send()
            count += 1
        counter.expect(count * bench.subscribers)
        if not counter.reached.wait(120):
            raise TimeoutError(f"fan-out: {counter.value} of {count * bench.subscribers} delivered")
        return clock.rate(counter.value, counter.last)
    finally:
        for close in reversed(closers):
            close()


# -- latency --------------------------------------------------------------------------------------------


def latency(bench: Bench, size: int, side: str) -> list[float]:
    """End-to-end latency (ms) of synchronous persistent sends at ``latency_rate`` msg/s for
    ``latency_s``: from just before send() to the consumer's listener (AUTO, on its own connection)."""
    queue_name = bench.name("latency")
    total = max(1, int(bench.latency_rate * bench.latency_s))
    samples: list[float] = []
    lock = threading.Lock()
    complete = threading.Event()

    def record(body: bytes) -> None:
        value = (time.perf_counter_ns() - sent_ns(body)) / 1e6
        with lock:
            samples.append(value)
            if len(samples) >= total:
                complete.set()

    closers: list[Callable[[], None]] = []
    try:
        if side == "raw":

            def on_message(client: RawClient, frame: Any) -> None:
                record(frame.body)
                client.ack(frame)

            consumer = bench.raw(on_message=on_message)
            closers.append(consumer.close)
            consumer.subscribe(f"/queue/{queue_name}", "raw-lat")
            publisher = bench.raw()
            closers.append(publisher.close)

            def send() -> None:
                publisher.send_sync(f"/queue/{queue_name}", stamped(size))
        else:
            receiving = bench.factory().createConnection(bench.user, bench.password)
            closers.append(receiving.close)
            rsession = receiving.createSession(False, Session.AUTO_ACKNOWLEDGE)
            rconsumer = rsession.createConsumer(rsession.createQueue(queue_name))

            def on_jms(message: Message) -> None:
                body = message.getBody(bytes)
                assert body is not None
                record(body)

            rconsumer.setMessageListener(on_jms)
            receiving.start()
            sending = bench.factory().createConnection(bench.user, bench.password)
            closers.append(sending.close)
            session = sending.createSession(False, Session.AUTO_ACKNOWLEDGE)
            producer = session.createProducer(session.createQueue(queue_name))

            def send() -> None:
                message = session.createBytesMessage()
                message.writeBytes(stamped(size))
                producer.send(message)

        interval = 1 / bench.latency_rate
        start = time.perf_counter()
        for i in range(total):
            delay = start + i * interval - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            send()
        if not complete.wait(60):
            raise TimeoutError(f"latency: {len(samples)} of {total} received")
        return samples
    finally:
        for close in reversed(closers):
            close()

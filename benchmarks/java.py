"""The second baseline: ActiveMQ's own Java JMS client, driven from Python through JPype.

This is the fastest thing a Python user can pick today on ActiveMQ Classic: the real
``org.apache.activemq.ActiveMQConnectionFactory`` (OpenWire), from the jars of the Debian ``activemq``
package, in a JVM inside the Python process. The workloads mirror benchmarks/workloads.py and are driven
by Python code the way a user's code would drive them (a Python loop calling ``send``/``receive``; a
Python ``MessageListener`` through a JPype proxy for latency).

The Java client runs with its defaults, as a user would pick it: PERSISTENT sends wait for the broker,
NON_PERSISTENT sends outside a transaction do not (jmslike does the same since issue #21; both are timed
until the connection is closed, which flushes them); prefetch 1000 like jmslike's; the broker and its
queues are the same as jmslike's in the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .workloads import WARMUP, Bench, Stopwatch, discard, fill, payload, sent_ns, stamped

#: Jars of the ActiveMQ Java client (Debian's activemq package), and their dependencies.
JARS = (
    "activemq-client.jar",
    "geronimo-jms_1.1_spec.jar",
    "geronimo-j2ee-management-1.1-spec.jar",
    "hawtbuf.jar",
    "slf4j-api.jar",
)
LIB_DIRS = (Path("/usr/share/activemq/lib"), Path("/usr/share/java"))

AUTO_ACKNOWLEDGE = 1
CLIENT_ACKNOWLEDGE = 2
DUPS_OK_ACKNOWLEDGE = 3
CLIENT_ACK_BATCH = 100  # as the jmslike/raw consume workload


def classpath() -> list[str] | None:
    """The jars, or None when the Java client is not installed here."""
    found: list[str] = []
    for jar in JARS:
        path = next((d / jar for d in LIB_DIRS if (d / jar).is_file()), None)
        if path is None:
            return None
        found.append(str(path))
    return found


def unavailable_reason() -> str | None:
    """Why the Java comparison cannot run here (None when it can)."""
    try:
        import jpype  # noqa: F401
    except ImportError:
        return "jpype1 is not installed (pip install jpype1)"
    if classpath() is None:
        return f"the ActiveMQ Java client jars ({', '.join(JARS)}) are not in {', '.join(map(str, LIB_DIRS))}"
    return None


class JavaJms:
    """One JVM per process (JPype cannot restart it); a connection factory per broker URL."""

    _started = False

    def __init__(self, openwire_url: str, user: str, password: str) -> None:
        import jpype

        if not JavaJms._started:
            # -Xrs: the JVM must not take over SIGTERM/SIGINT in this process, or the launcher's handlers
            # never run and a Ctrl-C or kill of the benchmark leaves its broker behind.
            jpype.startJVM("-Xrs", classpath=classpath(), convertStrings=False)
            JavaJms._started = True
        self._jpype = jpype
        factory_class = jpype.JClass("org.apache.activemq.ActiveMQConnectionFactory")
        self.factory = factory_class(user, password, openwire_url)
        self.factory.getPrefetchPolicy().setAll(1000)
        self.DeliveryMode = jpype.JClass("javax.jms.DeliveryMode")

    def connection(self) -> Any:
        return self.factory.createConnection()

    def listener(self, on_message: Callable[[Any], None]) -> Any:
        """A javax.jms.MessageListener implemented in Python (what a Python user would write)."""
        return self._jpype.JProxy("javax.jms.MessageListener", dict={"onMessage": on_message})

    def bytes_of(self, message: Any) -> bytes:
        length = int(message.getBodyLength())
        buffer = self._jpype.JArray(self._jpype.JByte)(length)
        message.readBytes(buffer)
        return bytes(buffer)


def publish_sync(java: JavaJms, bench: Bench, size: int, persistent: bool = True) -> float:
    """Sends for ``duration_s`` with the client's defaults (PERSISTENT: synchronous; NON_PERSISTENT: not,
    timed until ``connection.close()`` has flushed them)."""
    queue_name = bench.name("pub")
    connection = java.connection()
    try:
        session = connection.createSession(False, AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createQueue(queue_name))
        producer.setDeliveryMode(
            java.DeliveryMode.PERSISTENT if persistent else java.DeliveryMode.NON_PERSISTENT
        )
        body = payload(size)

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
        if persistent:
            rate = clock.rate(count)
    finally:
        connection.close()  # flushes the Java client's asynchronous NON_PERSISTENT sends
    if not persistent:
        rate = clock.rate(count)
    discard(bench, queue_name, WARMUP + count)  # untimed (workloads.discard says why)
    return rate


def consume(java: JavaJms, bench: Bench, size: int, mode: int) -> float:
    """Drain a backlog of ``bench.backlog`` messages with receive(); msg/s (as workloads.consume)."""
    count = bench.backlog
    queue_name = bench.name("consume")
    fill(bench, queue_name, count, payload(size))
    connection = java.connection()
    try:
        session = connection.createSession(False, mode)
        clock = Stopwatch()
        consumer = session.createConsumer(session.createQueue(queue_name))
        connection.start()
        for i in range(1, count + 1):
            message = consumer.receive(60_000)
            if message is None:
                raise TimeoutError(f"backlog drained after {i - 1} of {count}")
            if mode == CLIENT_ACKNOWLEDGE and (i % CLIENT_ACK_BATCH == 0 or i == count):
                message.acknowledge()
        return clock.rate(count)
    finally:
        connection.close()


def latency(java: JavaJms, bench: Bench, size: int) -> list[float]:
    """End-to-end latency (ms) of synchronous persistent sends at a fixed rate, to a Python listener."""
    queue_name = bench.name("latency")
    total = max(1, int(bench.latency_rate * bench.latency_s))
    samples: list[float] = []
    lock = threading.Lock()
    complete = threading.Event()

    def on_message(message: Any) -> None:
        value = (time.perf_counter_ns() - sent_ns(java.bytes_of(message))) / 1e6
        with lock:
            samples.append(value)
            if len(samples) >= total:
                complete.set()

    receiving, sending = java.connection(), java.connection()
    try:
        rsession = receiving.createSession(False, AUTO_ACKNOWLEDGE)
        rsession.createConsumer(rsession.createQueue(queue_name)).setMessageListener(
            java.listener(on_message)
        )
        receiving.start()
        session = sending.createSession(False, AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createQueue(queue_name))
        interval = 1 / bench.latency_rate
        start = time.perf_counter()
        for i in range(total):
            delay = start + i * interval - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            message = session.createBytesMessage()
            message.writeBytes(stamped(size))
            producer.send(message)
        if not complete.wait(60):
            raise TimeoutError(f"latency (java): {len(samples)} of {total} received")
        return samples
    finally:
        sending.close()
        receiving.close()

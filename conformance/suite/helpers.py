"""Small helpers scenarios share, written against the public jmslike API only.

Sending and receiving texts, draining, asserting that something raises (as an AssertionError, so the
expectations table can call it a deviation) and polling with a deadline instead of sleeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from jmslike import (
    Connection,
    DeliveryMode,
    JMSException,
    Message,
    MessageConsumer,
    NotYetInAioException,
    Session,
    TextMessage,
)

RECEIVE_MS = 5000
QUIET_MS = 400  # how long "nothing more arrives" is awaited

E = TypeVar("E", bound=BaseException)


def text_of(message: Message | None) -> str:
    assert isinstance(message, TextMessage), f"expected a TextMessage, got {message!r}"
    return message.getText() or ""


def send_texts(
    connection: Connection,
    destination: str,
    texts: Iterable[str],
    *,
    topic: bool = False,
    mode: int = DeliveryMode.PERSISTENT,
    priority: int = 4,
    ttl_ms: int = 0,
    properties: Mapping[str, Any] | None = None,
) -> list[str]:
    """Send each text from a fresh AUTO session; return the JMSMessageIDs."""
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    try:
        target = session.createTopic(destination) if topic else session.createQueue(destination)
        producer = session.createProducer(target)
        ids = []
        for text in texts:
            message = session.createTextMessage(text)
            for key, value in (properties or {}).items():
                message.setObjectProperty(key, value)
            producer.send(message, mode, priority, ttl_ms)
            ids.append(message.getJMSMessageID() or "")
        return ids
    finally:
        session.close()


def publish(connection: Connection, topic: str, texts: Iterable[str], **options: Any) -> list[str]:
    return send_texts(connection, topic, texts, topic=True, **options)


def receive_texts(consumer: MessageConsumer, wait_ms: int = QUIET_MS, limit: int = 100_000) -> list[str]:
    """Receive until nothing arrives for ``wait_ms``."""
    return [text_of(m) for m in receive_all(consumer, wait_ms, limit)]


def receive_all(consumer: MessageConsumer, wait_ms: int = QUIET_MS, limit: int = 100_000) -> list[Message]:
    got: list[Message] = []
    while len(got) < limit and (message := consumer.receive(wait_ms)) is not None:
        got.append(message)
    return got


def receive_n(consumer: MessageConsumer, count: int, timeout_ms: int = RECEIVE_MS) -> list[Message]:
    """Exactly ``count`` messages, each within ``timeout_ms``; AssertionError saying how many came."""
    got: list[Message] = []
    for _ in range(count):
        message = consumer.receive(timeout_ms)
        assert message is not None, f"expected {count} messages, got {len(got)}: {[text_of(m) for m in got]}"
        got.append(message)
    return got


def drain(connection: Connection, queue: str, wait_ms: int = QUIET_MS) -> list[Message]:
    """Consume (AUTO) everything a queue holds."""
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    try:
        return receive_all(session.createConsumer(session.createQueue(queue)), wait_ms)
    finally:
        session.close()


def drain_texts(connection: Connection, queue: str, wait_ms: int = QUIET_MS) -> list[str]:
    return [text_of(m) for m in drain(connection, queue, wait_ms)]


def expect_raises(expected: type[E] | tuple[type[E], ...], action: Callable[[], object], what: str) -> E:
    """Run ``action``; it must raise ``expected``. Anything else is an AssertionError saying so."""
    names = " or ".join(t.__name__ for t in expected) if isinstance(expected, tuple) else expected.__name__
    try:
        action()
    except expected as exc:
        return exc
    except (
        NotYetInAioException
    ):  # --api aio: the scenario cannot run there yet (unsupported, not a deviation)
        raise
    except JMSException as exc:
        raise AssertionError(f"{what}: expected {names}, got {type(exc).__name__}: {exc}") from exc
    raise AssertionError(f"{what}: expected {names}, but it succeeded")


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.05) -> None:
    """Poll ``predicate`` until true; AssertionError naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    pause = threading.Event()
    while not predicate():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s:.1f}s waiting for {what}")
        pause.wait(interval_s)


def wait_past(epoch_ms: int, what: str = "expiry") -> None:
    """Wait (bounded) until the wall clock is past ``epoch_ms`` -- for expiry, a time is the event."""
    remaining = epoch_ms / 1000 - time.time()
    wait_until(lambda: time.time() * 1000 > epoch_ms, max(0.0, remaining) + 5.0, what)

"""Send coalescing in the threaded driver (``send_coalesce_us``), against a scripted peer.

A frame sent without waiting for its answer, while the broker owes a receipt for a frame already written, may be
held and written with the frames after it. What must hold whatever the hold: frames reach the broker in the order
they were sent, every one of them gets there without anyone's help within the hold time, and a caller who starts
waiting for an answer (a synchronous send, a full window, commit, close) has the held frames written at once.
The hold times here are far beyond the URL's 10 ms ceiling, so a frame held when it should not be is unmistakable.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from receipt_peer import DEADLINE_S, HELD_THEN_DISCONNECT, ReceiptPeer, connected_socket

from jmslike import ConnectionFactory, DeliveryMode, Session
from jmslike.adapters import stomp_socket
from jmslike.adapters.stomp_socket import COALESCE_BYTES, SocketClosed, StompSocket, next_flush
from jmslike.contract import Frame

HOLD_S = 2.0


def _send(sock: StompSocket, body: bytes, *, coalesce: bool = True, **extra: str) -> float:
    """One SEND with a receipt, as an unwaited JMS send makes it; returns when it was handed over."""
    sock.send(Frame("SEND", {"destination": "/queue/c", **extra}, body), receipt=True, coalesce=coalesce)
    return time.monotonic()


@pytest.fixture
def peer() -> Iterator[ReceiptPeer]:
    made = ReceiptPeer()
    yield made
    made.stop()


@pytest.fixture
def held(peer: ReceiptPeer) -> Iterator[StompSocket]:
    """A driver holding coalesced frames up to HOLD_S, with one receipt due (the peer holds it back)."""
    sock, _ = connected_socket(peer, coalesce_s=HOLD_S)
    try:
        _send(sock, b"first", **{"x-hold": "1"})
        assert peer.wait_for(1)[0].body == b"first"  # nothing was due: written at once
        yield sock
    finally:
        sock.abort()


def test_frames_sent_while_a_receipt_is_due_are_written_together_after_the_hold(
    peer: ReceiptPeer, held: StompSocket
) -> None:
    handed = [_send(held, f"m{n}".encode()) for n in range(5)]
    arrived = peer.wait_for(6)
    assert [a.body for a in arrived] == [b"first", b"m0", b"m1", b"m2", b"m3", b"m4"]
    assert len({a.read for a in arrived[1:]}) == 1, "the five held frames came in more than one write"
    waited = arrived[1].at - handed[0]
    assert HOLD_S * 0.9 <= waited < HOLD_S + 5, f"the first held frame arrived after {waited:.2f} s"


def test_a_caller_who_starts_waiting_has_the_held_frames_written_at_once(
    peer: ReceiptPeer, held: StompSocket
) -> None:
    handed = [_send(held, f"m{n}".encode()) for n in range(3)]
    held.waiting_begins()  # a full send window, a deferred receipt's wait, a session draining its sends
    try:
        arrived = peer.wait_for(4)
    finally:
        held.waiting_ends()
    assert [a.body for a in arrived] == [b"first", b"m0", b"m1", b"m2"]
    waited = arrived[-1].at - handed[0]
    assert waited < HOLD_S / 2, f"held frames arrived {waited:.2f} s after the caller began to wait"


def test_a_frame_written_at_once_takes_the_held_frames_with_it_in_order(
    peer: ReceiptPeer, held: StompSocket
) -> None:
    handed = [_send(held, f"m{n}".encode()) for n in range(3)]
    _send(held, b"sync", coalesce=False)  # a synchronous send, an ACK, a COMMIT
    arrived = peer.wait_for(5)
    assert [a.body for a in arrived] == [b"first", b"m0", b"m1", b"m2", b"sync"]
    assert arrived[-1].at - handed[0] < HOLD_S / 2


def test_a_frame_too_big_for_the_batch_is_written_at_once_with_it(
    peer: ReceiptPeer, held: StompSocket
) -> None:
    started = _send(held, b"small")
    _send(held, b"b" * COALESCE_BYTES)
    arrived = peer.wait_for(3)
    assert [a.body[:5] for a in arrived] == [b"first", b"small", b"bbbbb"]
    assert arrived[-1].at - started < HOLD_S / 2


def test_disconnect_writes_the_held_frames_before_it(peer: ReceiptPeer, held: StompSocket) -> None:
    for n in range(3):
        _send(held, f"m{n}".encode())
    started = time.monotonic()
    held.disconnect(DEADLINE_S)  # returns once DISCONNECT is answered
    assert time.monotonic() - started < HOLD_S / 2
    assert peer.frames_after_connect() == HELD_THEN_DISCONNECT


def test_sends_through_the_jms_api_keep_their_order_across_held_and_direct_writes(peer: ReceiptPeer) -> None:
    """NON_PERSISTENT sends (unwaited, held while receipts are due) between PERSISTENT ones (synchronous, written
    at once): the broker must see them in the order of the calls. Then close() returns at once, though the
    hold is the URL's ceiling: it waits for answers, so what is held is written."""
    url = f"activemq://127.0.0.1:{peer.port}?send_coalesce_us=10000&heartbeat_ms=0"
    connection = ConnectionFactory(url).createConnection("user", "password")
    try:
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createQueue("coalesce"))
        expected = []
        for n in range(200):
            persistent = n % 17 == 16
            producer.setDeliveryMode(DeliveryMode.PERSISTENT if persistent else DeliveryMode.NON_PERSISTENT)
            producer.send(session.createTextMessage(f"m{n}"))
            expected.append(f"m{n}".encode())
        started = time.monotonic()
        producer.close()
        closing = time.monotonic() - started
    finally:
        connection.close()
    assert [a.body for a in peer.wait_for(200)] == expected
    assert closing < 0.5, f"producer.close() took {closing:.2f} s"


def _send_non_persistent(url: str, sends: int, before: Callable[[], None]) -> None:
    """``sends`` NON_PERSISTENT sends through the JMS API, closing the producer (every send answered); ``before``
    runs once everything is set up, just before the first send."""
    connection = ConnectionFactory(url).createConnection("user", "password")
    try:
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createQueue("coalesce"))
        producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)
        message = session.createTextMessage("x" * 64)
        before()
        for _ in range(sends):
            producer.send(message)
        producer.close()  # returns once every send is answered
    finally:
        connection.close()


def test_a_send_blocked_on_its_window_does_not_arm_quick_acks(
    peer: ReceiptPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Quick TCP ACKs (ActiveMQ) are for a caller waiting for one receipt; while unwaited sends are pipelined they
    cost ActiveMQ about a quarter of its publish rate (docs/performance.md). A review found a full window arming
    them on every read once window waits counted as waiting (1,968 arms in 2,000 sends), 2026-11-27."""
    arms: list[int] = []
    real_arm = StompSocket._arm_quick_ack
    monkeypatch.setattr(StompSocket, "_arm_quick_ack", lambda sock: (arms.append(1), real_arm(sock))[1])
    url = f"activemq://127.0.0.1:{peer.port}?send_window=2&heartbeat_ms=0"
    _send_non_persistent(url, 500, before=arms.clear)
    armed_while_pipelining = len(arms)
    assert armed_while_pipelining == 0


def test_quick_acks_are_armed_for_synchronous_sends_only_once_the_broker_delivered_a_message(
    peer: ReceiptPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before any MESSAGE the broker sends only answers, each acknowledged by our next frame, so Nagle holds none
    of its receipts back and a quick ACK only adds a pure ACK packet per receipt (5-22 µs of client CPU per
    synchronous send on ActiveMQ, docs/performance.md). Once it delivers, a receipt may wait behind a MESSAGE
    it sent: then every synchronous wait arms them, as before."""
    arms: list[int] = []
    real_arm = StompSocket._arm_quick_ack
    monkeypatch.setattr(StompSocket, "_arm_quick_ack", lambda sock: (arms.append(1), real_arm(sock))[1])
    connection = ConnectionFactory(f"activemq://127.0.0.1:{peer.port}?heartbeat_ms=0").createConnection()
    try:
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createQueue("sent"))
        for _ in range(20):
            producer.send(session.createTextMessage("persistent, synchronous"))
        assert arms == [], "a producer-only connection armed quick ACKs"
        connection.start()
        consumer = session.createConsumer(session.createQueue("deliver"))
        received = consumer.receive(10_000)
        assert received is not None
        for _ in range(20):
            producer.send(session.createTextMessage("persistent, synchronous"))
        assert len(arms) >= 20, f"{len(arms)} arms for 20 synchronous sends after a delivery"
    finally:
        connection.close()


def test_held_sends_are_written_when_the_process_exits_without_closing(peer: ReceiptPeer) -> None:
    """A send that returned must reach the broker even if the application exits without closing its connection,
    as it did when every frame went to the kernel at once: the flusher is a daemon thread, frozen at exit, so
    what is held is written by an ``atexit`` hook (review of 3cc94e8: 1 of 3 frames arrived, 3 of 3 runs)."""
    script = f"""
from jmslike import ConnectionFactory, DeliveryMode, Session
url = "activemq://127.0.0.1:{peer.port}?send_coalesce_us=10000&heartbeat_ms=0"
connection = ConnectionFactory(url).createConnection("user", "password")
session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
producer = session.createProducer(session.createQueue("exit"))
producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)
for body in ("HOLD m0", "m1", "m2"):  # the peer never answers the first: the others are held
    producer.send(session.createTextMessage(body))
"""  # and exits, the connection open
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 0, done.stderr
    assert [a.body for a in peer.wait_for(3)] == [b"HOLD m0", b"m1", b"m2"]


def test_sends_from_an_exit_handler_of_the_application_reach_the_broker(peer: ReceiptPeer) -> None:
    """Review finding: the exit hook was registered at the first held frame, so an application's exit handler (run
    in reverse order of registration) that made the first held sends registered it while exit handlers ran, too
    late to be called: the held frames were lost though their sends returned."""
    script = f"""
import atexit
from jmslike import ConnectionFactory, DeliveryMode, Session
url = "activemq://127.0.0.1:{peer.port}?send_coalesce_us=10000&heartbeat_ms=0"
connection = ConnectionFactory(url).createConnection("user", "password")
session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
producer = session.createProducer(session.createQueue("exit"))
producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)

def last_words() -> None:
    for body in ("HOLD m0", "m1", "m2"):  # the peer never answers the first: the others would be held
        producer.send(session.createTextMessage(body))

atexit.register(last_words)
"""  # and exits, the connection open
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 0, done.stderr
    assert [a.body for a in peer.wait_for(3)] == [b"HOLD m0", b"m1", b"m2"]


def test_an_occasional_send_is_written_at_once_though_a_receipt_stays_due(peer: ReceiptPeer) -> None:
    """A receipt that will never come (timed out, or a RabbitMQ send rolled back before it was answered) must not
    make every later unwaited send wait out the hold: only a stream coalesces (review of 3cc94e8)."""
    sock, _ = connected_socket(peer, coalesce_s=1.0)
    try:
        _send(sock, b"never answered", **{"x-hold": "1"})
        peer.wait_for(1)
        time.sleep(1.2)  # the application's pace: one send now and then, more than a hold apart
        handed = _send(sock, b"occasional")
        waited = peer.wait_for(2)[1].at - handed
        assert waited < 0.5, f"an occasional send waited {waited:.2f} s"
    finally:
        sock.abort()


def test_with_no_thread_to_flush_a_send_is_written_at_once(
    peer: ReceiptPeer, held: StompSocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At interpreter shutdown (Python 3.12) or out of threads, the flusher cannot start: the send must neither
    raise nor be held with nobody to write it (review of 3cc94e8: the call raised RuntimeError, and the frame
    was still sent later)."""
    real_start = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        if thread.name.startswith("jmslike-flush"):
            raise RuntimeError("can't create new thread at interpreter shutdown")
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start)
    handed = _send(held, b"m0")
    assert peer.wait_for(2)[1].at - handed < HOLD_S / 2


def test_a_flusher_whose_socket_fails_ends_the_connection(
    peer: ReceiptPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed write of held frames ends the connection (the owners of those frames hear of it), as a failed
    write on a caller's thread does; the flusher does not just stop (review of 3cc94e8)."""
    sock, answers = connected_socket(peer, coalesce_s=0.05)
    real_write_all = StompSocket._write_all

    def write_all(self: StompSocket, data: bytes, timeout_s: float) -> None:
        if threading.current_thread().name.startswith("jmslike-flush"):
            raise SocketClosed("injected")
        real_write_all(self, data, timeout_s)

    monkeypatch.setattr(StompSocket, "_write_all", write_all)
    try:
        _send(sock, b"first", **{"x-hold": "1"})
        _send(sock, b"held")
        with answers.cond:
            assert answers.cond.wait_for(lambda: answers.closed is not None, DEADLINE_S), (
                "the connection lived on"
            )
        assert answers.closed == "closed", (
            answers.closed
        )  # no reason: not jmslike's decision, as for the reader
    finally:
        sock.abort()


def test_the_flusher_ends_with_its_connection_even_while_it_waits_out_a_hold(peer: ReceiptPeer) -> None:
    """The connection ends while the flusher waits out a hold for frames another write already took: the flusher
    must still see the end, not wait for a next batch for good, keeping the socket and its owners alive (second
    review of the coalescing: 18-20 of 30 flushers leaked when a streaming connection was aborted)."""
    sock, answers = connected_socket(peer, coalesce_s=0.2)
    _send(sock, b"first", **{"x-hold": "1"})
    peer.wait_for(1)
    _send(sock, b"held")  # the flusher starts its 0.2 s wait
    flusher = sock._flusher
    assert flusher is not None
    sock.disconnect(
        DEADLINE_S
    )  # takes the batch (the flusher will find nothing to write) and ends the connection
    with answers.cond:
        assert answers.cond.wait_for(lambda: answers.closed is not None, DEADLINE_S)
    flusher.join(DEADLINE_S)
    assert not flusher.is_alive(), "the flusher outlived its connection"


def test_an_ask_that_another_write_answered_does_not_keep_the_flusher_looking(
    peer: ReceiptPeer, held: StompSocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A caller asks for the held frames (``waiting_begins``) and its own write takes them first, the usual order
    for a synchronous request behind a stream: the ask must be dropped at the flusher's next look. A flusher that
    looked without the lock and left it standing spun for a whole hold without giving up the interpreter, and a
    synchronous round trip took four times as long (review of 70adfef: ~1,000 looks per request at a 1 ms hold)."""
    looks = 0
    idle = threading.Event()

    def counted(**state: Any) -> float | None:
        nonlocal looks
        looks += 1
        decided = next_flush(**state)
        if decided is None:
            idle.set()
        return decided

    monkeypatch.setattr(stomp_socket, "next_flush", counted)
    _send(held, b"m0")  # held: the flusher times it
    held.waiting_begins()
    try:
        _send(held, b"sync", coalesce=False)  # takes m0 with it
    finally:
        held.waiting_ends()
    assert [a.body for a in peer.wait_for(3)] == [b"first", b"m0", b"sync"]
    assert idle.wait(DEADLINE_S), "the flusher never went back to sleep"
    assert looks < 20, f"the flusher looked {looks} times for one held frame"

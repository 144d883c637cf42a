"""Send coalescing in the threaded driver (``send_coalesce_us``), against a scripted peer.

A frame sent without waiting for its answer, while the broker owes a receipt for a frame already written, may be
held and written with the frames after it. What must hold whatever the hold: frames reach the broker in the order
they were sent, every one of them gets there without anyone's help within the hold time, and a caller who starts
waiting for an answer (a synchronous send, a full window, commit, close) has the held frames written at once.
The hold times here are far beyond the URL's 10 ms ceiling, so a frame held when it should not be is unmistakable.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from receipt_peer import DEADLINE_S, ReceiptPeer, connected_socket

from jmslike import ConnectionFactory, DeliveryMode, Session
from jmslike.adapters.stomp_socket import COALESCE_BYTES, StompSocket
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
    commands = [(a.command, a.body) for a in peer.arrivals if a.command != "CONNECT"]
    assert commands == [
        ("SEND", b"first"),
        ("SEND", b"m0"),
        ("SEND", b"m1"),
        ("SEND", b"m2"),
        ("DISCONNECT", b""),
    ]


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

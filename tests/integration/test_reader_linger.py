"""The threaded reader's pause after reads of receipts alone (``receipt_linger_us``), against a scripted peer.

The pause trades a little receipt latency for CPU while an application streams unwaited sends. What must hold
whatever the pause: a caller who starts waiting for an answer (a synchronous send, commit, ack) ends it at once,
and every receipt is still answered exactly once. The peer is a few lines of socket code that answers CONNECT
and every ``receipt`` header at once (no broker involved: the pause is the client's own behaviour).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from receipt_peer import DEADLINE_S, Answers, ReceiptPeer, connected_socket

from jmslike import ConnectionFactory, DeliveryMode, Session
from jmslike.adapters.stomp_socket import StompSocket
from jmslike.contract import Frame

LINGER_S = 5.0  # far beyond the URL's 10 ms ceiling, so a pause that is not ended is unmistakable


@pytest.fixture
def linger_socket() -> Iterator[tuple[StompSocket, Answers]]:
    peer = ReceiptPeer()
    sock, answers = connected_socket(peer, linger_s=LINGER_S)
    try:
        yield sock, answers
    finally:
        sock.abort()
        peer.stop()


def test_a_caller_who_starts_waiting_ends_the_readers_pause_at_once(
    linger_socket: tuple[StompSocket, Answers],
) -> None:
    sock, answers = linger_socket
    send = Frame("SEND", {"destination": "/queue/linger"}, b"x" * 64)
    # One receipt the peer holds back, so receipts stay due; then unwaited sends until the reader pauses: the
    # peer answers each at once, so receipts that stop arriving for 0.5 s while frames keep going out mean the
    # reader is in its (5 s) pause.
    sock.send(Frame("SEND", {"destination": "/queue/linger", "x-hold": "1"}, b"held"), receipt=True)
    sent, last_count, last_change = 1, -1, time.monotonic()
    deadline = time.monotonic() + DEADLINE_S
    while True:
        assert time.monotonic() < deadline, (
            f"the reader never paused: {len(answers.receipts)} of {sent} answered"
        )
        sock.send(send, receipt=True)
        sent += 1
        count = len(answers.receipts)
        if count != last_count:
            last_count, last_change = count, time.monotonic()
        elif time.monotonic() - last_change > 0.5 and sent - 1 > count:
            break
        time.sleep(0.001)  # pacing the stream, not waiting for anything
    assert answers.closed is None
    # A synchronous request now: its receipt (and the held one) must come long before the pause would have
    # ended by itself.
    started = time.monotonic()
    sock.waiting_begins()
    try:
        sock.send(Frame("SEND", {"destination": "/queue/linger", "x-release": "1"}, b"x"), receipt=True)
        sent += 1
        with answers.cond:
            assert answers.cond.wait_for(lambda: len(answers.receipts) == sent, DEADLINE_S)
    finally:
        sock.waiting_ends()
    waited = time.monotonic() - started
    assert waited < LINGER_S / 2, f"the request waited {waited:.2f} s: the pause was not ended"
    # Every receipt answered exactly once.
    assert sorted(answers.receipts) == sorted(f"l-{n}" for n in range(1, sent + 1))


@pytest.fixture
def peer() -> Iterator[ReceiptPeer]:
    made = ReceiptPeer()
    yield made
    made.stop()


def _send_non_persistent(url: str, sends: int, before: Callable[[], None] = lambda: None) -> float:
    """``sends`` NON_PERSISTENT sends through the JMS API, closing the producer (every send answered); seconds
    from the first send to the close. ``before`` runs once everything is set up, just before the first send."""
    connection = ConnectionFactory(url).createConnection("user", "password")
    try:
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createQueue("linger"))
        producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)
        message = session.createTextMessage("x" * 64)
        before()
        started = time.monotonic()
        for _ in range(sends):
            producer.send(message)
        producer.close()  # returns once every send is answered
        return time.monotonic() - started
    finally:
        connection.close()


def test_a_send_blocked_on_its_full_window_ends_the_readers_pause(peer: ReceiptPeer) -> None:
    """With a window of 2, the sender blocks on almost every send; were it not counted as waiting, the reader
    would pause (10 ms here, the ceiling) while it waits, over and over: 3.3 ms per send against 0.05 with no
    pause, measured by the review of the first version (2026-11-27), which counted only synchronous callers."""
    url = f"activemq://127.0.0.1:{peer.port}?receipt_linger_us=10000&send_window=2&heartbeat_ms=0"
    sends = 300
    per_send_ms = _send_non_persistent(url, sends) / sends * 1000
    assert per_send_ms < 1.0, f"{per_send_ms:.2f} ms per send: the reader paused while the sender waited"


def test_a_send_blocked_on_its_window_does_not_arm_quick_acks(
    peer: ReceiptPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Quick TCP ACKs (ActiveMQ) are for a caller waiting for one receipt; while unwaited sends are pipelined they
    cost ActiveMQ about a quarter of its publish rate (docs/performance.md). The second review of the pause found
    a full window arming them on every read once window waits counted as waiting (1,968 arms in 2,000 sends)."""
    arms: list[int] = []
    real_arm = StompSocket._arm_quick_ack
    monkeypatch.setattr(StompSocket, "_arm_quick_ack", lambda sock: (arms.append(1), real_arm(sock))[1])
    url = f"activemq://127.0.0.1:{peer.port}?receipt_linger_us=0&send_window=2&heartbeat_ms=0"
    _send_non_persistent(url, 500, before=arms.clear)
    armed_while_pipelining = len(arms)
    assert armed_while_pipelining == 0

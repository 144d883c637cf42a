"""The threaded driver ends a connection whose socket a writer of its own finds closed, also while its reader is
held (jmslike.flow: a full consumer buffer stops reading, so the reader would not see the end), against a scripted
peer (tests/integration/receipt_peer.py). Otherwise nothing would report the loss or start a reconnect: the
connection would look alive for good. The flusher's case is in test_send_coalescing.py."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from receipt_peer import DEADLINE_S, Answers, ReceiptPeer, driver_settings

from jmslike.adapters.stomp_socket import StompSocket

BEAT_MS = 50


@pytest.fixture
def peer() -> Iterator[ReceiptPeer]:
    made = ReceiptPeer(heart_beat=f"0,{BEAT_MS}")
    yield made
    made.stop()


def test_the_heartbeat_writer_that_finds_the_socket_closed_ends_the_connection_of_a_held_reader(
    peer: ReceiptPeer,
) -> None:
    answers = Answers()
    held = threading.Event()

    def hold() -> bool:
        """Hold the reader from the first read after CONNECTED on, as a full consumer buffer does."""
        if answers.connected:
            held.set()
            return True
        return False

    sock = StompSocket(
        driver_settings(peer.port, heartbeat_ms=BEAT_MS),
        on_event=answers.on_event,
        on_closed=answers.on_closed,
        hold=hold,
    )
    try:
        sock.connect("localhost", {"accept-version": "1.1"})
        assert held.wait(DEADLINE_S), "the reader never held"
        peer.wait_for(1, command="CONNECT")
        peer.hang_up()  # the held reader cannot see it; only the heart-beat writes can
        with answers.cond:
            assert answers.cond.wait_for(lambda: answers.closed is not None, DEADLINE_S), (
                "a closed socket under a held reader was never reported"
            )
        assert answers.closed == "closed", answers.closed  # no reason: the end was not jmslike's decision
    finally:
        sock.abort()

"""The kernel limits every broker socket gets (adapters.stomp_socket.bound_socket_in_time), on a loopback pair.

What the kernel then does with them (a write that times out, keepalive probes nobody answers) is the kernel's;
tests/integration/test_hostile_network.py shows the write deadline end to end against a peer that stops reading.
"""

from __future__ import annotations

import errno
import socket

import pytest

from jmslike.adapters.stomp_socket import (
    KEEPALIVE_COUNT,
    KEEPALIVE_IDLE_S,
    KEEPALIVE_INTERVAL_S,
    bound_socket_in_time,
    kernel_gave_up,
    unread_bytes,
)


@pytest.mark.skipif(not hasattr(socket, "TCP_USER_TIMEOUT"), reason="Linux socket options")
def test_a_broker_socket_gets_keepalive_and_a_user_timeout() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        with client, accepted:
            bound_socket_in_time(client, 2.0)
            assert client.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16) == bytes(
                16
            )  # reads untouched
            assert client.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == KEEPALIVE_IDLE_S
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == KEEPALIVE_INTERVAL_S
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == KEEPALIVE_COUNT
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 4000


@pytest.mark.skipif(not hasattr(socket, "TCP_USER_TIMEOUT"), reason="Linux socket options")
def test_the_kernels_time_bound_on_an_established_connection_says_why() -> None:
    """ETIMEDOUT after CONNECTED is the bound jmslike set (TCP_USER_TIMEOUT, keep-alive): the loss says so, in the
    words of a stalled write, instead of a bare "connection lost" (Linux 6.18 reports a broker that stopped
    reading ACKs this way before any write stalls)."""
    timed_out = TimeoutError(errno.ETIMEDOUT, "Connection timed out")
    reason = kernel_gave_up(timed_out, 1.0, "connected")
    assert reason is not None
    assert reason.startswith("could not write within 2.0s") and "stopped reading or is unreachable" in reason


@pytest.mark.parametrize(
    ("exc", "state"),
    [
        (
            ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"),
            "connected",
        ),  # the broker's doing
        (None, "connected"),  # closed cleanly
        (TimeoutError(errno.ETIMEDOUT, "Connection timed out"), "connecting"),  # CONNECT keeps its own rules
    ],
)
def test_anything_else_is_not_the_kernels_time_bound(exc: BaseException | None, state: str) -> None:
    assert kernel_gave_up(exc, 1.0, state) is None


def test_unread_bytes_counts_what_the_kernel_holds_for_the_reader() -> None:
    """What a heart-beat timeout whose reader stopped reading says it left waiting (StompProtocol.silence_reason):
    0 when the peer sent nothing, the bytes nobody has read yet when it did, None when there is no socket."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        with client, accepted:
            assert unread_bytes(client) == 0
            accepted.sendall(b"x" * 1000)
            client.settimeout(5.0)
            assert client.recv(1, socket.MSG_PEEK) == b"x"  # the bytes have arrived
            assert unread_bytes(client) == 1000
            client.recv(400)
            assert unread_bytes(client) == 600
    assert unread_bytes(client) is None, "a closed socket"
    assert unread_bytes(None) is None

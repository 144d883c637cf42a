"""The kernel limits every broker socket gets (adapters.stomp_socket.bound_socket_in_time), on a loopback pair.

What the kernel then does with them (a write that times out, keepalive probes nobody answers) is the kernel's;
tests/integration/test_hostile_network.py shows the write deadline end to end against a peer that stops reading.
"""

from __future__ import annotations

import socket

import pytest

from jmslike.adapters.stomp_socket import (
    KEEPALIVE_COUNT,
    KEEPALIVE_IDLE_S,
    KEEPALIVE_INTERVAL_S,
    bound_socket_in_time,
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

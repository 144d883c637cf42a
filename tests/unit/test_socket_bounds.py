"""The kernel limits every broker socket gets (adapters.transport.bound_socket_in_time), on a loopback pair.

What the kernel then does with them (a write that times out, keepalive probes nobody answers) is the kernel's;
tests/integration/test_hostile_network.py shows the write deadline end to end against a peer that stops reading.
"""

from __future__ import annotations

import socket
import struct

import pytest

from jmslike.adapters.transport import (
    KEEPALIVE_COUNT,
    KEEPALIVE_IDLE_S,
    KEEPALIVE_INTERVAL_S,
    bound_socket_in_time,
)


@pytest.mark.skipif(not hasattr(socket, "TCP_USER_TIMEOUT"), reason="Linux socket options")
def test_a_broker_socket_gets_write_slices_keepalive_and_a_user_timeout() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        client = socket.create_connection(server.getsockname())
        accepted, _ = server.accept()
        with client, accepted:
            bound_socket_in_time(client, 2.0)
            seconds, micros = struct.unpack(
                "ll", client.getsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, 16)
            )
            assert (seconds, micros) == (0, 500_000)  # a quarter of the deadline per send() call
            assert client.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16) == bytes(
                16
            )  # reads untouched
            assert client.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == KEEPALIVE_IDLE_S
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL) == KEEPALIVE_INTERVAL_S
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == KEEPALIVE_COUNT
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 4000

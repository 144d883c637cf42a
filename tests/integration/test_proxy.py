"""The TCP fault proxy (conformance/proxy.py) against a real broker's STOMP port: it forwards, drops,
stalls, half-opens and partitions. Raw sockets and STOMP frames only, no jmslike client."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from jmslike.conformance.brokers.readiness import build_connect_frame, parse_reply
from jmslike.conformance.proxy import FaultProxy
from jmslike.conformance.suite.helpers import wait_until

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def proxy(broker: Any) -> Iterator[FaultProxy]:
    with FaultProxy(broker.host, broker.port) as started:
        yield started


def connect_frame(broker: Any) -> bytes:
    return build_connect_frame(
        host="/" if broker.kind == "rabbitmq" else broker.host, login=broker.user, passcode=broker.password
    )


def open_client(proxy: FaultProxy, timeout_s: float = 5.0) -> socket.socket:
    client = socket.create_connection((proxy.host, proxy.port), timeout=timeout_s)
    client.settimeout(timeout_s)
    return client


def read_frame(client: socket.socket) -> bytes:
    data = b""
    while b"\x00" not in data:
        chunk = client.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def stomp_connect(proxy: FaultProxy, broker: Any) -> socket.socket:
    client = open_client(proxy)
    client.sendall(connect_frame(broker))
    reply = parse_reply(read_frame(client))
    assert reply.ready, reply.detail
    return client


def sees_eof(client: socket.socket, timeout_s: float) -> bool:
    """True when the peer closed within ``timeout_s`` (EOF or reset), False when it stays silent."""
    client.settimeout(timeout_s)
    try:
        while True:
            chunk = client.recv(4096)
            if not chunk:
                return True
    except TimeoutError:
        return False
    except ConnectionError:
        return True


def test_forwards_a_stomp_session(proxy: FaultProxy, broker: Any) -> None:
    client = stomp_connect(proxy, broker)
    assert proxy.live_connections == 1
    # The proxy counts a chunk after forwarding it, so the client may read CONNECTED a moment before the
    # count moves: wait for it, bounded.
    wait_until(
        lambda: proxy.forwarded("to_broker") > 0 and proxy.forwarded("to_client") > 0,
        5,
        "byte counts to move",
    )
    client.close()


def test_drop_closes_both_sides(proxy: FaultProxy, broker: Any) -> None:
    client = stomp_connect(proxy, broker)
    assert proxy.drop() == 1
    assert sees_eof(client, 5)
    assert proxy.live_connections == 0
    stomp_connect(proxy, broker).close()  # new connections still work


def test_stall_holds_bytes_until_resume(proxy: FaultProxy, broker: Any) -> None:
    proxy.stall()
    client = open_client(proxy)
    client.sendall(connect_frame(broker))
    assert not sees_eof(client, 0.5), "a stalled connection must stay open"
    before = proxy.forwarded("to_client")
    client.settimeout(0.5)
    with pytest.raises(TimeoutError):
        client.recv(1)  # nothing comes back while stalled
    assert proxy.forwarded("to_client") == before
    proxy.resume()
    client.settimeout(5)
    assert parse_reply(read_frame(client)).ready
    client.close()


def test_stall_one_direction(proxy: FaultProxy, broker: Any) -> None:
    client = stomp_connect(proxy, broker)
    proxy.stall("to_client")
    sent = proxy.forwarded("to_broker")
    client.sendall(b"DISCONNECT\nreceipt:bye\n\n\x00")
    assert proxy.wait_forwarded("to_broker", sent, 5), "the other direction keeps flowing"
    client.settimeout(0.5)
    with pytest.raises(TimeoutError):
        client.recv(1)
    proxy.resume()
    assert b"RECEIPT" in read_frame(client) or sees_eof(client, 5)
    client.close()


def test_half_open_broker_side_leaves_client_silent(proxy: FaultProxy, broker: Any) -> None:
    client = stomp_connect(proxy, broker)
    assert proxy.half_open("broker") == 1
    assert not sees_eof(client, 0.5), "the client side must stay open and silent"
    proxy.resume()  # healing closes the silent half
    assert sees_eof(client, 5)


def test_half_open_client_side_closes_client(proxy: FaultProxy, broker: Any) -> None:
    client = stomp_connect(proxy, broker)
    assert proxy.half_open("client") == 1
    assert sees_eof(client, 5)
    assert proxy.live_connections == 0
    proxy.resume()


def test_partition_refuses_until_resume(proxy: FaultProxy, broker: Any) -> None:
    client = stomp_connect(proxy, broker)
    proxy.partition()
    assert sees_eof(client, 5)
    refused = open_client(proxy)
    assert sees_eof(refused, 5), "new connections are closed during a partition"
    assert proxy.refused >= 1
    proxy.resume()
    stomp_connect(proxy, broker).close()

"""A broker that refuses a connection as it accepts it -- an ERROR, then a reset -- against a client that writes
CONNECT only after the reset (a slow or busy client). The CONNECT write fails, but the refusal's words are still
in the socket's buffer: both APIs raise the broker's refusal, not a lost connection. A scripted peer, since no
broker does this on purpose (a connection limit does it, under load). A peer that is no STOMP broker (an HTTP
answer, then a reset) stays a lost connection: its bytes are no refusal (second review of the fix)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aio_support import LoopRunner

import jmslike
import jmslike.aio
from jmslike.adapters import stomp_socket
from jmslike.exceptions import ConnectionLostException, JMSException

DEADLINE_S = 20.0
REFUSAL = b"ERROR\nmessage:too many connections\n\n\x00"
NOT_STOMP = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"


class RefusingPeer:
    """Accepts one connection, writes an ERROR and, once the client says its socket is open (``opened``: a reset
    before that fails the client's connect itself, which is another case), resets it (SO_LINGER 0); ``reset``
    is set once it has."""

    def __init__(self, says: bytes) -> None:
        self.says = says
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.opened = threading.Event()
        self.reset = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.listener.settimeout(DEADLINE_S)
        with contextlib.suppress(OSError):
            conn, _ = self.listener.accept()
            conn.sendall(self.says)
            self.opened.wait(DEADLINE_S)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()  # linger 0: a reset, after the ERROR (loopback: both are in the client's buffer now)
        self.reset.set()

    def stop(self) -> None:
        self.listener.close()
        self.thread.join(DEADLINE_S)


@pytest.fixture(params=[REFUSAL, NOT_STOMP], ids=["refusal", "not STOMP"])
def peer(request: pytest.FixtureRequest) -> Iterator[RefusingPeer]:
    made = RefusingPeer(request.param)
    yield made
    made.stop()


def assert_outcome(peer: RefusingPeer, exc: BaseException) -> None:
    """The broker's refusal in its words; bytes that are no STOMP frame leave a lost connection, as when nothing
    could be read at all (failover then tries the next host)."""
    if peer.says == REFUSAL:
        assert isinstance(exc, JMSException) and not isinstance(exc, ConnectionLostException), repr(exc)
        assert "refused the connection: too many connections" in str(exc)
    else:
        assert isinstance(exc, ConnectionLostException), repr(exc)
        assert "refused" not in str(exc) and not str(exc).endswith(": ")  # says what ended it


def test_threaded_connection_refused_at_accept_keeps_the_brokers_words(
    peer: RefusingPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: Callable[..., socket.socket] = stomp_socket.open_socket

    def open_then_wait_for_the_reset(*args: Any, **kwargs: Any) -> socket.socket:
        sock = opened(*args, **kwargs)
        peer.opened.set()
        assert peer.reset.wait(DEADLINE_S)
        return sock

    monkeypatch.setattr(stomp_socket, "open_socket", open_then_wait_for_the_reset)
    with pytest.raises(JMSException) as raised:
        jmslike.ConnectionFactory(f"activemq://127.0.0.1:{peer.port}").createConnection("u", "p")
    assert_outcome(peer, raised.value)


def test_aio_connection_refused_at_accept_keeps_the_brokers_words(
    peer: RefusingPeer, run_loop: LoopRunner
) -> None:
    async def attempt() -> BaseException:
        loop = asyncio.get_running_loop()
        opened = loop.create_connection

        async def open_then_wait_for_the_reset(*args: Any, **kwargs: Any) -> Any:
            made = await opened(*args, **kwargs)
            peer.opened.set()
            assert peer.reset.wait(DEADLINE_S)  # blocks the loop: a busy client, as the case
            return made

        loop.create_connection = open_then_wait_for_the_reset  # type: ignore[method-assign]
        try:
            await jmslike.aio.ConnectionFactory(f"activemq://127.0.0.1:{peer.port}").createConnection(
                "u", "p"
            )
        except JMSException as exc:
            return exc
        raise AssertionError("the connection was not refused")

    assert_outcome(peer, run_loop(attempt()))

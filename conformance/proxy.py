"""A TCP fault proxy of our own, on loopback, between a client and a broker (the N faults).

Owns network faults for the conformance suite and the integration tests: a client connects to the
proxy's port instead of the broker's and every byte is forwarded, until a test injects a fault:

* :meth:`FaultProxy.drop` -- close both sides of every live connection (both peers see the close);
* :meth:`FaultProxy.stall` -- stop forwarding (one direction or both) while keeping the sockets open,
  the way a dead network path looks: only heart-beats can tell;
* :meth:`FaultProxy.half_open` -- close one side and keep the other open and silent (a peer that
  vanished without its FIN reaching the other end);
* :meth:`FaultProxy.partition` -- drop, and refuse new connections, until :meth:`FaultProxy.resume`;
* :meth:`FaultProxy.resume` -- forward again (bytes held during a stall are delivered), accept again,
  and close the silent halves left by ``half_open``.

Threads, not asyncio: one acceptor plus two pumps per connection, all daemons, all waiting on sockets
with short select timeouts or on a condition variable, never sleeping. Stdlib only.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import select
import socket
import threading
import time
from types import TracebackType
from typing import Literal, Self

log = logging.getLogger(__name__)

Direction = Literal["both", "to_broker", "to_client"]
Side = Literal["broker", "client"]

_POLL_S = 0.1
_CHUNK = 65536
_IN_FLIGHT_WAIT_S = 5.0  # stall(): the longest it waits for chunks already past their stall check


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class _Link:
    """One proxied connection: the client's socket, ours to the broker, and their two pumps."""

    def __init__(self, number: int, client: socket.socket, upstream: socket.socket) -> None:
        self.number = number
        self.client = client
        self.upstream = upstream
        self.closed = False
        self.half: Side | None = None  # side closed by half_open(); the other is kept silent
        self.forwarded = {"to_broker": 0, "to_client": 0}

    def close(self) -> None:
        self.closed = True
        _close(self.client)
        _close(self.upstream)


class FaultProxy:
    """Forward ``listen_host:port`` to ``target_host:target_port``; inject faults on demand.

    Use as a context manager or call :meth:`start` and :meth:`close`. ``port`` is the listening port
    (a free one when ``listen_port`` is 0).
    """

    def __init__(
        self,
        target_host: str,
        target_port: int,
        *,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        connect_timeout_s: float = 5.0,
    ) -> None:
        self.target = (target_host, target_port)
        self._listen = (listen_host, listen_port)
        self._connect_timeout_s = connect_timeout_s
        self._cond = threading.Condition()
        self._links: dict[int, _Link] = {}
        self._silent: list[socket.socket] = []  # kept halves of half-open links
        self._stalled: set[str] = set()
        self._refusing = False
        self._closed = False
        self._numbers = itertools.count(1)
        self._server: socket.socket | None = None
        self._acceptor: threading.Thread | None = None
        self.accepted = 0
        self.refused = 0
        self._forwarded = {"to_broker": 0, "to_client": 0}
        # Chunks between their stall check and their count: stall() waits for them, so that what it stopped
        # is exactly what forwarded() does not count (a pump thread descheduled right after sendall would
        # otherwise count its chunk after the stall, as if it had got through the stall).
        self._in_flight = {"to_broker": 0, "to_client": 0}

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self) -> Self:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(self._listen)
        server.listen(64)
        server.settimeout(_POLL_S)
        self._server = server
        self._port: int = server.getsockname()[1]  # kept: threads name themselves after it once it is closed
        self._acceptor = threading.Thread(target=self._accept_loop, name=f"proxy-{self.port}", daemon=True)
        self._acceptor.start()
        log.debug("proxy %s -> %s:%d started", self.port, *self.target)
        return self

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the proxy is not started")
        return self._port

    @property
    def host(self) -> str:
        return self._listen[0]

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            links = list(self._links.values())
            self._links.clear()
            silent, self._silent = self._silent, []
            self._cond.notify_all()
        for link in links:
            link.close()
        for sock in silent:
            _close(sock)
        if self._server is not None:
            _close(self._server)
        if self._acceptor is not None:
            self._acceptor.join(timeout=2)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- faults ---------------------------------------------------------------------------------------

    def drop(self) -> int:
        """Close both sides of every live connection; return how many were dropped."""
        with self._cond:
            links = list(self._links.values())
            self._links.clear()
            self._cond.notify_all()
        for link in links:
            link.close()
        log.info("proxy %d: dropped %d connection(s)", self.port, len(links))
        return len(links)

    def stall(self, direction: Direction = "both") -> None:
        """Stop forwarding ``direction`` (new connections too) until :meth:`resume`; sockets stay open."""
        with self._cond:
            stalled = {"to_broker", "to_client"} if direction == "both" else {direction}
            self._stalled |= stalled
            self._cond.notify_all()
            deadline = time.monotonic() + _IN_FLIGHT_WAIT_S
            while any(self._in_flight[d] for d in stalled) and time.monotonic() < deadline:
                self._cond.wait(_POLL_S)
        log.info("proxy %d: stalled %s", self.port, direction)

    def half_open(self, closed_side: Side = "broker") -> int:
        """Close ``closed_side`` of every live connection and keep the other side open and silent."""
        with self._cond:
            links = list(self._links.values())
            self._links.clear()
            for link in links:
                link.half = closed_side
                link.closed = True
                self._silent.append(link.client if closed_side == "broker" else link.upstream)
            self._cond.notify_all()
        for link in links:
            _close(link.upstream if closed_side == "broker" else link.client)
        log.info("proxy %d: half-opened %d connection(s), %s side closed", self.port, len(links), closed_side)
        return len(links)

    def partition(self) -> int:
        """Drop every connection and refuse new ones until :meth:`resume`."""
        with self._cond:
            self._refusing = True
        return self.drop()

    def resume(self) -> None:
        """Heal: forward everything again, accept again, and close the silent halves of half-open links."""
        with self._cond:
            self._stalled.clear()
            self._refusing = False
            silent, self._silent = self._silent, []
            self._cond.notify_all()
        for sock in silent:
            _close(sock)
        log.info("proxy %d: resumed", self.port)

    # -- observation ----------------------------------------------------------------------------------

    @property
    def live_connections(self) -> int:
        with self._cond:
            return len(self._links)

    def wait_connections(self, count: int, timeout_s: float) -> bool:
        """Wait until at least ``count`` connections are live (e.g. a client reconnected)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while len(self._links) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def forwarded(self, direction: Literal["to_broker", "to_client"]) -> int:
        """Bytes forwarded in ``direction`` since the start, over all connections."""
        with self._cond:
            return self._forwarded[direction]

    def wait_forwarded(
        self, direction: Literal["to_broker", "to_client"], more_than: int, timeout_s: float
    ) -> bool:
        """Wait until more than ``more_than`` bytes went ``direction`` (e.g. a frame got through)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._forwarded[direction] <= more_than:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    # -- internals ------------------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        server = self._server
        assert server is not None
        while not self._closed:
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._cond:
                refusing = self._refusing
            if refusing:
                self.refused += 1
                _close(client)
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=self._connect_timeout_s)
            except OSError as exc:
                log.info("proxy %d: cannot reach %s:%d: %s", self.port, *self.target, exc)
                _close(client)
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            link = _Link(next(self._numbers), client, upstream)
            with self._cond:
                if self._closed:
                    link.close()
                    return
                self._links[link.number] = link
                self.accepted += 1
                self._cond.notify_all()
            for source, target, direction in (
                (client, upstream, "to_broker"),
                (upstream, client, "to_client"),
            ):
                threading.Thread(
                    target=self._pump,
                    args=(link, source, target, direction),
                    name=f"proxy-{self.port}-{link.number}-{direction}",
                    daemon=True,
                ).start()

    def _wait_forwardable(self, link: _Link, direction: str, claim: bool = False) -> bool:
        """Block while ``direction`` is stalled; False once the link is gone. ``claim``: the caller forwards a
        chunk now, in flight until :meth:`_counted` (in the same pass under the lock as the stall check)."""
        with self._cond:
            while direction in self._stalled and not link.closed and not self._closed:
                self._cond.wait(_POLL_S)
            forwardable = not (link.closed or self._closed)
            if forwardable and claim:
                self._in_flight[direction] += 1
            return forwardable

    def _counted(self, direction: str, size: int) -> None:
        """A claimed chunk went out (``size`` bytes) or failed (0)."""
        with self._cond:
            self._in_flight[direction] -= 1
            self._forwarded[direction] += size
            self._cond.notify_all()

    def _pump(self, link: _Link, source: socket.socket, target: socket.socket, direction: str) -> None:
        try:
            while not link.closed:
                if not self._wait_forwardable(link, direction):
                    return
                try:
                    readable, _, _ = select.select([source], [], [], _POLL_S)
                except (OSError, ValueError):
                    break
                if not readable:
                    continue
                if link.closed:
                    return
                try:
                    data = source.recv(_CHUNK)
                except OSError:
                    break
                if not data:
                    break
                # A stall begun meanwhile holds it.
                if not self._wait_forwardable(link, direction, claim=True):
                    return
                try:
                    target.sendall(data)
                except OSError:
                    self._counted(direction, 0)
                    break
                link.forwarded[direction] += len(data)
                self._counted(direction, len(data))
        finally:
            if link.half is None:  # an ordinary close on one side: pass it on to the other
                with self._cond:
                    self._links.pop(link.number, None)
                    self._cond.notify_all()
                link.close()

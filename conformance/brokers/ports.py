"""Loopback port choice and checks for locally launched brokers.

Owns three small things: picking free ports (below the kernel's ephemeral range, so that the client
connections our own tests open can never grab a broker's port while it restarts), checking that a port
is free before a broker is started on it, and waiting for a port to stop accepting connections.
Ports handed out by this process are remembered so two brokers of one test session never get the same.
"""

from __future__ import annotations

import errno
import logging
import random
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from jmslike.conformance.brokers.base import PortInUseError

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"

_handed_out: set[int] = set()
_lock = threading.Lock()
_FALLBACK_LOW = 20000


def _ephemeral_low() -> int:
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    return low


def port_is_free(port: int, host: str = LOOPBACK) -> bool:
    """True when a server socket could bind ``host:port`` now.

    Uses SO_REUSEADDR like the JVM and the Erlang VM do, so sockets lingering in TIME_WAIT after a
    broker was killed do not count as "in use"; a listening socket does.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def free_port(host: str = LOOPBACK) -> int:
    """A port that is free on ``host`` now and was not handed out before by this process."""
    high = _ephemeral_low() - 1
    low = min(_FALLBACK_LOW, high - 1000)
    with _lock:
        for _ in range(200):
            port = random.randint(low, high)
            if port in _handed_out:
                continue
            if port_is_free(port, host):
                _handed_out.add(port)
                return port
        # Crowded range: let the kernel choose.
        for _ in range(50):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind((host, 0))
                port = int(sock.getsockname()[1])
            if port not in _handed_out:
                _handed_out.add(port)
                return port
    raise RuntimeError(f"could not find a free port on {host}")


def check_ports_free(ports: Mapping[str, int], host: str = LOOPBACK, *, kind: str = "broker") -> None:
    """Raise :class:`PortInUseError` naming the first of ``ports`` (role -> port) that is taken."""
    for role, port in ports.items():
        if not port_is_free(port, host):
            raise PortInUseError(
                f"{kind}: cannot start: port {host}:{port} ({role}) is already in use by another process; "
                f"choose another port (or let the launcher pick one) or stop whatever listens there",
                port=port,
            )


def port_accepts(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """True when a TCP connection to ``host:port`` is accepted."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def wait_port_closed(host: str, port: int, timeout_s: float) -> bool:
    """Poll until ``host:port`` refuses connections; False when it still accepts after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        if not port_accepts(host, port, timeout_s=0.5):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)

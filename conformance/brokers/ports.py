"""Loopback port choice and checks for locally launched brokers.

Owns three small things: picking free ports (below the kernel's ephemeral range, so that the client
connections our own tests open can never grab a broker's port while it restarts), checking that a port
is free before a broker is started on it, and waiting for a port to stop accepting connections.
Ports handed out by this process are remembered so two brokers of one test session never get the same,
and reserved for other processes too (a file per port naming the owner's pid, in a per-user directory
under the temp dir): a broker that is down during a restart leaves its ports free at the socket level,
and a second test run on the same machine must not pick them then.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import logging
import os
import random
import socket
import tempfile
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


def _reservations() -> Path:
    return Path(tempfile.gettempdir()) / f"jmslike-ports-{os.getuid()}"


def _owner_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reserve(port: int) -> bool:
    """Claim ``port`` for this process across processes; False when a live process holds it.

    A reservation whose owner has died is taken over, so crashed runs do not leak ports forever."""
    folder = _reservations()
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / str(port)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            try:
                owner = int(path.read_text() or "0")
            except (OSError, ValueError):
                owner = 0
            if owner and (owner == os.getpid() or _owner_alive(owner)):
                return False
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # stale: its owner is gone
            continue
        with os.fdopen(fd, "w") as out:
            out.write(str(os.getpid()))
        return True
    return False


def _release_reservations() -> None:
    """At exit: drop this process's reservation files (a crash leaves them; they are taken over later)."""
    folder = _reservations()
    for port in _handed_out:
        path = folder / str(port)
        with contextlib.suppress(OSError, ValueError):
            if int(path.read_text()) == os.getpid():
                path.unlink()


atexit.register(_release_reservations)


def _take(port: int, host: str) -> bool:
    if port in _handed_out or not port_is_free(port, host):
        return False
    try:
        if not _reserve(port):
            return False
    except OSError as exc:  # an unwritable temp dir must not stop tests: fall back to this process only
        logger.debug("port reservation unavailable (%s); reserving within this process only", exc)
    _handed_out.add(port)
    return True


def free_port(host: str = LOOPBACK) -> int:
    """A port that is free on ``host`` now and not handed out before by this or another live process."""
    high = _ephemeral_low() - 1
    low = min(_FALLBACK_LOW, high - 1000)
    with _lock:
        for _ in range(200):
            port = random.randint(low, high)
            if _take(port, host):
                return port
        # Crowded range: let the kernel choose.
        for _ in range(50):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind((host, 0))
                port = int(sock.getsockname()[1])
            if _take(port, host):
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

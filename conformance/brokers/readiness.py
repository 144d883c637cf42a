"""Readiness: is the broker really serving STOMP?

A listening port is not enough (ActiveMQ opens it before the store is loaded; RabbitMQ may refuse
logins while booting), so readiness is a real STOMP ``CONNECT`` answered by ``CONNECTED``, sent over
a raw socket. The launchers must not depend on the jmslike API, and a probe must never hang: every
socket operation has a timeout and every wait has a deadline.

The frame building and parsing are pure functions; :func:`wait_until_ready` polls a probe until it
succeeds, the process dies or the deadline passes.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

_MAX_FRAME_BYTES = 64 * 1024


@dataclass(frozen=True)
class ProbeResult:
    """Outcome of one probe: ``ready`` or not, and a one-line ``detail`` for error messages."""

    ready: bool
    detail: str


def _escape_header(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c").replace("\r", "\\r")


def build_connect_frame(*, host: str, login: str | None, passcode: str | None) -> bytes:
    """A STOMP 1.2 CONNECT frame with heart-beats off; ``host`` is the virtual host header."""
    headers = [("accept-version", "1.0,1.1,1.2"), ("host", host), ("heart-beat", "0,0")]
    if login is not None:
        headers.append(("login", login))
    if passcode is not None:
        headers.append(("passcode", passcode))
    lines = ["CONNECT", *(f"{k}:{_escape_header(v)}" for k, v in headers)]
    return ("\n".join(lines) + "\n\n").encode() + b"\x00"


def parse_reply(data: bytes) -> ProbeResult:
    """Interpret the first frame a broker sent back to CONNECT."""
    text = data.split(b"\x00", 1)[0].decode("utf-8", "replace").lstrip("\r\n")
    head, _, body = text.partition("\n\n")
    lines = head.splitlines()
    command = lines[0].strip() if lines else ""
    headers = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
    if command == "CONNECTED":
        return ProbeResult(True, f"CONNECTED ({headers.get('server', 'unknown server')})")
    if command == "ERROR":
        message = headers.get("message", "") or body.strip()
        return ProbeResult(False, f"broker answered ERROR: {message[:200]}")
    return ProbeResult(False, f"unexpected reply to CONNECT: {text[:80]!r}")


def stomp_probe(
    host: str,
    port: int,
    *,
    login: str | None,
    passcode: str | None,
    vhost: str = "/",
    timeout_s: float = 2.0,
) -> ProbeResult:
    """Open a socket, send CONNECT, read the reply frame, then DISCONNECT. Never raises on I/O errors."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(build_connect_frame(host=vhost, login=login, passcode=passcode))
            data = b""
            while b"\x00" not in data and len(data) < _MAX_FRAME_BYTES:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
            if not data:
                return ProbeResult(False, "connection closed before any reply to CONNECT")
            result = parse_reply(data)
            if result.ready:
                with contextlib.suppress(OSError):
                    sock.sendall(b"DISCONNECT\n\n\x00")
            return result
    except ConnectionRefusedError:
        return ProbeResult(False, f"{host}:{port} refuses connections")
    except TimeoutError:
        return ProbeResult(False, f"no reply to CONNECT from {host}:{port} within {timeout_s:.1f} s")
    except OSError as exc:
        return ProbeResult(False, f"{host}:{port}: {exc}")


def wait_until_ready(
    probe: Callable[[float], ProbeResult],
    *,
    timeout_s: float,
    exited: Callable[[], str | None],
    poll_interval_s: float = 0.1,
) -> tuple[bool, str]:
    """Poll ``probe(per_try_timeout_s)`` until it reports ready.

    ``exited()`` returns a reason when the broker process is gone (then waiting stops at once).
    Returns ``(True, detail)`` when ready, ``(False, reason)`` on exit or when ``timeout_s`` passed.
    """
    deadline = time.monotonic() + timeout_s
    last = ProbeResult(False, "not probed yet")
    while True:
        gone = exited()
        if gone is not None:
            return False, gone
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False, f"not ready within {timeout_s:.0f} s (last probe: {last.detail})"
        last = probe(max(0.2, min(2.0, remaining)))
        if last.ready:
            return True, last.detail
        time.sleep(min(poll_interval_s, max(0.0, deadline - time.monotonic())))

"""Encoding the frames jmslike sends: pure code, no sockets.

stomp.py's own send path (``Protocol.send_frame`` → ``Transport.transmit``) copies and sorts the
listener table, calls every listener's ``on_send``, builds a list of byte pieces per header and logs the
frame, for every frame; on a synchronous NON_PERSISTENT send or an AUTO_ACKNOWLEDGE ACK that overhead
is a visible share of the time per message (docs/performance.md). The transport writes everything but
CONNECT and DISCONNECT (which stomp.py tracks for its own state) with :func:`encode_frame` instead.

Header escaping is STOMP's (1.1: ``\\``, newline, colon; 1.2 also carriage return), as stomp.py's
``_escape_headers`` does for values; unlike stomp.py, names are escaped too, as STOMP says. Otherwise
the bytes on the wire are stomp.py's apart from header order (stomp.py sorts headers; STOMP gives their
order no meaning, except that a repeated header's first occurrence wins, and a dict has no repeats).
Text that UTF-8 cannot carry (a lone surrogate) becomes ``?``, as with stomp.py's ``encode``. A
``content-length`` header given with a body always states the body's real length, as stomp.py makes it: a
frame never announces a length it does not carry.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

_NUL: Final = b"\x00"


def _escape_11(text: str) -> str:
    # Most values need no escaping; three membership tests cost less than three replace() calls.
    if "\\" in text or "\n" in text or ":" in text:
        return text.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c")
    return text


def _escape_12(text: str) -> str:
    if "\\" in text or "\n" in text or ":" in text or "\r" in text:
        return text.replace("\\", "\\\\").replace("\n", "\\n").replace(":", "\\c").replace("\r", "\\r")
    return text


def encode_frame(command: str, headers: Mapping[str, str], body: bytes, version: str) -> bytes:
    """The bytes of one client frame: command line, escaped headers, blank line, body, NUL."""
    if body and "content-length" in headers:
        headers = {**headers, "content-length": str(len(body))}
    head = "".join([f"{key}:{value}\n" for key, value in headers.items()])
    # The usual frame needs no escaping: then the header block holds exactly one colon and one newline per
    # header (the separators) and no backslash, which four C scans tell without a call per header.
    count = len(headers)
    if (
        head.count(":") != count
        or head.count("\n") != count
        or "\\" in head
        or (version == "1.2" and "\r" in head)
    ):
        escape = _escape_12 if version == "1.2" else _escape_11
        head = "".join([f"{escape(key)}:{escape(value)}\n" for key, value in headers.items()])
    return b"".join((f"{command}\n{head}\n".encode("utf-8", "replace"), body, _NUL))

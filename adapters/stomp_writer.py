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

from collections.abc import Collection, Mapping
from itertools import islice
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from jmslike.contract import HeaderTemplate

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


def encode_frame(
    command: str,
    headers: Mapping[str, str],
    body: bytes,
    version: str,
    template: HeaderTemplate | None = None,
) -> bytes:
    """The bytes of one client frame: command line, escaped headers, blank line, body, NUL. ``template``: the
    first headers are its own, unchanged (HeaderTemplate), so their text encoded the first time is written."""
    if body and "content-length" in headers:
        length = str(len(body))
        if headers["content-length"] != length:  # the STOMP core states it right: no copy then
            headers = {**headers, "content-length": length}
    if template is None:
        head = _header_block(headers.items(), version)
    else:
        text = template.encoded.get(version)
        if text is None:
            text = template.encoded[version] = _header_block(template.headers.items(), version)
        rest = [*islice(headers.items(), len(template.headers), None)]
        head = text + _header_block(rest, version)
    return b"".join((f"{command}\n{head}\n".encode("utf-8", "replace"), body, _NUL))


def _header_block(items: Collection[tuple[str, str]], version: str) -> str:
    """Headers as escaped ``name:value`` lines."""
    # Escaping every name and value with a call each costs ~36 calls per SEND. Instead the header block is
    # built with two stand-in separators no header holds (counted to be sure), escaped in one pass of C-level
    # replaces, and the separators put in last; a header holding a stand-in is escaped one by one.
    escape = _escape_12 if version == "1.2" else _escape_11
    head = "".join([f"{key}\x00{value}\x01" for key, value in items])
    count = len(items)
    if head.count("\x00") != count or head.count("\x01") != count:
        return "".join([f"{escape(key)}:{escape(value)}\n" for key, value in items])
    return escape(head).replace("\x00", ":").replace("\x01", "\n")

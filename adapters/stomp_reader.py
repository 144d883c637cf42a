"""A bounded, incremental decoder for the STOMP frames a broker sends: pure code, no sockets.

stomp.py keeps everything it has received in one growing buffer until it sees a NUL byte, so a broker
(or anyone between us and it) that sends an endless header block or body makes the client grow without
limit; and a frame it cannot parse (invalid UTF-8 in a header) is logged and silently skipped, which
for a MESSAGE frame means a message vanishes without anyone being told. This decoder is what
:mod:`jmslike.adapters.transport` reads with instead:

- memory is bounded: a header block longer than ``max_header_bytes`` or a frame longer than
  ``max_frame_bytes`` (headers + body) is a :class:`FrameTooLarge` error as soon as the limit is
  crossed (a ``content-length`` announcing too much fails before the body is read);
- anything that is not a well-formed server frame (unknown command, header line without a colon,
  invalid UTF-8 in the command or headers, a ``content-length`` that is not a number or not followed by
  the NUL byte) is a :class:`FrameProtocolError`; the transport drops the connection and says why;
- time is linear in the input however it is split (every byte may arrive in its own ``feed``): the
  search for a frame's end resumes where the previous one stopped.

Header decoding follows STOMP 1.1/1.2 (``\\n``, ``\\c``, ``\\\\``, ``\\r`` escapes, first occurrence of
a repeated header wins, no escaping in CONNECTED). Unknown escape sequences are kept as they are, as
stomp.py does: refusing them would cost connections to brokers that send them, and they cannot smuggle
anything (the frame structure is already decided when headers are unescaped).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

#: Commands a STOMP server may send (STOMP 1.2 section "Server Frames").
SERVER_COMMANDS: Final = frozenset({"CONNECTED", "MESSAGE", "RECEIPT", "ERROR"})

#: Defaults: ActiveMQ Classic's own STOMP ``maxFrameSize`` default (100 MiB) and 1 MiB of headers.
DEFAULT_MAX_FRAME_BYTES: Final = 100 * 1024 * 1024
DEFAULT_MAX_HEADER_BYTES: Final = 1024 * 1024

_HEADER_END = re.compile(rb"\r?\n\r?\n")
_ESCAPE = re.compile(r"\\.")
_UNESCAPES: Final = {"\\n": "\n", "\\c": ":", "\\\\": "\\", "\\r": "\r"}


class FrameDecodeError(Exception):
    """The peer sent something that is not an acceptable STOMP server frame; the message says what.

    ``frames`` holds the complete frames that preceded the bad one in the same ``feed`` call: they
    were well formed and are still to be processed (a CONNECTED followed by garbage is a connection
    that was made and then broken)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.frames: list[DecodedFrame] = []


class FrameTooLarge(FrameDecodeError):
    """A frame or its header block exceeds the configured limit."""


class FrameProtocolError(FrameDecodeError):
    """A frame is malformed."""


@dataclass(slots=True)  # per frame: read-only, not frozen (jmslike.contract says why)
class DecodedFrame:
    """One server frame. ``command == "HEARTBEAT"`` stands for one or more heart-beat EOLs."""

    command: str
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


HEARTBEAT: Final = DecodedFrame("HEARTBEAT")


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    if "\\\\" not in text:
        # Without an escaped backslash every backslash starts its own two-character sequence, so plain
        # replacements cannot overlap; an unknown sequence stays as it is. ActiveMQ's message ids carry
        # several ``\c`` each: this is the common case, and the regex below calls back per match.
        return text.replace("\\c", ":").replace("\\n", "\n").replace("\\r", "\r")
    return _ESCAPE.sub(lambda m: _UNESCAPES.get(m.group(0), m.group(0)), text)


def parse_header_block(block: bytes) -> tuple[str, dict[str, str]]:
    """Command and headers of a header block (without the blank line that ends it)."""
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrameProtocolError(
            f"frame headers are not valid UTF-8 (byte {exc.start} of the header block)"
        ) from None
    lines = text.split("\n")
    if "\r" in text:
        lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    command = lines[0]
    if command not in SERVER_COMMANDS:
        shown = command[:40] + ("..." if len(command) > 40 else "")
        raise FrameProtocolError(f"unknown or client-only STOMP command {shown!r} from the broker")
    escaped = command != "CONNECTED"
    headers: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        key, colon, value = line.partition(":")
        if not colon or not key:
            raise FrameProtocolError(f"{command} frame: header line {number} is not 'name:value'")
        if escaped and "\\" in line:
            key, value = _unescape(key), _unescape(value)
        headers.setdefault(key, value)
    return command, headers


class FrameDecoder:
    """Feed it bytes as they arrive; it returns the complete frames, in order, and keeps the rest.

    After a :class:`FrameDecodeError` the decoder is broken (the stream has no trustworthy frame
    boundary any more): every later ``feed`` raises the same error.
    """

    def __init__(
        self,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
    ) -> None:
        if max_frame_bytes <= 0 or max_header_bytes <= 0:
            raise ValueError("frame limits must be positive")
        self.max_frame_bytes = max_frame_bytes
        self.max_header_bytes = min(max_header_bytes, max_frame_bytes)
        self._buffer = bytearray()
        self._scan_from = 0  # where the search for the current frame's next delimiter resumes
        self._header: tuple[str, dict[str, str], int, int | None] | None = None
        self._failed: FrameDecodeError | None = None

    @property
    def buffered_bytes(self) -> int:
        """Bytes held for an incomplete frame (bounded by ``max_frame_bytes`` plus one read)."""
        return len(self._buffer)

    def feed(self, data: bytes | memoryview) -> list[DecodedFrame]:
        """The frames ``data`` completes, in order. ``data`` is copied into the decoder's own buffer first and never
        kept: the asyncio driver passes a view of a read buffer it reuses for the next read."""
        if self._failed is not None:
            raise self._failed
        self._buffer += data
        frames: list[DecodedFrame] = []
        try:
            while True:
                frame = self._next()
                if frame is None:
                    break
                if frame is HEARTBEAT and frames and frames[-1] is HEARTBEAT:
                    continue
                frames.append(frame)
        except FrameDecodeError as exc:
            self._failed = type(exc)(str(exc))
            self._buffer = bytearray()
            exc.frames = frames
            raise
        return frames

    def _consume(self, count: int) -> None:
        del self._buffer[:count]
        self._scan_from = 0

    def _next(self) -> DecodedFrame | None:
        buf = self._buffer
        if self._header is None:
            if not buf:
                return None
            # Heart-beats (and the optional EOLs after a frame's NUL) between frames.
            if buf[0] == 0x0A:
                self._consume(1)
                return HEARTBEAT
            if buf[0] == 0x0D:
                if len(buf) < 2:
                    return None
                if buf[1] == 0x0A:
                    self._consume(2)
                    return HEARTBEAT
            match = _HEADER_END.search(buf, max(0, self._scan_from - 3))
            if match is None:
                if len(buf) > self.max_header_bytes:
                    raise FrameTooLarge(
                        f"frame header block exceeds max_header_bytes={self.max_header_bytes} "
                        "without ending; the broker or the network sent something that is not STOMP"
                    )
                self._scan_from = len(buf)
                return None
            if match.start() > self.max_header_bytes:
                raise FrameTooLarge(
                    f"frame header block of {match.start()} bytes exceeds max_header_bytes={self.max_header_bytes}"
                )
            command, headers = parse_header_block(bytes(buf[: match.start()]))
            length: int | None = None
            if "content-length" in headers:
                raw = headers["content-length"].strip()
                if not raw.isdigit() or not raw.isascii():
                    raise FrameProtocolError(f"{command} frame: content-length {raw[:40]!r} is not a number")
                length = int(raw)
                if match.end() + length + 1 > self.max_frame_bytes:
                    raise FrameTooLarge(
                        f"{command} frame announces a {length}-byte body; with its headers that exceeds "
                        f"max_frame_bytes={self.max_frame_bytes} (raise the URL key max_frame_bytes if "
                        "such messages are expected)"
                    )
            self._header = (command, headers, match.end(), length)
            self._scan_from = match.end()
        command, headers, body_start, length = self._header
        if length is not None:
            end = body_start + length
            if len(buf) <= end:
                return None
            if buf[end] != 0:
                raise FrameProtocolError(
                    f"{command} frame: the byte after its content-length={length} body is not NUL"
                )
        else:
            nul = buf.find(b"\x00", self._scan_from)
            if nul < 0:
                if len(buf) + 1 > self.max_frame_bytes:
                    raise FrameTooLarge(
                        f"{command} frame exceeds max_frame_bytes={self.max_frame_bytes} without ending "
                        "(no NUL byte); raise the URL key max_frame_bytes if such messages are expected"
                    )
                self._scan_from = len(buf)
                return None
            end = nul
        body = bytes(buf[body_start:end])
        self._header = None
        self._consume(end + 1)
        return DecodedFrame(command, headers, body)

"""The STOMP client protocol without I/O: bytes in, events out; commands in, bytes out.

Issue #20's first step. Today :class:`~jmslike.adapters.transport.StompWire` mixes three things: the
protocol (CONNECT negotiation, receipts, heart-beat arithmetic, which ERROR answers which frame), a socket,
and threads (stomp.py's reader and heart-beat threads). A threaded driver and an asyncio driver can only
share the first, so it lives here, with no sockets, no threads and no clock of its own (the caller passes
``now``, a monotonic time in seconds). Everything in it can be tested exhaustively without a broker
(tests/unit/test_stomp_core.py, property tests with hypothesis); a driver owns the socket, calls
:meth:`StompProtocol.receive_data` with what it read, writes what the methods return, and acts on the
events.

What the protocol decides, so that no driver has to:

- CONNECT: the frame (STOMP 1.1 or 1.2, with ``heart-beat``), and the outcome — :class:`Connected` with the
  negotiated heart-beat periods, or :class:`ConnectRefused` (an ERROR, or the stream closing, before
  CONNECTED);
- receipts: :meth:`~StompProtocol.send` numbers them; a RECEIPT becomes :class:`ReceiptReceived` carrying the
  frame it answers (a typed :class:`Receipt`, not ``Any``); an ERROR whose ``receipt-id`` names a pending
  frame becomes :class:`ErrorReceived` for that frame, one without becomes an unmatched
  :class:`ErrorReceived` (RabbitMQ answers a refused SEND that way, then closes); each pending frame gets
  exactly one answer, and :meth:`~StompProtocol.connection_lost` hands back the ones that got none;
- heart-beats (STOMP 1.1 "Heart-beating"): the client sends every ``max(cx, sy)`` ms and expects something
  every ``max(cy, sx)`` ms when both sides offer it; any byte written counts, and a complete frame or heart-beat
  read (part of a frame does not: a peer could trickle one endless frame in). A peer silent for
  :data:`SILENCE_TOLERANCE` times its period is dead;
- limits: the bounded decoder (:mod:`~jmslike.adapters.stomp_reader`) turns an oversized or malformed frame
  into :class:`ProtocolViolation`, after which the protocol is closed.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from jmslike.adapters.stomp_reader import HEARTBEAT, FrameDecodeError, FrameDecoder
from jmslike.adapters.stomp_writer import encode_frame
from jmslike.contract import Frame, StompVersion

Version = StompVersion
State = Literal["new", "connecting", "connected", "disconnecting", "closed"]

#: A peer is dead once silent for this many of its heart-beat periods. Not stomp.py's 1.5: ActiveMQ 5.17 lets two
#: whole periods pass before its first heart-beat and after anything else it writes (it checks once a period
#: whether it wrote within the last one), so at 1.5 every idle ActiveMQ connection was dropped 1.5 periods in and,
#: with ``reconnect=true``, again after each reconnect (raw control: ``python -m
#: jmslike.conformance.heartbeat_gaps``). RabbitMQ beats every half period, Artemis every period.
SILENCE_TOLERANCE: Final = 2.5
#: The heart-beat EOL a client sends.
HEARTBEAT_BYTES: Final = b"\n"


class ProtocolStateError(Exception):
    """A command the protocol's state does not allow (a SEND before CONNECTED, anything after close): a bug in
    the driver, not something the broker did."""


@dataclass(slots=True)  # per frame: read-only, not frozen (jmslike.contract says why)
class Receipt:
    """A frame sent with ``receipt:`` and waiting for its answer."""

    receipt_id: str
    frame: Frame


@dataclass(frozen=True)
class Connected:
    """CONNECTED arrived. Heart-beat periods are negotiated, in seconds; 0 means none in that direction."""

    headers: Mapping[str, str]
    version: str
    send_every_s: float
    expect_every_s: float


@dataclass(frozen=True)
class ConnectRefused:
    """The broker refused CONNECT with an ERROR (``silent`` False) or closed the stream before answering."""

    text: str
    silent: bool


@dataclass(slots=True)  # per frame: read-only, not frozen (jmslike.contract says why)
class MessageReceived:
    frame: Frame


@dataclass(slots=True)  # per frame: read-only, not frozen (jmslike.contract says why)
class ReceiptReceived:
    receipt: Receipt


@dataclass(frozen=True)
class ErrorReceived:
    """An ERROR after CONNECTED. ``refused`` is the pending frame it answers (its ``receipt-id``), or None:
    an ERROR that names no pending frame, which the driver must attribute or report."""

    text: str
    headers: Mapping[str, str]
    refused: Receipt | None


@dataclass(frozen=True)
class UnknownReceipt:
    """A RECEIPT naming no pending frame (answered twice, or never asked): reported, never acted on."""

    receipt_id: str


@dataclass(frozen=True)
class ProtocolViolation:
    """The peer sent something that is not a STOMP server frame, or too much of it; the stream is unusable."""

    reason: str


Event = (
    Connected
    | ConnectRefused
    | MessageReceived
    | ReceiptReceived
    | ErrorReceived
    | UnknownReceipt
    | ProtocolViolation
)


def negotiate_heartbeats(offered_ms: tuple[int, int], answered: str) -> tuple[float, float]:
    """(send every, expect every) in seconds from the client's ``heart-beat:cx,cy`` and the server's answer
    ``sx,sy`` (STOMP 1.1): a direction is on only when both sides give a non-zero period, and then runs at the
    larger one. A missing or malformed answer means none (STOMP 1.0 servers send no header)."""
    cx, cy = offered_ms
    try:
        sx_text, sy_text = answered.split(",")
        sx, sy = int(sx_text), int(sy_text)
    except ValueError:
        return 0.0, 0.0
    if sx < 0 or sy < 0:
        return 0.0, 0.0
    send = max(cx, sy) / 1000 if cx and sy else 0.0
    expect = max(cy, sx) / 1000 if cy and sx else 0.0
    return send, expect


def encode_connect(headers: Mapping[str, str]) -> bytes:
    """CONNECT's bytes. STOMP 1.2 does not escape CONNECT's headers (nor does stomp.py, nor do brokers
    unescape them), so a value holding a line break or NUL could forge headers: it is refused, naming the
    header but never the value (it may be a password)."""
    for name, value in headers.items():
        if any(bad in name or bad in value for bad in ("\n", "\r", "\x00")) or ":" in name:
            raise ValueError(
                f"CONNECT header {name!r} holds a line break, NUL or colon, which STOMP cannot carry"
            )
    head = "".join(f"{name}:{value}\n" for name, value in headers.items())
    return f"CONNECT\n{head}\n".encode() + b"\x00"


def wire_headers(frame: Frame, receipt: str | None) -> dict[str, str]:
    """The headers a frame goes out with: its own, ``receipt`` when one is asked, and ``content-length`` on a
    SEND unless the adapter left it off (Artemis reads such a frame as text) — a body with a NUL always has
    it, or the NUL would end the frame."""
    headers = dict(frame.headers)
    if receipt is not None:
        headers["receipt"] = receipt
    if frame.command == "SEND" and (frame.content_length or b"\x00" in frame.body):
        headers["content-length"] = str(len(frame.body))
    return headers


def error_text(headers: Mapping[str, str], body: bytes) -> str:
    """What an ERROR says: the ``message`` header, and the body's first line when it adds something
    (ActiveMQ puts the exception class there; both are needed to classify the error)."""
    lines = body.decode("utf-8", "replace").strip().splitlines()
    detail = lines[0].strip() if lines else ""
    text = headers.get("message", "") or detail or "ERROR frame without a message"
    if detail and detail not in text:
        text = f"{text} ({detail})"
    return text


def _bytes(count: int) -> str:
    return f"{count} byte" if count == 1 else f"{count} bytes"


#: Bytes of one unfinished frame that count as a sign of life, as a heart-beat does. A big message on a slow link
#: takes longer than the heart-beat timeout to arrive, and the broker cannot beat in the middle of a frame: without
#: this the connection was dropped and the message redelivered, again and again (review finding: 100 MiB under
#: about 4 MB/s). A peer trickling one endless frame must still send this much per timeout to be kept, and the
#: frame ends at ``max_frame_bytes`` (docs/security.md).
PROGRESS_BYTES: Final = 64 * 1024


@dataclass
class _Clock:
    last_read: float = 0.0
    last_write: float = 0.0
    unproven: int = 0  # bytes read since the last sign of life, none of them a complete frame


@dataclass
class StompProtocol:
    """One client connection's STOMP state. Not thread-safe: a driver calls it from one place at a time.

    ``receipt_prefix`` keeps receipt IDs unique per connection (a driver that reconnects makes a new
    protocol with a new prefix, so a late RECEIPT of the old connection can never match)."""

    version: Version = "1.2"
    heartbeat_ms: tuple[int, int] = (0, 0)
    max_frame_bytes: int = 100 * 1024 * 1024
    max_header_bytes: int = 1024 * 1024
    receipt_prefix: str = "r-"
    state: State = "new"
    send_every_s: float = 0.0
    expect_every_s: float = 0.0
    # The frames awaiting an answer, by receipt ID (the frame alone: a Receipt is made when the answer comes, so
    # a send in flight holds one object less for the garbage collector; jmslike.contract says why that counts).
    _pending: dict[str, Frame] = field(default_factory=dict)
    _numbers: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _clock: _Clock = field(default_factory=_Clock)
    _decoder: FrameDecoder | None = None
    _disconnect_receipt: str | None = None
    _held: bool = False  # the driver is not reading (jmslike's consumers hold enough): silence means nothing

    def __post_init__(self) -> None:
        self._decoder = FrameDecoder(self.max_frame_bytes, self.max_header_bytes)

    # -- commands: each returns the bytes to write ---------------------------------------------------------

    def connect(self, host: str, headers: Mapping[str, str], now: float) -> bytes:
        """The CONNECT frame (``login``/``passcode`` go in ``headers``; they are never kept here)."""
        self._require("new", "connect")
        self.state = "connecting"
        self._clock = _Clock(last_read=now, last_write=now)
        accept = "1.2" if self.version == "1.2" else "1.1"
        cx, cy = self.heartbeat_ms
        frame_headers = {"accept-version": accept, "host": host, "heart-beat": f"{cx},{cy}", **headers}
        return self._written(encode_connect(frame_headers), now)

    def send(self, frame: Frame, now: float, *, receipt: bool = True) -> tuple[bytes, Receipt | None]:
        """A frame's bytes and, when ``receipt``, the :class:`Receipt` it now waits for."""
        self._require("connected", f"send {frame.command}")
        pending = None
        if receipt:
            pending = Receipt(f"{self.receipt_prefix}{next(self._numbers)}", frame)
            self._pending[pending.receipt_id] = frame
        headers = wire_headers(frame, pending.receipt_id if pending is not None else None)
        data = encode_frame(frame.command, headers, frame.body, self.version, frame.template)
        return self._written(data, now), pending

    @property
    def receipts_due(self) -> int:
        """How many frames sent with a receipt have not been answered yet."""
        return len(self._pending)

    def forget(self, receipt_ids: Iterable[str]) -> None:
        """The broker will never answer these receipts: it dropped their frames (RabbitMQ drops a transaction's
        SENDs, receipts and all, at ABORT). They stop counting as due, and the end of the connection does not
        report them unanswered."""
        for receipt_id in receipt_ids:
            self._pending.pop(receipt_id, None)

    def disconnect(self, now: float) -> bytes:
        """DISCONNECT with a receipt: its RECEIPT closes the protocol (the broker has everything before it)."""
        self._require("connected", "disconnect")
        self.state = "disconnecting"
        self._disconnect_receipt = f"{self.receipt_prefix}{next(self._numbers)}"
        frame = encode_frame("DISCONNECT", {"receipt": self._disconnect_receipt}, b"", self.version)
        return self._written(frame, now)

    # -- input ---------------------------------------------------------------------------------------------

    def receive_data(self, data: bytes | memoryview, now: float) -> list[Event]:
        """Events for the bytes just read. ``b""`` is the end of the stream (the peer closed). ``data`` is copied
        before this returns, never kept: it may be a view of a driver's read buffer."""
        if self.state == "closed":
            return []
        if not data:
            return self._ended()
        assert self._decoder is not None
        events: list[Event] = []
        try:
            frames = self._decoder.feed(data)
        except FrameDecodeError as exc:
            for frame in exc.frames:
                if frame is not HEARTBEAT:  # as below: a heart-beat before the bad frame is no frame
                    events.extend(self._on_frame(frame.command, frame.headers, frame.body))
            self.state = "closed"
            events.append(ProtocolViolation(str(exc)))
            return events
        clock = self._clock
        if frames:
            # A complete frame or heart-beat proves the broker alive; so does steady progress inside one frame
            # (PROGRESS_BYTES), not a trickle: a peer trickling one endless frame in still runs into the heart-beat
            # timeout (docs/security.md).
            clock.last_read = now
            clock.unproven = 0
        else:
            clock.unproven += len(data)
            if clock.unproven >= PROGRESS_BYTES:
                clock.last_read = now
                clock.unproven = 0
        for frame in frames:
            if frame is not HEARTBEAT:
                events.extend(self._on_frame(frame.command, frame.headers, frame.body))
        return events

    def connection_lost(self) -> list[Receipt]:
        """The stream is gone (closed, reset, or dropped by the driver): the frames that got no answer, oldest
        first. Each pending frame is answered exactly once, here or by an event; the protocol is closed."""
        self.state = "closed"
        unanswered = [Receipt(receipt_id, frame) for receipt_id, frame in self._pending.items()]
        self._pending.clear()
        return unanswered

    # -- heart-beats -------------------------------------------------------------------------------------

    def heartbeat_due(self, now: float) -> bytes:
        """The heart-beat to write now, or ``b""``: one is due when nothing was written for a send period."""
        if self.state != "connected" or not self.send_every_s:
            return b""
        if now - self._clock.last_write < self.send_every_s:
            return b""
        return self._written(HEARTBEAT_BYTES, now)

    def hold_reading(self, held: bool, now: float) -> None:
        """The driver stops reading (``held``: jmslike's consumers hold as many bytes as they may, flow.py) or
        reads again. Meanwhile the broker's silence is not measured: what it sent waits unread. Reading again
        restarts the measure, so a broker that really went silent still runs into the heart-beat timeout."""
        self._held = held
        if not held:
            self._clock.last_read = now
            self._clock.unproven = 0

    def peer_silent(self, now: float) -> bool:
        """True once the broker has sent nothing for :data:`SILENCE_TOLERANCE` of its heart-beat periods."""
        if self.state != "connected" or not self.expect_every_s or self._held:
            return False
        return now - self._clock.last_read > self.expect_every_s * SILENCE_TOLERANCE

    def silence_reason(self, reader_away_s: float | None = None, unread: int | None = None) -> str:
        """Why the connection is dropped once :meth:`peer_silent`. The timeout alone cannot tell a broker that went
        silent from a client that stopped reading. ``reader_away_s``: how long the driver's reader has been away
        from the socket (in an owner's callback) at the timeout, None while it waits there; ``unread``: the bytes
        then waiting in the socket (None: unknown). Away for longer than one of the broker's heart-beat periods, the
        reader has missed beats, if the broker sent any: bytes waiting say it did, and the fault is the client's;
        none waiting say both were quiet. Away for less, the reader has just woken to bytes that came at the
        deadline's edge, after the broker's silence. Part of a frame that came meanwhile (no sign of life) is said
        too."""
        waited = f"{self.expect_every_s * SILENCE_TOLERANCE:.1f}s"
        unproven = self._clock.unproven
        partial = f"; only {_bytes(unproven)} of an unfinished frame came" if unproven else ""
        if reader_away_s is None or reader_away_s <= self.expect_every_s:
            return f"the broker sent nothing for {waited} (heart-beat timeout{partial})"
        away = f"this client's reader has not read for {reader_away_s:.1f}s"
        if unread == 0:
            return (
                f"the broker sent nothing for {waited} (heart-beat timeout{partial}); {away}, but nothing waits "
                "unread in its socket"
            )
        if unread is None:
            return f"nothing was read from the broker for {waited} (heart-beat timeout{partial}): {away}"
        return (
            f"nothing was read from the broker for {waited} (heart-beat timeout{partial}): {away}, with "
            f"{_bytes(unread)} waiting unread in its socket, so the client stopped reading, not the broker"
        )

    def next_deadline(self, now: float) -> float | None:
        """When the driver must next call :meth:`heartbeat_due` or :meth:`peer_silent` (None: never)."""
        if self.state != "connected":
            return None
        deadlines = []
        if self.send_every_s:
            deadlines.append(self._clock.last_write + self.send_every_s)
        if self.expect_every_s:  # while reading is held: look again a period later
            last_read = now if self._held else self._clock.last_read
            deadlines.append(last_read + self.expect_every_s * SILENCE_TOLERANCE)
        return max(now, min(deadlines)) if deadlines else None

    # -- internals -----------------------------------------------------------------------------------------

    def _require(self, state: State, what: str) -> None:
        if self.state != state:
            raise ProtocolStateError(f"cannot {what} in state {self.state!r} (needs {state!r})")

    def _written(self, data: bytes, now: float) -> bytes:
        self._clock.last_write = now
        return data

    def _ended(self) -> list[Event]:
        was = self.state
        self.state = "closed"
        if was != "connecting":
            return []
        held = self._decoder.buffered_bytes if self._decoder is not None else 0
        if held:
            # Bytes that never made a frame, then the close: a peer that is no STOMP broker (a Redis "-ERR" line, an
            # SSH banner), not a broker closing without a word, whose silent refusal would send the user to check
            # credentials, and keep failover on this host.
            return [
                ProtocolViolation(
                    f"the peer closed the connection during CONNECT after {held} bytes that are no STOMP frame; "
                    "check that the port is the broker's STOMP port"
                )
            ]
        return [ConnectRefused("connection closed by the broker during CONNECT", silent=True)]

    def _on_frame(self, command: str, headers: dict[str, str], body: bytes) -> list[Event]:
        if self.state == "connecting":
            return self._on_connect_answer(command, headers, body)
        if command == "MESSAGE":
            return [MessageReceived(Frame("MESSAGE", headers, body))]
        if command == "RECEIPT":
            receipt_id = headers.get("receipt-id", "")
            if receipt_id and receipt_id == self._disconnect_receipt:
                self.state = "closed"
                return []
            answered = self._pending.pop(receipt_id, None)
            if answered is None:
                return [UnknownReceipt(receipt_id)]
            return [ReceiptReceived(Receipt(receipt_id, answered))]
        if command == "ERROR":
            receipt_id = headers.get("receipt-id", "")
            refused = self._pending.pop(receipt_id, None)
            return [
                ErrorReceived(
                    error_text(headers, body),
                    headers,
                    None if refused is None else Receipt(receipt_id, refused),
                )
            ]
        # CONNECTED twice: the decoder accepts every server command, the protocol does not.
        self.state = "closed"
        return [ProtocolViolation(f"unexpected {command} frame after CONNECTED")]

    def _on_connect_answer(self, command: str, headers: dict[str, str], body: bytes) -> list[Event]:
        if command == "CONNECTED":
            self.state = "connected"
            self.send_every_s, self.expect_every_s = negotiate_heartbeats(
                self.heartbeat_ms, headers.get("heart-beat", "0,0")
            )
            version = headers.get("version", "1.0")
            return [Connected(headers, version, self.send_every_s, self.expect_every_s)]
        self.state = "closed"
        if command == "ERROR":
            return [ConnectRefused(error_text(headers, body), silent=False)]
        return [ProtocolViolation(f"the broker answered CONNECT with {command}")]

"""The sans-IO STOMP protocol (adapters/stomp_core.py): pure code, so every rule is checked here, most of
them for all inputs hypothesis can think of."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jmslike.adapters.stomp_core import (
    PROGRESS_BYTES,
    SILENCE_TOLERANCE,
    Connected,
    ConnectRefused,
    ErrorReceived,
    Event,
    MessageReceived,
    ProtocolStateError,
    ProtocolViolation,
    ReceiptReceived,
    StompProtocol,
    UnknownReceipt,
    encode_connect,
    negotiate_heartbeats,
)
from jmslike.adapters.stomp_writer import encode_frame
from jmslike.contract import Frame

CONNECTED = b"CONNECTED\nversion:1.2\nserver:test/1\nheart-beat:5000,10000\n\n\x00"


def connected(heartbeat_ms: tuple[int, int] = (0, 0), **options: Any) -> StompProtocol:
    protocol = StompProtocol(heartbeat_ms=heartbeat_ms, **options)
    protocol.connect("/", {"login": "u", "passcode": "p"}, now=0.0)
    events = protocol.receive_data(CONNECTED, now=0.0)
    assert isinstance(events[0], Connected)
    return protocol


def server_frame(command: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    if body:
        headers = {**headers, "content-length": str(len(body))}
    return encode_frame(command, headers, body, "1.2")


# -- CONNECT -----------------------------------------------------------------------------------------------


def test_connect_frame_offers_versions_and_heartbeats_and_is_not_escaped() -> None:
    protocol = StompProtocol(version="1.1", heartbeat_ms=(4000, 8000))
    data = protocol.connect("vhost", {"login": "me", "passcode": "a:b\\c"}, now=0.0)
    assert (
        data
        == b"CONNECT\naccept-version:1.1\nhost:vhost\nheart-beat:4000,8000\nlogin:me\npasscode:a:b\\c\n\n\x00"
    )
    assert protocol.state == "connecting"


@pytest.mark.parametrize("bad", ["x\ny", "x\ry", "x\x00y"])
def test_connect_refuses_a_value_that_could_forge_headers_without_showing_it(bad: str) -> None:
    with pytest.raises(ValueError, match="'passcode'") as raised:
        encode_connect({"passcode": bad})
    assert bad not in str(raised.value)


def test_connected_negotiates_heartbeats() -> None:
    protocol = StompProtocol(heartbeat_ms=(1000, 2000))
    protocol.connect("/", {}, now=0.0)
    (event,) = protocol.receive_data(CONNECTED, now=0.0)
    assert event == Connected(event.headers, "1.2", send_every_s=10.0, expect_every_s=5.0)
    assert protocol.state == "connected"


def test_error_before_connected_is_a_refusal_with_its_reason() -> None:
    protocol = StompProtocol()
    protocol.connect("/", {}, now=0.0)
    events = protocol.receive_data(
        server_frame("ERROR", {"message": "bad login"}, b"SecurityException\nat x"), 0
    )
    assert events == [ConnectRefused("bad login (SecurityException)", silent=False)]
    assert protocol.state == "closed"


def test_close_during_connect_is_a_silent_refusal() -> None:
    protocol = StompProtocol()
    protocol.connect("/", {}, now=0.0)
    assert protocol.receive_data(b"", now=1.0) == [
        ConnectRefused("connection closed by the broker during CONNECT", silent=True)
    ]


@pytest.mark.parametrize(
    "answer", [b"-ERR unknown command 'CONNECT'\r\n", b"SSH-2.0-OpenSSH_9.2\r\n", b"ERROR\nmessage:cut"]
)
def test_a_close_after_bytes_that_made_no_frame_is_a_protocol_violation_not_a_silent_refusal(
    answer: bytes,
) -> None:
    """A peer that is no STOMP broker (Redis, SSH) answers with a line and closes; so does a broker cut off in the
    middle of its ERROR. Neither closed without a word: a silent refusal would send the user to check credentials."""
    protocol = StompProtocol()
    protocol.connect("/", {}, now=0.0)
    assert protocol.receive_data(answer, now=0.0) == []
    (event,) = protocol.receive_data(b"", now=1.0)
    assert isinstance(event, ProtocolViolation) and f"{len(answer)} bytes" in event.reason
    assert protocol.state == "closed"


def test_any_other_answer_to_connect_is_a_protocol_violation() -> None:
    protocol = StompProtocol()
    protocol.connect("/", {}, now=0.0)
    (event,) = protocol.receive_data(server_frame("MESSAGE", {"destination": "/queue/x"}), now=0.0)
    assert isinstance(event, ProtocolViolation) and "MESSAGE" in event.reason


@given(cx=st.integers(0, 10**6), cy=st.integers(0, 10**6), sx=st.integers(0, 10**6), sy=st.integers(0, 10**6))
def test_heartbeat_negotiation_follows_stomp(cx: int, cy: int, sx: int, sy: int) -> None:
    send, expect = negotiate_heartbeats((cx, cy), f"{sx},{sy}")
    assert send == (max(cx, sy) / 1000 if cx and sy else 0.0)
    assert expect == (max(cy, sx) / 1000 if cy and sx else 0.0)


@pytest.mark.parametrize("answer", ["", "x", "1,2,3", "-1,5", "a,b"])
def test_a_malformed_heartbeat_answer_means_none(answer: str) -> None:
    assert negotiate_heartbeats((1000, 1000), answer) == (0.0, 0.0)


# -- commands and state ------------------------------------------------------------------------------------


def test_commands_need_the_right_state() -> None:
    protocol = StompProtocol()
    with pytest.raises(ProtocolStateError, match="cannot send SEND in state 'new'"):
        protocol.send(Frame("SEND", {"destination": "/queue/x"}), now=0.0)
    protocol.connect("/", {}, now=0.0)
    with pytest.raises(ProtocolStateError):
        protocol.connect("/", {}, now=0.0)
    protocol.receive_data(CONNECTED, now=0.0)
    protocol.connection_lost()
    with pytest.raises(ProtocolStateError, match="'closed'"):
        protocol.send(Frame("ACK", {"id": "1"}), now=0.0)


def test_send_numbers_receipts_and_states_the_body_length() -> None:
    protocol = connected(receipt_prefix="c7-")
    data, receipt = protocol.send(Frame("SEND", {"destination": "/queue/x"}, b"a\x00b"), now=0.0)
    assert receipt is not None and receipt.receipt_id == "c7-1"
    assert data == b"SEND\ndestination:/queue/x\nreceipt:c7-1\ncontent-length:3\n\na\x00b\x00"
    data, receipt = protocol.send(Frame("ACK", {"id": "m:1"}), now=0.0, receipt=False)
    assert receipt is None and data == b"ACK\nid:m\\c1\n\n\x00"
    assert protocol.receipts_due == 1


def test_disconnect_receipt_closes_the_protocol() -> None:
    protocol = connected()
    data = protocol.disconnect(now=0.0)
    receipt_id = data.split(b"receipt:")[1].split(b"\n")[0].decode()
    assert protocol.receive_data(server_frame("RECEIPT", {"receipt-id": receipt_id}), now=0.0) == []
    assert protocol.state == "closed"


# -- answers: each pending frame exactly once --------------------------------------------------------------


@settings(max_examples=200)
@given(
    count=st.integers(1, 30),
    answers=st.lists(st.tuples(st.integers(0, 40), st.sampled_from(["RECEIPT", "ERROR"])), max_size=60),
)
def test_every_pending_frame_gets_exactly_one_answer(count: int, answers: list[tuple[int, str]]) -> None:
    protocol = connected()
    sent = {}
    for i in range(count):
        _, receipt = protocol.send(Frame("SEND", {"destination": f"/queue/{i}"}), now=0.0)
        assert receipt is not None
        sent[receipt.receipt_id] = receipt
    answered: list[str] = []
    for index, command in answers:
        receipt_id = f"r-{index}"
        headers = (
            {"receipt-id": receipt_id, "message": "no"} if command == "ERROR" else {"receipt-id": receipt_id}
        )
        for event in protocol.receive_data(server_frame(command, headers), now=0.0):
            if isinstance(event, ReceiptReceived):
                answered.append(event.receipt.receipt_id)
                assert event.receipt == sent[event.receipt.receipt_id]  # its ID and the very frame sent
                assert event.receipt.frame is sent[event.receipt.receipt_id].frame
            elif isinstance(event, ErrorReceived) and event.refused is not None:
                answered.append(event.refused.receipt_id)
            else:
                assert receipt_id not in sent or receipt_id in answered  # unknown or answered before
                assert isinstance(event, UnknownReceipt | ErrorReceived)
    lost = [receipt.receipt_id for receipt in protocol.connection_lost()]
    assert sorted(answered + lost) == sorted(sent)
    assert len(set(answered)) == len(answered)
    assert lost == [rid for rid in sent if rid not in answered]  # oldest first


def test_forgotten_receipts_are_no_longer_due_nor_reported_at_the_end() -> None:
    protocol = connected()
    _, dropped = protocol.send(Frame("SEND", {"destination": "/queue/x", "transaction": "t"}), now=0.0)
    _, kept = protocol.send(Frame("SEND", {"destination": "/queue/x"}), now=0.0)
    assert dropped is not None and kept is not None
    protocol.forget([dropped.receipt_id, "never-sent"])
    assert protocol.receipts_due == 1
    events = protocol.receive_data(f"RECEIPT\nreceipt-id:{dropped.receipt_id}\n\n\x00".encode(), now=0.0)
    assert [type(event).__name__ for event in events] == ["UnknownReceipt"]  # a late answer settles nothing
    assert protocol.connection_lost() == [kept]


def test_error_without_receipt_id_is_unmatched_and_keeps_pending_frames() -> None:
    protocol = connected()
    protocol.send(Frame("SEND", {"destination": "/queue/x"}), now=0.0)
    (event,) = protocol.receive_data(server_frame("ERROR", {"message": "access_refused"}), now=0.0)
    assert event == ErrorReceived("access_refused", event.headers, None)
    assert protocol.receipts_due == 1


# -- bytes in: any split gives the same events ------------------------------------------------------------

_header_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@st.composite
def server_streams(draw: st.DrawFn) -> list[bytes]:
    frames = []
    for i in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["MESSAGE", "RECEIPT", "HEARTBEAT"]))
        if kind == "HEARTBEAT":
            frames.append(b"\n")
        elif kind == "RECEIPT":
            frames.append(server_frame("RECEIPT", {"receipt-id": f"r-{draw(st.integers(1, 5))}"}))
        else:
            headers = {"destination": "/queue/q", "message-id": str(i), "x": draw(_header_text)}
            frames.append(server_frame("MESSAGE", headers, draw(st.binary(max_size=40))))
    return frames


def _feed(protocol: StompProtocol, chunks: list[bytes]) -> list[Event]:
    events: list[Event] = []
    for chunk in chunks:
        events.extend(protocol.receive_data(chunk, now=0.0))
    return events


def _prepared() -> StompProtocol:
    protocol = connected()
    for i in range(5):
        protocol.send(Frame("SEND", {"destination": f"/queue/{i}"}), now=0.0)
    return protocol


@settings(max_examples=200)
@given(frames=server_streams(), cuts=st.lists(st.integers(0, 10_000), max_size=12))
def test_events_do_not_depend_on_how_the_bytes_were_split(frames: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(frames)
    points = sorted({cut % (len(stream) + 1) for cut in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True) if b > a]
    whole = _feed(_prepared(), [stream] if stream else [])
    split = _feed(_prepared(), chunks)
    assert split == whole
    messages = [e for e in whole if isinstance(e, MessageReceived)]
    assert len(messages) == sum(1 for f in frames if f.startswith(b"MESSAGE"))


@settings(max_examples=200)
@given(frames=server_streams(), cuts=st.lists(st.integers(0, 10_000), max_size=12))
def test_a_view_of_a_reused_read_buffer_is_copied_before_receive_data_returns(
    frames: list[bytes], cuts: list[int]
) -> None:
    """The asyncio driver hands the core a view of one buffer every read reuses (stomp_async._read_buffer): nothing
    may keep the view, so overwriting the buffer after each call must change no event, not even a frame a later read
    completes."""
    stream = b"".join(frames)
    points = sorted({cut % (len(stream) + 1) for cut in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True) if b > a]
    buffer = memoryview(bytearray(max((len(c) for c in chunks), default=0)))
    protocol = _prepared()
    events: list[Event] = []
    for chunk in chunks:
        buffer[: len(chunk)] = chunk
        events.extend(protocol.receive_data(buffer[: len(chunk)], now=0.0))
        buffer[:] = b"\xff" * len(buffer)  # the next read lands here
    assert events == _feed(_prepared(), [stream] if stream else [])


def test_an_oversized_frame_closes_the_protocol_after_the_good_ones() -> None:
    protocol = connected(max_frame_bytes=200)
    good = server_frame("MESSAGE", {"destination": "/queue/q"}, b"ok")
    huge = server_frame("MESSAGE", {"destination": "/queue/q"}, b"x" * 500)
    events = protocol.receive_data(good + huge, now=0.0)
    assert isinstance(events[0], MessageReceived) and events[0].frame.body == b"ok"
    assert isinstance(events[-1], ProtocolViolation) and protocol.state == "closed"
    assert protocol.receive_data(good, now=0.0) == []


def test_a_second_connected_is_a_protocol_violation() -> None:
    protocol = connected()
    (event,) = protocol.receive_data(CONNECTED, now=0.0)
    assert isinstance(event, ProtocolViolation) and protocol.state == "closed"


# -- heart-beats -------------------------------------------------------------------------------------------


def test_heartbeat_is_due_only_after_a_quiet_send_period() -> None:
    protocol = connected(heartbeat_ms=(10_000, 0))  # CONNECTED offers 5000,10000: send every 10 s
    assert protocol.heartbeat_due(now=9.9) == b""
    protocol.send(Frame("ACK", {"id": "1"}), now=5.0, receipt=False)  # any write counts
    assert protocol.heartbeat_due(now=14.9) == b""
    assert protocol.heartbeat_due(now=15.0) == b"\n"
    assert protocol.heartbeat_due(now=15.1) == b""
    assert protocol.next_deadline(now=15.1) == 25.0


@given(silence=st.floats(0, 100, allow_nan=False))
def test_peer_is_silent_only_past_the_tolerance(silence: float) -> None:
    protocol = connected(heartbeat_ms=(0, 2000))  # expect every max(2000, 5000) ms
    protocol.receive_data(b"\n", now=1.0)
    assert protocol.peer_silent(now=1.0 + silence) == (silence > 5.0 * SILENCE_TOLERANCE)


def test_two_silent_periods_are_not_death() -> None:
    """ActiveMQ 5.17 beats two periods after CONNECTED and after anything else it writes (raw control:
    python -m jmslike.conformance.heartbeat_gaps); only a longer silence is death."""
    protocol = connected(heartbeat_ms=(0, 2000))  # expect every 5 s
    protocol.receive_data(b"\n", now=1.0)
    assert not protocol.peer_silent(now=1.0 + 2 * 5.0 + 0.5)
    assert protocol.peer_silent(now=1.0 + 3 * 5.0)


def test_a_heartbeat_before_a_malformed_frame_is_not_reported_as_a_frame() -> None:
    """The frames decoded before a decode error are still handled, heart-beats skipped as on the normal path: the
    one violation reported is the malformed frame's."""
    protocol = connected()
    bad = b"MESSAGE\nsubscription:1\ncontent-length:zz\n\nx\x00"
    events = protocol.receive_data(
        b"\n" + server_frame("MESSAGE", {"subscription": "1"}, b"ok") + bad, now=0.0
    )
    assert [type(event) for event in events] == [MessageReceived, ProtocolViolation]
    assert "HEARTBEAT" not in events[-1].reason


def test_part_of_a_frame_is_no_sign_of_life() -> None:
    protocol = connected(heartbeat_ms=(0, 2000))  # expect every 5 s
    protocol.receive_data(b"\n", now=1.0)
    protocol.receive_data(b"MESSAGE\nsubscription:1\n", now=7.0)  # a frame trickling in, never ending
    assert protocol.peer_silent(now=1.0 + 5.0 * SILENCE_TOLERANCE + 0.1)
    protocol.receive_data(b"\n\x00", now=8.0)  # it ends: the broker is alive
    assert not protocol.peer_silent(now=8.0 + 5.0 * SILENCE_TOLERANCE)


def test_a_big_frame_arriving_steadily_is_a_sign_of_life_and_a_trickle_is_not() -> None:
    """Review finding: a message taking longer than the heart-beat timeout to arrive (100 MiB under about 4 MB/s)
    dropped the connection, though its bytes kept coming; the broker cannot beat inside a frame."""
    protocol = connected(heartbeat_ms=(0, 2000))  # expect every 5 s
    tolerance = 5.0 * SILENCE_TOLERANCE
    protocol.receive_data(b"MESSAGE\nsubscription:1\ncontent-length:10000000\n\n", now=0.0)
    chunk = b"x" * PROGRESS_BYTES
    for step in range(1, 6):  # one chunk per 10 s: 50 s in all, four timeouts' worth
        protocol.receive_data(chunk, now=10.0 * step)
        assert not protocol.peer_silent(now=10.0 * step + tolerance - 0.1), step
    trickle = connected(heartbeat_ms=(0, 2000))
    trickle.receive_data(b"MESSAGE\nsubscription:1\n", now=0.0)
    for second in range(1, 13):  # a few bytes a second: never the progress of a real frame
        trickle.receive_data(b"h" * 100, now=float(second))
    assert trickle.peer_silent(now=tolerance + 0.1)


def test_silence_is_not_measured_while_jmslike_holds_reading_back() -> None:
    """jmslike.flow: a reader that stops reading sees no heart-beats; that is no sign of a dead broker."""
    protocol = connected(heartbeat_ms=(0, 2000))  # expect every 5 s
    tolerance = 5.0 * SILENCE_TOLERANCE
    protocol.receive_data(b"\n", now=1.0)
    protocol.hold_reading(True, now=2.0)
    assert not protocol.peer_silent(now=1000.0)
    deadline = protocol.next_deadline(now=1000.0)
    assert deadline is not None and deadline > 1000.0, "the heart-beat loop neither spins nor ends meanwhile"
    protocol.hold_reading(False, now=1000.0)  # reading again: the measure restarts now
    assert not protocol.peer_silent(now=1000.0 + tolerance)
    assert protocol.peer_silent(now=1000.0 + tolerance + 0.1), "a broker silent after that still times out"


def test_no_heartbeats_when_either_side_offers_none() -> None:
    protocol = connected(heartbeat_ms=(0, 0))
    assert protocol.heartbeat_due(now=1e9) == b""
    assert not protocol.peer_silent(now=1e9)
    assert protocol.next_deadline(now=3.0) is None


def test_the_silence_reason_tells_a_silent_broker_from_a_client_that_stopped_reading() -> None:
    """The ActiveMQ benchmark drop of 2026-11-29 could not say which side stalled. A reader away from its socket
    for longer than one of the broker's periods (in an owner's callback) is the client's fault; one that just
    woke to bytes at the deadline's edge is not."""
    protocol = connected(heartbeat_ms=(0, 2000))  # expect every 5 s: 12.5 s of silence
    protocol.receive_data(b"\n", now=1.0)
    silent = "the broker sent nothing for 12.5s (heart-beat timeout)"
    assert protocol.silence_reason() == silent
    assert protocol.silence_reason(reader_away_s=0.001, unread=1) == silent, "woke at the edge: the broker's"
    assert protocol.silence_reason(reader_away_s=5.0, unread=1) == silent, "one period away is no missed beat"
    stuck = protocol.silence_reason(reader_away_s=13.25, unread=4096)
    assert stuck == (
        "nothing was read from the broker for 12.5s (heart-beat timeout): this client's reader has not read for "
        "13.2s, with 4096 bytes waiting unread in its socket, so the client stopped reading, not the broker"
    )
    assert "with 1 byte waiting" in protocol.silence_reason(reader_away_s=6.0, unread=1)
    assert protocol.silence_reason(reader_away_s=6.0, unread=None) == (
        "nothing was read from the broker for 12.5s (heart-beat timeout): this client's reader has not read for 6.0s"
    )
    assert protocol.silence_reason(reader_away_s=6.0, unread=0) == (  # review finding: both were quiet
        "the broker sent nothing for 12.5s (heart-beat timeout); this client's reader has not read for 6.0s, but "
        "nothing waits unread in its socket"
    )
    protocol.receive_data(b"MESSAGE\nsubscription:1\n", now=2.0)  # part of a frame: no sign of life
    assert protocol.silence_reason() == (
        "the broker sent nothing for 12.5s (heart-beat timeout; only 23 bytes of an unfinished frame came)"
    )

"""The bounded STOMP frame decoder (jmslike.adapters.stomp_reader): correct, bounded and never stuck.

Property tests run with a fixed seed and example budget so CI is deterministic and quick; a longer run:

    JMSLIKE_FUZZ_EXAMPLES=200000 python -m pytest tests/unit/test_frame_fuzz.py -q -p no:cacheprovider
"""

from __future__ import annotations

import os
import re
import time

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from jmslike.adapters.stomp_reader import (
    HEARTBEAT,
    DecodedFrame,
    FrameDecodeError,
    FrameDecoder,
    FrameProtocolError,
    FrameTooLarge,
    _unescape,
)
from jmslike.adapters.stomp_writer import encode_frame

EXAMPLES = int(os.environ.get("JMSLIKE_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def encode(command: str, headers: dict[str, str], body: bytes, content_length: bool) -> bytes:
    if content_length:
        headers = {**headers, "content-length": str(len(body))}
    return encode_frame(command, headers, body, "1.2")


def feed_in_pieces(decoder: FrameDecoder, data: bytes, cuts: list[int]) -> list[DecodedFrame]:
    out: list[DecodedFrame] = []
    start = 0
    for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        out += decoder.feed(data[start:cut])
        start = cut
    return [f for f in out if f is not HEARTBEAT]


header_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
frames = st.lists(
    st.tuples(
        st.sampled_from(["MESSAGE", "RECEIPT", "ERROR"]),
        st.dictionaries(
            header_text.filter(lambda k: k != "" and k != "content-length"), header_text, max_size=5
        ),
        st.binary(max_size=200),
        st.booleans(),
    ),
    min_size=1,
    max_size=5,
)


@seed(20261121)
@FUZZ
@given(frames, st.lists(st.integers(min_value=0), max_size=30), st.booleans())
def test_well_formed_frames_decode_whatever_the_split(
    items: list[tuple[str, dict[str, str], bytes, bool]], cuts: list[int], heartbeats: bool
) -> None:
    data = b""
    expected = []
    for command, headers, body, with_length in items:
        if b"\x00" in body:
            with_length = True
        data += encode(command, headers, body, with_length) + (b"\n\r\n" if heartbeats else b"")
        want = dict(headers)
        if with_length:
            want["content-length"] = str(len(body))
        expected.append(DecodedFrame(command, want, body))
    assert feed_in_pieces(FrameDecoder(), data, cuts) == expected


@seed(20261121)
@FUZZ
@given(st.binary(max_size=3000), st.lists(st.integers(min_value=0), max_size=20))
def test_arbitrary_bytes_either_decode_or_fail_cleanly_within_bounds(data: bytes, cuts: list[int]) -> None:
    decoder = FrameDecoder(max_frame_bytes=1024, max_header_bytes=1024)
    try:
        frames = feed_in_pieces(decoder, data, cuts)
    except FrameDecodeError as exc:
        assert str(exc)
        with pytest.raises(FrameDecodeError):  # broken for good: no trustworthy frame boundary any more
            decoder.feed(b"RECEIPT\nreceipt-id:1\n\n\x00")
        return
    assert decoder.buffered_bytes <= 1024
    for frame in frames:
        assert frame.command in {"CONNECTED", "MESSAGE", "RECEIPT", "ERROR"}
        assert len(frame.body) <= 1024


@seed(20261121)
@FUZZ
@given(
    st.sampled_from(["MESSAGE", "RECEIPT", "ERROR"]),
    st.binary(min_size=1, max_size=400),
    st.integers(min_value=0, max_value=400),
)
def test_mutated_frames_never_yield_more_than_was_sent(command: str, junk: bytes, where: int) -> None:
    good = encode(command, {"destination": "/queue/a", "x": "y"}, b"body", True)
    where = where % (len(good) + 1)
    data = good[:where] + junk + good[where:]
    decoder = FrameDecoder(max_frame_bytes=2048, max_header_bytes=1024)
    try:
        frames = [f for f in decoder.feed(data) if f is not HEARTBEAT]
    except FrameDecodeError:
        return
    assert len(frames) <= 2
    assert decoder.buffered_bytes <= len(data)


def test_frames_split_at_every_byte() -> None:
    data = (
        encode("CONNECTED", {"version": "1.2", "server": "x"}, b"", False)
        + b"\n"
        + encode("MESSAGE", {"destination": "/queue/a", "a\nb": "c:d\\e"}, b"with\x00nul", True)
        + b"\r\n"
        + encode("RECEIPT", {"receipt-id": "r-1"}, b"", False)
    )
    decoder = FrameDecoder()
    out: list[DecodedFrame] = []
    for i in range(len(data)):
        out += decoder.feed(data[i : i + 1])
    frames = [f for f in out if f is not HEARTBEAT]
    assert [f.command for f in frames] == ["CONNECTED", "MESSAGE", "RECEIPT"]
    assert frames[1].headers["a\nb"] == "c:d\\e"
    assert frames[1].body == b"with\x00nul"
    assert HEARTBEAT in out
    assert decoder.buffered_bytes == 0


_ESCAPED_TEXT = st.text(st.sampled_from(["\\", "c", "n", "r", "t", ":", "a", "\n"]), max_size=30)


def _unescape_by_regex(text: str) -> str:
    """The general rule, one sequence at a time: known escapes replaced, anything else kept."""
    table = {"\\n": "\n", "\\c": ":", "\\\\": "\\", "\\r": "\r"}
    return re.sub(r"\\.", lambda m: table.get(m.group(0), m.group(0)), text)


@seed(20261121)
@FUZZ
@given(_ESCAPED_TEXT)
def test_unescape_shortcut_agrees_with_the_sequence_by_sequence_rule(text: str) -> None:
    # Escape-dense text (backslashes next to c/n/r, doubled, trailing, unknown sequences), so both of
    # _unescape's paths -- plain replacements when no backslash is escaped, the regex otherwise -- run.
    assert _unescape(text) == _unescape_by_regex(text)


def test_unescape_of_activemq_message_ids_and_unknown_sequences() -> None:
    assert _unescape("ID\\cvm-1-2\\c1\\c-1") == "ID:vm-1-2:1:-1"
    assert _unescape("a\\tb\\") == "a\\tb\\"  # unknown sequence and a trailing backslash stay
    assert _unescape("a\\\\cb") == "a\\cb"  # an escaped backslash followed by c is not a colon


def test_connected_headers_are_not_unescaped_and_first_repeated_header_wins() -> None:
    data = b"CONNECTED\nserver:a\\cb\n\n\x00MESSAGE\nx:1\nx:2\n\n\x00"
    frames = FrameDecoder().feed(data)
    assert frames[0] == DecodedFrame("CONNECTED", {"server": "a\\cb"}, b"")
    assert frames[1].headers == {"x": "1"}


def test_crlf_line_endings() -> None:
    frames = FrameDecoder().feed(b"MESSAGE\r\ndestination:/queue/a\r\n\r\nhi\x00")
    assert frames == [DecodedFrame("MESSAGE", {"destination": "/queue/a"}, b"hi")]


@pytest.mark.parametrize(
    ("data", "error", "fragment"),
    [
        (b"SEND\ndestination:/queue/a\n\n\x00", FrameProtocolError, "client-only"),
        (b"HELLO\n\n\x00", FrameProtocolError, "unknown"),
        (b"MESSAGE\nno colon here\n\n\x00", FrameProtocolError, "name:value"),
        (b"MESSAGE\n:empty-name\n\n\x00", FrameProtocolError, "name:value"),
        (b"MESSAGE\nbad:\xff\xfe\n\n\x00", FrameProtocolError, "UTF-8"),
        (b"\xc3\x28\n\n\x00", FrameProtocolError, "UTF-8"),
        (b"MESSAGE\ncontent-length:-1\n\n\x00", FrameProtocolError, "not a number"),
        (b"MESSAGE\ncontent-length:\xd9\xa3\n\nabc\x00", FrameProtocolError, "not a number"),
        (b"MESSAGE\ncontent-length:2\n\nabc\x00", FrameProtocolError, "not NUL"),
        (b"MESSAGE\ncontent-length:999999999999\n\n", FrameTooLarge, "max_frame_bytes"),
        (b"MESSAGE\nh:" + b"x" * 5000, FrameTooLarge, "max_header_bytes"),
        (b"MESSAGE\nh:" + b"x" * 5000 + b"\n\n\x00", FrameTooLarge, "max_header_bytes"),
        (b"MESSAGE\n\n" + b"y" * 10_000, FrameTooLarge, "max_frame_bytes"),
    ],
)
def test_malformed_or_oversized_frames_are_refused_with_a_reason(
    data: bytes, error: type[FrameDecodeError], fragment: str
) -> None:
    decoder = FrameDecoder(max_frame_bytes=8192, max_header_bytes=4096)
    with pytest.raises(error, match=fragment):
        decoder.feed(data)
    assert decoder.buffered_bytes == 0


def test_endless_body_is_cut_off_at_the_limit_in_bounded_memory_and_linear_time() -> None:
    limit = 1024 * 1024
    decoder = FrameDecoder(max_frame_bytes=limit, max_header_bytes=4096)
    decoder.feed(b"MESSAGE\ndestination:/queue/a\n\n")
    chunk = b"z" * 4096
    started = time.monotonic()
    sent = 0
    with pytest.raises(FrameTooLarge):
        while True:
            decoder.feed(chunk)
            sent += len(chunk)
            assert decoder.buffered_bytes <= limit + len(chunk)
    assert sent <= limit
    # Byte-at-a-time input of a large header block: resumed search keeps this linear, not quadratic.
    decoder = FrameDecoder(max_frame_bytes=limit, max_header_bytes=200_000)
    decoder.feed(b"MESSAGE\n")
    with pytest.raises(FrameTooLarge):
        for _ in range(210_000):
            decoder.feed(b"h")
    assert time.monotonic() - started < 10


def test_frames_before_a_bad_one_are_handed_over_with_the_error() -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameProtocolError) as raised:
        decoder.feed(b"CONNECTED\nversion:1.2\n\n\x00\nMESSAGE\nbad\n\n\x00")
    assert [f.command for f in raised.value.frames] == ["CONNECTED", "HEARTBEAT"]
    with pytest.raises(FrameProtocolError) as again:
        decoder.feed(b"RECEIPT\nreceipt-id:1\n\n\x00")
    assert again.value.frames == []


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError):
        FrameDecoder(max_frame_bytes=0)

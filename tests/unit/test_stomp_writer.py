"""jmslike's own frame encoder (jmslike.adapters.stomp_writer) against stomp.py's and our decoder."""

from __future__ import annotations

import pytest
import stomp.protocol
import stomp.utils
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from jmslike.adapters.stomp_reader import HEARTBEAT, FrameDecoder
from jmslike.adapters.stomp_writer import encode_frame
from jmslike.contract import HeaderTemplate

# Any text, including STOMP's special characters (backslash, colon, CR, LF); no lone surrogates.
text = st.text(st.characters(blacklist_categories=("Cs",)) | st.sampled_from("\\:\r\n"), max_size=15)
header_maps = st.dictionaries(text.filter(bool), text, max_size=6)
# stomp.py escapes values only; jmslike escapes names too, as STOMP says (property names are identifiers,
# so this never differs in practice). The byte-for-byte comparison uses plain names.
plain_names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\\:\r\n"), min_size=1)


def stomp_py_bytes(command: str, headers: dict[str, str], body: bytes, version: str) -> bytes:
    """What stomp.py's Protocol.send_frame → Transport.transmit would write for the same frame."""
    protocol = stomp.protocol.Protocol12 if version == "1.2" else stomp.protocol.Protocol11
    escaped = dict(headers)
    protocol._escape_headers(None, escaped)
    return stomp.utils.pack(stomp.utils.convert_frame(stomp.utils.Frame(command, escaped, body)))


@seed(20261121)
@settings(max_examples=300, deadline=None)
@given(
    headers=st.dictionaries(plain_names, text, max_size=6),
    body=st.binary(max_size=64),
    version=st.sampled_from(["1.1", "1.2"]),
)
def test_same_bytes_as_stomp_py(headers: dict[str, str], body: bytes, version: str) -> None:
    # stomp.py writes headers sorted; given the same order, the frames are byte for byte the same.
    ordered = dict(sorted(headers.items()))
    assert encode_frame("SEND", ordered, body, version) == stomp_py_bytes("SEND", ordered, body, version)


@seed(20261121)
@settings(max_examples=300, deadline=None)
@given(headers=header_maps, body=st.binary(max_size=64))
def test_stomp_12_headers_survive_a_round_trip(headers: dict[str, str], body: bytes) -> None:
    headers = {k: v for k, v in headers.items() if k != "content-length"}
    data = encode_frame("MESSAGE", {**headers, "content-length": str(len(body))}, body, "1.2")
    frames = [f for f in FrameDecoder(1 << 20, 1 << 20).feed(data) if f is not HEARTBEAT]
    assert len(frames) == 1
    assert frames[0].body == body
    assert {k: v for k, v in frames[0].headers.items() if k != "content-length"} == headers


def test_layout_and_escaped_names() -> None:
    assert encode_frame("ACK", {"id": "a:b", "x:y": "t\n1"}, b"", "1.1") == (
        b"ACK\nid:a\\cb\nx\\cy:t\\n1\n\n\x00"
    )


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_lone_surrogate_becomes_question_mark_as_with_stomp_py(version: str) -> None:
    assert encode_frame("SEND", {"k": "a\ud800b"}, b"x", version) == b"SEND\nk:a?b\n\nx\x00"


@seed(20261128)
@settings(max_examples=300, deadline=None)
@given(
    fixed=header_maps.filter(lambda h: not HeaderTemplate.CORE_HEADERS & h.keys()),
    rest=header_maps,
    body=st.binary(max_size=32),
    version=st.sampled_from(["1.1", "1.2"]),
)
def test_a_header_template_encodes_as_its_headers_do(
    fixed: dict[str, str], rest: dict[str, str], body: bytes, version: str
) -> None:
    headers = {**fixed, **{k: v for k, v in rest.items() if k not in fixed}}
    template = HeaderTemplate(fixed)
    other = "1.1" if version == "1.2" else "1.2"
    for _ in range(2):  # the second time from the text kept, one per STOMP version
        for each in (version, other):
            assert encode_frame("SEND", headers, body, each, template) == encode_frame(
                "SEND", headers, body, each
            )


@pytest.mark.parametrize("name", sorted(HeaderTemplate.CORE_HEADERS))
def test_a_header_template_refuses_the_headers_the_core_sets_per_frame(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        HeaderTemplate({"destination": "/queue/q", name: "1"})


@pytest.mark.parametrize("stated", ["3", "99", "", "abc"])
def test_a_content_length_given_with_a_body_always_states_its_real_length(stated: str) -> None:
    headers = {"destination": "/queue/q", "content-length": stated}
    template = HeaderTemplate({"destination": "/queue/q"})
    for encoded in (
        encode_frame("SEND", headers, b"abc", "1.2"),
        encode_frame("SEND", headers, b"abc", "1.2", template),
    ):
        assert encoded == b"SEND\ndestination:/queue/q\ncontent-length:3\n\nabc\x00"
    assert headers["content-length"] == stated, "the caller's headers are left as they were"

"""The threaded reader's pause after a read of receipts alone (``receipt_linger_us``): when it may pause, and the
URL key's bounds. The pause itself, and that a caller who starts waiting ends it, are shown against a scripted
peer in tests/integration/test_reader_linger.py."""

from __future__ import annotations

import pytest

from jmslike.adapters.stomp_core import (
    ErrorReceived,
    MessageReceived,
    Receipt,
    ReceiptReceived,
    UnknownReceipt,
)
from jmslike.adapters.stomp_socket import DriverSettings, may_linger
from jmslike.config import ConfigurationError, parse_url
from jmslike.contract import Frame

SEND = Frame("SEND", {"destination": "/queue/q"}, b"x")
RECEIPT = ReceiptReceived(Receipt("r-1", SEND))
MESSAGE = MessageReceived(Frame("MESSAGE", {"destination": "/queue/q"}, b"y"))

STREAMING = {"waiters": 0, "sending": True, "awaiting": True, "connected": True}


def test_a_read_of_receipts_alone_while_the_application_streams_unwaited_sends_may_pause() -> None:
    assert may_linger([RECEIPT, RECEIPT], **STREAMING) is True


@pytest.mark.parametrize(
    "change",
    [
        {"waiters": 1},  # a synchronous send, commit, ack or a deferred receipt waits
        {"sending": False},  # nothing written since the previous read: the sender is blocked or done
        {"awaiting": False},  # every receipt is in: nothing would gather
        {"connected": False},  # DISCONNECT written: its receipt is awaited by close()
    ],
)
def test_no_pause_when_anyone_or_anything_depends_on_the_next_read(change: dict[str, object]) -> None:
    assert may_linger([RECEIPT], **{**STREAMING, **change}) is False  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "other",
    [
        MESSAGE,  # a delivery: more may be right behind it
        ErrorReceived("refused", {}, None),
        UnknownReceipt("r-99"),
    ],
)
def test_no_pause_after_a_read_that_brought_anything_but_receipts(other: object) -> None:
    assert may_linger([RECEIPT, other], **STREAMING) is False  # type: ignore[list-item]


def test_no_pause_after_a_read_that_brought_no_frame() -> None:
    assert may_linger([], **STREAMING) is False  # a heart-beat, or part of a frame


def test_the_url_key_sets_the_pause_and_zero_switches_it_off() -> None:
    host = ("127.0.0.1", 61613)
    default = DriverSettings.from_config(parse_url("activemq://127.0.0.1:61613"), host, "1.1", "r-")
    assert default.linger_s == pytest.approx(0.0002)
    off = DriverSettings.from_config(
        parse_url("activemq://127.0.0.1:61613?receipt_linger_us=0"), host, "1.1", "r-"
    )
    assert off.linger_s == 0.0


def test_a_pause_longer_than_10_ms_is_refused_with_the_ceiling_named() -> None:
    with pytest.raises(ConfigurationError, match=r"receipt_linger_us.*at most 10000 \(10 ms\)"):
        parse_url("activemq://127.0.0.1:61613?receipt_linger_us=10001")
    assert parse_url("activemq://127.0.0.1:61613?receipt_linger_us=10000").receipt_linger_us == 10_000

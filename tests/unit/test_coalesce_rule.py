"""Send coalescing in the threaded driver (``send_coalesce_us``): when a frame may be held, and the URL key's
bounds. Holding, writing in order and writing at once for a waiting caller are shown against a scripted peer in
tests/integration/test_send_coalescing.py."""

from __future__ import annotations

import pytest

from jmslike.adapters.stomp_socket import COALESCE_BYTES, DriverSettings, may_coalesce, next_flush
from jmslike.config import ConfigurationError, parse_url

STREAMING = {
    "coalesce": True,
    "due_written": 3,
    "buffered_bytes": 1000,
    "frame_bytes": 300,
    "batch_age_s": 0.0004,
    "since_write_s": 0.0002,
    "hold_s": 0.001,
}


def test_an_unwaited_frame_may_be_held_while_the_broker_owes_a_receipt_for_one_written() -> None:
    assert may_coalesce(**STREAMING) is True  # type: ignore[arg-type]


#: Each change, and why the frame is then written at once.
WRITTEN_AT_ONCE = {
    "its sender waits for it (synchronous send, ack, commit), or it has no receipt": {"coalesce": False},
    "nothing in flight": {"due_written": 0},
    "no batch open, nothing written within the hold: an occasional send, though a receipt may stay due for good "
    "(it timed out, or a RabbitMQ transaction was rolled back before its sends were answered)": {
        "buffered_bytes": 0,
        "since_write_s": 0.001,
    },
    "the batch is full: written now, with this frame": {"buffered_bytes": COALESCE_BYTES - 299},
    "a frame bigger than a batch": {"buffered_bytes": 0, "frame_bytes": COALESCE_BYTES + 1},
    "the batch is as old as the hold: the sender writes it, not the flusher, so a sender keeping the interpreter "
    "busy cannot delay it beyond the hold": {"batch_age_s": 0.001},
}


@pytest.mark.parametrize("why", list(WRITTEN_AT_ONCE))
def test_written_at_once_otherwise(why: str) -> None:
    assert may_coalesce(**{**STREAMING, **WRITTEN_AT_ONCE[why]}) is False  # type: ignore[arg-type]


def test_an_open_batch_takes_frames_however_long_ago_the_last_write_was() -> None:
    assert may_coalesce(**{**STREAMING, "since_write_s": 5.0}) is True  # type: ignore[arg-type]


def test_a_batch_may_fill_to_its_bound_exactly() -> None:
    assert may_coalesce(**{**STREAMING, "buffered_bytes": COALESCE_BYTES - 300}) is True  # type: ignore[arg-type]


def test_the_url_key_sets_the_hold_and_zero_switches_it_off() -> None:
    host = ("127.0.0.1", 61613)
    default = DriverSettings.from_config(parse_url("activemq://127.0.0.1:61613"), host, "1.1", "r-")
    assert default.coalesce_s == pytest.approx(0.001)
    off = DriverSettings.from_config(
        parse_url("activemq://127.0.0.1:61613?send_coalesce_us=0"), host, "1.1", "r-"
    )
    assert off.coalesce_s == 0.0


def test_a_hold_longer_than_10_ms_is_refused_with_the_ceiling_named() -> None:
    with pytest.raises(ConfigurationError, match=r"send_coalesce_us.*at most 10000 \(10 ms\)"):
        parse_url("activemq://127.0.0.1:61613?send_coalesce_us=10001")
    assert parse_url("activemq://127.0.0.1:61613?send_coalesce_us=10000").send_coalesce_us == 10_000


# -- the flusher thread: when it writes, when it looks again, when it sleeps until woken (next_flush) -----------


def test_the_flusher_writes_a_batch_as_old_as_the_hold_or_one_a_waiting_caller_needs() -> None:
    due = {"held": True, "batch_age_s": 0.001, "since_write_s": 0.0, "hold_s": 0.001, "asked": False}
    assert next_flush(**due) == 0.0  # type: ignore[arg-type]
    asked = {**due, "batch_age_s": 0.0, "asked": True}
    assert next_flush(**asked) == 0.0  # type: ignore[arg-type]


def test_the_flusher_looks_again_when_a_young_batch_comes_due() -> None:
    young = {"held": True, "batch_age_s": 0.0003, "since_write_s": 0.0, "hold_s": 0.001, "asked": False}
    assert next_flush(**young) == pytest.approx(0.0007)  # type: ignore[arg-type]


def test_while_the_application_streams_the_flusher_keeps_timing_rather_than_waiting_to_be_woken() -> None:
    """Nothing held, but a frame was written less than a hold ago: the next send may begin a batch without waking
    the flusher (StompSocket._add_to_batch wakes only an idle one), so it looks again once a hold has passed."""
    streaming = {"held": False, "batch_age_s": 0.0, "since_write_s": 0.0004, "hold_s": 0.001, "asked": False}
    assert next_flush(**streaming) == pytest.approx(0.0006)  # type: ignore[arg-type]
    assert next_flush(**{**streaming, "asked": True}) == pytest.approx(0.0006)  # type: ignore[arg-type]


def test_the_flusher_sleeps_until_woken_once_nothing_was_written_for_a_hold() -> None:
    """Then may_coalesce holds no new frame without an open batch, and the frame that opens one wakes the
    flusher: it may sleep without a timeout."""
    quiet = {"held": False, "batch_age_s": 0.0, "since_write_s": 0.001, "hold_s": 0.001, "asked": False}
    assert next_flush(**quiet) is None  # type: ignore[arg-type]
    assert may_coalesce(**{**STREAMING, "buffered_bytes": 0, "since_write_s": 0.001}) is False  # type: ignore[arg-type]


def test_a_look_that_read_the_clock_before_the_state_still_looks_again_within_a_hold() -> None:
    """The flusher's unlocked look reads the clock first: a frame held or written after that has a negative age,
    which must not push the next look past a hold (review of 70adfef: up to a switch interval late)."""
    young = {"held": True, "batch_age_s": -0.002, "since_write_s": 0.0, "hold_s": 0.001, "asked": False}
    assert next_flush(**young) == pytest.approx(0.001)  # type: ignore[arg-type]
    streaming = {"held": False, "batch_age_s": 0.0, "since_write_s": -0.002, "hold_s": 0.001, "asked": False}
    assert next_flush(**streaming) == pytest.approx(0.001)  # type: ignore[arg-type]

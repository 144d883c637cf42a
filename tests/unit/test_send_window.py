"""The asynchronous send window (jmslike.send_window): counted in sends and in bytes, a big message goes
alone, a full window waits for a release and gives up after the receipt timeout saying nothing was sent."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jmslike.exceptions import JMSException
from jmslike.send_window import REFILL_WAIT_S, CompletionOrder, SendPlaces, SendWindow


def window(count: int, byte_limit: int, timeout_s: float = 5.0) -> tuple[SendWindow, threading.RLock]:
    lock = threading.RLock()
    return SendWindow(lock, count, byte_limit, timeout_s), lock


def release(win: SendWindow, lock: threading.RLock, size: int) -> None:
    """As the session gives a place back: the senders are woken when the release says they may go on."""
    with lock:
        if win.release(size):
            win.wake_senders()


def test_the_count_bounds_the_window_and_a_release_makes_room() -> None:
    win, lock = window(2, 0)
    win.acquire(10)
    win.acquire(10)
    got = threading.Event()

    def third() -> None:
        win.acquire(10)
        got.set()

    thread = threading.Thread(target=third)
    thread.start()
    assert not got.wait(0.2)  # full: the third send waits
    release(win, lock, 10)
    assert got.wait(5)
    thread.join()
    assert win.busy


def test_the_bytes_bound_the_window_but_a_big_message_goes_alone() -> None:
    win, lock = window(100, 1000)
    win.acquire(5000)  # bigger than the whole byte window: alone, never refused for its size
    release(win, lock, 5000)
    assert not win.busy
    win.acquire(600)
    win.acquire(400)  # exactly the byte limit
    short, _ = window(100, 1000, 0.05)
    short.acquire(600)
    with pytest.raises(JMSException, match=r"1 asynchronous send\(s\) \(600 bytes\) still unconfirmed"):
        short.acquire(401)  # would pass the byte limit: waits, then gives up, saying nothing was sent


def test_a_full_window_gives_up_after_the_timeout_and_counts_nothing() -> None:
    win, _ = window(1, 0, timeout_s=0.05)
    win.acquire(1)
    with pytest.raises(JMSException, match="receipt_timeout_ms"):
        win.acquire(1)
    assert win.busy  # only the first send is in the window


def test_a_zero_count_is_one() -> None:
    win, _ = window(0, 0, timeout_s=0.05)
    win.acquire(1)
    with pytest.raises(JMSException):
        win.acquire(1)


def test_a_release_wakes_waiters_only_once_a_quarter_of_a_full_window_is_free_or_it_is_empty() -> None:
    """A sender that found the window full goes on once a quarter is free again, not per receipt (silly window
    avoidance): releases before that do not wake it; the release that empties the window wakes whoever waits
    for every send to be settled."""
    places = SendPlaces(8, 0, 5.0)
    for _ in range(8):
        assert places.try_take(1)
    assert [places.release(1) for _ in range(8)] == [False, True, True, True, True, True, True, True]
    one = SendPlaces(1, 0, 5.0)
    assert one.try_take(1)
    assert one.release(1) is True


def test_the_bytes_refill_too() -> None:
    places = SendPlaces(100, 1000, 5.0)
    assert places.try_take(500) and places.try_take(500)
    assert places.release(200) is False  # 800 of 1000 bytes still in flight: more than three quarters
    assert places.release(100) is True  # 700
    assert places.wait_step(300, 0.0, 5.0) is None


def full(count: int) -> SendPlaces:
    places = SendPlaces(count, 0, 5.0)
    for _ in range(count):
        assert places.try_take(1)
    return places


def test_a_sender_that_found_the_window_full_takes_a_place_once_refilled_or_after_the_refill_wait() -> None:
    places = full(8)
    assert places.wait_step(1, 0.0, 5.0) == pytest.approx(REFILL_WAIT_S), (
        "nothing free: wait out the refill wait"
    )
    places.release(1)
    assert places.wait_step(1, 0.001, 5.0) == pytest.approx(REFILL_WAIT_S - 0.001), (
        "one of eight free: not yet"
    )
    assert places.wait_step(1, REFILL_WAIT_S, 5.0) is None, "a trickle of answers still lets sends go on"
    places.release(1)
    places.release(1)
    assert places.wait_step(1, 0.0, 5.0) is None, "a quarter free"


def test_after_the_refill_wait_any_place_given_back_wakes_the_sender_and_its_timeout_bounds_the_wait() -> (
    None
):
    """Past REFILL_WAIT_S the sender waits for the first place, not in 5 ms polls (review of f4ae81d)."""
    places = full(8)
    assert places.wait_step(1, REFILL_WAIT_S, 2.0) == 2.0, "waits the rest of its timeout, woken by a release"
    assert places.release(1) is True, "one place of eight wakes an impatient sender"
    assert places.wait_step(1, REFILL_WAIT_S + 0.001, 1.9) is None
    assert places.release(1) is False, "it went on: patience again for the next full window"


def test_of_two_impatient_senders_the_one_that_does_not_fit_is_woken_by_the_next_place() -> None:
    """Bytes bound: a release wakes both; the smaller fits and takes the place, the bigger does not and waits
    again. The next release that makes room must wake it (a take used to clear the flag both had set, and the
    bigger sender slept to its receipt timeout with room free; review of b705614)."""
    places = SendPlaces(100, 1000, 30.0)
    for _ in range(98):
        assert places.try_take(10)
    assert places.try_take(15)  # 995 bytes in flight
    big, small = 20, 10
    assert places.wait_step(big, REFILL_WAIT_S, 30.0) == 30.0
    assert places.wait_step(small, REFILL_WAIT_S, 30.0) == 30.0
    assert places.release(10) is True  # 985 bytes: both are woken
    assert places.wait_step(big, REFILL_WAIT_S, 29.0) == 29.0, "985 + 20 does not fit: it waits again"
    assert places.wait_step(small, REFILL_WAIT_S, 29.0) is None  # 985 + 10 fits
    assert places.release(15) is True, "980 bytes: room for the bigger sender, which must be woken"
    assert places.wait_step(big, REFILL_WAIT_S, 28.0) is None


def test_at_its_deadline_a_sender_takes_any_place_free_however_short_its_timeout() -> None:
    """A receipt timeout shorter than REFILL_WAIT_S: a place free at the deadline is taken, not refused with
    "still unconfirmed" (review of f4ae81d)."""
    places = full(8)
    places.release(1)
    assert places.wait_step(1, 0.002, 0.0) is None
    assert places.wait_step(1, 0.002, 0.0) == 0.0, "nothing free at the deadline: the caller raises stalled()"


def test_a_waiting_sender_goes_on_with_one_place_free_after_the_refill_wait_not_the_receipt_timeout() -> None:
    """A broker answering a trickle (producer flow control pacing sends to a slow consumer) still lets a sender
    that found the window full go on, at the first place once it has waited REFILL_WAIT_S."""
    waiting = threading.Event()

    @contextlib.contextmanager
    def awaiting() -> Iterator[None]:
        waiting.set()
        yield

    lock = threading.RLock()
    win = SendWindow(lock, 8, 0, 30.0, awaiting)
    for _ in range(8):
        win.acquire(1)
    got = threading.Event()

    def ninth() -> None:
        win.acquire(1)
        got.set()

    began = time.monotonic()
    thread = threading.Thread(target=ninth)
    thread.start()
    assert waiting.wait(10)
    release(win, lock, 1)
    assert got.wait(10), "a sender waited for a refill that a trickle never brings"
    thread.join()
    assert time.monotonic() - began >= REFILL_WAIT_S


@given(st.permutations(list(range(12))))
def test_completions_come_out_in_send_order_whatever_order_receipts_come_in(order: list[int]) -> None:
    completions: CompletionOrder[int] = CompletionOrder()
    tickets = [completions.ticket() for _ in range(12)]
    released: list[int] = []
    for index in order:
        ready = completions.settle(tickets[index], index)
        assert ready == sorted(ready), "a batch of ready callbacks is in send order"
        released.extend(ready)
        assert released == list(range(len(released))), "nothing runs before every earlier send settled"
    assert released == list(range(12))

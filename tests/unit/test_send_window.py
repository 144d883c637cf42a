"""The asynchronous send window (jmslike.send_window): counted in sends and in bytes, a big message goes
alone, a full window waits for a release and gives up after the receipt timeout saying nothing was sent, and
a full window wakes its waiting sender only once a quarter of it is free again."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jmslike.exceptions import JMSException
from jmslike.send_window import CompletionOrder, SendPlaces, SendWindow


def window(count: int, byte_limit: int, timeout_s: float = 5.0) -> tuple[SendWindow, threading.Condition]:
    cond = threading.Condition(threading.RLock())
    return SendWindow(cond, count, byte_limit, timeout_s), cond


def release(win: SendWindow, cond: threading.Condition, size: int) -> None:
    """As the session does: waiters are woken only when the window says so."""
    with cond:
        if win.release(size):
            cond.notify_all()


def test_the_count_bounds_the_window_and_a_release_makes_room() -> None:
    win, cond = window(2, 0)
    win.acquire(10)
    win.acquire(10)
    got = threading.Event()

    def third() -> None:
        win.acquire(10)
        got.set()

    thread = threading.Thread(target=third)
    thread.start()
    assert not got.wait(0.2)  # full: the third send waits
    release(win, cond, 10)
    assert got.wait(5)
    thread.join()
    assert win.busy


def test_the_bytes_bound_the_window_but_a_big_message_goes_alone() -> None:
    win, cond = window(100, 1000)
    win.acquire(5000)  # bigger than the whole byte window: alone, never refused for its size
    release(win, cond, 5000)
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


def test_a_full_window_wakes_its_sender_once_a_quarter_is_free() -> None:
    places = SendPlaces(8, 0, 5.0)
    for _ in range(8):
        assert places.try_take(1)
    places.wait_begins(1)
    assert places.release(1) is False  # 7 in flight: one place free, the sender sleeps on
    assert places.release(1) is True  # 6 in flight: a quarter free, it sends its next two in one go
    places.wait_ends()
    assert places.try_take(1) and places.try_take(1)
    assert not places.try_take(1)


def test_without_a_waiting_sender_only_an_empty_window_wakes() -> None:
    places = SendPlaces(4, 0, 5.0)
    for _ in range(3):
        places.try_take(10)
    assert [places.release(10) for _ in range(3)] == [
        False,
        False,
        True,
    ]  # empty: close and commit wait for it


def test_a_window_bound_by_bytes_wakes_its_sender_when_its_send_fits() -> None:
    places = SendPlaces(100, 1000, 5.0)
    for size in (300, 300, 400):
        assert places.try_take(size)
    places.wait_begins(500)
    assert places.release(300) is False  # 700 + 500 > 1000: it still does not fit
    assert places.release(300) is True  # 400 + 500 fits
    places.wait_ends()
    assert places.try_take(500)


def test_a_sender_not_woken_takes_a_free_place_at_its_deadline_instead_of_giving_up() -> None:
    win, cond = window(8, 0, timeout_s=1.0)
    for _ in range(8):
        win.acquire(1)
    outcome: list[object] = []

    def ninth() -> None:
        try:
            win.acquire(1)
            outcome.append("sent")
        except JMSException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=ninth)
    thread.start()
    with cond:  # the sender starts waiting under the condition: look until it does (nothing notifies that)
        for _ in range(5000):
            if win._waiting:  # private: the test needs the sender asleep
                break
            cond.wait(0.001)
        assert win._waiting == 1
        assert win.release(1) is False  # one place free, below the quarter: no wake-up
    thread.join(5)
    assert outcome == ["sent"]


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

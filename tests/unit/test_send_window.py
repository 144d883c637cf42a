"""The asynchronous send window (jmslike.send_window): counted in sends and in bytes, a big message goes
alone, a full window waits for a release and gives up after the receipt timeout saying nothing was sent."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jmslike.exceptions import JMSException
from jmslike.send_window import CompletionOrder, SendWindow


def window(count: int, byte_limit: int, timeout_s: float = 5.0) -> tuple[SendWindow, threading.Condition]:
    lock = threading.RLock()
    cond = threading.Condition(lock)
    return SendWindow(cond, lock, count, byte_limit, timeout_s), cond


def release(win: SendWindow, cond: threading.Condition, size: int) -> None:
    with cond:
        win.release(size)
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

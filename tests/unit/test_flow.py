"""jmslike.flow.BufferGauge and the inbox's byte count, without a broker."""

from __future__ import annotations

import deliveries
from hypothesis import given
from hypothesis import strategies as st

from jmslike.consumer import Inbox
from jmslike.delivery import Pending
from jmslike.flow import BufferGauge


def pending(size: int) -> Pending:
    return deliveries.pending(body=b"x" * size)


def test_over_past_the_bound_and_released_at_half_of_it() -> None:
    woken: list[str] = []
    gauge = BufferGauge(100)
    gauge.watch(lambda: woken.append("wake"))
    gauge.add(60)
    gauge.add(40)
    assert not gauge.over, "at the bound is not past it"
    gauge.add(1)
    assert gauge.over
    gauge.remove(30)
    assert gauge.over and woken == [], "still above half: the reader stays held (no stop-and-go)"
    gauge.remove(21)
    assert not gauge.over and woken == ["wake"] and gauge.total == 50


def test_no_bound_means_never_over() -> None:
    gauge = BufferGauge(0)
    gauge.add(10**12)
    assert not gauge.over and gauge.total == 0


def test_an_unwatched_reader_is_not_woken() -> None:
    woken: list[int] = []

    def wake() -> None:
        woken.append(1)

    gauge = BufferGauge(10)
    gauge.watch(wake)
    gauge.unwatch(wake)
    gauge.add(11)
    gauge.remove(11)
    assert woken == []


@given(
    st.lists(st.tuples(st.sampled_from(["put", "put_back", "take", "clear", "close"]), st.integers(0, 50)))
)
def test_the_gauge_counts_exactly_what_the_inboxes_hold(operations: list[tuple[str, int]]) -> None:
    gauge = BufferGauge(10**9)
    inbox = Inbox(gauge)
    held: list[int] = []  # the sizes the open inbox holds, oldest first
    for operation, size in operations:
        if operation == "put":
            inbox.put(pending(size))
            held.append(size)
        elif operation == "put_back":
            inbox.put_back(pending(size))
            held.insert(0, size)
        elif operation == "take" and held:
            assert len(inbox.take().incoming.body) == held.pop(0)
        elif operation == "clear":
            inbox.clear()
            held = []
        elif operation == "close":
            assert [len(p.incoming.body) for p in inbox.close()] == held
            inbox, held = Inbox(gauge), []
        assert gauge.total == sum(held)


def test_a_waiting_browse_makes_the_wire_read_on() -> None:
    woken: list[str] = []
    gauge = BufferGauge(10)
    gauge.watch(lambda: woken.append("wake"))
    gauge.add(11)
    assert gauge.holding
    with gauge.reading():
        assert woken == ["wake"], "a held reader is woken to read on"
        assert gauge.over and not gauge.holding
    assert gauge.holding, "held again once nobody waits"

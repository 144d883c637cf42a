"""delivery.LazyAcks, the DUPS_OK rule both APIs share, without a broker."""

from __future__ import annotations

from dataclasses import dataclass

import deliveries

from jmslike.contract import SubscriptionSpec
from jmslike.delivery import LazyAcks, Pending
from jmslike.destinations import Queue


@dataclass(eq=False)
class Consumer:
    spec: SubscriptionSpec


def consumer(prefetch: int) -> Consumer:
    return Consumer(
        SubscriptionSpec(sub_id="s", destination=Queue("q"), prefetch=prefetch, cumulative_ack=True)
    )


def pending(n: int, local: bool = False) -> Pending:
    return deliveries.pending(ack_id=f"a{n}", local=local)


def test_one_ack_per_half_a_prefetch_while_more_is_buffered() -> None:
    lazy: LazyAcks[Consumer] = LazyAcks()
    c = consumer(prefetch=10)
    due = [lazy.consumed(c, pending(n), buffered=True) for n in range(1, 11)]
    assert [d.incoming.ack_id if d is not None else None for d in due] == [None] * 4 + ["a5"] + [None] * 4 + [
        "a10"
    ], "the newest of each five settles them all"


def test_nothing_buffered_acks_at_once_and_owes_nothing() -> None:
    lazy: LazyAcks[Consumer] = LazyAcks()
    c = consumer(prefetch=1000)
    assert lazy.consumed(c, pending(1), buffered=True) is None
    due = lazy.consumed(c, pending(2), buffered=False)
    assert due is not None and due.incoming.ack_id == "a2"
    assert lazy.flush(c) is None


def test_flush_gives_the_ack_owed_and_a_local_delivery_never_stands_in() -> None:
    lazy: LazyAcks[Consumer] = LazyAcks()
    c = consumer(prefetch=1000)
    lazy.consumed(c, pending(1), buffered=True)
    assert lazy.consumed(c, pending(2, local=True), buffered=True) is None
    owed = lazy.flush(c)
    assert owed is not None and owed.incoming.ack_id == "a1", "the broker's newest, not jmslike's own"
    assert lazy.flush(c) is None
    assert lazy.consumed(c, pending(3, local=True), buffered=False) is None, "a local one owes nothing"


def test_a_lost_connection_forgets_what_was_owed() -> None:
    lazy: LazyAcks[Consumer] = LazyAcks()
    c = consumer(prefetch=1000)
    lazy.consumed(c, pending(1), buffered=True)
    lazy.clear()
    assert lazy.flush(c) is None

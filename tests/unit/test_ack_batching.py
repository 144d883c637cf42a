"""Which ACK frames settle a batch of deliveries (pure: no broker, no socket).

A cumulative ``ack:client`` subscription needs one ACK, of its newest delivery; a durable subscriber's
companion subscription delivers through the same consumer but acknowledges individually, and a local
delivery (jmslike's own) has nothing on the broker. Getting this wrong leaves messages unacknowledged on the
broker (which then stops dispatching to the subscription) or acknowledges one the application never had.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import deliveries

from jmslike.delivery import Pending
from jmslike.delivery import acks_for as _acks_for


@dataclass
class _Spec:
    sub_id: str
    cumulative_ack: bool


@dataclass(eq=False)
class _Consumer:
    spec: _Spec


def _pending(sub_id: str, ack_id: str, local: bool = False) -> Pending:
    return deliveries.pending(sub_id, ack_id, local=local)


def _ids(batch: list[tuple[Any, Pending]]) -> list[str]:
    return [p.incoming.ack_id for p in _acks_for(batch)]


def test_a_cumulative_subscription_needs_only_its_newest_delivery() -> None:
    owner = _Consumer(_Spec("s1", cumulative_ack=True))
    batch = [(owner, _pending("s1", f"m{n}")) for n in range(3)]
    assert _ids(batch) == ["m2"]


def test_individual_subscriptions_ack_every_delivery() -> None:
    plain = _Consumer(_Spec("s1", cumulative_ack=False))
    batch = [(plain, _pending("s1", f"m{n}")) for n in range(3)]
    assert _ids(batch) == ["m0", "m1", "m2"]


def test_a_companion_delivery_is_acked_on_its_own_and_never_stands_in_for_the_owner() -> None:
    owner = _Consumer(_Spec("s1", cumulative_ack=True))
    batch = [
        (owner, _pending("s1", "m0")),
        (owner, _pending("s1", "m1")),
        (owner, _pending("companion", "c0")),  # the newest delivery came through the companion
    ]
    assert sorted(_ids(batch)) == ["c0", "m1"]


def test_a_local_delivery_never_stands_in_for_the_broker_ones() -> None:
    owner = _Consumer(_Spec("s1", cumulative_ack=True))
    batch = [(owner, _pending("s1", "m0")), (owner, _pending("s1", "", local=True))]
    acks = _acks_for(batch)
    assert [p.incoming.ack_id for p in acks if not p.incoming.local] == ["m0"]

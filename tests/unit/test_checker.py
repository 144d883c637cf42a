"""The invariant checker (conformance/checker.py) on hand-made operation logs: each invariant I1-I10 is
caught by a log that breaks it, and clean logs pass."""

from __future__ import annotations

import pytest

from jmslike.conformance.checker import (
    NON_PERSISTENT,
    PERSISTENT,
    CheckResult,
    OpLog,
    OpLogFull,
    Violation,
    check,
)

Q = "queue://q"
T = "topic://t"
D = "durable://cid/sub"


class Clock:
    """Deterministic time: every reading advances by 10 ms."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.01
        return self.t

    def wall(self) -> int:
        return 1_000_000 + int(self.t * 1000)


@pytest.fixture
def log() -> OpLog:
    clock = Clock()
    return OpLog(max_ops=1000, clock=clock, wall_ms=clock.wall)


def send(log: OpLog, mid: str, seq: int, dest: str = Q, mode: int = PERSISTENT, **fields: object) -> None:
    op = log.invoke("send", "p1", destination=dest, seq=seq, mode=mode, priority=4, **fields)
    op.ok(message_ids=(mid,))


def receive(log: OpLog, mid: str, endpoint: str = Q, redelivered: bool = False, ack: bool = True) -> None:
    log.record("receive", "c1", endpoint=endpoint, message_ids=(mid,), redelivered=redelivered)
    if ack:
        log.invoke("ack", "c1", endpoint=endpoint, message_ids=(mid,)).ok()


def subscribe(log: OpLog, endpoint: str = D, dest: str = T, **fields: object) -> None:
    log.invoke("subscribe", "c1", endpoint=endpoint, destination=dest, durable=True, **fields).ok()


def only(result: CheckResult, invariant: str) -> None:
    assert result.invariants() == {invariant}, result.summary()


def test_clean_log_passes(log: OpLog) -> None:
    subscribe(log)
    for seq in range(3):
        send(log, f"q{seq}", seq)
        send(log, f"t{seq}", seq, dest=T)
    for seq in range(3):
        receive(log, f"q{seq}")
        receive(log, f"t{seq}", D)
    result = check(log)
    assert result.ok, result.summary()
    assert result.stats["sends"] == 6 and result.stats["receives"] == 6


def test_lost_persistent_message_is_I1(log: OpLog) -> None:
    send(log, "m1", 0)
    send(log, "m2", 1)
    receive(log, "m1")
    result = check(log)
    only(result, "I1")
    assert result.violations[0].message_id == "m2"


def test_lost_for_durable_subscription_is_I1_but_not_before_it_existed(log: OpLog) -> None:
    send(log, "early", 0, dest=T)  # before the subscription: not owed to it
    subscribe(log)
    send(log, "late", 1, dest=T)
    only(check(log), "I1")


def test_lost_non_persistent_is_allowed(log: OpLog) -> None:
    send(log, "np", 0, mode=NON_PERSISTENT)
    assert check(log).ok


def test_never_sent_is_I2(log: OpLog) -> None:
    receive(log, "ghost")
    only(check(log), "I2")


def test_sent_before_subscription_existed_is_I2(log: OpLog) -> None:
    send(log, "early", 0, dest=T)
    subscribe(log)
    receive(log, "early", D)
    only(check(log), "I2")


def test_filtered_out_is_I2(log: OpLog) -> None:
    subscribe(log, match={"kind": "a"})
    send(log, "b", 0, dest=T, properties={"kind": "b"})
    receive(log, "b", D)
    only(check(log), "I2")


def test_duplicate_of_acknowledged_is_I3(log: OpLog) -> None:
    send(log, "m", 0)
    receive(log, "m")
    receive(log, "m", redelivered=True)
    only(check(log), "I3")


def test_flagged_redelivery_of_unacknowledged_is_fine(log: OpLog) -> None:
    send(log, "m", 0)
    receive(log, "m", ack=False)
    receive(log, "m", redelivered=True)
    assert check(log).ok


def test_duplicate_after_ack_in_doubt_is_fine(log: OpLog) -> None:
    send(log, "m", 0)
    receive(log, "m", ack=False)
    log.invoke("ack", "c1", endpoint=Q, message_ids=("m",)).unknown("connection lost")
    receive(log, "m")
    assert check(log).ok


def test_order_break_is_I4(log: OpLog) -> None:
    for seq in range(3):
        send(log, f"m{seq}", seq)
    receive(log, "m0")
    receive(log, "m2")
    receive(log, "m1")
    only(check(log), "I4")


def test_order_across_priorities_is_not_checked(log: OpLog) -> None:
    send(log, "low", 0)
    op = log.invoke("send", "p1", destination=Q, seq=1, mode=PERSISTENT, priority=9)
    op.ok(message_ids=("high",))
    receive(log, "high")
    receive(log, "low")
    assert check(log).ok


def test_missing_redelivered_flag_is_I5(log: OpLog) -> None:
    send(log, "m", 0)
    receive(log, "m", ack=False)
    receive(log, "m", redelivered=False)
    only(check(log), "I5")


def test_missing_flag_across_a_restart_only_in_strict_mode(log: OpLog) -> None:
    send(log, "m", 0)
    receive(log, "m", ack=False)
    log.fault("kill").ok()
    receive(log, "m", redelivered=False)
    assert check(log).ok
    only(check(log, strict_restart_redelivered=True), "I5")


def test_resurrected_subscription_is_I6(log: OpLog) -> None:
    subscribe(log)
    log.invoke("unsubscribe", "c1", endpoint=D).ok()
    send(log, "m", 0, dest=T)
    receive(log, "m", D)
    only(check(log), "I6")


def test_observed_resurrection_and_disappearance_are_I6(log: OpLog) -> None:
    subscribe(log, "durable://cid/kept")
    subscribe(log, "durable://cid/gone")
    log.invoke("unsubscribe", "c1", endpoint="durable://cid/gone").ok()
    log.fault("kill").ok()
    log.observe("durable://cid/kept", exists=True)
    log.observe("durable://cid/gone", exists=False)
    assert check(log).ok
    log.observe("durable://cid/gone", exists=True)
    log.observe("durable://cid/kept", exists=False)
    result = check(log)
    only(result, "I6")
    assert len(result.violations) == 2


def test_non_persistent_duplicate_is_I7(log: OpLog) -> None:
    send(log, "np", 0, mode=NON_PERSISTENT)
    receive(log, "np", ack=False)
    receive(log, "np", redelivered=False)
    only(check(log), "I7")


def test_half_transaction_is_I8(log: OpLog) -> None:
    for seq in range(3):
        send(log, f"tx{seq}", seq, transaction="tx1")
    log.invoke("commit", "p1", transaction="tx1").unknown("connection lost during COMMIT")
    receive(log, "tx0")
    receive(log, "tx1")
    only(check(log), "I8")


def test_in_doubt_transaction_all_or_nothing_passes(log: OpLog) -> None:
    for seq in range(2):
        send(log, f"tx{seq}", seq, transaction="tx1")
    log.invoke("commit", "p1", transaction="tx1").unknown("lost")
    assert check(log).ok
    receive(log, "tx0")
    receive(log, "tx1")
    assert check(log).ok


def test_rolled_back_transaction_delivered_is_I8(log: OpLog) -> None:
    send(log, "tx0", 0, transaction="tx1")
    log.invoke("rollback", "p1", transaction="tx1").ok()
    receive(log, "tx0")
    only(check(log), "I8")


def test_committed_transaction_partially_delivered_is_I8(log: OpLog) -> None:
    send(log, "tx0", 0, transaction="tx1")
    send(log, "tx1", 1, transaction="tx1")
    log.invoke("commit", "p1", transaction="tx1").ok()
    receive(log, "tx0")
    only(check(log), "I8")


def test_expired_delivered_is_I9(log: OpLog) -> None:
    send(log, "old", 0, expiration=1)  # expired long before the receive (wall clock starts at 1e6)
    receive(log, "old")
    only(check(log), "I9")


def test_no_progress_after_heal_is_I10(log: OpLog) -> None:
    send(log, "m", 0)
    log.fault("partition").ok()
    result = check(log)
    assert result.invariants() == {"I1", "I10"}, result.summary()
    assert any("no progress after heal" in v.explanation for v in result.violations)


def test_slow_delivery_after_heal_is_I10(log: OpLog) -> None:
    send(log, "m", 0)
    log.fault("partition").ok()
    for _ in range(50):  # 0.5 s of other activity
        log.observe("durable://x/y", exists=False)
    receive(log, "m")
    only(check(log, heal_bound_s=0.1), "I10")
    assert check(log, heal_bound_s=5).ok


def test_log_is_bounded(log: OpLog) -> None:
    small = OpLog(max_ops=2)
    small.record("observe", "p", endpoint="e", exists=False)
    small.record("observe", "p", endpoint="e", exists=False)
    with pytest.raises(OpLogFull):
        small.record("observe", "p", endpoint="e", exists=False)


def test_unknown_fields_are_refused(log: OpLog) -> None:
    with pytest.raises(TypeError, match="unknown operation fields"):
        log.invoke("send", "p1", colour="red")


def test_invoke_without_completion_is_in_doubt(log: OpLog) -> None:
    log.invoke("send", "p1", destination=Q, seq=0, mode=PERSISTENT, message_ids=("m",))
    ops = log.operations()
    assert ops[0].status == "unknown"
    assert check(log).ok  # an in-doubt send is not owed


def test_summary_names_invariants(log: OpLog) -> None:
    send(log, "m", 0)
    text = check(log).summary()
    assert "I1 x1" in text and "lost" in text


def test_traffic_checks_count_in_doubt_and_fail_when_nothing_was_confirmed() -> None:
    """Issue #17: a run where every send was in doubt used to pass; the stats did not count it."""
    log = OpLog()
    for i in range(3):
        log.invoke("send", process="p", message_ids=(f"m{i}",), destination="queue://q", mode=2)
    assert check(log).ok  # a focused check of other invariants still passes
    result = check(log, require_confirmed=True)
    assert not result.ok and result.invariants() == {"I10"}
    assert "nothing was confirmed" in result.summary()
    assert (result.stats["acknowledged"], result.stats["in_doubt"], result.stats["lost"]) == (0, 3, 0)


def test_a_duplicate_is_classed_flagged_or_not_for_the_expectations_table() -> None:
    assert Violation("I3", "x", behaviour="I3 flagged").behaviour == "I3 flagged"
    assert Violation("I1", "lost").behaviour == "I1"


def test_a_deviation_covers_only_the_behaviour_classes_it_names() -> None:
    from jmslike.conformance.checker import InvariantViolation
    from jmslike.conformance.suite.classify import classify
    from jmslike.conformance.suite.expectations import Expectation

    flagged_only = Expectation("deviation", "acks not on disk at SIGKILL", observed=frozenset({"I3 flagged"}))
    assert classify(InvariantViolation("dup", frozenset({"I3 flagged"})), flagged_only).outcome == "deviation"
    loss = classify(InvariantViolation("lost", frozenset({"I3 flagged", "I1"})), flagged_only)
    assert loss.outcome == "fail" and "I1" in loss.detail
    assert classify(InvariantViolation("dup", frozenset({"I3 unflagged"})), flagged_only).outcome == "fail"
    assert classify(AssertionError("some other check"), flagged_only).outcome == "fail"
    assert classify(AssertionError("x"), Expectation("deviation", "any")).outcome == "deviation"

"""The receipt rules both wires share (adapters/receipts.py), without a socket."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jmslike.adapters.receipts import HOLD_AFTER_ERROR_S, ReceiptBook


def test_a_receipt_answers_the_call_that_recorded_it_once() -> None:
    book: ReceiptBook[str] = ReceiptBook()
    book.record("r1", "send-1")
    book.record("r2", "send-2")
    assert book.receipt("r2") == "send-2"
    assert book.receipt("r2") is None  # answered twice: nothing waits
    assert book.receipt("nobody-asked") is None
    assert len(book) == 1


def test_an_error_naming_a_receipt_fails_exactly_that_call() -> None:
    book: ReceiptBook[str] = ReceiptBook()
    book.record("r1", "send-1")
    book.record("r2", "send-2")
    assert book.refused("r1") == "send-1"
    assert book.refused(None) is None
    assert book.end(closing=False).unanswered == ["send-2"]


def test_a_write_that_failed_is_withdrawn_only_while_nothing_answered_it() -> None:
    book: ReceiptBook[str] = ReceiptBook()
    book.record("r1", "send-1")
    assert book.end(closing=False).unanswered == ["send-1"]
    assert book.withdraw("r1") is None  # the end answered it: the writer must not raise as well
    book2: ReceiptBook[str] = ReceiptBook()
    book2.record("r1", "send-1")
    assert book2.withdraw("r1") == "send-1"


def test_after_an_unmatched_error_receipts_are_held_and_the_oldest_call_is_the_culprit_at_the_end() -> None:
    # RabbitMQ: ERROR without receipt-id for a refused SUBSCRIBE, then that SUBSCRIBE's receipt, then close.
    book: ReceiptBook[str] = ReceiptBook()
    book.record("r1", "subscribe")
    book.record("r2", "send")
    assert book.unmatched("access refused", now=10.0) is True
    assert book.receipt("r1") is None  # held, not a success on a connection about to die
    ending = book.end(closing=False)
    assert (ending.culprit, ending.culprit_text) == ("subscribe", "access refused")
    assert ending.arrived == []
    assert ending.unanswered == ["send"]


def test_a_discarded_call_is_neither_answered_nor_the_culprit_nor_busy() -> None:
    # RabbitMQ: a transaction's SEND (answered only at COMMIT) rolled back, then a refused SEND, then close.
    book: ReceiptBook[str] = ReceiptBook()
    book.record("r1", "rolled-back send")
    book.record("r2", "other send")
    assert book.discard(["rolled-back send", "not in the book"]) == ["r1"]
    assert book.receipt("r1") is None
    book.record("r3", "refused send")
    assert book.receipt("r2") == "other send"
    assert book.busy
    book.unmatched("access refused", now=0.0)
    ending = book.end(closing=False)
    assert ending.culprit == "refused send"
    assert ending.unanswered == []
    book2: ReceiptBook[str] = ReceiptBook()
    book2.record("r1", "rolled-back send")
    book2.discard(["rolled-back send"])
    assert not book2.busy


def test_without_held_receipts_the_oldest_waiting_call_is_the_culprit() -> None:
    book: ReceiptBook[str] = ReceiptBook()
    book.record("r1", "send-1")
    book.record("r2", "send-2")
    book.unmatched("refused", now=0.0)
    ending = book.end(closing=False)
    assert ending.culprit == "send-1"
    assert ending.unanswered == ["send-2"]


def test_a_call_answered_only_later_or_given_up_is_not_blamed_for_an_unmatched_error() -> None:
    """Review finding: RabbitMQ answers a transactional SEND only at COMMIT, so it waits at the front of the book;
    a refused frame sent after it (another session's SEND to a missing exchange) gave its error to the
    transaction's send, and the refused send got a plain loss. A request whose caller gave up is skipped too."""
    book: ReceiptBook[str] = ReceiptBook()
    book.record("r1", "tx-send")
    book.record("r2", "timed-out")
    book.abandon("timed-out")
    book.record("r3", "refused-send")
    book.record("r4", "later")
    book.refused(None)
    book.unmatched("not_found", now=0.0)
    ending = book.end(closing=False, answered_later=lambda call: call.startswith("tx"))
    assert ending.culprit == "refused-send"
    assert ending.unanswered == ["tx-send", "timed-out", "later"]
    only_later: ReceiptBook[str] = ReceiptBook()
    only_later.record("r1", "tx-send")
    only_later.unmatched("refused", now=0.0)
    assert only_later.end(closing=False, answered_later=lambda call: True).culprit == "tx-send"


def test_a_connection_this_client_closed_blames_no_culprit() -> None:
    book: ReceiptBook[str] = ReceiptBook()
    book.record("r1", "send-1")
    book.record("r2", "send-2")
    book.unmatched("refused", now=0.0)
    assert book.receipt("r1") is None
    ending = book.end(closing=True)
    assert ending.culprit is None
    assert ending.arrived == ["send-1"]  # its receipt came: the broker processed it
    assert ending.unanswered == ["send-2"]


def test_held_receipts_stand_when_the_connection_survives_the_hold() -> None:
    book: ReceiptBook[str] = ReceiptBook()
    book.record("r1", "send-1")
    assert book.unmatched("ActiveMQ keeps the connection", now=0.0) is True
    assert book.receipt("r1") is None
    assert book.release_due(HOLD_AFTER_ERROR_S - 0.1) == ([], HOLD_AFTER_ERROR_S - (HOLD_AFTER_ERROR_S - 0.1))
    held, again = book.release_due(HOLD_AFTER_ERROR_S)
    assert (held, again) == (["send-1"], None)
    book.record("r2", "send-2")
    assert book.receipt("r2") == "send-2"  # no longer holding
    assert book.end(closing=False).culprit is None  # the earlier ERROR is not blamed on a later loss


def test_a_flood_of_unmatched_errors_schedules_one_release_and_moves_its_deadline() -> None:
    book: ReceiptBook[str] = ReceiptBook()
    assert book.unmatched("e", now=0.0) is True
    assert not any(book.unmatched("e", now=t / 100) for t in range(1, 1000))
    held, remaining = book.release_due(HOLD_AFTER_ERROR_S)
    assert held == [] and remaining is not None and abs(remaining - 9.99) < 1e-9
    assert book.release_due(9.99 + HOLD_AFTER_ERROR_S) == ([], None)
    assert book.unmatched("e", now=20.0) is True  # the next ERROR schedules again


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["receipt", "refused", "unmatched", "release", "withdraw", "abandon"]),
            st.integers(0, 9),
        ),
        max_size=40,
    ),
    st.booleans(),
)
def test_every_recorded_call_is_answered_exactly_once(steps: list[tuple[str, int]], closing: bool) -> None:
    book: ReceiptBook[int] = ReceiptBook()
    for n in range(10):
        book.record(f"r{n}", n)
    answered: list[int] = []
    now = 0.0
    for action, n in steps:
        now += 0.1
        if action == "receipt":
            answered += [c for c in [book.receipt(f"r{n}")] if c is not None]
        elif action == "refused":
            answered += [c for c in [book.refused(f"r{n}")] if c is not None]
        elif action == "unmatched":
            book.unmatched("e", now)
        elif action == "release":
            answered += book.release_due(now)[0]
        elif action == "abandon":
            book.abandon(n)
        else:
            answered += [c for c in [book.withdraw(f"r{n}")] if c is not None]
    ending = book.end(closing)
    answered += ([ending.culprit] if ending.culprit is not None else []) + ending.arrived + ending.unanswered
    assert sorted(answered) == list(range(10))


def test_busy_while_a_call_waits_or_receipts_are_held_after_an_unmatched_error() -> None:
    """What keeps a wire reading past the consumers' byte bound (jmslike.flow): the outcome is behind."""
    book: ReceiptBook[str] = ReceiptBook()
    assert not book.busy
    book.record("r1", "send-1")
    assert book.busy
    assert book.unmatched("refused something", now=0.0)
    assert book.receipt("r1") is None, "held after the unmatched ERROR"
    assert len(book) == 0 and book.busy, "the held receipt's outcome depends on what comes next"
    held, _ = book.release_due(now=HOLD_AFTER_ERROR_S + 1.0)
    assert held == ["send-1"] and not book.busy


def test_a_call_whose_caller_gave_up_is_still_answered_but_keeps_nothing_busy() -> None:
    """A request that timed out must not switch the byte bound off for the rest of the wire (flow.py)."""
    book: ReceiptBook[str] = ReceiptBook()
    book.record("r1", "request-1")
    book.record("r2", "send-2")
    book.abandon("request-1")
    assert book.busy, "send-2 still waits"
    assert book.receipt("r2") == "send-2"
    assert not book.busy, "only the abandoned call is left"
    assert book.receipt("r1") == "request-1", "its late receipt still settles it"
    book.abandon("answered-already")  # no longer in the book: nothing happens
    book.record("r3", "request-3")
    book.abandon("request-3")
    assert not book.busy
    assert book.end(closing=False).unanswered == ["request-3"]
    assert not book.busy

"""The batch read's one rule for "is a read open" (spark_sink/batch.py ``open_record``), on every state a
crash can leave between plan_read's and commit_read's writes. Pure: no broker, no Spark."""

from __future__ import annotations

from jmslike.spark_sink.batch import JmsRead, open_record


def record(read: int, first: int, last: int, open_: bool) -> dict[str, object]:
    return {"read": read, "first": first, "last": last, "open": open_}


def test_no_record_or_a_closed_one_means_no_open_read() -> None:
    assert open_record(None, 0) is None
    assert open_record(record(3, 5, 9, False), 9) is None


def test_an_open_read_is_read_again_until_committed() -> None:
    assert open_record(record(3, 5, 9, True), 4) == JmsRead(3, 5, 9, True)


def test_a_crash_between_the_commit_and_closing_the_record_leaves_the_read_done() -> None:
    # commit_read wrote committed.json (chunk 9) and died before closing the record
    assert open_record(record(3, 5, 9, True), 9) is None


def test_an_empty_read_stays_open_with_its_number_until_committed() -> None:
    read = open_record(record(4, 10, 9, True), 9)
    assert read == JmsRead(4, 10, 9, True) and read.empty

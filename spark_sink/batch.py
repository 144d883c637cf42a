"""Batch reads (``spark.read.format("jms")``): what a subscription holds now, exactly once, with a commit.

Spark gives a batch reader no callback when the job that used its rows succeeds or fails (PySpark's
``DataSourceReader`` has ``partitions`` and ``read`` only), and a message, once acknowledged, is gone from
the broker. So a batch read is a staged *read* that stays open until the application commits it:

- the first ``load()`` that plans (``partitions()``, once per ``load()``, on the driver) drains the
  subscription into the staging location exactly as the stream source does (stage durably, then
  acknowledge), and records the read in ``read.json``: its number and its chunks;
- every later ``load()`` on that location returns the same rows again until :func:`commit_read`, so a job
  that failed half-way runs again on the same rows; write them idempotently (e.g. overwrite a directory
  named by the read's number, :func:`open_read` tells it);
- :func:`commit_read` marks the read done; the next ``load()`` drains the subscription again.

``maxMessagesPerTrigger`` bounds one read. Chunks already staged beyond a bounded read stay for the next.
Nothing here imports pyspark: :func:`open_read` and :func:`commit_read` run in the application's process.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from jmslike.spark_sink.options import SourceOptions, parse_source_options
from jmslike.spark_sink.stager import Stager

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class JmsRead:
    """One batch read of a staging location: ``read`` numbers it (1, 2, ...; name its output by it), and it
    holds the staged chunks ``first``..``last`` (none when ``first > last``); ``open`` until committed."""

    read: int
    first: int
    last: int
    open: bool

    @property
    def empty(self) -> bool:
        return self.first > self.last


def plan_read(options: SourceOptions) -> tuple[JmsRead, list[list[int]]]:
    """The open read (draining the subscription into a new one when none is open) and its chunks grouped
    into Spark partitions of about ``partitionMessages`` messages."""
    stager = Stager(options)
    try:
        stager.start()
        committed = stager.initial()
        record = stager.store.read_record()
        if record is not None and record["open"] and record["last"] > committed:
            read = JmsRead(record["read"], record["first"], record["last"], True)
            log.info(
                "batch read %d is still open (chunks %d..%d): reading it again",
                read.read,
                read.first,
                read.last,
            )
        else:
            number = record["read"] + 1 if record is not None else 1
            last = stager.drain(options.max_messages_per_trigger)
            read = JmsRead(number, committed + 1, last, last > committed)
            if read.open:  # an empty read is not recorded: the next load() drains again
                stager.store.set_read_record(read.read, read.first, read.last, open_=True)
            log.info("batch read %d: chunks %d..%d", read.read, read.first, read.last)
        groups = stager.group_chunks(read.first - 1, read.last, options.partition_messages)
        return read, groups
    finally:
        stager.close()


def open_read(options: Mapping[str, str]) -> JmsRead:
    """The read the next ``spark.read.format("jms")`` with these options returns: the open one, or a new
    one drained from the subscription now (which ``load()`` then returns)."""
    return plan_read(parse_source_options(options))[0]


def commit_read(options: Mapping[str, str]) -> JmsRead | None:
    """Mark the open read of ``options``' staging location done (its rows were used), so the next
    ``load()`` drains the subscription again; None when no read is open. Takes the reader's options."""
    parsed = parse_source_options(options)
    stager = Stager(parsed)
    try:
        committed = stager.initial()
        record = stager.store.read_record()
        if record is None or not record["open"]:
            return None
        # committed.json first: a crash between the two writes leaves an "open" read whose chunks are all
        # committed, which plan_read treats as done (never as a read to drain on top of).
        if record["last"] > committed:
            stager.commit(record["last"])
        stager.store.set_read_record(record["read"], record["first"], record["last"], open_=False)
        return JmsRead(record["read"], record["first"], record["last"], False)
    finally:
        stager.close()

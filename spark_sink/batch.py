"""Batch reads (``spark.read.format("jms")``): what a subscription holds now, exactly once, with a commit.

Spark gives a batch reader no callback when the job that used its rows succeeds or fails (PySpark's
``DataSourceReader`` has ``partitions`` and ``read`` only), and a message, once acknowledged, is gone from
the broker. So a batch read is a staged *read* that stays open until the application commits it:

- the first ``load()`` that plans (``partitions()``, once per ``load()``, on the driver) drains the
  subscription into the staging location exactly as the stream source does (stage durably, then
  acknowledge), and records the read in ``read.json``: its number and its chunks (none for an empty read);
- every later ``load()`` on that location returns the same rows again until :func:`commit_read`, so a job
  that failed half-way runs again on the same rows; write them idempotently (e.g. overwrite a directory
  named by the read's number, :func:`open_read` tells it);
- :func:`commit_read` marks the read done; the next ``load()`` drains the subscription again.

``maxMessagesPerTrigger`` bounds one read (in whole chunks); what the receiving thread staged beyond it
waits in staging for the next read. Nothing here imports pyspark: :func:`open_read` and
:func:`commit_read` run in the application's process.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jmslike.spark_sink.options import OptionError, SourceOptions, parse_source_options
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


def open_record(record: Mapping[str, Any] | None, committed: int) -> JmsRead | None:
    """The read still open in ``read.json`` (``record``), given the committed chunk; None when there is
    none. One rule for planning and committing: a read whose chunks are all committed is done even if its
    record still says open (commit_read writes committed.json first, so a crash between its two writes
    leaves exactly that), and an empty read stays open until committed like any other."""
    if record is None or not record["open"]:
        return None
    read = JmsRead(int(record["read"]), int(record["first"]), int(record["last"]), True)
    if not read.empty and read.last <= committed:
        return None
    return read


def plan_read(options: SourceOptions) -> tuple[JmsRead, list[list[int]]]:
    """The open read (draining the subscription into a new one when none is open) and its chunks grouped
    into Spark partitions of about ``partitionMessages`` messages."""
    stager = Stager(options)
    try:
        committed = stager.initial()
        record = stager.store.read_record()
        read = open_record(record, committed)
        if read is not None:
            log.info(
                "batch read %d is still open (chunks %d..%d): reading it again",
                read.read,
                read.first,
                read.last,
            )
        else:
            number = int(record["read"]) + 1 if record is not None else 1
            last = stager.drain(options.max_messages_per_trigger)
            read = JmsRead(number, committed + 1, last, True)
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


def commit_read(options: Mapping[str, str], read: int | None = None) -> JmsRead | None:
    """Mark the open read of ``options``' staging location done (its rows were used), so the next
    ``load()`` drains the subscription again; None when no read is open. Takes the reader's options. With
    ``read`` (the number :func:`open_read` gave), refuse to commit any other read: a read planned after
    yours (by another ``load()``) was never written by you."""
    parsed = parse_source_options(options)
    stager = Stager(parsed)
    try:
        committed = stager.initial()
        current = open_record(stager.store.read_record(), committed)
        if current is None:
            return None
        if read is not None and current.read != read:
            raise OptionError(
                f"commit_read: the open read of {parsed.staging_location} is read {current.read}, not read {read}; "
                "nothing was committed (commit the read whose rows you wrote)"
            )
        if not current.empty:
            stager.commit(current.last)  # committed.json first: see open_record
        stager.store.set_read_record(current.read, current.first, current.last, open_=False)
        return JmsRead(current.read, current.first, current.last, False)
    finally:
        stager.close()

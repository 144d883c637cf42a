"""The ``jms`` Spark data source: the stream reader (durable subscriptions in) and the writers (out).

PySpark runs this code in three kinds of process (see shared/design/spark.md): ``load()`` builds the
data source in a planner worker (options are checked there, so bad options fail at ``load()``); one
long-lived driver-side worker owns the :class:`JmsStreamReader` that Spark asks for offsets, partitions
and commits — it owns the broker connection through a lazily created
:class:`~jmslike.spark_sink.stager.Stager`; executors get a pickled copy of the reader and only call
``read()``, which reads one staged chunk file. Nothing here connects in ``__init__``.

Works with PySpark 4.0 and later: ``latestOffset(start=None, limit=None)`` serves both the 4.0 call
(no arguments) and the 4.2+ admission-control call; ``prepareForTriggerAvailableNow`` is used where
PySpark has the ``SupportsTriggerAvailableNow`` mixin.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)

from jmslike.spark_sink.options import OptionError, parse_sink_options, parse_source_options
from jmslike.spark_sink.records import COLUMNS, SPARK_SCHEMA
from jmslike.spark_sink.stager import Stager
from jmslike.spark_sink.staging import StagingStore

try:  # PySpark 4.2+: Trigger.AvailableNow and read limits for Python sources
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # PySpark 4.0/4.1: Spark asks for the latest offset once per AvailableNow run
    ReadAllAvailable = ReadMaxRows = None

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in so the reader's bases are the same on every PySpark version."""


log = logging.getLogger(__name__)

FORMAT = "jms"
READ_BATCH_ROWS = 10_000
# Local properties Spark's micro-batch execution gives every task (StreamExecution.QUERY_ID_KEY,
# MicroBatchExecution.BATCH_ID_KEY); the query ID is kept in the checkpoint, so a restarted query has the same.
QUERY_ID_KEY = "sql.streaming.queryId"
BATCH_ID_KEY = "streaming.sql.batchId"


def _task() -> Any:
    """The running Spark task's context (executor side only)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise OptionError("deduplicate: the jms writer's write() ran outside a Spark task")
    return context


class JmsDataSource(DataSource):
    """``spark.readStream.format("jms")``, ``spark.read.format("jms")`` and ``df.write[Stream].format("jms")``."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        parse_source_options(self.options)  # load() fails here, naming the bad option
        return SPARK_SCHEMA

    def streamReader(self, schema: Any) -> JmsStreamReader:
        return JmsStreamReader(dict(self.options))

    def reader(self, schema: Any) -> JmsBatchReader:
        return JmsBatchReader(dict(self.options))

    def writer(self, schema: Any, overwrite: bool) -> JmsWriter:
        from jmslike.spark_sink.publish import check_columns

        check_columns(schema)
        return JmsWriter(dict(self.options))

    def streamWriter(self, schema: Any, overwrite: bool) -> JmsStreamWriter:
        from jmslike.spark_sink.publish import check_columns

        check_columns(schema)
        return JmsStreamWriter(dict(self.options))


class ChunkPartition(InputPartition):
    """Consecutive staged chunk files read by one task (picklable, no state but the names)."""

    def __init__(self, staging_location: str, seqs: list[int]) -> None:
        super().__init__(seqs)
        self.staging_location = staging_location
        self.seqs = seqs


def read_chunks(partition: ChunkPartition) -> Iterator[Any]:
    """A partition's chunks as few large Arrow batches (executor side; each batch crossing from the Python
    worker to the JVM has a fixed cost, and chunks are only as large as the broker's prefetch)."""
    import pyarrow as pa

    store = StagingStore(partition.staging_location)
    pending: list[Any] = []
    rows = 0
    for seq in partition.seqs:
        for batch in store.read_batches(seq, list(COLUMNS)):
            pending.append(batch)
            rows += batch.num_rows
            if rows >= READ_BATCH_ROWS:
                yield from pa.Table.from_batches(pending).combine_chunks().to_batches()
                pending, rows = [], 0
    if pending:
        yield from pa.Table.from_batches(pending).combine_chunks().to_batches()


class JmsBatchReader(DataSourceReader):
    """``spark.read.format("jms")``: the staging location's open batch read (see batch.py). Spark plans a
    ``load()`` once, in a driver-side worker: that is where the subscription is drained, if no read is
    open; executors read the chunks by name, as for a stream."""

    def __init__(self, options: dict[str, str]) -> None:
        self._options = parse_source_options(options)

    def partitions(self) -> list[ChunkPartition]:
        from jmslike.spark_sink.batch import plan_read

        _, groups = plan_read(self._options)
        # An empty read is one partition of no chunks: given no partitions, PySpark reads one of its own
        # (a bare InputPartition) instead.
        return [ChunkPartition(self._options.staging_location, seqs) for seqs in groups or [[]]]

    def read(self, partition: ChunkPartition) -> Iterator[Any]:
        return read_chunks(partition)


class JmsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Offsets are ``{"seq": N}``: every staged chunk up to N. See stager.py for the driver side."""

    def __init__(self, options: dict[str, str]) -> None:
        self._options = parse_source_options(options)
        self._stager: Stager | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_stager"] = None  # never ship a connection or a lock to an executor
        return state

    def _driver(self) -> Stager:
        if self._stager is None:
            self._stager = Stager(self._options)
        return self._stager

    def _limit(self, limit: Any) -> int | None:
        if limit is None:  # PySpark 4.0/4.1 (no admission control): the option is the limit
            return self._options.max_messages_per_trigger
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            return int(limit.max_rows)
        if ReadAllAvailable is not None and isinstance(limit, ReadAllAvailable):
            return None
        return self._options.max_messages_per_trigger

    def initialOffset(self) -> dict[str, int]:
        return {"seq": self._driver().initial()}

    def latestOffset(self, start: dict[str, Any] | None = None, limit: Any = None) -> dict[str, int]:
        start_seq = int(start["seq"]) if start else None
        return {"seq": self._driver().latest(start_seq, self._limit(limit))}

    def getDefaultReadLimit(self) -> Any:
        n = self._options.max_messages_per_trigger
        if ReadMaxRows is None:
            return None
        return ReadMaxRows(n) if n is not None else ReadAllAvailable()

    def reportLatestOffset(self) -> dict[str, int] | None:
        return None

    def prepareForTriggerAvailableNow(self) -> None:
        self._driver().prepare_available_now()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[ChunkPartition]:
        first, last = int(start["seq"]), int(end["seq"])
        groups = self._driver().group_chunks(first, last, self._options.partition_messages)
        return [ChunkPartition(self._options.staging_location, seqs) for seqs in groups]

    def read(self, partition: ChunkPartition) -> Iterator[Any]:
        return read_chunks(partition)

    def commit(self, end: dict[str, Any]) -> None:
        self._driver().commit(int(end["seq"]))

    def stop(self) -> None:
        if self._stager is not None:
            self._stager.close()
            self._stager = None


@dataclass
class PublishedCount(WriterCommitMessage):
    """What one writer task sent."""

    messages: int


class JmsWriter(DataSourceWriter):
    """``df.write.format("jms")``: each task publishes its rows (see publish.py).

    With ``deduplicate`` the writer is made once on the driver with a fresh write ID, so every attempt of a
    task names its rows ``<write ID>/<partition>:<row>`` alike and the broker drops what an earlier attempt
    committed; writing the same frame again later is a new write."""

    def __init__(self, options: dict[str, str]) -> None:
        self._options = parse_sink_options(options)
        self._write_id = uuid.uuid4().hex if self._options.deduplicate else None

    def write(self, iterator: Iterator[Any]) -> PublishedCount:
        from jmslike.spark_sink.publish import publish_rows

        row_ids = None
        if self._write_id is not None:
            row_ids = f"{self._write_id}/{_task().partitionId()}"
        return PublishedCount(publish_rows(self._options, iterator, row_ids))


class JmsStreamWriter(DataSourceStreamWriter):
    """``df.writeStream.format("jms")``: each micro-batch's tasks publish their rows.

    With ``deduplicate`` a row is named by the query's ID (kept in its checkpoint), the micro-batch ID,
    the partition and the row's place in it: a micro-batch Spark runs again after a failure, even from a new
    driver, publishes nothing twice."""

    def __init__(self, options: dict[str, str]) -> None:
        self._options = parse_sink_options(options)

    def write(self, iterator: Iterator[Any]) -> PublishedCount:
        from jmslike.spark_sink.publish import publish_rows

        row_ids = None
        if self._options.deduplicate:
            task = _task()
            query, batch = task.getLocalProperty(QUERY_ID_KEY), task.getLocalProperty(BATCH_ID_KEY)
            if not query or batch is None:
                raise OptionError(
                    "deduplicate: this task does not know its streaming query and micro-batch "
                    f"({QUERY_ID_KEY}={query!r}, {BATCH_ID_KEY}={batch!r}), so it cannot name its rows"
                )
            row_ids = f"{query}/{batch}/{task.partitionId()}"
        return PublishedCount(publish_rows(self._options, iterator, row_ids))

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        total = sum(m.messages for m in messages if isinstance(m, PublishedCount))
        log.info("jms writer: batch %d published %d message(s)", batchId, total)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning("jms writer: batch %d aborted; messages already published stay published", batchId)

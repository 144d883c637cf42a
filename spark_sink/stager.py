"""The driver side of the source: receive, de-duplicate, stage, acknowledge, then offer the offset.

Spark's driver-side Python worker owns one :class:`Stager` for the life of a query run. Each call of
``latestOffset`` turns into :meth:`Stager.latest`: it receives up to the read limit from every lane
(one CLIENT_ACKNOWLEDGE session and one durable subscriber, or queue consumer, per lane, all on one
connection), drops messages whose de-duplication key is already staged, writes the rest as one immutable
chunk file (:class:`~jmslike.spark_sink.staging.StagingStore`), and only when that file is durable
acknowledges the lanes' sessions. The offset Spark gets is the sequence number of the newest chunk.
``commit(end)`` only deletes chunks Spark will never ask for again (keeping the newest ones as the
de-duplication window). The crash argument is written out in README.md ("Why exactly once").

Everything that touches the broker or the lock happens here, lazily, on the driver: readers are
pickled to executors, and ``__init__`` runs in several processes.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from typing import Any

from jmslike import (
    ConnectionFactory,
    InvalidClientIDException,
    JMSException,
    Message,
    MessageConsumer,
    Session,
)
from jmslike.spark_sink.options import SourceOptions
from jmslike.spark_sink.records import KEY_COLUMN, message_row, rows_to_table
from jmslike.spark_sink.staging import StagingError, StagingStore

log = logging.getLogger(__name__)
import os as _os  # DEBUG-TEMP
if _os.environ.get("JMSLIKE_SPARK_DEBUG"):  # DEBUG-TEMP
    _h = logging.FileHandler(_os.environ["JMSLIKE_SPARK_DEBUG"])  # DEBUG-TEMP
    _h.setFormatter(logging.Formatter("%(asctime)s %(process)d %(message)s"))  # DEBUG-TEMP
    log.addHandler(_h); log.setLevel(logging.DEBUG)  # DEBUG-TEMP

_POLL_SLICE_MS = 20
FIRST_RECEIVE_MS = 5000  # quiet time that counts as "empty" right after (re)connecting  # several lanes: wait on each in turn this long, so no lane starves


class Stager:
    """Driver-side state of one source (see the module docstring). Not thread-safe: Spark calls the
    driver-side reader one method at a time."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.store = StagingStore(options.staging_location)
        self._started = False
        self._connection: Any = None
        self._fresh_connection = False
        self._sessions: list[Session] = []
        self._consumers: list[MessageConsumer] = []
        self._keys: dict[str, int] = {}  # de-duplication key -> chunk seq holding it
        self._chunks: OrderedDict[int, tuple[int, list[str]]] = OrderedDict()  # seq -> (rows, keys)
        self._last_seq = 0
        self._committed = 0
        self._offered: int | None = None  # newest seq returned to Spark by this process
        self._available_now_since_ms: int | None = None
        self._target_reached = False
        self.stats = {"received": 0, "duplicates": 0, "staged": 0, "chunks": 0}

    # -- start-up and recovery ------------------------------------------------------------------------

    def start(self) -> None:
        """Lock the staging location, load what is staged (the de-duplication window), connect."""
        if self._started:
            return
        self.store.acquire(self.options.lock_timeout_ms / 1000)
        self._committed = self.store.committed()
        for seq in self.store.list_chunks():
            keys = self.store.read_keys(seq, KEY_COLUMN)
            self._remember(seq, keys)
        self._last_seq = max([self._committed, *self._chunks])
        self._started = True
        log.info(
            "staging %s: committed up to chunk %d, %d chunk(s) on disk, newest %d",
            self.store.root,
            self._committed,
            len(self._chunks),
            self._last_seq,
        )

    def _remember(self, seq: int, keys: list[str]) -> None:
        self._chunks[seq] = (len(keys), keys)
        for key in keys:
            self._keys[key] = seq

    def initial(self) -> int:
        self.start()
        return self._committed

    # -- the broker -----------------------------------------------------------------------------------

    def _connect(self, deadline: float) -> None:
        """Open the connection and every lane's consumer, retrying (bounded by ``deadline``) while the
        broker is down or still holds the client ID of a driver that just died."""
        opts = self.options
        delay = 0.2
        while True:
            try:
                self._open()
                return
            except (JMSException, OSError) as exc:
                self._close_quietly()
                if time.monotonic() >= deadline:
                    raise JMSException(
                        f"cannot reach the broker to read {opts.destination_kind} {opts.destination!r} "
                        f"(retried for {opts.broker_retry_ms} ms, option brokerRetryMs): {exc}"
                    ) from exc
                level = logging.INFO if isinstance(exc, InvalidClientIDException) else logging.WARNING
                log.log(level, "connecting to the broker failed, retrying: %s", exc)
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _open(self) -> None:
        log.debug("connecting")  # DEBUG-TEMP
        opts = self.options
        connection = ConnectionFactory(opts.url).createConnection(opts.user, opts.password)
        self._connection = connection
        if opts.client_id:
            connection.setClientID(opts.client_id)
        for lane in range(opts.lanes):
            session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
            self._sessions.append(session)
            if opts.destination_kind == "topic":
                consumer: MessageConsumer = session.createDurableSubscriber(
                    session.createTopic(opts.destination),
                    opts.lane_subscription(lane),
                    opts.lane_selector(lane),
                )
            else:
                consumer = session.createConsumer(
                    session.createQueue(opts.destination), opts.lane_selector(lane)
                )
            self._consumers.append(consumer)
        connection.start()
        self._fresh_connection = True

    def _close_quietly(self) -> None:
        connection, self._connection = self._connection, None
        self._sessions, self._consumers = [], []
        if connection is not None:
            try:
                connection.close()
            except Exception as exc:  # closing a broken connection: nothing left to protect
                log.debug("closing the broker connection: %s", exc)

    def close(self) -> None:
        self._close_quietly()
        self.store.release()

    # -- receiving ------------------------------------------------------------------------------------

    def _receive(self, count: int, deadline: float) -> tuple[list[tuple[int, Message]], bool]:
        """Up to ``count`` messages from the lanes; True as second item when the lanes went quiet for
        receiveTimeoutMs (or an AvailableNow run reached its target)."""
        got: list[tuple[int, Message]] = []
        lanes = len(self._consumers)
        quiet_ms = 0
        timeout_ms = self.options.receive_timeout_ms
        if self._fresh_connection:
            # A subscription just (re)attached may take a while before the broker dispatches its backlog
            # (ActiveMQ pages a durable subscription in from its store): do not call that quiet.
            timeout_ms = max(timeout_ms, FIRST_RECEIVE_MS)
            self._fresh_connection = False
        while len(got) < count:
            progressed = False
            for lane, consumer in enumerate(self._consumers):
                message = consumer.receiveNoWait()
                if message is not None:
                    got.append((lane, message))
                    progressed = True
                    if self._past_target(message) or len(got) >= count:
                        return got, self._target_reached
            if progressed:
                quiet_ms = 0
                continue
            if time.monotonic() >= deadline:
                return got, False
            if quiet_ms >= timeout_ms:
                return got, True
            wait = timeout_ms if lanes == 1 else _POLL_SLICE_MS
            wait = max(1, min(wait, timeout_ms - quiet_ms, int((deadline - time.monotonic()) * 1000) + 1))
            lane = (quiet_ms // _POLL_SLICE_MS) % lanes
            message = self._consumers[lane].receive(wait)
            if message is None:
                quiet_ms += wait
                continue
            quiet_ms = 0
            got.append((lane, message))
            if self._past_target(message):
                return got, True
        return got, False

    def _past_target(self, message: Message) -> bool:
        """AvailableNow: a message stamped after the run began is the last one this run takes."""
        since = self._available_now_since_ms
        if since is not None and message.getJMSTimestamp() > since:
            self._target_reached = True
        return self._target_reached

    # -- staging --------------------------------------------------------------------------------------

    def _stage(self, received: list[tuple[int, Message]]) -> None:
        """Stage what is new in ``received`` as the next chunk, durably, then acknowledge every lane
        that delivered something (CLIENT_ACKNOWLEDGE: all the session delivered so far)."""
        rows = []
        fresh: set[str] = set()
        for _, message in received:
            row = message_row(message)
            key = row[KEY_COLUMN]
            if key in self._keys or key in fresh:
                self.stats["duplicates"] += 1
                continue
            fresh.add(key)
            rows.append(row)
        self.stats["received"] += len(received)
        log.debug("stage: received %d (n %s..%s, redelivered %d), dups %d", len(received), received[0][1].getObjectProperty("n") if received else None, received[-1][1].getObjectProperty("n") if received else None, sum(1 for _, m in received if m.getJMSRedelivered()), len(received) - len(rows))  # DEBUG-TEMP
        if rows:
            table = rows_to_table(rows)
            seq = self._last_seq + 1
            while not self.store.write_chunk(seq, table):
                # Only possible if another process wrote here despite the lock (e.g. a shared location on
                # a file system without working locks): never overwrite, stage after it.
                log.warning("staged chunk %d already exists; staging after it", seq)
                self._remember(seq, self.store.read_keys(seq, KEY_COLUMN))
                seq += 1
            self._remember(seq, [r[KEY_COLUMN] for r in rows])
            self._last_seq = seq
            self.stats["staged"] += len(rows)
            self.stats["chunks"] += 1
        # Durable first, then acknowledge: a crash before this line only brings redeliveries, which the
        # keys just remembered turn away.
        last_per_lane: dict[int, Message] = {}
        for lane, message in received:
            last_per_lane[lane] = message
        for message in last_per_lane.values():
            message.acknowledge()

    # -- what Spark calls -----------------------------------------------------------------------------

    def _pick(self, base: int, limit: int | None) -> int:
        """The newest already-staged seq after ``base`` within ``limit`` rows (at least one chunk)."""
        end, rows = base, 0
        for seq, (count, _) in self._chunks.items():
            if seq <= base:
                continue
            if limit is not None and end > base and rows + count > limit:
                break
            end, rows = seq, rows + count
        return end

    def latest(self, start: int | None, limit: int | None) -> int:
        log.debug("latest(start=%s, limit=%s) last=%s offered=%s committed=%s", start, limit, self._last_seq, self._offered, self._committed)  # DEBUG-TEMP
        """The offset (chunk seq) for the next batch; stages new chunks when nothing staged is pending.

        ``start`` is Spark's start offset when Spark passes it (PySpark 4.2+); before that it is unknown
        and a restarted driver first offers everything already staged (never less than Spark's start)."""
        self.start()
        if start is None:
            # PySpark 4.0/4.1 does not say where Spark is. Spark's last offset is at most our newest
            # chunk, so answering from there on is never below it; but answering exactly the newest
            # chunk could be "no new data" to Spark while the broker has more (processAllAvailable and
            # AvailableNow would stop): so receive as well. After a restart the first batch may thus
            # carry what was staged but not yet offered on top of the limit.
            base = self._offered if self._offered is not None else self._last_seq
        else:
            base = start
        if start is not None and start > self._last_seq:
            raise StagingError(
                f"Spark's checkpoint is at chunk {start} but {self.store.root} only has chunks up to "
                f"{self._last_seq}: this stagingLocation does not belong to this checkpoint"
            )
        if self._last_seq > base:
            self._offered = self._pick(base, limit)
            return self._offered
        if self._target_reached:
            return base
        end = self._stage_new(limit)
        self._offered = end
        return end

    def _stage_new(self, limit: int | None) -> int:
        opts = self.options
        remaining = limit if limit is not None else float("inf")
        started = time.monotonic()
        deadline = started + opts.max_trigger_delay_ms / 1000
        broker_deadline = started + opts.broker_retry_ms / 1000
        while remaining > 0 and time.monotonic() < deadline:
            if self._connection is None:
                self._connect(max(broker_deadline, deadline))
            try:
                received, quiet = self._receive(int(min(opts.staging_chunk_messages, remaining)), deadline)
                if received:
                    self._stage(received)
                    remaining -= len(received)
            except JMSException as exc:
                # Lost broker (or a refused ack): whatever was staged stays staged; what was not comes
                # back from the broker after the reconnect and is de-duplicated.
                log.warning("broker connection failed while reading, reconnecting: %s", exc)
                self._close_quietly()
                if self._last_seq > (self._offered or 0):
                    break
                continue
            log.debug("receive returned %d quiet=%s", len(received), quiet)  # DEBUG-TEMP
            if quiet:
                if self._available_now_since_ms is not None:
                    self._target_reached = True  # the subscription is drained: AvailableNow is done
                break
        return self._last_seq

    def commit(self, end: int) -> None:
        """Spark committed every batch up to chunk ``end``: remember it, then drop chunks that are both
        committed and outside the de-duplication window."""
        self.start()
        if end <= self._committed:
            return
        self.store.set_committed(end)
        self._committed = end
        kept = 0
        for seq in reversed(list(self._chunks)):
            count, keys = self._chunks[seq]
            if seq > end:
                continue
            if kept + count <= self.options.dedupe_window:
                kept += count
                continue
            self.store.delete_chunk(seq)
            del self._chunks[seq]
            for key in keys:
                if self._keys.get(key) == seq:
                    del self._keys[key]

    def prepare_available_now(self) -> None:
        """Trigger.AvailableNow (PySpark 4.2+): take what the subscription holds now, then stop."""
        self.start()
        self._available_now_since_ms = int(time.time() * 1000)
        self._target_reached = False

"""The driver side of the source: receive, de-duplicate, stage, acknowledge, then offer the offset.

Spark's driver-side Python worker owns one :class:`Stager` for the life of a query run. A pump thread
(started on the first ``latestOffset``) owns the broker connection: it receives from every lane (one
CLIENT_ACKNOWLEDGE session and one durable subscriber, or queue consumer, per lane), drops messages whose
de-duplication key is already staged, writes the rest as one immutable chunk file
(:class:`~jmslike.spark_sink.staging.StagingStore`) and only when that file is durable acknowledges the
lanes' sessions. It stays at most about two batches ahead of Spark, so the broker is read while Spark
runs a batch. ``latestOffset`` (:meth:`Stager.latest`) only chooses how many staged chunks the next batch
takes (the read limit, a quiet subscription, or ``maxTriggerDelayMs``) and offers the newest one's
sequence number. ``commit(end)`` only deletes chunks Spark will never ask for again (keeping the newest
ones as the de-duplication window). The crash argument is in README.md ("Why exactly once").

Everything that touches the broker or the lock happens here, lazily, on the driver: readers are
pickled to executors, and ``__init__`` runs in several processes.
"""

from __future__ import annotations

import logging
import threading
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
_POLL_SLICE_MS = 20  # several lanes: wait on each in turn this long, so no lane starves
FIRST_RECEIVE_MS = 5000  # quiet time that counts as "empty" right after (re)connecting


class _Stopped(Exception):
    """The stager is closing: the pump gives up reconnecting."""


class Stager:
    """Driver-side state of one source (see the module docstring). Spark calls the driver-side reader
    one method at a time; a pump thread receives and stages ahead, and ``_cond`` guards what both see."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.store = StagingStore(options.staging_location)
        self._started = False
        self._connection: Any = None
        self._fresh_connection = False
        self._prefetch = 1000
        self._sessions: list[Session] = []
        self._consumers: list[MessageConsumer] = []
        self._keys: dict[str, int] = {}  # de-duplication key -> chunk seq holding it
        self._chunks: OrderedDict[int, tuple[int, list[str]]] = OrderedDict()  # seq -> (rows, keys)
        self._last_seq = 0
        self._committed = 0
        self._offered: int | None = None  # newest seq returned to Spark by this process
        self._available_now_since_ms: int | None = None
        self._cond = threading.Condition()
        self._pump: threading.Thread | None = None
        self._stopping = False
        self._failure: BaseException | None = None
        self._quiet_count = 0
        self._base = 0  # Spark's position as far as we know: what the pump stages ahead of
        self._limit: int | None = None
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
        self._base = self._last_seq
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
                if self._stopping:
                    raise _Stopped() from exc
                if time.monotonic() >= deadline:
                    raise JMSException(
                        f"cannot reach the broker to read {opts.destination_kind} {opts.destination!r} "
                        f"(retried for {opts.broker_retry_ms} ms, option brokerRetryMs): {exc}"
                    ) from exc
                level = logging.INFO if isinstance(exc, InvalidClientIDException) else logging.WARNING
                log.log(level, "connecting to the broker failed, retrying: %s", exc)
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    @property
    def _chunk(self) -> int:
        """Messages per chunk: at most half the consumer's prefetch. With individual acknowledgement the
        broker stops dispatching once ``prefetch`` messages are unacknowledged; a chunk of the whole
        window would leave nothing buffered while it is staged and acknowledged, and ActiveMQ then pages
        the next window in from its store (a pause that can outlast ``receiveTimeoutMs`` and end an
        AvailableNow run or processAllAvailable early). Half leaves the other half arriving meanwhile."""
        return min(self.options.staging_chunk_messages, max(1, self._prefetch // 2))

    def _open(self) -> None:
        log.debug("connecting to the broker")
        opts = self.options
        factory = ConnectionFactory(opts.url)
        self._prefetch = factory.config.prefetch
        connection = factory.createConnection(opts.user, opts.password)
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
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        pump = self._pump
        if pump is not None and pump is not threading.current_thread():
            # Until it is gone, however long its last broker call takes (each is bounded by the receipt
            # timeout): the lock must not pass to another stager while this pump can still stage or ack.
            pump.join()
        self._close_quietly()
        self.store.release()

    # -- receiving ------------------------------------------------------------------------------------

    def _receive(self, count: int, deadline: float) -> tuple[list[tuple[int, Message]], bool, bool]:
        """Up to ``count`` messages from the lanes, whether the lanes went quiet for receiveTimeoutMs, and
        whether an AvailableNow run met its target (a message stamped after it began: the last one it
        takes). The pump records both only after staging what came, so nobody sees the run as done while
        its last chunk is still being written. Stops early, with what it has, when the stager stops."""
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
            if self._stopping:
                return got, False, False
            progressed = False
            for lane, consumer in enumerate(self._consumers):
                message = consumer.receiveNoWait()
                if message is not None:
                    got.append((lane, message))
                    progressed = True
                    if self._past_target(message):
                        return got, False, True
                    if len(got) >= count:
                        return got, False, False
            if progressed:
                quiet_ms = 0
                timeout_ms = self.options.receive_timeout_ms  # dispatching: back to the normal quiet time
                continue
            if time.monotonic() >= deadline:
                return got, False, False
            if quiet_ms >= timeout_ms:
                return got, True, False
            wait = timeout_ms if lanes == 1 else _POLL_SLICE_MS
            wait = max(1, min(wait, timeout_ms - quiet_ms, int((deadline - time.monotonic()) * 1000) + 1))
            lane = (quiet_ms // _POLL_SLICE_MS) % lanes
            message = self._consumers[lane].receive(wait)
            if message is None:
                quiet_ms += wait
                continue
            quiet_ms = 0
            timeout_ms = self.options.receive_timeout_ms
            got.append((lane, message))
            if self._past_target(message):
                return got, False, True
        return got, False, False

    def _past_target(self, message: Message) -> bool:
        """AvailableNow: a message stamped after the run began is the last one this run takes."""
        since = self._available_now_since_ms
        return since is not None and message.getJMSTimestamp() > since

    # -- staging --------------------------------------------------------------------------------------

    def _stage(self, received: list[tuple[int, Message]]) -> None:
        """Stage what is new in ``received`` as the next chunk, durably, then acknowledge every lane
        that delivered something (CLIENT_ACKNOWLEDGE: all the session delivered so far)."""
        rows = []
        fresh: set[str] = set()
        for _, message in received:
            row = message_row(message)
            key = row[KEY_COLUMN]
            if key in self._keys or key in fresh:  # (the pump is the only writer of _keys' new entries)
                self.stats["duplicates"] += 1
                continue
            fresh.add(key)
            rows.append(row)
        self.stats["received"] += len(received)
        log.debug(
            "received %d message(s), %d of them already staged", len(received), len(received) - len(rows)
        )
        if rows:
            table = rows_to_table(rows)
            seq = self._last_seq + 1
            while not self.store.write_chunk(seq, table):
                # Only possible if another process wrote here despite the lock (e.g. a shared location on
                # a file system without working locks): never overwrite, stage after it.
                log.warning("staged chunk %d already exists; staging after it", seq)
                self._remember(seq, self.store.read_keys(seq, KEY_COLUMN))
                seq += 1
            with self._cond:
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
        """The offset (chunk seq) for the next batch.

        ``start`` is Spark's start offset when Spark passes it (PySpark 4.2+). Before that it is unknown:
        Spark's last offset is at most our newest chunk, so answering from there on is never below it;
        but answering exactly the newest chunk could mean "no new data" to Spark while the broker has
        more (processAllAvailable and AvailableNow would stop), so a restarted driver waits for new
        messages too, and its first batch may carry what was staged but not offered on top of the limit.
        """
        self.start()
        with self._cond:
            if start is None:
                base = self._offered if self._offered is not None else self._last_seq
            else:
                base = start
                if start > self._last_seq:
                    raise StagingError(
                        f"Spark's checkpoint is at chunk {start} but {self.store.root} only has chunks up "
                        f"to {self._last_seq}: this stagingLocation does not belong to this checkpoint"
                    )
            self._base = base
            self._limit = limit
            self._ensure_pump()
            asked = self._quiet_count
            deadline = time.monotonic() + self.options.max_trigger_delay_ms / 1000
            while True:
                if self._failure is not None:
                    raise self._failure
                pending = self._rows_after(base)
                if (
                    (limit is not None and pending >= limit)
                    or pending >= self._ahead_limit()  # the pump waits for room: take what it has
                    or self._target_reached
                    or (pending > 0 and self._quiet_count > asked)  # drained since this call began
                    # nothing at all: a whole quiet period inside this call (the pump may have been
                    # half-way through one when it began)
                    or (pending == 0 and self._quiet_count > asked + 1)
                ):
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    if self._available_now_since_ms is None or pending > 0:
                        break
                    # AvailableNow: returning Spark's start ends the run, so only once the target is
                    # reached (the pump goes quiet or meets a newer message), never on the clock.
                    remaining = 0.5
                self._cond.notify_all()
                self._cond.wait(min(remaining, 0.5))
            end = self._pick(base, limit) if self._last_seq > base else base
            self._offered = end
            self._base = end
            self._cond.notify_all()  # room ahead for the pump
            return end

    def _rows_after(self, base: int) -> int:
        return sum(count for seq, (count, _) in self._chunks.items() if seq > base)

    # -- the pump: receiving and staging ahead, on its own thread -------------------------------------

    def _ensure_pump(self) -> None:
        if self._pump is None or not self._pump.is_alive():
            self._stopping = False
            self._pump = threading.Thread(target=self._pump_loop, name="jms-stager", daemon=True)
            self._pump.start()

    def _ahead_limit(self) -> int:
        """How many staged, not yet offered messages the pump may hold: the next batch and one more."""
        per_batch = self._limit if self._limit is not None else self.options.staging_chunk_messages * 10
        return max(2 * per_batch, self._chunk)

    def _pump_loop(self) -> None:
        """Receive, stage, acknowledge, ahead of Spark's calls (bounded), so the broker is read while Spark
        runs a batch. Owns the broker connection; every broker call happens on this thread."""
        opts = self.options
        broker_deadline: float | None = None
        try:
            while True:
                with self._cond:
                    while not self._stopping and (
                        self._target_reached or self._rows_after(self._base) >= self._ahead_limit()
                    ):
                        self._cond.wait(0.5)
                    if self._stopping:
                        return
                    room = self._ahead_limit() - self._rows_after(self._base)
                if self._connection is None:
                    if broker_deadline is None:
                        broker_deadline = time.monotonic() + opts.broker_retry_ms / 1000
                    self._connect(broker_deadline)
                broker_deadline = None
                try:
                    deadline = time.monotonic() + opts.max_trigger_delay_ms / 1000
                    received, quiet, reached = self._receive(max(1, min(self._chunk, room)), deadline)
                    if self._stopping:
                        return  # received, not acknowledged: the broker has them again once we close
                    if received:
                        self._stage(received)
                except JMSException as exc:
                    # Lost broker (or a refused ack): whatever was staged stays staged; what was not comes
                    # back from the broker after the reconnect and is de-duplicated.
                    log.warning("broker connection failed while reading, reconnecting: %s", exc)
                    self._close_quietly()
                    continue
                with self._cond:
                    if reached or (quiet and self._available_now_since_ms is not None):
                        self._target_reached = True  # this AvailableNow run is done: all it takes is staged
                    if quiet:
                        self._quiet_count += 1
                    self._cond.notify_all()
        except _Stopped:
            return
        except BaseException as exc:  # reported to Spark by the next latestOffset call
            log.error("the jms source stopped reading: %s", exc)
            with self._cond:
                self._failure = exc
                self._cond.notify_all()
        finally:
            self._close_quietly()

    def group_chunks(self, first: int, last: int, per_partition: int) -> list[list[int]]:
        """Chunks first+1..last in runs of about ``per_partition`` messages (one Spark task each: a
        Python read task costs far more than the few thousand rows of a chunk)."""
        self.start()
        with self._cond:
            counts = {seq: self._chunks[seq][0] for seq in range(first + 1, last + 1) if seq in self._chunks}
        seqs = range(first + 1, last + 1)
        total = sum(counts.get(seq, per_partition) for seq in seqs)
        # at least two tasks when there are two chunks: a local or small cluster has more than one core
        per_partition = max(1, min(per_partition, -(-total // min(2, max(1, len(seqs))))))
        groups: list[list[int]] = []
        rows = 0
        for seq in seqs:
            count = counts.get(seq, per_partition)
            if not groups or rows + count > per_partition:
                groups.append([])
                rows = 0
            groups[-1].append(seq)
            rows += count
        return groups

    def commit(self, end: int) -> None:
        """Spark committed every batch up to chunk ``end``: remember it, then drop chunks that are both
        committed and outside the de-duplication window."""
        self.start()
        if end <= self._committed:
            return
        with self._cond:
            self._commit_locked(end)

    def _commit_locked(self, end: int) -> None:
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

    def drain(self, limit: int | None) -> int:
        """A batch read: stage what the subscription holds now (until it is quiet for receiveTimeoutMs, a
        message stamped after this call arrives, or maxReadMs passed: producers without timestamps and a
        steady stream would otherwise keep a read going), about ``limit`` messages (whole chunks: up to one
        more), counting what was staged after the committed chunk already. Returns the newest chunk the read
        takes; chunks the pump staged beyond it (it runs ahead) stay in staging for the next read."""
        self.prepare_available_now()
        end, taken = self._committed, 0
        deadline = time.monotonic() + self.options.max_read_ms / 1000
        while (limit is None or taken < limit) and time.monotonic() < deadline:
            newer = self.latest(end, None if limit is None else limit - taken)
            if newer == end:
                break
            with self._cond:
                taken += sum(count for seq, (count, _) in self._chunks.items() if end < seq <= newer)
            end = newer
        return end

    def prepare_available_now(self) -> None:
        """Trigger.AvailableNow (PySpark 4.2+): take what the subscription holds now, then stop."""
        self.start()
        self._available_now_since_ms = int(time.time() * 1000)
        self._target_reached = False

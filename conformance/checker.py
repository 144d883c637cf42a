"""An operation log and a Jepsen-style checker of the JMS invariants I1-I10 (shared/design/jms-semantics.md).

Fault-injection scenarios record every send, receive, acknowledge, commit, rollback, subscribe and
unsubscribe as ``invoke`` then ``ok`` / ``fail`` / ``unknown`` (in doubt: the outcome was not seen), plus
the faults themselves (start, heal) and independent observations (a probe saw subscription X exist).
:func:`check` folds the log into operations and returns every violation with an explanation:

* I1  no acknowledged PERSISTENT message is lost (queue; durable subscription that existed before the send)
* I2  nothing unexpected: never sent, rolled back, sent before the subscription existed, filtered out
* I3  no duplicate of an acknowledged delivery; other duplicates only flagged redelivered or in doubt
* I4  per producer, destination, priority and mode: first deliveries in send order
* I5  a redelivery within one broker lifetime is flagged JMSRedelivered
* I6  created subscriptions exist after recovery; deleted ones do not come back
* I7  NON_PERSISTENT messages are never duplicated
* I8  transactions are all or nothing (committed: all; in doubt: all or none; rolled back: none)
* I9  nothing is delivered after its expiration (plus a grace)
* I10 after a fault heals, the backlog is delivered within a bound ("nothing delivered" cannot pass)

Endpoints name where messages are consumed: ``queue://Q`` (exists implicitly), ``durable://CID/NAME`` and
``sub://ID`` (created by ``subscribe`` ops on a ``topic://T`` destination). The log is bounded
(:class:`OpLogFull`), and runs that generate traffic draw from a fixed, printed seed so they can be replayed.
No broker and no jmslike code here: the checker judges only the log.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

OpKind = Literal[
    "send", "receive", "ack", "commit", "rollback", "subscribe", "unsubscribe", "fault", "observe"
]
RecordType = Literal["invoke", "ok", "fail", "unknown"]
Status = Literal["ok", "fail", "unknown"]

PERSISTENT = 2
NON_PERSISTENT = 1
INVARIANTS = ("I1", "I2", "I3", "I4", "I5", "I6", "I7", "I8", "I9", "I10")


class OpLogFull(Exception):
    """The log reached its bound: the scenario generated more operations than it declared."""


@dataclass(frozen=True)
class Record:
    """One line of the log. ``op`` links an invoke to its completion."""

    index: int
    op: int
    type: RecordType
    kind: OpKind
    process: str
    t: float
    wall_ms: int
    destination: str | None = None
    endpoint: str | None = None
    message_ids: tuple[str, ...] = ()
    seq: int | None = None
    mode: int | None = None
    priority: int | None = None
    expiration: int = 0
    redelivered: bool | None = None
    transaction: str | None = None
    durable: bool = False
    properties: tuple[tuple[str, str], ...] = ()
    match: tuple[tuple[str, str], ...] = ()
    exists: bool | None = None
    error: str = ""


_FIELDS = {f.name for f in dataclasses.fields(Record)} - {
    "index",
    "op",
    "type",
    "kind",
    "process",
    "t",
    "wall_ms",
}


@dataclass(frozen=True)
class Operation:
    """An invoke folded with its completion (``status`` unknown when none was recorded)."""

    op: int
    kind: OpKind
    process: str
    status: Status
    invoke_t: float
    complete_t: float | None
    wall_ms: int
    record: Record

    def __getattr__(self, name: str) -> Any:  # the fields of the (merged) record
        return getattr(self.record, name)


class PendingOp:
    """Handle of an invoked operation; complete it exactly once."""

    def __init__(self, log: OpLog, template: Record) -> None:
        self._log = log
        self._template = template
        self._done = False

    @property
    def op(self) -> int:
        return self._template.op

    def ok(self, **fields: Any) -> None:
        self.complete("ok", fields)

    def fail(self, error: object = "", **fields: Any) -> None:
        self.complete("fail", {**fields, "error": str(error)})

    def unknown(self, error: object = "", **fields: Any) -> None:
        self.complete("unknown", {**fields, "error": str(error)})

    def complete(self, type_: RecordType, fields: dict[str, Any]) -> None:
        """Record the outcome; ok/fail/unknown say it by name, OpLog.record passes a status it was given."""
        if self._done:
            raise RuntimeError(f"operation {self._template.op} completed twice")
        self._done = True
        self._log.append_completion(self._template, type_, fields)


def _norm(fields: dict[str, Any]) -> dict[str, Any]:
    unknown = set(fields) - _FIELDS
    if unknown:
        raise TypeError(f"unknown operation fields {sorted(unknown)}; known: {sorted(_FIELDS)}")
    out = dict(fields)
    for key in ("properties", "match"):
        if key in out and isinstance(out[key], dict):
            out[key] = tuple(sorted((str(k), str(v)) for k, v in out[key].items()))
    if "message_ids" in out:
        out["message_ids"] = tuple(out["message_ids"])
    return out


class OpLog:
    """Thread-safe, bounded operation log."""

    def __init__(
        self,
        max_ops: int = 50_000,
        clock: Callable[[], float] = time.monotonic,
        wall_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.max_ops = max_ops
        self._clock = clock
        self._wall = wall_ms
        self._lock = threading.Lock()
        self.records: list[Record] = []
        self._ops = 0

    def invoke(self, kind: OpKind, process: str, **fields: Any) -> PendingOp:
        with self._lock:
            if self._ops >= self.max_ops:
                raise OpLogFull(f"the operation log is bounded at {self.max_ops} operations")
            self._ops += 1
            record = Record(
                index=len(self.records),
                op=self._ops,
                type="invoke",
                kind=kind,
                process=process,
                t=self._clock(),
                wall_ms=self._wall(),
                **_norm(fields),
            )
            self.records.append(record)
        return PendingOp(self, record)

    def record(self, kind: OpKind, process: str, status: Status = "ok", **fields: Any) -> None:
        """An operation whose invoke and completion are the same instant (a receive that returned)."""
        pending = self.invoke(kind, process, **fields)
        pending.complete(status, {})

    def fault(self, name: str) -> PendingOp:
        """Start a fault (``ok()`` on the handle when it healed)."""
        return self.invoke("fault", name)

    def observe(self, endpoint: str, exists: bool, process: str = "probe") -> None:
        self.record("observe", process, endpoint=endpoint, exists=exists)

    def append_completion(self, template: Record, type_: RecordType, fields: dict[str, Any]) -> None:
        """Called by PendingOp.complete: the completion record, merged with its invocation's."""
        with self._lock:
            record = dataclasses.replace(
                template,
                index=len(self.records),
                type=type_,
                t=self._clock(),
                wall_ms=self._wall(),
                **_norm(fields),
            )
            self.records.append(record)

    def operations(self) -> list[Operation]:
        with self._lock:
            records = list(self.records)
        return fold(records)

    def __len__(self) -> int:
        return self._ops


def fold(records: Iterable[Record]) -> list[Operation]:
    """Pair invokes with completions; an invoke without completion is ``unknown``."""
    invokes: dict[int, Record] = {}
    done: dict[int, Record] = {}
    for record in records:
        if record.type == "invoke":
            invokes[record.op] = record
        else:
            done[record.op] = record
    ops: list[Operation] = []
    for op_id, invoke in invokes.items():
        completion = done.get(op_id)
        merged = invoke if completion is None else completion
        ops.append(
            Operation(
                op=op_id,
                kind=invoke.kind,
                process=invoke.process,
                status="unknown" if completion is None else completion.type,  # type: ignore[arg-type]
                invoke_t=invoke.t,
                complete_t=None if completion is None else completion.t,
                wall_ms=merged.wall_ms,
                record=merged,
            )
        )
    ops.sort(key=lambda o: (o.invoke_t, o.op))
    return ops


@dataclass(frozen=True)
class Violation:
    invariant: str
    explanation: str
    message_id: str | None = None
    endpoint: str | None = None
    # The behaviour class an expectation can name (conformance/suite/expectations.py): the invariant, or
    # for I3 whether the acknowledged message came back flagged redelivered ("I3 flagged" / "I3 unflagged").
    behaviour: str = ""

    def __post_init__(self) -> None:
        if not self.behaviour:
            object.__setattr__(self, "behaviour", self.invariant)

    def __str__(self) -> str:
        return f"{self.invariant}: {self.explanation}"


@dataclass
class CheckResult:
    violations: list[Violation] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.violations

    def invariants(self) -> set[str]:
        return {v.invariant for v in self.violations}

    def behaviours(self) -> frozenset[str]:
        """The behaviour classes seen (``Violation.behaviour``): what a deviation must cover exactly."""
        return frozenset(v.behaviour for v in self.violations)

    def summary(self, limit: int = 8) -> str:
        if not self.violations:
            return "no violation (" + ", ".join(f"{k}={v}" for k, v in sorted(self.stats.items())) + ")"
        counts: dict[str, int] = defaultdict(int)
        for v in self.violations:
            counts[v.invariant] += 1
        head = ", ".join(
            f"{k} x{n}" for k, n in sorted(counts.items(), key=lambda kv: INVARIANTS.index(kv[0]))
        )
        shown = "; ".join(str(v) for v in self.violations[:limit])
        more = f"; ... {len(self.violations) - limit} more" if len(self.violations) > limit else ""
        return f"{len(self.violations)} violation(s) [{head}]: {shown}{more}"


@dataclass
class _Incarnation:
    endpoint: str
    destination: str
    durable: bool
    created: Operation
    match: tuple[tuple[str, str], ...]
    deleted: Operation | None = None

    def exists_at(self, t: float) -> bool:
        created = self.created.complete_t if self.created.complete_t is not None else self.created.invoke_t
        return created <= t and (self.deleted is None or self.deleted.invoke_t > t)


def _accepts(match: tuple[tuple[str, str], ...], properties: tuple[tuple[str, str], ...]) -> bool:
    props = dict(properties)
    return all(props.get(k) == v for k, v in match)


class _Checker:
    def __init__(
        self, ops: list[Operation], heal_bound_s: float, grace_ms: int, strict_restart_flag: bool
    ) -> None:
        self.ops = ops
        self.heal_bound_s = heal_bound_s
        self.grace_ms = grace_ms
        self.strict = strict_restart_flag
        self.violations: list[Violation] = []
        self.sends = {o.message_ids[0]: o for o in ops if o.kind == "send" and o.message_ids}
        self.commits = {o.transaction: o for o in ops if o.kind == "commit" and o.transaction}
        self.rollbacks = {o.transaction: o for o in ops if o.kind == "rollback" and o.transaction}
        self.receives = [o for o in ops if o.kind == "receive" and o.status == "ok" and o.message_ids]
        self.faults = [o for o in ops if o.kind == "fault"]
        self.incarnations: dict[str, list[_Incarnation]] = defaultdict(list)
        for op in ops:
            if op.status != "ok" or op.endpoint is None:
                continue
            chain = self.incarnations[op.endpoint]
            if op.kind == "subscribe":
                if not chain or chain[-1].deleted is not None or not op.durable:
                    chain.append(_Incarnation(op.endpoint, op.destination or "", op.durable, op, op.match))
            elif op.kind == "unsubscribe" and chain and chain[-1].deleted is None:
                chain[-1].deleted = op

    def add(
        self,
        invariant: str,
        text: str,
        message_id: str | None = None,
        endpoint: str | None = None,
        behaviour: str = "",
    ) -> None:
        self.violations.append(Violation(invariant, text, message_id, endpoint, behaviour))

    def when(self, t: float) -> str:
        """``t`` as seconds since the first operation of the log."""
        start = self.ops[0].invoke_t if self.ops else t
        return f"+{t - start:.2f}s"

    def fault_times(self) -> str:
        spans = [
            f"{f.process} {self.when(f.invoke_t)}..{self.when(f.complete_t or f.invoke_t)}"
            for f in self.faults
        ]
        return "; faults: " + ", ".join(spans) if spans else ""

    # -- helpers --------------------------------------------------------------------------------------

    def send_status(self, send: Operation) -> Status:
        """Effective outcome of a send: its own, or its transaction's commit."""
        if send.status == "fail":
            return "fail"
        if send.transaction is None:
            return send.status
        commit = self.commits.get(send.transaction)
        if commit is None:
            return "fail"  # rolled back, or the session closed without commit
        return commit.status

    def endpoint_destination(self, endpoint: str, at: float) -> _Incarnation | None:
        for incarnation in reversed(self.incarnations.get(endpoint, [])):
            created = incarnation.created.invoke_t
            if created <= at:
                return incarnation
        return None

    def required_endpoints(self, send: Operation) -> list[str]:
        """Where a confirmed PERSISTENT send must be delivered (I1 / I8)."""
        destination = send.destination or ""
        if send.mode != PERSISTENT or send.expiration:
            return []
        if destination.startswith("queue://"):
            return [destination]
        sent_at = send.invoke_t
        required = []
        for endpoint, chain in self.incarnations.items():
            for incarnation in chain:
                if not incarnation.durable or incarnation.destination != destination:
                    continue
                created = incarnation.created.complete_t or incarnation.created.invoke_t
                if (
                    created <= sent_at
                    and incarnation.deleted is None
                    and _accepts(incarnation.match, send.properties)
                ):
                    required.append(endpoint)
        return required

    def delivered(self) -> dict[tuple[str, str], list[Operation]]:
        by: dict[tuple[str, str], list[Operation]] = defaultdict(list)
        for receive in self.receives:
            by[(receive.endpoint or "", receive.message_ids[0])].append(receive)
        return by

    def restarted_between(self, start: float, end: float) -> bool:
        return any(f.invoke_t <= end and (f.complete_t or f.invoke_t) >= start for f in self.faults)

    def ack_time(self, endpoint: str, message_id: str, receive: Operation) -> tuple[float | None, bool]:
        """When the delivery ``receive`` was acknowledged for sure (None: never), and whether in doubt."""
        if receive.transaction is not None:
            commit = self.commits.get(receive.transaction)
            if commit is None:
                return None, False
            if commit.status == "ok":
                return commit.complete_t, False
            return None, commit.status == "unknown"
        best: float | None = None
        doubt = False
        for op in self.ops:
            if op.kind != "ack" or op.endpoint != endpoint or message_id not in op.message_ids:
                continue
            if op.invoke_t < receive.invoke_t:
                continue
            if op.status == "ok" and op.complete_t is not None:
                best = op.complete_t if best is None else min(best, op.complete_t)
            elif op.status == "unknown":
                doubt = True
        return best, doubt

    # -- invariants -----------------------------------------------------------------------------------

    def run(self) -> None:
        delivered = self.delivered()
        self.check_lost_and_transactions(delivered)
        self.check_unexpected()
        self.check_duplicates(delivered)
        self.check_order()
        self.check_subscriptions()
        self.check_heal(delivered)

    def check_lost_and_transactions(self, delivered: dict[tuple[str, str], list[Operation]]) -> None:
        tx_messages: dict[str, list[Operation]] = defaultdict(list)
        for message_id, send in self.sends.items():
            if send.transaction is not None:
                tx_messages[send.transaction].append(send)
                continue
            if send.status != "ok":
                continue
            for endpoint in self.required_endpoints(send):
                if not delivered.get((endpoint, message_id)):
                    self.add(
                        "I1",
                        f"lost: PERSISTENT message {message_id} (seq {send.seq}) from {send.process} to "
                        f"{send.destination} was confirmed but never delivered to {endpoint}",
                        message_id,
                        endpoint,
                    )
        for tx, sends in tx_messages.items():
            status = self.send_status(sends[0])
            required: dict[str, list[str]] = defaultdict(list)
            for send in sends:
                for endpoint in self.required_endpoints(send):
                    required[endpoint].append(send.message_ids[0])
            for endpoint, ids in required.items():
                got = [m for m in ids if delivered.get((endpoint, m))]
                if status == "ok" and len(got) < len(ids):
                    self.add(
                        "I8",
                        f"transaction {tx} committed, but only {len(got)} of its {len(ids)} messages reached {endpoint}",
                        None,
                        endpoint,
                    )
                elif status == "unknown" and 0 < len(got) < len(ids):
                    self.add(
                        "I8",
                        f"half transaction: commit of {tx} was in doubt and {len(got)} of its {len(ids)} "
                        f"messages reached {endpoint} (must be all or none)",
                        None,
                        endpoint,
                    )
            if status == "fail":
                for send in sends:
                    hits = [r for r in self.receives if r.message_ids[0] == send.message_ids[0]]
                    if hits:
                        self.add(
                            "I8",
                            f"message {send.message_ids[0]} of rolled-back transaction {tx} was delivered to "
                            f"{hits[0].endpoint}",
                            send.message_ids[0],
                            hits[0].endpoint,
                        )

    def check_unexpected(self) -> None:
        for receive in self.receives:
            message_id = receive.message_ids[0]
            endpoint = receive.endpoint or ""
            send = self.sends.get(message_id)
            if send is None:
                self.add("I2", f"{message_id} delivered to {endpoint} was never sent", message_id, endpoint)
                continue
            if send.transaction is None and send.status == "fail":
                self.add(
                    "I2",
                    f"{message_id} delivered to {endpoint} although its send failed",
                    message_id,
                    endpoint,
                )
                continue
            if send.expiration and receive.wall_ms > send.expiration + self.grace_ms:
                late = receive.wall_ms - send.expiration
                self.add(
                    "I9",
                    f"{message_id} delivered to {endpoint} {late} ms after it expired",
                    message_id,
                    endpoint,
                )
            if endpoint.startswith("queue://"):
                if send.destination != endpoint:
                    self.add(
                        "I2",
                        f"{message_id} sent to {send.destination} was delivered from {endpoint}",
                        message_id,
                        endpoint,
                    )
                continue
            incarnation = self.endpoint_destination(endpoint, receive.invoke_t)
            if incarnation is None:
                self.add(
                    "I2",
                    f"{message_id} delivered to {endpoint}, which was never subscribed",
                    message_id,
                    endpoint,
                )
                continue
            if incarnation.deleted is not None and incarnation.deleted.invoke_t <= receive.invoke_t:
                self.add(
                    "I6",
                    f"{message_id} delivered from {endpoint} after the subscription was deleted (resurrected)",
                    message_id,
                    endpoint,
                )
                continue
            if send.destination != incarnation.destination:
                self.add(
                    "I2",
                    f"{message_id} sent to {send.destination} was delivered to {endpoint} "
                    f"(subscribed to {incarnation.destination})",
                    message_id,
                    endpoint,
                )
                continue
            created = incarnation.created.invoke_t
            sent = send.complete_t if send.complete_t is not None else send.invoke_t
            if sent < created:
                self.add(
                    "I2",
                    f"{message_id} was sent before subscription {endpoint} existed, yet delivered to it",
                    message_id,
                    endpoint,
                )
                continue
            if not _accepts(incarnation.match, send.properties):
                self.add(
                    "I2",
                    f"{message_id} does not match the selector of {endpoint}, yet was delivered",
                    message_id,
                    endpoint,
                )

    def check_duplicates(self, delivered: dict[tuple[str, str], list[Operation]]) -> None:
        for (endpoint, message_id), receives in delivered.items():
            if len(receives) < 2:
                continue
            send = self.sends.get(message_id)
            non_persistent = send is not None and send.mode == NON_PERSISTENT
            for earlier, later in itertools.pairwise(receives):
                acked_at, doubt = self.ack_time(endpoint, message_id, earlier)
                if acked_at is not None and acked_at <= later.invoke_t:
                    inv = "I7" if non_persistent else "I3"
                    self.add(
                        inv,
                        f"{message_id} delivered again to {endpoint} after it was acknowledged "
                        f"(acknowledged at {self.when(acked_at)}, delivered again at {self.when(later.invoke_t)}, "
                        f"flagged {bool(later.redelivered)}{self.fault_times()})",
                        message_id,
                        endpoint,
                        f"{inv} {'flagged' if later.redelivered else 'unflagged'}",
                    )
                    break
                if later.redelivered or doubt:
                    continue
                if non_persistent:
                    self.add(
                        "I7",
                        f"NON_PERSISTENT {message_id} delivered twice to {endpoint} without the "
                        "redelivered flag",
                        message_id,
                        endpoint,
                    )
                    break
                if self.restarted_between(earlier.invoke_t, later.invoke_t) and not self.strict:
                    continue
                self.add(
                    "I5",
                    f"{message_id} redelivered to {endpoint} within one broker lifetime without JMSRedelivered",
                    message_id,
                    endpoint,
                )
                break

    def check_order(self) -> None:
        first: dict[tuple[str, str], Operation] = {}
        for receive in self.receives:
            key = (receive.endpoint or "", receive.message_ids[0])
            first.setdefault(key, receive)
        streams: dict[tuple[str, str, str | None, int | None, int | None], list[tuple[Operation, int]]] = (
            defaultdict(list)
        )
        for (endpoint, message_id), receive in first.items():
            send = self.sends.get(message_id)
            if send is None or send.seq is None:
                continue
            streams[(endpoint, send.process, send.destination, send.priority, send.mode)].append(
                (receive, send.seq)
            )
        for (endpoint, process, destination, _, _), items in streams.items():
            items.sort(key=lambda item: (item[0].invoke_t, item[0].op))
            highest = -1
            for receive, seq in items:
                if seq < highest:
                    self.add(
                        "I4",
                        f"order broken on {endpoint}: seq {seq} of {process} to {destination} arrived after seq {highest}",
                        receive.message_ids[0],
                        endpoint,
                    )
                    break
                highest = seq

    def check_subscriptions(self) -> None:
        for op in self.ops:
            if op.kind != "observe" or op.endpoint is None or op.exists is None:
                continue
            chain = self.incarnations.get(op.endpoint, [])
            live = any(i.exists_at(op.invoke_t) for i in chain)
            if live and not op.exists:
                self.add(
                    "I6",
                    f"subscription {op.endpoint} was created and not deleted, but is gone",
                    None,
                    op.endpoint,
                )
            elif not live and op.exists and chain:
                self.add("I6", f"subscription {op.endpoint} was deleted but exists again", None, op.endpoint)

    def check_heal(self, delivered: dict[tuple[str, str], list[Operation]]) -> None:
        for fault in self.faults:
            healed = fault.complete_t
            if healed is None:
                continue
            pending: list[tuple[str, str]] = []
            for message_id, send in self.sends.items():
                if self.send_status(send) != "ok" or send.complete_t is None or send.complete_t > healed:
                    continue
                for endpoint in self.required_endpoints(send):
                    got = delivered.get((endpoint, message_id), [])
                    if not any(r.invoke_t <= healed for r in got):
                        pending.append((endpoint, message_id))
            if not pending:
                continue
            after = [r for r in self.receives if r.invoke_t >= healed]
            if not after:
                self.add(
                    "I10",
                    f"no progress after heal: {len(pending)} message(s) were due after fault "
                    f"{fault.process} healed, and nothing was delivered after it",
                )
                continue
            bound = healed + self.heal_bound_s
            for endpoint, message_id in pending:
                got = delivered.get((endpoint, message_id), [])
                if got and min(r.invoke_t for r in got) > bound:
                    late = min(r.invoke_t for r in got) - healed
                    self.add(
                        "I10",
                        f"{message_id} reached {endpoint} {late:.1f}s after fault {fault.process} "
                        f"healed (bound {self.heal_bound_s:.0f}s)",
                        message_id,
                        endpoint,
                    )


def check(
    log: OpLog | Iterable[Record],
    *,
    heal_bound_s: float = 30.0,
    expiry_grace_ms: int = 1000,
    strict_restart_redelivered: bool = False,
    require_confirmed: bool = False,
) -> CheckResult:
    """Check I1-I10 over ``log``. ``strict_restart_redelivered`` also demands JMSRedelivered on messages
    redelivered across a fault (JMS only requires it within one broker lifetime). ``require_confirmed``
    (traffic runs): a run that got no send acknowledged, or more in doubt than acknowledged, proves too
    little and fails (I10) instead of passing on nothing."""
    ops = log.operations() if isinstance(log, OpLog) else fold(log)
    checker = _Checker(ops, heal_bound_s, expiry_grace_ms, strict_restart_redelivered)
    checker.run()
    sends = [o for o in ops if o.kind == "send"]
    statuses = [checker.send_status(s) for s in sends]
    delivered_ids = {m for r in checker.receives for m in r.message_ids}
    stats = {
        "operations": len(ops),
        "sends": len(sends),
        "acknowledged": statuses.count("ok"),
        "in_doubt": statuses.count("unknown"),
        "recovered": sum(
            st == "unknown" and s.message_ids[0] in delivered_ids
            for s, st in zip(sends, statuses, strict=True)
        ),
        "lost": sum(v.invariant == "I1" for v in checker.violations),
        "receives": len(checker.receives),
        # Deliveries of a message an endpoint had seen before (redeliveries, and duplicates if any).
        "again_flagged": sum(bool(r.redelivered) for rs in checker.delivered().values() for r in rs[1:]),
        "again_unflagged": sum(not r.redelivered for rs in checker.delivered().values() for r in rs[1:]),
        "faults": len(checker.faults),
    }
    if require_confirmed and sends and stats["acknowledged"] == 0:
        checker.add(
            "I10", f"nothing was confirmed: {len(sends)} sends, none acknowledged, so nothing was proven"
        )
    elif require_confirmed and stats["in_doubt"] > stats["acknowledged"]:
        checker.add(
            "I10",
            f"more sends in doubt ({stats['in_doubt']}) than acknowledged ({stats['acknowledged']}): the run "
            "proves too little to pass",
        )
    return CheckResult(checker.violations, stats)


class InvariantViolation(AssertionError):
    """A traffic check failed; ``behaviours`` are its violations' classes, which the expectations table
    matches a deviation against (anything outside the listed classes is a fail)."""

    def __init__(self, text: str, behaviours: frozenset[str]) -> None:
        super().__init__(text)
        self.behaviours = behaviours

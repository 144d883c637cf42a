"""Does a SIGKILL right after a confirmed send lose the message, or the whole queue, on RabbitMQ? Raw STOMP only.

    python -m jmslike.conformance.rabbitmq_fresh_queue [--trials 40] [--interleave] [--settle 0]
        [--conditions tx:send:0,plain:send:0,tx:management:1,tx:management:3,tx:roundtrip:1]
        [--barrier none|put|get|put,get] [--inspect [--keep-logs DIR]]

The follow-up to "New finding (2026-11-25, evening)" in docs/conformance.md: one PERSISTENT message sent to a
queue, confirmed, the broker SIGKILLed at once, restarted, and the queue looked at. No jmslike code between the
experiment and the broker (stompest), one broker process for every trial (restarted between them). A condition
is ``SEND:DECLARED:AGE``:

- SEND: ``tx`` (BEGIN, SEND with a receipt, COMMIT with a receipt, both receipts awaited; RabbitMQ's STOMP
  plugin answers the COMMIT first, the SEND at the publisher confirm) or ``plain`` (SEND with a receipt);
- DECLARED: who declared the queue first: ``send`` (the measured SEND to ``/queue/q`` itself; AGE must be 0),
  ``management`` (a management-API PUT, durable classic) or ``roundtrip`` (a STOMP SEND of a throwaway
  PERSISTENT message to ``/queue/q``, confirmed, then received and acknowledged with a receipt);
- AGE: seconds from that declaration (its answer) to the measured SEND (a plain sleep: the variable).

After the restart, **before anything that could declare the queue again** (a STOMP SUBSCRIBE to ``/queue/q``
would), the trial asks the node (``rabbitmqctl list_queues name durable messages``) whether the queue is
there; a missing queue is asked about again after ``RECHECK_S`` in case it was merely late. Each trial also
records how many classic queues the boot recovered from the node's durable queue table (rabbit.log's
"Recovering N queues of type rabbit_classic_queue": 1, or 0 when the declaration did not survive, since every
trial deletes its queue). Only then is a present queue drained through ``/amq/queue/q`` (which never
declares). ``--settle`` waits before each trial (the broker's age since its last restart, roughly: the trial
before also spends a second or two after the restart listing and draining). ``--interleave`` alternates the
conditions so that a drift over the run hits them all alike. Each trial's outcome is ``kept``,
``lost: queue missing`` (hypothesis A: the declaration did not survive, taking the confirmed message with it)
or ``lost: queue empty`` (hypothesis B: the queue survived, the message did not). The table goes to stdout
(Markdown); the exit status is 1 when any trial lost the message. Results: docs/conformance.md.

Diagnostics: ``--inspect`` kills the node, lists the files under its data directory that name the queue while
it is down (Mnesia's ``LATEST.LOG``, the queue index's ``.queue_name`` and ``journal.jif``), then starts it;
``--keep-logs DIR`` also copies Mnesia's ``*.LOG`` files as the kill left them, to be read with
``disk_log:chunk/2`` (a lost queue's declaration is there as a ``commit`` record with decision
``presume_abort`` and no ``committed`` decision record after it, so Mnesia's recovery aborts it).
``--barrier put`` issues one more completed Mnesia write (a management-API PUT of another durable queue) after
the send and before the kill; ``--barrier get`` the same HTTP round trip without a write, as its control.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import sys
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jmslike.adapters.rabbitmq_management import RabbitMQManagement
from jmslike.conformance.brokers import BrokerHandle, launch
from jmslike.conformance.brokers.rabbitmq import RabbitMQBroker
from jmslike.conformance.suite.probe import raw_stomp_client

RECEIPT_TIMEOUT_S = 10.0
#: The drain stops after this long without a frame.
QUIET_S = 1.0
#: A queue missing right after the restart is looked for once more after this long.
RECHECK_S = 3.0
SENDS = ("tx", "plain")
DECLARERS = ("send", "management", "roundtrip")
BODY = b"the-one"


@dataclass(frozen=True)
class Condition:
    send: str  # tx or plain
    declared_by: str  # send, management or roundtrip
    age_s: float

    def __str__(self) -> str:
        return f"{self.send}:{self.declared_by}:{self.age_s:g}"


def parse_condition(text: str) -> Condition:
    parts = text.split(":")
    if len(parts) != 3 or parts[0] not in SENDS or parts[1] not in DECLARERS:
        raise ValueError(f"bad condition {text!r}: expected SEND:DECLARED:AGE, e.g. tx:management:1")
    condition = Condition(parts[0], parts[1], float(parts[2]))
    if condition.declared_by == "send" and condition.age_s != 0:
        raise ValueError(f"bad condition {text!r}: a queue declared by the measured SEND has age 0")
    return condition


@dataclass
class Outcome:
    condition: Condition
    #: kept, missing (the queue was not there after the restart), empty (there, without the message), late
    #: (missing at first, there at the recheck), or error.
    result: str = ""
    #: What rabbitmqctl said about the queue after the restart, before any STOMP frame touched it.
    listed: str = ""
    #: How many classic queues the node's boot found in its durable queue table ("Recovering N queues of type
    #: rabbit_classic_queue" in rabbit.log); every earlier trial deletes its queue, so 1 or 0.
    recovered: int | None = None
    restarted: bool = False
    barrier: str = "none"
    #: With ``--inspect``: the files under the node's data directory holding the queue's name while it is down.
    on_disk: str = ""
    error: str = ""


def _await_receipts(client: Any, receipts: set[str]) -> None:
    """Read frames until every receipt in ``receipts`` has come (in any order)."""
    pending = set(receipts)
    deadline = time.monotonic() + RECEIPT_TIMEOUT_S
    while pending:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no receipt {sorted(pending)} within {RECEIPT_TIMEOUT_S:g}s")
        if not client.canRead(remaining):
            continue
        frame = client.receiveFrame()
        if frame.command == "RECEIPT":
            pending.discard(frame.headers.get("receipt-id", ""))
        elif frame.command == "ERROR":
            raise RuntimeError(f"broker ERROR: {frame.headers.get('message')}")


def declare_by_roundtrip(broker: BrokerHandle, queue: str) -> None:
    """A throwaway PERSISTENT message to ``/queue/q`` (which declares it), confirmed, received, acknowledged."""
    client = raw_stomp_client(broker)
    try:
        client.send(f"/queue/{queue}", b"throwaway", headers={"persistent": "true", "receipt": "declared"})
        _await_receipts(client, {"declared"})
        client.subscribe(f"/queue/{queue}", headers={"ack": "client-individual", "id": "rt"})
        deadline = time.monotonic() + RECEIPT_TIMEOUT_S
        while True:
            if time.monotonic() > deadline or not client.canRead(RECEIPT_TIMEOUT_S):
                raise TimeoutError("the throwaway message did not come back")
            frame = client.receiveFrame()
            if frame.command == "MESSAGE":
                break
        client.ack(frame, receipt="acked")
        _await_receipts(client, {"acked"})
    finally:
        client.disconnect()


def send_one(client: Any, queue: str, transacted: bool) -> None:
    """The measured send: one PERSISTENT message to ``/queue/q``, confirmed (and committed)."""
    headers = {"persistent": "true", "receipt": "sent"}
    if not transacted:
        client.send(f"/queue/{queue}", BODY, headers=headers)
        _await_receipts(client, {"sent"})
        return
    client.begin("tx1")
    client.send(f"/queue/{queue}", BODY, headers={**headers, "transaction": "tx1"})
    client.commit("tx1", receipt="committed")
    _await_receipts(client, {"sent", "committed"})


def listed_queue(broker: RabbitMQBroker, queue: str) -> str | None:
    """``durable messages`` of ``queue`` as the node lists it, None when it is not listed."""
    listing = broker.ctl("list_queues", "-q", "--no-table-headers", "name", "durable", "messages")
    for line in listing.splitlines():
        fields = line.split()
        if fields and fields[0] == queue:
            return " ".join(fields[1:])
    return None


_RECOVERED = re.compile(r"Recovering (\d+) queues of type rabbit_classic_queue")


def recovered_classic_queues(broker: RabbitMQBroker, boots_before: int) -> int | None:
    """The number of classic queues the next boot after ``boots_before`` logged recoveries says it recovered;
    None when that is not in the log within ``RECHECK_S`` (RabbitMQ writes its file log with a delay)."""
    deadline = time.monotonic() + RECHECK_S
    while True:
        found = _recovery_lines(broker)
        if len(found) > boots_before:
            return int(found[boots_before])
        if time.monotonic() > deadline:
            return None
        time.sleep(0.2)


def _recovery_lines(broker: RabbitMQBroker) -> list[str]:
    try:
        text = (broker.base_dir / "log" / "rabbit.log").read_text(errors="replace")
    except OSError:
        return []
    return _RECOVERED.findall(text)


def files_naming(broker: RabbitMQBroker, queue: str) -> str:
    """The files under the node's ``mnesia`` directory (Mnesia's logs and tables, the message stores) that
    hold ``queue``'s name, comma-separated and relative; ``none`` when no file does."""
    root = broker.base_dir / "mnesia"
    needle = queue.encode()
    found = []
    for path in sorted(root.rglob("*")):
        try:
            if path.is_file() and needle in path.read_bytes():
                found.append(path.name)
        except OSError:
            continue
    return ",".join(found) or "none"


def drain(broker: BrokerHandle, queue: str) -> list[bytes]:
    """Everything ``queue`` holds, through ``/amq/queue/`` (which does not declare a missing queue)."""
    client = raw_stomp_client(broker)
    found: list[bytes] = []
    try:
        client.subscribe(f"/amq/queue/{queue}", headers={"ack": "auto", "id": "drain"})
        while client.canRead(QUIET_S):
            frame = client.receiveFrame()
            if frame.command == "MESSAGE":
                found.append(frame.body)
            elif frame.command == "ERROR":
                raise RuntimeError(f"broker ERROR: {frame.headers.get('message')}")
        return found
    finally:
        client.disconnect()


def run_trial(
    broker: RabbitMQBroker,
    management: RabbitMQManagement,
    condition: Condition,
    settle_s: float,
    boots_before: int,
    inspect: bool = False,
    keep_dir: Path | None = None,
    barrier: str = "none",
) -> Outcome:
    """One trial; ``boots_before`` is how many recoveries the log holds before this trial's restart."""
    outcome = Outcome(condition)
    queue = f"fresh-exp-{uuid.uuid4().hex[:10]}"
    time.sleep(settle_s)  # how long the (re)started broker runs before the trial's first frame
    try:
        if condition.declared_by == "management":
            management.declare_queue("/", queue, {})
        elif condition.declared_by == "roundtrip":
            declare_by_roundtrip(broker, queue)
        time.sleep(condition.age_s)
        client = raw_stomp_client(broker)
    except Exception as error:  # reported in the table; the next trial goes on
        outcome.result, outcome.error = "error", f"{type(error).__name__}: {error}"
        return outcome
    try:
        send_one(client, queue, condition.send == "tx")
        if barrier == "put":  # a later Mnesia write, completed: declare another durable queue
            management.declare_queue("/", f"{queue}-barrier", {})
        elif barrier == "get":  # the same HTTP round trip without a Mnesia write (the control for "put")
            management.queue("/", queue)
    except Exception as error:
        outcome.result, outcome.error = "error", f"{type(error).__name__}: {error}"
        return outcome
    if inspect:  # what the SIGKILL left on disk, read while the node is down
        broker.kill()
        outcome.on_disk = files_naming(broker, queue)
        if keep_dir is not None:  # Mnesia's logs as the SIGKILL left them, for disk_log:chunk/2 afterwards
            target = keep_dir / queue
            target.mkdir(parents=True, exist_ok=True)
            for log in (broker.base_dir / "mnesia").glob("*/*.LOG"):
                shutil.copyfile(log, target / log.name)
        broker.start()
    else:
        broker.restart("kill")  # at once: the confirm (and the COMMIT's receipt) was the last thing read
    outcome.restarted = True
    client.close(flush=True)
    outcome.recovered = recovered_classic_queues(broker, boots_before)
    try:
        listed = listed_queue(broker, queue)
        if listed is None:
            time.sleep(RECHECK_S)
            listed = listed_queue(broker, queue)
            if listed is None:
                outcome.result, outcome.listed = "missing", "not listed"
                return outcome
            outcome.listed = f"late: {listed}"
        else:
            outcome.listed = listed
        found = drain(broker, queue)
        if outcome.listed.startswith("late"):
            outcome.result = "late"
        else:
            outcome.result = "kept" if BODY in found else "empty"
        management.delete_queue("/", queue)
        if barrier == "put":
            with contextlib.suppress(Exception):  # the barrier queue may be gone too
                management.delete_queue("/", f"{queue}-barrier")
    except Exception as error:
        outcome.result, outcome.error = "error", f"{type(error).__name__}: {error}"
    return outcome


def summary(outcomes: Sequence[Outcome]) -> str:
    lines = [
        "| condition (send:declared-by:age s) | trials | kept | lost: queue missing | lost: queue empty | "
        "missing, then there | errors |",
        "|---|---|---|---|---|---|---|",
    ]
    by_condition: dict[tuple[Condition, str], Counter[str]] = {}
    for outcome in outcomes:
        by_condition.setdefault((outcome.condition, outcome.barrier), Counter())[outcome.result] += 1
    for (condition, barrier), seen in by_condition.items():
        label = f"{condition}" if barrier == "none" else f"{condition} + barrier {barrier}"
        lines.append(
            f"| {label} | {sum(seen.values())} | {seen['kept']} | {seen['missing']} | {seen['empty']} | "
            f"{seen['late']} | {seen['error']} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jmslike.conformance.rabbitmq_fresh_queue",
        description="SIGKILL RabbitMQ right after one confirmed send; is the queue, the message, there after?",
    )
    parser.add_argument("--trials", type=int, default=40, help="trials per condition")
    parser.add_argument(
        "--conditions",
        default="tx:send:0,plain:send:0,tx:management:1,tx:management:3,tx:roundtrip:1",
        help="SEND:DECLARED:AGE, comma-separated; SEND tx|plain, DECLARED send|management|roundtrip",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="seconds to wait before each trial's first frame (the broker's age since its restart, roughly)",
    )
    parser.add_argument(
        "--inspect",
        action="store_true",
        help="kill, list the data files naming the queue while the node is down, then start (not restart)",
    )
    parser.add_argument(
        "--keep-logs",
        type=Path,
        default=None,
        help="with --inspect: copy Mnesia's *.LOG files, as the kill left them, to KEEP_LOGS/<queue>/",
    )
    parser.add_argument(
        "--barrier",
        default="none",
        help="after the send, before the kill: none; put (a management-API PUT of another durable queue, "
        "a later Mnesia write); get (a management-API GET, the same round trip without a write); "
        "several comma-separated ones alternate",
    )
    parser.add_argument(
        "--interleave",
        action="store_true",
        help="round-robin over the conditions (trial 1 of each, then trial 2 ...) instead of one after another",
    )
    args = parser.parse_args(argv)
    try:
        conditions = [parse_condition(text) for text in args.conditions.split(",")]
    except ValueError as error:
        parser.error(str(error))
    barriers = args.barrier.split(",")
    if any(b not in ("none", "put", "get") for b in barriers):
        parser.error(f"bad --barrier {args.barrier!r}: expected none, put or get")
    if args.interleave:
        plan = [c for _ in range(args.trials) for c in conditions]
    else:
        plan = [c for c in conditions for _ in range(args.trials)]
    outcomes: list[Outcome] = []
    with launch("rabbitmq") as broker:
        if broker.management_url is None or not isinstance(broker, RabbitMQBroker):
            print("needs the process launcher's RabbitMQ (management API and rabbitmqctl)", file=sys.stderr)
            return 2
        management = RabbitMQManagement(broker.management_url, broker.user, broker.password)
        print(f"broker: RabbitMQ at {broker.url}; {len(plan)} trials", flush=True)
        # A new node's first boot recovers nothing and logs no "Recovering" line; every restart logs one (the
        # log is written with a delay, so each trial is told which line is its own rather than taking the last).
        boots = len(_recovery_lines(broker))
        for number, condition in enumerate(plan, 1):
            barrier = barriers[(number - 1) % len(barriers)]
            outcome = run_trial(
                broker, management, condition, args.settle, boots, args.inspect, args.keep_logs, barrier
            )
            outcome.barrier = barrier
            boots += outcome.restarted
            outcomes.append(outcome)
            print(
                f"{number} {condition} barrier={barrier} {outcome.result} [listed: {outcome.listed}; boot recovered "
                f"{outcome.recovered} classic queues{'; on disk: ' + outcome.on_disk if args.inspect else ''}] "
                f"{outcome.error}",
                flush=True,
            )
    print()
    print(summary(outcomes))
    lost = sum(1 for o in outcomes if o.result in ("missing", "empty"))
    errors = sum(1 for o in outcomes if o.result == "error")
    print(f"\n{lost} lost, {errors} trials with errors, {len(outcomes)} trials")
    return 1 if lost or errors else 0


if __name__ == "__main__":
    sys.exit(main())

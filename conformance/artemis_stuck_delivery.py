"""Does Artemis keep a killed durable subscriber's held message? A raw STOMP control.

    ARTEMIS_HOME=... python -m jmslike.conformance.artemis_stuck_delivery [--trials 100] [--no-restart]
        [--launcher process|docker]

The evidence behind the ``faults.client-killed-durable-keeps-backlog`` deviation on Artemis
(conformance/suite/expectations.py): no jmslike code between the test and the broker, only stompest (jmslike
starts the broker and its probe asks the management address for counts). Each trial creates a durable
subscription queue ``<client ID>.<name>`` through management (MULTICAST, ``max-consumers=1``, as jmslike does),
starts a holder in a process of its own (client ID, heart-beats every second, a ``client-individual`` durable
subscription), publishes ``held`` and ``backlog`` (PERSISTENT, receipted), waits until the holder has received
``held`` -- never acknowledged -- and SIGKILLs it. A second client with the same client ID subscribes again
(``ack:auto``) as soon as the broker lets it and counts what arrives within 10 s (it stops early one second
after both have come). Then management reports the queue's MessageCount, DeliveringCount and ConsumerCount.

Outcomes: **both delivered**; **"held" missing** -- exactly ``backlog`` arrived and the queue still counts one
message, delivering, with no consumer (Artemis 2.21: StompProtocolManager.cleanup's rollback races
ServerSessionImpl.doClose and acknowledges the dead consumer's delivery into an already rolled-back
transaction; docs/artemis.md); **other** -- anything else ("backlog" missing, a duplicate, "held" missing
without a stuck delivery). Unless ``--no-restart``, when "held" went missing the broker is then restarted
gracefully and each such subscription is read again: the stuck message should come back.

Exit status: 1 when a trial was **other**, or when a stuck message did not come back after the restart (either
would be a loss or a duplicate, not this behaviour); 0 otherwise, whether or not the race was hit. Results:
docs/artemis.md.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jmslike.conformance.artemis_controls import control_arguments, run_trials
from jmslike.conformance.brokers import BrokerHandle
from jmslike.conformance.suite.probe import ArtemisProbe, raw_stomp_client

MESSAGES = ("held", "backlog")
WAIT_S = 10.0  # how long the second client waits for the messages
SETTLE_S = 1.0  # once both arrived, how long it still waits for a duplicate
REATTACH_S = 30.0  # how long the broker may refuse the second client (the dead one still attached)

#: The holder: its own process (so it can be SIGKILLed), stompest only. Prints READY, then GOT <body>.
HOLDER = r"""
import sys, threading, time
from stompest.config import StompConfig
from stompest.sync import Stomp

host, port, user, password, client_id, topic, name = sys.argv[1:8]
client = Stomp(StompConfig(f"tcp://{host}:{port}", login=user, passcode=password, version="1.2"))
client.connect(headers={"client-id": client_id}, host="/", heartBeats=(1000, 0), connectTimeout=10,
               connectedTimeout=10)

def beat():
    while True:
        time.sleep(0.3)
        client.beat()

threading.Thread(target=beat, daemon=True).start()

def until(command):
    while True:
        frame = client.receiveFrame()
        if frame.command == command:
            return frame
        if frame.command == "ERROR":
            print("ERROR", frame.headers, frame.body, flush=True)
            sys.exit(1)

client.subscribe(topic, {"id": "1", "ack": "client-individual", "subscription-type": "MULTICAST",
                         "durable-subscription-name": name}, receipt="subscribed")
until("RECEIPT")
print("READY", flush=True)
while True:
    print("GOT " + until("MESSAGE").body.decode(), flush=True)
"""


@dataclass
class Outcome:
    client_id: str
    topic: str
    name: str
    received: list[str]
    attach_ms: int  # from the SIGKILL to the second client's subscription
    counts: dict[str, int | None] = field(default_factory=dict)  # management, after the second client left
    after_restart: list[str] | None = None

    @property
    def queue(self) -> str:
        return f"{self.client_id}.{self.name}"

    @property
    def kind(self) -> str:
        """``both``, ``held missing`` (the stuck delivery) or ``other``."""
        if sorted(self.received) == sorted(MESSAGES):
            return "both"
        stuck = self.counts.get("getMessageCount") == 1 and self.counts.get("getDeliveringCount") == 1
        if self.received == ["backlog"] and stuck:
            return "held missing"
        return "other"


def _manage(probe: ArtemisProbe, resource: str, operation: str, *params: object) -> tuple[bool, bytes]:
    admin = raw_stomp_client(probe.broker)
    try:
        return probe.manage(admin, resource, operation, *params)
    finally:
        admin.disconnect()


def _count(probe: ArtemisProbe, queue: str, operation: str) -> int | None:
    ok, body = _manage(probe, f"queue.{queue}", operation)
    if not ok:
        return None
    value = json.loads(body)
    return int(value[0] if isinstance(value, list) else value)


def _hold_and_kill(broker: BrokerHandle, client_id: str, topic: str, name: str) -> float:
    """The holder receives ``held`` and is SIGKILLed; returns when (time.monotonic()) it was killed."""
    argv = [sys.executable, "-c", HOLDER, broker.host, str(broker.port), broker.user, broker.password]
    holder = subprocess.Popen(
        [*argv, client_id, topic, name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None
        line = holder.stdout.readline().strip()
        if line != "READY":
            raise RuntimeError(
                f"the holder did not subscribe: {line!r} {holder.stderr.read() if holder.stderr else ''}"
            )
        producer = raw_stomp_client(broker)
        for body in MESSAGES:
            headers = {"destination-type": "MULTICAST", "persistent": "true", "receipt": body}
            producer.send(topic, body.encode(), headers=headers)
            producer.receiveFrame()  # the receipt: the broker has the message
        producer.disconnect()
        line = holder.stdout.readline().strip()
        if line != "GOT held":
            raise RuntimeError(f"the holder should have received 'held' first, got {line!r}")
    finally:
        holder.kill()
        killed = time.monotonic()
        holder.wait(10)
    return killed


def _reattach(broker: BrokerHandle, client_id: str, topic: str, name: str, killed: float) -> tuple[Any, Any]:
    """The second client, subscribed as soon as the broker lets it, and its first frame (RECEIPT or MESSAGE)."""
    headers = {
        "id": "1",
        "ack": "auto",
        "subscription-type": "MULTICAST",
        "durable-subscription-name": name,
        "receipt": "subscribed",
    }
    while True:
        client = raw_stomp_client(broker, client_id=client_id)
        client.subscribe(topic, headers)
        frame = client.receiveFrame() if client.canRead(5) else None
        if frame is not None and frame.command in ("RECEIPT", "MESSAGE"):
            return client, frame
        # Refused: the dead holder's consumer is still there (max-consumers=1); the broker may have closed.
        with contextlib.suppress(Exception):
            client.disconnect()
        if time.monotonic() - killed > REATTACH_S:
            raise RuntimeError(f"the subscription was not reachable {REATTACH_S} s after the SIGKILL")
        time.sleep(0.01)


def trial(broker: BrokerHandle, probe: ArtemisProbe) -> Outcome:
    tag = uuid.uuid4().hex[:8]
    client_id, topic, name = f"jmslike-control-c-{tag}", f"jmslike-control-t-{tag}", f"s{tag}"
    queue = f"{client_id}.{name}"
    config = {
        "name": queue,
        "address": topic,
        "routing-type": "MULTICAST",
        "durable": True,
        "max-consumers": 1,
    }
    created, detail = _manage(probe, "broker", "createQueue", json.dumps(config), True)
    if not created:
        raise RuntimeError(f"createQueue {queue}: {detail!r}")
    killed = _hold_and_kill(broker, client_id, topic, name)
    client, frame = _reattach(broker, client_id, topic, name, killed)
    attached = time.monotonic()
    received: list[str] = []
    if frame.command == "MESSAGE":
        received.append(frame.body.decode())
    last = attached
    try:
        while time.monotonic() < attached + WAIT_S:
            if len(received) >= len(MESSAGES) and time.monotonic() - last > SETTLE_S:
                break
            if client.canRead(0.1):
                frame = client.receiveFrame()
                if frame.command == "MESSAGE":
                    received.append(frame.body.decode())
                    last = time.monotonic()
    finally:
        client.disconnect()
    outcome = Outcome(client_id, topic, name, received, round((attached - killed) * 1000))
    for operation in ("getMessageCount", "getDeliveringCount", "getConsumerCount"):
        outcome.counts[operation] = _count(probe, queue, operation)
    if outcome.kind == "both":
        _manage(probe, "broker", "destroyQueue", queue)
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    args = control_arguments(
        "artemis_stuck_delivery",
        "Raw STOMP control: a killed durable subscriber's held message on Artemis.",
        100,
        argv,
    )

    def read_back(probe: ArtemisProbe, outcome: Outcome) -> None:
        outcome.after_restart = probe.durable_backlog(outcome.client_id, outcome.topic, outcome.name, 2.0)

    outcomes = run_trials(args, trial, lambda outcome: outcome.kind != "both", read_back)
    missing = [outcome for outcome in outcomes if outcome.kind != "both"]
    kinds = [outcome.kind for outcome in outcomes]
    print('| trials | both delivered | "held" missing | other |')
    print("|---|---|---|---|")
    print(
        f"| {len(outcomes)} | {kinds.count('both')} | {kinds.count('held missing')} | {kinds.count('other')} |"
    )
    if missing:
        print()
        print(
            "| subscription | outcome | received | messages | delivering | consumers | SIGKILL to re-attach | after a graceful restart |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for outcome in missing:
            counts = [
                outcome.counts.get(op) for op in ("getMessageCount", "getDeliveringCount", "getConsumerCount")
            ]
            back = "not restarted" if outcome.after_restart is None else str(outcome.after_restart)
            print(
                f"| {outcome.queue} | {outcome.kind} | {outcome.received} | {counts[0]} | {counts[1]} | {counts[2]} "
                f"| {outcome.attach_ms} ms | {back} |"
            )
    lost = [o for o in missing if o.kind == "held missing" and o.after_restart not in (None, ["held"])]
    return 1 if "other" in kinds or lost else 0


if __name__ == "__main__":
    sys.exit(main())

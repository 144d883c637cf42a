"""Does Artemis give back the unacknowledged delivery of a dropped connection? A raw STOMP control.

    ARTEMIS_HOME=... python -m jmslike.conformance.artemis_dropped_delivery [--trials 150] [--no-restart]
        [--launcher process|docker]

The evidence behind the Artemis xfail of the reconnect tests that drop a connection holding a queue delivery
(tests/integration/test_connection_listener.py, test_aio.py: ``probes.xfail_if_artemis_delivery_stuck``). No
jmslike code between the control and the broker: stompest clients and jmslike's fault proxy (a TCP relay).
Each trial: a holder connected through the proxy subscribes to a new ANYCAST queue (``client-individual``);
``held`` is sent to it (PERSISTENT, receipted); once the holder has it -- never acknowledged -- the proxy
drops the connection, closing both sockets, as the tests' ``proxy.drop()`` does. A second client subscribes
directly and waits up to 10 s for ``held``.

Outcomes: **back**; **stuck** -- not back, and management shows the queue with one message, delivering, that
no consumer holds (``ArtemisProbe.delivery_stuck``, the signature of the stuck delivery the SIGKILL control
``artemis_stuck_delivery`` found: docs/artemis.md); **other** -- anything else. Unless ``--no-restart``, when
a trial was stuck the broker is then restarted gracefully and each such queue read again: the message should
come back. Exit status 1 when a trial was **other** or a stuck message did not come back after the restart.

The addressing matters: a destination without ``destination-type``/``subscription-type`` is a MULTICAST
address on Artemis, whose subscription queue is deleted, message and all, with the dropped consumer. A first
version of this control (2026-11-29) made that mistake and blamed Artemis for every trial.
"""

from __future__ import annotations

import contextlib
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from jmslike.conformance.artemis_controls import control_arguments, run_trials
from jmslike.conformance.brokers import BrokerHandle
from jmslike.conformance.proxy import FaultProxy
from jmslike.conformance.suite.probe import ArtemisProbe, raw_stomp_client

WAIT_S = 10.0  # how long the second client waits for the held message


@dataclass
class Outcome:
    queue: str
    back_ms: int | None  # from the drop to the redelivery; None: not back within WAIT_S
    stuck: bool = False
    after_restart: list[str] | None = None

    @property
    def kind(self) -> str:
        """``back``, ``stuck`` or ``other``."""
        if self.back_ms is not None:
            return "back"
        return "stuck" if self.stuck else "other"


def _next_frame(client: Any, command: str, within_s: float) -> Any:
    """The next ``command`` frame from a stompest client within ``within_s``, or None."""
    deadline = time.monotonic() + within_s
    while client.canRead(max(0.0, deadline - time.monotonic())):
        frame = client.receiveFrame()
        if frame.command == command:
            return frame
    return None


def trial(broker: BrokerHandle, probe: ArtemisProbe) -> Outcome:
    queue = f"jmslike-control-q-{uuid.uuid4().hex[:8]}"
    subscription = {"id": "1", "ack": "client-individual", "subscription-type": "ANYCAST", "receipt": "on"}
    with FaultProxy(broker.host, broker.port) as proxy:
        holder = raw_stomp_client(broker, port=proxy.port)
        holder.subscribe(queue, subscription)
        if _next_frame(holder, "RECEIPT", 10.0) is None:
            raise RuntimeError(f"the holder's subscription to {queue} was not confirmed")
        producer = raw_stomp_client(broker)
        producer.send(
            queue, b"held", headers={"destination-type": "ANYCAST", "persistent": "true", "receipt": "s"}
        )
        if _next_frame(producer, "RECEIPT", 10.0) is None:
            raise RuntimeError("the send was not confirmed")
        producer.disconnect()
        if _next_frame(holder, "MESSAGE", 10.0) is None:
            raise RuntimeError("the holder did not receive 'held'")
        proxy.drop()
        dropped = time.monotonic()
        with contextlib.suppress(Exception):  # its socket is dead: close our end
            holder.close()
    second = raw_stomp_client(broker)
    try:
        second.subscribe(queue, {**subscription, "ack": "auto"})
        frame = _next_frame(second, "MESSAGE", WAIT_S)
        back_ms = round((time.monotonic() - dropped) * 1000) if frame is not None else None
    finally:
        second.disconnect()
    outcome = Outcome(queue, back_ms)
    if back_ms is None:
        outcome.stuck = probe.delivery_stuck(queue)
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    args = control_arguments(
        "artemis_dropped_delivery",
        "Raw STOMP control: a dropped connection's unacknowledged queue delivery on Artemis.",
        150,
        argv,
    )

    def read_back(probe: ArtemisProbe, outcome: Outcome) -> None:
        outcome.after_restart = probe.queue_bodies(outcome.queue, 2.0)

    outcomes = run_trials(args, trial, lambda outcome: outcome.kind != "back", read_back)
    missing = [outcome for outcome in outcomes if outcome.kind != "back"]
    kinds = [outcome.kind for outcome in outcomes]
    back = sorted(o.back_ms for o in outcomes if o.back_ms is not None)
    median = f"{back[len(back) // 2]} ms" if back else "-"
    print("| trials | back (median after the drop) | stuck | other |")
    print("|---|---|---|---|")
    print(
        f"| {len(outcomes)} | {kinds.count('back')} ({median}) | {kinds.count('stuck')} | {kinds.count('other')} |"
    )
    if missing:
        print()
        print("| queue | outcome | after a graceful restart |")
        print("|---|---|---|")
        for outcome in missing:
            after = "not restarted" if outcome.after_restart is None else str(outcome.after_restart)
            print(f"| {outcome.queue} | {outcome.kind} | {after} |")
    lost = [o for o in missing if o.kind == "stuck" and o.after_restart not in (None, ["held"])]
    return 1 if "other" in kinds or lost else 0


if __name__ == "__main__":
    sys.exit(main())

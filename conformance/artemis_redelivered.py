"""Does Artemis flag a delivered, unacknowledged message redelivered after a restart? A raw STOMP control.

    ARTEMIS_HOME=... python -m jmslike.conformance.artemis_redelivered [--trials 20] [--modes graceful,kill]
        [--launcher process|docker]

The evidence behind the ``ack.unacked-*-back-after-restart`` deviation on Artemis (conformance/suite/expectations.py):
no jmslike code between the test and the broker, only stompest. Each trial sends one PERSISTENT message to a fresh
anycast queue, receives it on a ``client-individual`` subscription that never acknowledges and stays connected,
restarts the broker (graceful: SIGTERM, the broker's own shutdown; kill: SIGKILL), and receives it again on a new
connection, reading the ``redelivered`` header. The table counts flagged, unflagged and missing per mode; the exit
status is 1 when a message went missing (that would be a loss, not a flag). Results: docs/artemis.md.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections import Counter
from collections.abc import Sequence

from jmslike.conformance.brokers import BrokerHandle, RestartMode, launch
from jmslike.conformance.suite.probe import raw_stomp_client

ANYCAST_SEND = {"destination-type": "ANYCAST"}
ANYCAST_SUBSCRIBE = {"subscription-type": "ANYCAST", "ack": "client-individual", "id": "1"}


def trial(broker: BrokerHandle, mode: RestartMode) -> str:
    """One trial: ``flagged``, ``unflagged`` or ``missing``."""
    queue = f"jmslike-control-{uuid.uuid4().hex[:8]}"
    producer = raw_stomp_client(broker)
    producer.send(queue, b"held", headers={**ANYCAST_SEND, "persistent": "true", "receipt": "sent"})
    producer.receiveFrame()  # the receipt: the broker has the message
    producer.disconnect()
    holder = raw_stomp_client(broker)
    holder.subscribe(queue, headers=ANYCAST_SUBSCRIBE)
    first = holder.receiveFrame()
    if first.command != "MESSAGE":
        raise RuntimeError(f"expected the message, got {first.command} {first.headers}")
    broker.restart(mode)  # the holder never acknowledged and is cut off by the restart
    consumer = raw_stomp_client(broker)
    try:
        consumer.subscribe(queue, headers=ANYCAST_SUBSCRIBE)
        if not consumer.canRead(10):
            return "missing"
        again = consumer.receiveFrame()
        consumer.ack(again)
        return "flagged" if again.headers.get("redelivered") == "true" else "unflagged"
    finally:
        consumer.disconnect()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jmslike.conformance.artemis_redelivered",
        description="Raw STOMP control: Artemis's redelivered flag after a broker restart.",
    )
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--modes", default="graceful,kill", help="graceful, kill")
    parser.add_argument("--launcher", default="process", help="process or docker")
    args = parser.parse_args(argv)
    modes: list[RestartMode] = []
    for mode in args.modes.split(","):
        if mode not in ("graceful", "kill"):
            parser.error(f"unknown mode {mode!r}; expected graceful or kill")
        modes.append("graceful" if mode == "graceful" else "kill")
    counts: dict[str, Counter[str]] = {mode: Counter() for mode in modes}
    with launch("artemis", args.launcher) as broker:
        for mode in modes:
            for _ in range(args.trials):
                counts[mode][trial(broker, mode)] += 1
    print("| restart | trials | flagged | unflagged | missing |")
    print("|---|---|---|---|---|")
    for mode, seen in counts.items():
        print(f"| {mode} | {args.trials} | {seen['flagged']} | {seen['unflagged']} | {seen['missing']} |")
    return 1 if any(seen["missing"] for seen in counts.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

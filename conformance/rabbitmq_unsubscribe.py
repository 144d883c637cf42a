"""What happens to RabbitMQ deliveries that reach a subscription while it is unsubscribed? A raw STOMP control.

    python -m jmslike.conformance.rabbitmq_unsubscribe [--messages 50]

The evidence for what jmslike cannot do on RabbitMQ 3.10 (README, "Brokers"): hand back at once the messages the
broker pushed to a consumer that is closing. No jmslike code between the test and the broker, only stompest. A
queue holds ``--messages`` messages; client A subscribes (``client-individual``, prefetch = all of them), takes
one and UNSUBSCRIBEs with a receipt; the control counts what still arrives after that, NACKs one late arrival,
counts what a second client B can receive while A stays connected, and what B receives once A disconnects.
Printed as a table; the exit status is 1 when B did not get every message in the end (a loss).
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Sequence
from typing import Any

from jmslike.conformance.brokers import BrokerHandle, launch
from jmslike.conformance.suite.probe import raw_stomp_client


def _drain(client: Any, quiet_s: float) -> list[Any]:
    """Every frame until ``quiet_s`` pass without one."""
    frames: list[Any] = []
    while client.canRead(quiet_s):
        frames.append(client.receiveFrame())
    return frames


def control(broker: BrokerHandle, messages: int) -> dict[str, str]:
    queue = f"/queue/jmslike-control-{uuid.uuid4().hex[:8]}"
    producer = raw_stomp_client(broker)
    for i in range(messages):
        producer.send(queue, str(i).encode(), headers={"persistent": "true"})
    producer.send(queue, b"end", headers={"receipt": "sent"})
    producer.receiveFrame()
    producer.disconnect()
    total = messages + 1
    a = raw_stomp_client(broker)
    a.subscribe(queue, headers={"ack": "client-individual", "id": "1", "prefetch-count": str(total)})
    first = a.receiveFrame()
    a.unsubscribe(("id", "1"), receipt="unsubscribed")
    after = _drain(a, 2.0)
    late = [f for f in after if f.command == "MESSAGE"]
    a.nack(late[0] if late else first, receipt="nacked")
    answers = _drain(a, 2.0)
    nack = ", ".join(f"{f.command} {f.headers.get('message', '')}".strip() for f in answers)
    b = raw_stomp_client(broker)
    b.subscribe(queue, headers={"ack": "auto", "id": "2"})
    while_connected = len(_drain(b, 2.0))
    a.disconnect()
    after_disconnect = len(_drain(b, 3.0))
    b.disconnect()
    return {
        "messages in the queue": str(total),
        "MESSAGE frames after the UNSUBSCRIBE receipt": str(len(late)),
        "answer to a NACK of one of them": nack or "(none)",
        "B receives while A stays connected": str(while_connected),
        "B receives once A disconnected": str(after_disconnect),
        "lost": str(total - while_connected - after_disconnect),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jmslike.conformance.rabbitmq_unsubscribe",
        description="Raw STOMP control: RabbitMQ deliveries that arrive while a subscription is unsubscribed.",
    )
    parser.add_argument("--messages", type=int, default=50)
    args = parser.parse_args(argv)
    with launch("rabbitmq") as broker:
        result = control(broker, args.messages)
    print("| observation | value |")
    print("|---|---|")
    for key, value in result.items():
        print(f"| {key} | {value} |")
    return 1 if result["lost"] != "0" else 0


if __name__ == "__main__":
    sys.exit(main())

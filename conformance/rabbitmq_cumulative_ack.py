"""Does a cumulative ``ack:client`` ACK on RabbitMQ reach across subscriptions? A raw STOMP control.

    python -m jmslike.conformance.rabbitmq_cumulative_ack

The evidence for why DUPS_OK_ACKNOWLEDGE on RabbitMQ acknowledges every message on its own (as AUTO does) instead
of lazily with one cumulative ACK, as on ActiveMQ (README, docs/performance.md). No jmslike code between the
control and the broker, only stompest. Two queues with one message each; one connection subscribes to queue B
then to queue A, both ``ack:client``, and takes b1 then a1; it ACKs a1 only and closes. A second connection then
looks for both messages. The same run, on the same broker, repeats it without the ACK (the control's control:
both must come back, so their absence above is the ACK's doing).

Seen on RabbitMQ 3.10 (2026-11-26): with the ACK of a1 only, b1 is gone too; without it, both come back. The
subscriptions of a STOMP connection share one AMQP channel, and the ACK is ``basic.ack`` with ``multiple``
over the channel's delivery tags (the ack ids end in ``@@1`` and ``@@2``). A lazy cumulative ACK from one
session would so acknowledge messages another consumer on the connection has buffered but not yet delivered,
and those would be lost if the client then failed: DUPS_OK allows duplicates, not losses. The exit status is
1 when what came back differs from that observation (the broker changed: revisit DUPS_OK on RabbitMQ).
"""

from __future__ import annotations

import argparse
import sys
import uuid
from collections.abc import Sequence
from typing import Any

from jmslike.conformance.brokers import BrokerHandle, launch
from jmslike.conformance.suite.probe import raw_stomp_client

QUIET_S = 3.0


def _message(client: Any, subscription: str) -> Any:
    frame = client.receiveFrame()
    if frame.command != "MESSAGE" or frame.headers.get("subscription") != subscription:
        raise RuntimeError(
            f"expected a MESSAGE for subscription {subscription}, got {frame.command} {frame.headers}"
        )
    return frame


def control(broker: BrokerHandle, ack_a1: bool) -> dict[str, str]:
    run = uuid.uuid4().hex[:8]
    queue_a, queue_b = f"/queue/jmslike-control-a-{run}", f"/queue/jmslike-control-b-{run}"
    producer = raw_stomp_client(broker)
    for queue in (queue_b, queue_a):
        producer.send(queue, queue.encode(), headers={"persistent": "true", "receipt": f"sent-{queue}"})
        producer.receiveFrame()
    producer.disconnect()
    consumer = raw_stomp_client(broker)
    consumer.subscribe(queue_b, headers={"ack": "client", "id": "b", "prefetch-count": "10"})
    b1 = _message(consumer, "b")
    consumer.subscribe(queue_a, headers={"ack": "client", "id": "a", "prefetch-count": "10"})
    a1 = _message(consumer, "a")
    if ack_a1:
        consumer.ack(a1, receipt="acked")
        answer = consumer.receiveFrame()
        if answer.command != "RECEIPT":
            raise RuntimeError(f"the ACK was answered by {answer.command} {answer.headers}")
    consumer.disconnect()
    checker = raw_stomp_client(broker)
    back: dict[str, bool] = {}
    for name, queue in (("b1", queue_b), ("a1", queue_a)):
        checker.subscribe(queue, headers={"ack": "auto", "id": name})
        back[name] = checker.canRead(QUIET_S) and _message(checker, name) is not None
    checker.disconnect()
    return {
        "ack ids (b1, a1)": f"{b1.headers.get('ack', '?')}, {a1.headers.get('ack', '?')}",
        "b1 back after reconnect": "yes" if back["b1"] else "no",
        "a1 back after reconnect": "yes" if back["a1"] else "no",
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jmslike.conformance.rabbitmq_cumulative_ack",
        description="Raw STOMP control: does RabbitMQ's cumulative ACK reach across subscriptions?",
    )
    parser.parse_args(argv)
    with launch("rabbitmq") as broker:
        results = {
            "ACK of a1 only": control(broker, ack_a1=True),
            "no ACK (the control's control)": control(broker, ack_a1=False),
        }
    print("| run | ack ids (b1, a1) | b1 back after reconnect | a1 back after reconnect |")
    print("|---|---|---|---|")
    for run, result in results.items():
        print(f"| {run} | {' | '.join(result.values())} |")
    seen = [(r["b1 back after reconnect"], r["a1 back after reconnect"]) for r in results.values()]
    # Both back without the ACK; neither with it (b1 taken by a1's ACK): what RabbitMQ 3.10 did.
    return 0 if seen == [("no", "no"), ("yes", "yes")] else 1


if __name__ == "__main__":
    sys.exit(main())

"""What does RabbitMQ's STOMP do when the broker rejects a publish? A raw STOMP control.

    python -m jmslike.conformance.rabbitmq_nacked_publish

The evidence for what a JMS send to a full RabbitMQ queue raises through jmslike (README, "Brokers"): the queue is
declared through the management API with ``x-max-length: 1`` and ``x-overflow: reject-publish``, so the broker
takes the first message and nacks every later publish (AMQP ``basic.nack`` to the STOMP plugin's channel). No
jmslike code between the control and the broker, only stompest and HTTP. Two runs, each on a fresh queue and a
fresh connection sending four messages addressed as ``/amq/queue/NAME``: one with a receipt on every SEND, one
with a receipt on the last SEND only. The control records the frames that come back and whether the connection
is still open after them.

Seen on RabbitMQ 3.10 (2026-11-27): with a receipt on every SEND, the first is answered and the second ends the
connection, with no ERROR and no further RECEIPT; with a receipt on the last SEND only, the connection ends with
no frame at all. The plugin's reader handles ``basic.ack`` and has no clause for ``basic.nack``. So on RabbitMQ a
rejected publish looks, on the wire, like a broker that went away: jmslike can raise only ConnectionLostException,
never ResourceAllocationException, and a receipt on a later SEND does not cover an earlier rejected one. The exit
status is 1 when the frames differ from that observation (the broker changed: revisit the README's sentence).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import sys
import urllib.parse
import urllib.request
import uuid
from collections.abc import Sequence
from typing import Any

from jmslike.conformance.brokers import BrokerHandle, launch
from jmslike.conformance.suite.probe import raw_stomp_client

QUIET_S = 3.0
SENDS = 4


def _management(broker: BrokerHandle, method: str, name: str, body: dict[str, Any] | None = None) -> None:
    """One call of RabbitMQ's management API on the queue ``name`` (STOMP's SEND headers cannot set
    ``x-overflow``)."""
    if broker.management_url is None:
        raise SystemExit("this control needs RabbitMQ's management API (the broker handle names none)")
    url = f"{broker.management_url}/api/queues/%2F/{urllib.parse.quote(name, safe='')}"
    token = base64.b64encode(f"{broker.user}:{broker.password}".encode()).decode()
    request = urllib.request.Request(
        url,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json", "Authorization": f"Basic {token}"},
    )
    with urllib.request.urlopen(request, timeout=30):
        pass


def _answers(client: Any) -> tuple[list[str], bool]:
    """The frames that arrive until ``QUIET_S`` pass without one, and whether the connection is still open."""
    frames: list[str] = []
    try:
        while client.canRead(QUIET_S):
            frame = client.receiveFrame()
            label = frame.headers.get("receipt-id") or frame.headers.get("message", "")
            frames.append(f"{frame.command} {label}".strip())
    except Exception as error:  # stompest raises on the end of the stream: that is the observation
        frames.append(f"connection ended ({type(error).__name__})")
        return frames, False
    return frames, True


def control(broker: BrokerHandle, receipts: str) -> dict[str, str]:
    name = f"jmslike-control-full-{uuid.uuid4().hex[:8]}"
    full = {
        "x-max-length": 1,
        "x-overflow": "reject-publish",
    }  # keeps one message, rejects every later publish
    _management(broker, "PUT", name, {"durable": False, "auto_delete": False, "arguments": full})
    client = raw_stomp_client(broker)
    try:
        for i in range(SENDS):
            headers = {"receipt": f"sent-{i}"} if receipts == "every SEND" or i == SENDS - 1 else {}
            client.send(f"/amq/queue/{name}", f"m{i}".encode(), headers=headers)
        frames, still_open = _answers(client)
        if still_open:
            client.disconnect()
    finally:
        with contextlib.suppress(Exception):
            client.close(flush=False)
        _management(broker, "DELETE", name)
    return {
        "frames back": ", ".join(frames) or "(none)",
        "connection open after": "yes" if still_open else "no",
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jmslike.conformance.rabbitmq_nacked_publish",
        description="Raw STOMP control: what RabbitMQ's STOMP does when a publish is rejected (nacked).",
    )
    parser.parse_args(argv)
    with launch("rabbitmq") as broker:
        results = {run: control(broker, run) for run in ("every SEND", "the last SEND only")}
    print(
        f"| receipt on | frames back ({SENDS} SENDs to a queue holding at most 1) | connection open after |"
    )
    print("|---|---|---|")
    for run, result in results.items():
        print(f"| {run} | {' | '.join(result.values())} |")
    seen = [(r["frames back"], r["connection open after"]) for r in results.values()]
    # What RabbitMQ 3.10 did: the first SEND's receipt, then the end; with one receipt, the end alone.
    ended = "connection ended"
    expected = (
        len(seen) == 2
        and seen[0][1] == "no"
        and seen[0][0].startswith("RECEIPT sent-0, " + ended)
        and seen[1][1] == "no"
        and seen[1][0].startswith(ended)
    )
    return 0 if expected else 1


if __name__ == "__main__":
    sys.exit(main())

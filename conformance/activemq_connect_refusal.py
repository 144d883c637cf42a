"""Does ActiveMQ always say why it refuses a CONNECT? A raw STOMP control.

    python -m jmslike.conformance.activemq_connect_refusal [--trials 1000] [--launcher process|docker]

The evidence behind jmslike asking a broker once more when it closes the connection during CONNECT without an
ERROR frame (``SilentConnectRefusal`` in jmslike/contract.py). No jmslike code between the control and the
broker, only a socket: an ActiveMQ with one user is sent ``--trials`` CONNECT frames with a wrong password, each
on a new connection, and everything the broker sends until it closes is read. The table counts refusals that
carried an ERROR frame, silent closes (no bytes at all) and anything else; the exit status is 1 when a CONNECT
with a wrong password was accepted. Results: docs/conformance.md.
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections import Counter
from collections.abc import Sequence

from jmslike.conformance.brokers import BrokerHandle, launch
from jmslike.conformance.brokers.activemq import ActiveMQUser
from jmslike.conformance.brokers.readiness import build_connect_frame

USER = ActiveMQUser("control", "r1ght-pw")
TIMEOUT_S = 10.0


def trial(broker: BrokerHandle) -> str:
    """One refused CONNECT: ``error`` (an ERROR frame, then the close), ``silent`` (closed, nothing sent),
    ``connected`` (the wrong password was accepted) or ``other``."""
    frame = build_connect_frame(host=broker.host, login=USER.username, passcode="wrong-" + USER.password)
    received = b""
    with socket.create_connection((broker.host, broker.port), timeout=TIMEOUT_S) as sock:
        sock.sendall(frame)
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass  # a reset after the ERROR frame still counts what arrived before it
    text = received.lstrip(b"\r\n")
    if not text:
        return "silent"
    if text.startswith(b"ERROR"):
        return "error"
    return "connected" if text.startswith(b"CONNECTED") else "other"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jmslike.conformance.activemq_connect_refusal",
        description="Raw STOMP control: does ActiveMQ send an ERROR frame for every CONNECT it refuses?",
    )
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--launcher", default="process", help="process or docker")
    args = parser.parse_args(argv)
    seen: Counter[str] = Counter()
    with launch("activemq", args.launcher, users=(USER,)) as broker:
        for _ in range(args.trials):
            seen[trial(broker)] += 1
    print(
        "| CONNECTs with a wrong password | ERROR frame, then closed | closed silently | accepted | other |"
    )
    print("|---|---|---|---|---|")
    print(f"| {args.trials} | {seen['error']} | {seen['silent']} | {seen['connected']} | {seen['other']} |")
    return 1 if seen["connected"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""What does a broker do with a STOMP client that stops reading while it keeps sending heart-beats? A raw control.

    python -m jmslike.conformance.held_reader [--broker rabbitmq|activemq] [--hold 30] [--heartbeat-ms 10000]

The evidence behind jmslike's byte bound (jmslike/flow.py) per broker. No jmslike code between the control and the
broker: a plain socket. A queue holds 60 messages of 256 KiB. The client CONNECTs with ``heart-beat:N,N``,
SUBSCRIBEs with a prefetch of 5000, then reads nothing for ``--hold`` seconds while writing a heart-beat every
half second (as a client does whose application is busy: TCP holds the broker back). Then it SENDs with a receipt
and reads on. Printed as a table: whether the connection was still open, whether the SEND was answered. Run
once with heart-beats and once without. Exit status 1 when the broker dropped the connection.

Measured 2026-11-26 (``--hold 30 --heartbeat-ms 10000``): RabbitMQ 3.10 reset the connection in both runs
(and after a 3 s hold with 1 s heart-beats; a 3 s hold without heart-beats survived); ActiveMQ 5.17 answered
the SEND in both runs.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
import uuid
from collections.abc import Sequence

from jmslike.conformance.brokers import BrokerHandle, launch
from jmslike.conformance.suite.probe import raw_stomp_client

MESSAGES, SIZE = 60, 256 * 1024


def _frame(command: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = "".join(f"{k}:{v}\n" for k, v in headers.items())
    return f"{command}\n{lines}\n".encode() + body + b"\x00"


def _read_until(sock: socket.socket, marker: bytes, timeout_s: float) -> tuple[bytes, bool]:
    """What arrives until ``marker`` (True) or the end of the stream / the timeout (False)."""
    sock.settimeout(timeout_s)
    data = b""
    deadline = time.monotonic() + timeout_s
    try:
        while marker not in data and time.monotonic() < deadline:
            chunk = sock.recv(65536)
            if not chunk:
                return data, False
            data += chunk
    except (TimeoutError, OSError):
        return data, False
    return data, marker in data


def control(broker: BrokerHandle, hold_s: float, heartbeat_ms: int) -> dict[str, str]:
    queue = f"/queue/jmslike-held-{uuid.uuid4().hex[:8]}"
    producer = raw_stomp_client(broker)
    for _ in range(MESSAGES):
        producer.send(queue, b"x" * SIZE, headers={"persistent": "true"})
    producer.send(queue, b"end", headers={"receipt": "filled"})
    producer.receiveFrame()
    producer.disconnect()
    sock = socket.create_connection((broker.host, broker.port), timeout=10)
    try:
        sock.sendall(
            _frame(
                "CONNECT",
                {
                    "accept-version": "1.2",
                    "host": "/",
                    "login": broker.user,
                    "passcode": broker.password,
                    "heart-beat": f"{heartbeat_ms},{heartbeat_ms}",
                },
            )
        )
        connected, ok = _read_until(sock, b"\x00", 10)
        if not ok or not connected.startswith(b"CONNECTED"):
            raise RuntimeError(f"no CONNECTED: {connected[:200]!r}")
        sock.sendall(
            _frame(
                "SUBSCRIBE",
                {
                    "id": "1",
                    "destination": queue,
                    "ack": "client-individual",
                    "prefetch-count": "5000",  # RabbitMQ
                    "activemq.prefetchSize": "5000",  # ActiveMQ
                },
            )
        )
        deadline = time.monotonic() + hold_s
        while time.monotonic() < deadline:  # the busy application: write heart-beats, read nothing
            try:
                sock.sendall(b"\n")
            except OSError:
                break
            time.sleep(0.5)
        try:
            sock.sendall(_frame("SEND", {"destination": queue + "-side", "receipt": "after-hold"}, b"probe"))
            sent = "yes"
        except OSError as exc:
            sent = f"no ({exc})"
        data, answered = _read_until(sock, b"receipt-id:after-hold", 30)
    finally:
        sock.close()
    return {
        "heart-beat (ms)": str(heartbeat_ms),
        "held (s)": f"{hold_s:.0f}",
        "SEND written after the hold": sent,
        "MESSAGE frames read after the hold": str(data.count(b"MESSAGE\n")),
        "SEND answered (connection still open)": "yes"
        if answered
        else "no: the broker closed the connection",
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jmslike.conformance.held_reader",
        description="Raw STOMP control: a client that stops reading but keeps sending heart-beats.",
    )
    parser.add_argument("--broker", choices=("rabbitmq", "activemq"), default="rabbitmq")
    parser.add_argument("--hold", type=float, default=30.0)
    parser.add_argument("--heartbeat-ms", type=int, default=10_000)
    args = parser.parse_args(argv)
    with launch(args.broker) as broker:
        results = [control(broker, args.hold, hb) for hb in (args.heartbeat_ms, 0)]
    print("| observation | " + " | ".join(f"run {i + 1}" for i in range(len(results))) + " |")
    print("|---|" + "---|" * len(results))
    for key in results[0]:
        print(f"| {key} | " + " | ".join(r[key] for r in results) + " |")
    return 1 if any(r["SEND answered (connection still open)"] != "yes" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

"""How far apart does a broker send its STOMP heart-beats? A raw STOMP control.

    python -m jmslike.conformance.heartbeat_gaps [--broker activemq] [--period-ms 1000] [--seconds 8]

The evidence for how long jmslike lets a broker be silent before it drops the connection
(``SILENCE_TOLERANCE`` in ``adapters/stomp_core.py``, README "Connection recovery"). No jmslike code between the
control and the broker: a plain socket sends CONNECT with ``heart-beat:P,P``, beats every P ms itself, sends
nothing else, and records when bytes arrive. Printed: the broker's CONNECTED heart-beat header and every gap
between arrivals, in periods.

Seen on 2026-11-27 at P = 1000 (and 500, 2000 on ActiveMQ): ActiveMQ 5.17 sends its first heart-beat two periods
after CONNECTED, then one a period; RabbitMQ 3.10 one every half period; Artemis 2.21 one a period. With
stomp.py's tolerance of 1.5 periods, every idle connection to ActiveMQ was dropped 1.5 periods after it opened
(and after each reconnect). The exit status is 1 when a gap reaches the tolerance jmslike uses (the broker
changed: revisit it).
"""

from __future__ import annotations

import argparse
import itertools
import socket
import sys
import threading
import time
from collections.abc import Sequence

from jmslike.adapters.stomp_core import SILENCE_TOLERANCE
from jmslike.conformance.brokers import BrokerHandle, launch


def gaps(broker: BrokerHandle, period_ms: int, seconds: float) -> tuple[str, list[float]]:
    """The broker's CONNECTED ``heart-beat`` header, and the gaps between what arrived after it (the last one up
    to the end of the run), in periods of ``period_ms`` (the broker may negotiate a longer one: the header says)."""
    period = period_ms / 1000
    connect = (
        f"CONNECT\naccept-version:1.1,1.2\nhost:/\nlogin:{broker.user}\npasscode:{broker.password}\n"
        f"heart-beat:{period_ms},{period_ms}\n\n\x00"
    )
    stop = threading.Event()
    with socket.create_connection((broker.host, broker.port), timeout=10) as sock:
        sock.sendall(connect.encode())

        def beat() -> None:
            while not stop.wait(period):
                sock.sendall(b"\n")

        beater = threading.Thread(target=beat, daemon=True)
        beater.start()
        sock.settimeout(period / 4)
        header, arrivals, buffer = "", [], b""
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline:
                try:
                    data = sock.recv(4096)
                except TimeoutError:
                    continue
                if not data:
                    raise SystemExit("the broker closed the connection")
                arrivals.append(time.monotonic())
                if not header:
                    buffer += data
                    if b"\n\n" in buffer:
                        head = buffer.split(b"\n\n", 1)[0].decode()
                        header = next(
                            (line for line in head.splitlines() if line.startswith("heart-beat:")), "?"
                        )
        finally:
            stop.set()
            beater.join()
    # The silence from the last arrival to the end counts too: a broker that beats twice, then stops, must fail.
    ends = [*arrivals, deadline] if arrivals else []
    return header, [round((later - earlier) / period, 2) for earlier, later in itertools.pairwise(ends)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jmslike.conformance.heartbeat_gaps",
        description="Raw STOMP control: the gaps between a broker's heart-beats, in heart-beat periods.",
    )
    parser.add_argument("--broker", default="activemq", choices=("activemq", "rabbitmq", "artemis"))
    parser.add_argument("--period-ms", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args(argv)
    with launch(args.broker) as broker:
        header, seen = gaps(broker, args.period_ms, args.seconds)
    print(f"{args.broker}: CONNECTED {header}; gaps after it, in periods of {args.period_ms} ms: {seen}")
    widest = max(seen, default=0.0)
    print(f"widest gap: {widest} periods; jmslike drops a broker silent for {SILENCE_TOLERANCE}")
    return 0 if seen and widest < SILENCE_TOLERANCE else 1


if __name__ == "__main__":
    sys.exit(main())

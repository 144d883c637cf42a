"""Does a later RECEIPT prove that ActiveMQ accepted the receipt-less SENDs before it? A raw STOMP control.

    python -m jmslike.conformance.activemq_receipt_order [--trials 100] [--launcher process|docker]

The evidence behind jmslike asking a receipt for every unwaited NON_PERSISTENT send (issue #21,
docs/performance.md) instead of one receipt per batch: a batch receipt would only be sound if the broker
answered frames in order, so that a refusal of a receipt-less SEND always arrived before the RECEIPT of a
later frame. No jmslike code, only a socket: an ActiveMQ with a user who may write to ``allowed.>`` only gets
20 receipt-less SENDs it may make, one to a queue it may not, 20 more it may make and a last one with
``receipt:cover``; the control records whether the ERROR for the refused SEND came before the RECEIPT,
after it (within 2 s), or not at all. The exit status is 1 when an ERROR never came.
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections import Counter
from collections.abc import Iterator, Sequence

from jmslike.conformance.brokers import BrokerHandle, launch
from jmslike.conformance.brokers.activemq import ActiveMQPermission, ActiveMQUser
from jmslike.conformance.brokers.readiness import build_connect_frame

LIMITED = ("limited",)
ADMINS = ("admins",)
USER = ActiveMQUser("limited", "l1mited-pw", LIMITED)
BROKER_OPTIONS = {
    "users": (USER, ActiveMQUser("admin", "adm1n-pw", ADMINS)),
    "authorization": (
        ActiveMQPermission(">", read=ADMINS, write=ADMINS, admin=ADMINS),
        ActiveMQPermission(">", topic=True, read=ADMINS, write=ADMINS, admin=ADMINS),
        ActiveMQPermission("allowed.>", read=LIMITED, write=LIMITED, admin=LIMITED),
    ),
}
PERMITTED = b"SEND\ndestination:/queue/allowed.control\npersistent:false\n\nx\x00"
REFUSED = b"SEND\ndestination:/queue/forbidden.control\npersistent:false\n\nx\x00"
COVER = b"SEND\ndestination:/queue/allowed.control\npersistent:false\nreceipt:cover\n\nx\x00"
LATE_S = 2.0


def _frames(sock: socket.socket) -> Iterator[bytes]:
    """Server frames' command lines, in order, until the socket closes or times out."""
    buffered = b""
    while chunk := sock.recv(65536):
        buffered += chunk
        while b"\x00" in buffered:
            frame, _, buffered = buffered.partition(b"\x00")
            frame = frame.lstrip(b"\r\n")
            if frame:
                yield frame.split(b"\n", 1)[0]


def trial(broker: BrokerHandle) -> str:
    """``before`` (ERROR, then RECEIPT), ``after`` (RECEIPT, then ERROR within 2 s) or ``never``."""
    with socket.create_connection((broker.host, broker.port), timeout=10) as sock:
        sock.sendall(build_connect_frame(host="localhost", login=USER.username, passcode=USER.password))
        frames = _frames(sock)
        if next(frames) != b"CONNECTED":
            raise RuntimeError("the control user could not connect")
        sock.sendall(PERMITTED * 20 + REFUSED + PERMITTED * 20 + COVER)
        seen: list[bytes] = []
        try:
            for command in frames:
                seen.append(command)
                if command == b"RECEIPT":
                    sock.settimeout(LATE_S)
                if b"ERROR" in seen and b"RECEIPT" in seen:
                    break
        except TimeoutError:
            pass
    if b"ERROR" not in seen:
        return "never"
    return "before" if seen.index(b"ERROR") < seen.index(b"RECEIPT") else "after"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jmslike.conformance.activemq_receipt_order",
        description="Raw STOMP control: does ActiveMQ refuse a receipt-less SEND before a later frame's RECEIPT?",
    )
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--launcher", default="process", help="process or docker")
    args = parser.parse_args(argv)
    seen: Counter[str] = Counter()
    with launch("activemq", args.launcher, **BROKER_OPTIONS) as broker:
        for _ in range(args.trials):
            seen[trial(broker)] += 1
    print("| trials | ERROR before the later RECEIPT | ERROR after it | no ERROR |")
    print("|---|---|---|---|")
    print(f"| {args.trials} | {seen['before']} | {seen['after']} | {seen['never']} |")
    return 1 if seen["never"] else 0


if __name__ == "__main__":
    sys.exit(main())

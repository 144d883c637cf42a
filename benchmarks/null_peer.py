"""``python -m benchmarks.null_peer [--seconds S] [--rounds N] [--size BYTES] [--json FILE]``: the client's own CPU per send.

Against a real broker, a client's CPU per message moves with the broker's batching of receipts and with
whatever else the machine does. This runs the send workloads of ``benchmarks/workloads.py`` (and the asyncio
API's) against a *null STOMP peer*: a Python socket server in a process of its own that answers CONNECT and
every ``receipt`` header at once and keeps nothing. Each client case runs in a fresh child process, so
``time.process_time()`` of that child (every thread: stomp.py's receiver, jmslike's) is the client's CPU and
nothing else's. The peer speaks STOMP 1.1 as ActiveMQ does (``activemq://`` URLs).

Cases run in alternating order each round; the table gives the median µs per message and the ratio to raw
stomp.py doing the same work (same-work raw: synchronous receipted sends for PERSISTENT, receipts pipelined
in jmslike's default send window for NON_PERSISTENT; for PERSISTENT sends with a JMS 2.0 CompletionListener the same, each
completion run on a thread of its own as JMS has it) and to raw fire-and-forget, and how many full garbage collections the
timed section ran per 100,000 messages (what a client holds per send in flight drives them). Issue #20's target is jmslike ≤ raw
same-work CPU in both APIs; #21's NON_PERSISTENT target is at least 0.8 of raw fire-and-forget's rate.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

from . import aio_workloads as aio
from . import workloads as w

SIZE = 256  # bytes per message unless --size says otherwise

#: case name → what it runs (in the child process) and the raw case it is compared with.
CASES: dict[str, tuple[Callable[[w.Bench, int], float], str]] = {
    "raw PERSISTENT sync": (
        lambda b, size: w.publish_sync(b, size, "raw", drain=False),
        "raw PERSISTENT sync",
    ),
    "raw NON_PERSISTENT, receipts pipelined": (
        lambda b, size: w.publish_non_persistent(b, size, "raw", drain=False),
        "raw NON_PERSISTENT, receipts pipelined",
    ),
    "raw NON_PERSISTENT, fire-and-forget": (
        lambda b, size: w.publish_non_persistent(b, size, "raw-ff", drain=False),
        "raw NON_PERSISTENT, fire-and-forget",
    ),
    "raw PERSISTENT, receipts pipelined": (
        lambda b, size: w.publish_async(b, size, "raw", drain=False),
        "raw PERSISTENT, receipts pipelined",
    ),
    "raw PERSISTENT, receipts pipelined, callback thread": (
        lambda b, size: w.publish_async(b, size, "raw", callback_thread=True, drain=False),
        "raw PERSISTENT, receipts pipelined, callback thread",
    ),
    "jmslike PERSISTENT sync": (
        lambda b, size: w.publish_sync(b, size, "jmslike", drain=False),
        "raw PERSISTENT sync",
    ),
    "jmslike PERSISTENT, completion listener": (
        lambda b, size: w.publish_async(b, size, "jmslike", drain=False),
        "raw PERSISTENT, receipts pipelined, callback thread",
    ),
    "jmslike NON_PERSISTENT": (
        lambda b, size: w.publish_non_persistent(b, size, "jmslike", drain=False),
        "raw NON_PERSISTENT, receipts pipelined",
    ),
    "jmslike NON_PERSISTENT, send_coalesce_us=0": (
        lambda b, size: w.publish_non_persistent(
            dataclasses.replace(b, url=f"{b.url}?send_coalesce_us=0"), size, "jmslike", drain=False
        ),
        "raw NON_PERSISTENT, receipts pipelined",
    ),
    "jmslike.aio PERSISTENT sync": (
        lambda b, size: aio.publish(b, size, True, drain=False),
        "raw PERSISTENT sync",
    ),
    "jmslike.aio NON_PERSISTENT": (
        lambda b, size: aio.publish(b, size, False, drain=False),
        "raw NON_PERSISTENT, receipts pipelined",
    ),
    "jmslike.aio PERSISTENT, completion listener": (
        lambda b, size: aio.publish_async(b, size, drain=False),
        "raw PERSISTENT, receipts pipelined, callback thread",
    ),
}
FIRE_AND_FORGET = "raw NON_PERSISTENT, fire-and-forget"


# -- the peer -------------------------------------------------------------------------------------------


def _frames(buffer: bytearray) -> list[bytes]:
    """Take whole frames (their command and header block) off ``buffer``; bodies are skipped by
    content-length, or up to the NUL when there is none. Heart-beat EOLs are dropped."""
    frames: list[bytes] = []
    while True:
        start = 0
        while start < len(buffer) and buffer[start] in b"\r\n":
            start += 1
        end_of_headers = buffer.find(b"\n\n", start)
        if end_of_headers < 0:
            del buffer[:start]
            return frames
        head = bytes(buffer[start:end_of_headers])
        length_at = head.find(b"\ncontent-length:")
        if length_at >= 0:
            length_end = head.find(b"\n", length_at + 1)
            length = int(head[length_at + 16 : length_end if length_end > 0 else len(head)])
            end = end_of_headers + 2 + length
            if len(buffer) < end + 1:
                del buffer[:start]
                return frames
        else:
            end = buffer.find(b"\x00", end_of_headers + 2)
            if end < 0:
                del buffer[:start]
                return frames
        frames.append(head)
        del buffer[: end + 1]


def _header(head: bytes, name: bytes) -> bytes | None:
    at = head.find(b"\n" + name + b":")
    if at < 0:
        return None
    start = at + len(name) + 2
    end = head.find(b"\n", start)
    return head[start : end if end >= 0 else len(head)]


def _serve_one(conn: socket.socket) -> None:
    buffer = bytearray()
    with conn:
        while True:
            try:
                chunk = conn.recv(1 << 16)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            replies: list[bytes] = []
            closing = False
            for head in _frames(buffer):
                command = head.split(b"\n", 1)[0]
                if command in (b"CONNECT", b"STOMP"):
                    replies.append(b"CONNECTED\nversion:1.1\nheart-beat:0,0\nserver:null-peer\n\n\x00")
                    continue
                receipt = _header(head, b"receipt")
                if receipt is not None:
                    replies.append(b"RECEIPT\nreceipt-id:" + receipt + b"\n\n\x00")
                closing = closing or command == b"DISCONNECT"
            if replies:
                conn.sendall(b"".join(replies))
            if closing:
                return


def serve(listener: socket.socket) -> None:
    """Answer every connection on ``listener`` until the process is ended."""
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_serve_one, args=(conn,), daemon=True).start()


def _peer_main(listener: socket.socket) -> None:
    serve(listener)


@contextlib.contextmanager
def running_peer() -> Iterator[int]:
    """A null peer in a process of its own, on a free loopback port (yielded), ended on exit."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    peer = multiprocessing.get_context("fork").Process(target=_peer_main, args=(listener,), daemon=True)
    peer.start()
    listener.close()
    try:
        yield port
    finally:
        peer.terminate()
        peer.join(10)


def with_baselines(names: list[str]) -> list[str]:
    """``names`` and the raw cases they are compared with (fire-and-forget too when a NON_PERSISTENT case runs)."""
    names = list(names)
    for baseline in {CASES[n][1] for n in names} | (
        {FIRE_AND_FORGET} if any("NON_P" in n for n in names) else set()
    ):
        if baseline not in names:
            names.append(baseline)
    return names


# -- the clients ------------------------------------------------------------------------------------------


def _bench(port: int, seconds: float) -> w.Bench:
    return w.Bench(
        kind="activemq",
        host="127.0.0.1",
        port=port,
        user="bench",
        password="bench",
        url=f"activemq://127.0.0.1:{port}",
        duration_s=seconds,
        backlog=0,
        latency_rate=0,
        latency_s=0.0,
    )


def case_command(case: str, port: int, seconds: float, size: int = SIZE) -> list[str]:
    """The child that runs ``case`` once against the peer on ``port``; its last line of output is its CPU µs per
    message, full collections per 100k messages, and messages in the timed section."""
    return [
        sys.executable,
        "-m",
        "benchmarks.null_peer",
        "--case",
        case,
        "--port",
        str(port),
        "--seconds",
        str(seconds),
        "--size",
        str(size),
    ]


def _run_case(case: str, port: int, seconds: float, size: int) -> tuple[float, float]:
    """In a fresh child: run ``case`` once; its CPU µs per message and full collections per 100k messages."""
    out = subprocess.run(
        case_command(case, port, seconds, size),
        check=True,
        capture_output=True,
        text=True,
        timeout=seconds * 10 + 60,
    ).stdout
    cpu, full_gcs, _ = out.strip().splitlines()[-1].split()
    return float(cpu), float(full_gcs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.null_peer", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="timed section of each case (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, order alternating (default 3)")
    parser.add_argument("--only", default="", help="comma-separated substrings of case names to run")
    parser.add_argument("--json", help="write every round's values here")
    parser.add_argument("--size", type=int, default=SIZE, help=f"message body bytes (default {SIZE})")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # the child's side
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        CASES[args.case][0](_bench(args.port, args.seconds), args.size)
        print(f"{w.CPU.last:.3f} {w.CPU.full_gcs:.2f} {w.CPU.messages}")
        return 0
    names = with_baselines([n for n in CASES if not args.only or any(s in n for s in args.only.split(","))])
    values: dict[str, list[float]] = {n: [] for n in names}
    full_gcs: dict[str, list[float]] = {n: [] for n in names}
    with running_peer() as port:
        for round_no in range(args.rounds):
            for name in names if round_no % 2 == 0 else list(reversed(names)):
                cpu, collections = _run_case(name, port, args.seconds, args.size)
                values[name].append(cpu)
                full_gcs[name].append(collections)
                print(
                    f"round {round_no + 1}: {name}: {cpu:.1f} µs, {collections:.1f} full GCs", file=sys.stderr
                )
    median = {n: statistics.median(v) for n, v in values.items()}
    print(
        f"client CPU per {args.size} B send against a null STOMP peer, median of {args.rounds} rounds (µs; lower is better)"
    )
    print("| case | µs / message | / raw same work | raw fire-and-forget / this | full GCs / 100k messages |")
    print("|---|---|---|---|---|")
    for name in names:
        same = median[name] / median[CASES[name][1]]
        ff = median[FIRE_AND_FORGET] / median[name] if "NON_P" in name else float("nan")
        collections = statistics.median(full_gcs[name])
        print(
            f"| {name} | {median[name]:.1f} | {same:.2f} | {'' if ff != ff else f'{ff:.2f}'} | {collections:.1f} |"
        )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(
                {
                    "size": args.size,
                    "seconds": args.seconds,
                    "values": values,
                    "full_gcs": full_gcs,
                    "pid": os.getpid(),
                },
                out,
                indent=2,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

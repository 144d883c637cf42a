"""``python -m benchmarks.instructions [--only CASES] [--short S] [--long S] [--size BYTES]``: instructions per message, not seconds.

CPU time per message on a shared 2-core VM moves by ±4% between runs of the same code (docs/performance.md), more
than most changes worth making to the send path. Valgrind's callgrind counts the instructions a process runs, and
that count repeats to within 0.5-2% for the same code whatever else the machine is doing. This runs each case
of :mod:`benchmarks.null_peer` (the client against a null STOMP peer, in a child process of its own) under
callgrind twice, with a short and a long timed section, and divides the difference in instructions by the
difference in messages: start-up, imports, connecting and the warm-up cancel out, every thread of the client is
counted, and the peer (not under valgrind) is not.

What it does not count: the kernel's work (system calls: raw stomp.py makes one ``sendto`` per frame, jmslike one
per batch of coalesced frames), waiting, and what threads cost in switches and caches. So it is the measure of the
client's own path, a change's effect on it, and the ratio to raw stomp.py's; the CPU time of
``python -m benchmarks.null_peer`` and of the broker runs stays the measure of the whole. Under valgrind threads run
one at a time and everything runs about 50 times slower, so a case sends a few thousand messages, and timing-bound
behaviour (how many frames a batch holds) differs from a native run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from .null_peer import CASES, SIZE, case_command, running_peer, with_baselines

#: callgrind's total line in its output file: ``summary: N`` (older releases: ``totals: N``).
_TOTAL = re.compile(r"^(?:summary|totals):\s+(\d+)", re.MULTILINE)


@dataclass(frozen=True)
class Count:
    """One run of a case under callgrind: instructions of the whole client process, messages of its timed section."""

    instructions: int
    messages: int


def per_message(short: Count, long: Count) -> float:
    """Instructions per message from two runs of one case: what the extra messages of the longer run cost."""
    extra = long.messages - short.messages
    if extra <= 0:
        raise ValueError(
            f"the longer run sent {long.messages} messages, the shorter {short.messages}: no difference"
        )
    return (long.instructions - short.instructions) / extra


def parse_total(callgrind_out: str) -> int:
    """The instruction total in a callgrind output file's text."""
    found = _TOTAL.search(callgrind_out)
    if found is None:
        raise ValueError("no summary or totals line in the callgrind output")
    return int(found.group(1))


def _run(case: str, port: int, seconds: float, size: int) -> Count:
    """The case in a child process under callgrind, every thread counted together."""
    with tempfile.TemporaryDirectory(prefix="jmslike-callgrind-") as scratch:
        out_file = os.path.join(scratch, "callgrind.out")
        child = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={out_file}",
                *case_command(case, port, seconds, size),
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=seconds * 20 + 300,
        )
        messages = int(child.stdout.strip().splitlines()[-1].split()[2])
        with open(out_file, encoding="utf-8") as counts:
            return Count(parse_total(counts.read()), messages)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.instructions", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--only", default="", help="comma-separated substrings of case names to run")
    parser.add_argument(
        "--short", type=float, default=2.0, help="timed section of the short run, s (default 2)"
    )
    parser.add_argument(
        "--long", type=float, default=6.0, help="timed section of the long run, s (default 6)"
    )
    parser.add_argument("--size", type=int, default=SIZE, help=f"message body bytes (default {SIZE})")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print(
            "valgrind is not installed (Debian: apt-get install valgrind); nothing measured", file=sys.stderr
        )
        return 2
    names = with_baselines([n for n in CASES if not args.only or any(s in n for s in args.only.split(","))])
    result: dict[str, float] = {}
    with running_peer() as port:
        for name in names:
            short, long = _run(name, port, args.short, args.size), _run(name, port, args.long, args.size)
            result[name] = per_message(short, long)
            print(
                f"{name}: {result[name]:,.0f} instructions per message "
                f"({short.messages} and {long.messages} messages)",
                file=sys.stderr,
            )
    print(
        f"client instructions per {args.size} B message against a null STOMP peer (callgrind; lower is better)"
    )
    print("| case | instructions / message | / raw same work |")
    print("|---|---|---|")
    for name in names:
        print(f"| {name} | {result[name]:,.0f} | {result[name] / result[CASES[name][1]]:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

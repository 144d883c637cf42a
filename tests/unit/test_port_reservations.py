"""Ports handed out by the launchers are reserved across processes, and reclaimed from dead owners."""

from __future__ import annotations

import os
import subprocess
import sys

from jmslike.conformance.brokers import ports

HOLDER = """
import sys
from jmslike.conformance.brokers import ports
assert ports._reserve(int(sys.argv[1]))
print("held", flush=True)
sys.stdin.readline()
"""


def test_a_live_process_keeps_its_reservation_and_a_dead_one_loses_it() -> None:
    port = 1  # never handed out by free_port (below its range), so no clash with real launches
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert not ports._reserve(port)
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert ports._reserve(port)  # the owner is dead: its reservation is stale and taken over
    (ports._reservations() / str(port)).unlink()


def test_free_port_reserves_what_it_hands_out() -> None:
    port = ports.free_port()
    assert (ports._reservations() / str(port)).read_text() == str(os.getpid())
    assert not ports._reserve(port)

"""The stop request of ``python -m jmslike.conformance.brokers run``: a signal handler that cannot deadlock.

The command used to set a ``threading.Event`` from its handler; a signal landing while the main thread held the
Event's lock inside ``wait()`` hung it for good (CI, 2026-11-26). The hammer test below is that situation
thousands of times a second. With a fresh ``threading.Event`` in place of each :class:`StopSignals` it hung in 5 of
5 runs (2026-11-27; faulthandler showed the handler blocked in ``Event.set`` -> ``Condition.__enter__`` under the
main thread's own ``Event.wait`` -> ``Condition._is_owned``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading

from jmslike.conformance.brokers.stop_signals import StopSignals

HAMMER = textwrap.dedent(
    """
    import faulthandler, os, signal, sys, threading, time
    from jmslike.conformance.brokers.stop_signals import StopSignals

    faulthandler.dump_traceback_later(50, exit=True)  # a hang shows where it hangs
    def hammer():
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            os.kill(os.getpid(), signal.SIGUSR1)

    StopSignals().install(signal.SIGUSR1)  # before the first signal: the default action ends the process
    sender = threading.Thread(target=hammer, daemon=True)
    sender.start()
    turns = stopped = 0
    while sender.is_alive():
        # A fresh request each turn, as the command has when its first signal comes: nothing received yet.
        stop = StopSignals()
        stop.install(signal.SIGUSR1)
        stopped += stop.wait(0)
        turns += 1
    print("turns", turns, "stopped", stopped)
    """
)


def test_a_signal_landing_anywhere_in_the_wait_loop_never_hangs_it() -> None:
    result = subprocess.run(
        [sys.executable, "-c", HAMMER], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    found = re.search(r"turns (\d+) stopped (\d+)", result.stdout)
    assert found is not None, result.stdout
    assert int(found.group(2)) > 0, f"no turn saw a signal, so nothing was tested: {result.stdout}"


def test_wait_returns_when_a_signal_arrives_and_says_which() -> None:
    previous = signal.getsignal(signal.SIGUSR1)
    try:
        stop = StopSignals()
        stop.install(signal.SIGUSR1)
        assert stop.wait(0.01) is False
        assert stop.received is None
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        assert stop.wait(30.0) is True
        assert stop.received == signal.SIGUSR1
    finally:
        signal.signal(signal.SIGUSR1, previous)

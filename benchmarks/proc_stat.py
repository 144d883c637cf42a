"""A process's CPU time from ``/proc/<pid>/stat`` (Linux), and waiting until a broker has nothing left to do.

The benchmark's rounds (benchmarks/rounds.py) balance which client goes first, but not what the broker still does
for the measurement before: on ActiveMQ, the first measurement of a workload group after the NON_PERSISTENT
sends (whose queue is emptied untimed) ran up to a quarter slower than the same measurement last in its group.
So each measurement starts once the broker's process has been idle for a moment (:func:`wait_until_idle`; the
benchmark launches its brokers as local processes). It waits before a measurement, not inside it: what a consume
measurement's own untimed fill leaves the broker is still there when its timed drain starts, for both clients alike.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` from the third (state) on, or None when the process is gone; field
    ``n`` of proc(5) is at index ``n - 3`` (the name, which may hold spaces, is skipped). ``pid`` may also name a
    thread, ``"self/task/<tid>"`` (benchmarks/threads.py)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[-1].split()


def cpu_seconds(fields: list[str]) -> float:
    """User plus system CPU seconds of the process whose :func:`stat_fields` these are (utime, stime)."""
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def wait_until_idle(
    pid: int | None, busy_below: float = 0.1, window_s: float = 0.25, limit_s: float = 20.0
) -> float:
    """Wait until process ``pid`` used less than ``busy_below`` of one core over ``window_s``, at most
    ``limit_s``; returns the seconds waited (0 when there is no local process to watch: ``pid`` None, or gone)."""
    if pid is None:
        return 0.0
    started = time.monotonic()
    fields = stat_fields(pid)
    while fields is not None and time.monotonic() - started < limit_s:
        time.sleep(window_s)  # sampling a process's CPU clock: nothing to wait on but time
        later = stat_fields(pid)
        if later is None or cpu_seconds(later) - cpu_seconds(fields) < busy_below * window_s:
            break
        fields = later
    return time.monotonic() - started

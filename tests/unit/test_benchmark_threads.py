"""benchmarks.threads: a sampled window's counters divided out per send (pure arithmetic, no broker)."""

from __future__ import annotations

import time

import pytest

from benchmarks.threads import Sample, costs, thread_cpu


def test_costs_divide_each_threads_growth_and_count_a_new_thread_from_zero() -> None:
    before = {1: Sample("publisher", 1.0, 0.5, 100), 2: Sample("reader", 2.0, 1.0, 50)}
    after = {
        1: Sample("publisher", 1.3, 0.6, 300),
        2: Sample("reader", 2.1, 1.1, 90),
        3: Sample("writer", 0.05, 0.05, 10),  # started inside the window
    }
    cost = costs(before, after, 10_000)
    assert cost.per_role == pytest.approx({"publisher": 40.0, "reader": 20.0, "writer": 10.0})
    assert cost.user_us == pytest.approx(45.0)
    assert cost.system_us == pytest.approx(25.0)
    assert cost.switches == pytest.approx(0.025)


def test_thread_cpu_reads_the_main_threads_cpu_under_its_role() -> None:
    def main_cpu() -> float:
        (sample,) = [s for s in thread_cpu().values() if s.role == "publisher"]
        return sample.user_s + sample.system_s

    start, spun = main_cpu(), time.thread_time()
    while time.thread_time() - spun < 0.1:  # CPU, not wall-clock time: the kernel counts it in 10 ms ticks
        pass
    assert main_cpu() - start >= 0.05

"""The transport's one-shot receipt signal (``Done``): a state machine, tested without a broker."""

from __future__ import annotations

import threading
import time

from jmslike.adapters.transport import Done


def test_wait_before_set_times_out_with_false() -> None:
    done = Done()
    started = time.monotonic()
    assert done.wait(0.05) is False
    assert time.monotonic() - started >= 0.04
    assert not done.is_set()


def test_wait_after_set_returns_true_every_time() -> None:
    done = Done()
    done.set()
    assert done.is_set()
    assert done.wait(0) is True
    assert done.wait(0) is True
    assert done.wait() is True


def test_second_set_is_ignored() -> None:
    done = Done()
    done.set()
    done.set()  # would raise RuntimeError (release of an unlocked lock) if not guarded
    assert done.wait(0) is True


def test_negative_timeout_means_do_not_wait() -> None:
    assert Done().wait(-1.0) is False


def test_set_releases_every_waiting_thread() -> None:
    done = Done()
    results: list[bool] = []
    lock = threading.Lock()
    waiting = threading.Barrier(5)

    def waiter() -> None:
        waiting.wait(5)
        outcome = done.wait(10)
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=waiter) for _ in range(4)]
    for thread in threads:
        thread.start()
    waiting.wait(5)
    done.set()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive(), "a waiter was not released by set()"
    assert results == [True] * 4

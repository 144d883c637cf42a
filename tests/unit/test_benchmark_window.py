"""The benchmarks' raw side pipelines as many receipts as jmslike's default send window lets be in flight, at any
body size (benchmarks.workloads.window): otherwise the "same work" rows would compare different windows."""

from __future__ import annotations

import pytest

from benchmarks import workloads as w
from jmslike.config import parse_url
from jmslike.send_window import SendPlaces


def _places_taken(size: int) -> int:
    """How many sends of ``size`` bytes a fresh default window takes before it is full."""
    config = parse_url("activemq://127.0.0.1:61613")  # a URL without window options: the defaults
    places = SendPlaces(config.send_window, config.send_window_bytes, 1.0)
    taken = 0
    while places.try_take(size):
        taken += 1
    return taken


@pytest.mark.parametrize("size", [1, 256, 1024, 4096, 4097, 16_384, 5 * 1024 * 1024])
def test_raw_window_is_what_jmslike_default_window_admits(size: int) -> None:
    assert w.window(size) == _places_taken(size)

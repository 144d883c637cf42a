"""Benchmarks of jmslike against raw stomp.py (not shipped): ``python -m benchmarks --help``."""

from typing import Any


def launch_options(broker: str) -> dict[str, Any]:
    """Launcher options for benchmark brokers. ActiveMQ: a large heap, and a store limit the backlogs
    cannot reach: unconsumed publish-workload messages pin KahaDB journal files, and a full 2 GB store
    blocks producers for good."""
    return {"heap_mb": 2048, "store_limit": "40 gb"} if broker == "activemq" else {}

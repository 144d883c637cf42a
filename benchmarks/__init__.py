"""Benchmarks of jmslike against raw stomp.py (not shipped): ``python -m benchmarks --help``."""

from typing import Any


def launch_options(broker: str) -> dict[str, Any]:
    """Launcher options for benchmark brokers. ActiveMQ: a large heap, and store and temp limits the
    backlogs cannot reach: unconsumed publish-workload messages pin KahaDB journal files (PERSISTENT) or
    fill the temp store (NON_PERSISTENT, ~25,000 x 4 KB per unwaited measurement), and a full store
    blocks producers for good."""
    if broker != "activemq":
        return {}
    return {"heap_mb": 2048, "store_limit": "40 gb", "temp_limit": "40 gb"}

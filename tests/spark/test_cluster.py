"""The ``jms`` source on a Spark standalone cluster: executors in their own JVMs, each with its own Python
workers that unpickle the reader and read staged chunks from the staging location all of them share.

The cluster (tests/spark/conftest.py ``spark_cluster``: a master and two one-core workers on loopback,
started from the installed PySpark by jmslike.conformance.spark_cluster) runs for the whole session; the
driver is tests/spark/driver.py with ``--master spark://...`` in client mode, as spark_sink/README.md
describes. Faults: SIGKILL of a worker with its executor JVM (the node is lost; Spark runs the lost tasks
again on the other executor, and the restarted worker gets a new executor, which must run tasks too), of
the driver, and of the broker. Two lanes make every batch two or more tasks, so both executors read chunks.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import MESSAGES, Pipeline, subscribe
from faults import KillRounds, kill_durability, source_options


def _restart_worker(cluster: Any, index: int) -> Callable[[], None]:
    def fault() -> None:
        cluster.kill_worker(index)
        cluster.start_worker(index)

    return fault


@pytest.mark.restart
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_cluster_lanes_exactly_once_through_worker_driver_and_broker_sigkills(
    broker: Any,
    unique_name: str,
    pipeline_factory: Callable[[dict[str, str]], Pipeline],
    spark_cluster: Any,
) -> None:
    client_id, name = f"{unique_name}-c", f"{unique_name}-s"
    lanes = ["lane = 'even'", "lane = 'odd'"]
    names = [f"{name}-lane{i}" for i in range(len(lanes))]
    subscribe(broker, unique_name, client_id, list(zip(names, lanes, strict=True)))
    pipeline = pipeline_factory(
        source_options(
            broker,
            unique_name,
            client_id,
            name,
            maxMessagesPerTrigger="400",
            stagingChunkMessages="100",
            laneSelectors=json.dumps(lanes),
        )
    )
    tasks_before = [spark_cluster.tasks_run(i) for i in range(2)]
    rounds = KillRounds(
        pipeline,
        broker,
        unique_name,
        lambda: pipeline.start("run", "--master", spark_cluster.master_url),
        seed=unique_name,
        extra_faults={f"worker{i}": _restart_worker(spark_cluster, i) for i in range(2)},
    )
    with kill_durability(broker):
        rounds.run(["worker0", "driver", "broker", "worker1"], MESSAGES)
        rounds.check(client_id, names)
    tasks = [spark_cluster.tasks_run(i) - before for i, before in enumerate(tasks_before)]
    assert all(n > 0 for n in tasks), f"tasks finished per worker: {tasks}; both executors should read chunks"
    assert spark_cluster.tasks_run(0, since_start=True) > 0, (
        "worker 0's new executor ran no task after its restart"
    )

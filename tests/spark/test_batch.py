"""``spark.read.format("jms")``: a batch read of what a subscription holds now, open until committed.

Spark tells a batch reader nothing about the job that used its rows, so a read stays open (every
``load()`` returns it again) until ``commit_read``; spark_sink/batch.py has the argument. Checked here on
real brokers and real Spark: the rows, the same rows on every action and every ``load()`` before the
commit, the next messages after it, a bounded read, and a job SIGKILLed between its write and its commit
that runs again into the same output exactly once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import child_env, publish, subscribe
from faults import assert_backlog_empty, assert_exactly_once, source_options

from jmslike.spark_sink import commit_read, open_read
from jmslike.spark_sink.options import OptionError


def _load(spark: Any, options: dict[str, str]) -> Any:
    reader = spark.read.format("jms")
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def _ids(frame: Any) -> list[str]:
    return [row["messageId"] for row in frame.select("messageId").collect()]


@pytest.fixture
def topic(broker: Any, unique_name: str, tmp_path: Path) -> Iterator[tuple[str, str, dict[str, str]]]:
    """A durable subscription (client ID, name) and the batch reader's options for it."""
    client_id, name = f"{unique_name}-c", f"{unique_name}-s"
    subscribe(broker, unique_name, client_id, [(name, None)])
    options = source_options(
        broker,
        unique_name,
        client_id,
        name,
        stagingLocation=str(tmp_path / "staging"),
        receiveTimeoutMs="1000",
    )
    yield client_id, name, options


@pytest.mark.timeout(300)
def test_a_read_stays_open_until_committed(
    spark: Any, broker: Any, unique_name: str, topic: tuple[str, str, dict[str, str]]
) -> None:
    client_id, name, options = topic
    first = publish(broker, unique_name, 300)
    frame = _load(spark, options)
    assert frame.columns[0] == "messageId" and not frame.isStreaming
    assert_exactly_once(_ids(frame), first)
    assert frame.count() == 300  # a second action reads the same staged chunks
    assert open_read(options).read == 1 and open_read(options).open

    second = publish(broker, unique_name, 120, start=300)
    assert_exactly_once(_ids(_load(spark, options)), first)  # not committed: the same rows again

    committed = commit_read(options)
    assert committed is not None and committed.read == 1 and not committed.open
    assert commit_read(options) is None  # nothing open any more
    frame = _load(spark, options)
    assert_exactly_once(_ids(frame), second)
    assert open_read(options).read == 2
    with pytest.raises(OptionError, match="read 2, not read 1"):
        commit_read(options, read=1)  # a read planned after yours is not yours to commit
    assert commit_read(options, read=2) is not None
    assert _load(spark, options).count() == 0  # drained: an empty read, open like any other
    empty = open_read(options)
    assert (empty.read, empty.empty, empty.open) == (3, True, True)
    assert commit_read(options, read=3) is not None
    assert_backlog_empty(broker, client_id, unique_name, [name])


@pytest.mark.timeout(300)
def test_max_messages_per_trigger_bounds_a_read(
    spark: Any, broker: Any, unique_name: str, topic: tuple[str, str, dict[str, str]]
) -> None:
    client_id, name, options = topic
    options = {**options, "maxMessagesPerTrigger": "200", "stagingChunkMessages": "100"}
    published = publish(broker, unique_name, 450)
    seen: list[str] = []
    sizes = []
    for _ in range(4):
        ids = _ids(_load(spark, options))
        sizes.append(len(ids))
        seen += ids
        commit_read(options)
    assert max(sizes) <= 200 and sizes[-1] == 0, sizes
    assert_exactly_once(seen, published)
    assert_backlog_empty(broker, client_id, unique_name, [name])


JOB = textwrap.dedent(
    """
    import json, os, signal, sys
    from pyspark.sql import SparkSession
    from jmslike.spark_sink import commit_read, open_read, register

    options, output, die = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3] == "die"
    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "512m").getOrCreate())
    register(spark)
    read = open_read(options)  # the open read, or a new one drained now: name the output by it
    reader = spark.read.format("jms")
    for name, value in options.items():
        reader = reader.option(name, value)
    reader.load().write.mode("overwrite").parquet(f"{output}/read={read.read}")
    if die:
        os.killpg(0, signal.SIGKILL)  # written, not committed: the job is lost here
    commit_read(options, read=read.read)
    print(json.dumps({"read": read.read}), flush=True)
    """
)


@pytest.mark.restart
@pytest.mark.timeout(400)
def test_a_job_killed_before_its_commit_runs_again_exactly_once(
    broker: Any, unique_name: str, topic: tuple[str, str, dict[str, str]], tmp_path: Path
) -> None:
    """The recipe in spark_sink/README.md: overwrite a directory named by the read, then commit."""
    client_id, name, options = topic
    output = tmp_path / "output"
    published = publish(broker, unique_name, 300)

    def job(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", JOB, json.dumps(options), str(output), mode],
            env=child_env(),
            capture_output=True,
            text=True,
            timeout=300,
            start_new_session=True,
        )

    killed = job("die")
    assert killed.returncode == -9, killed.stderr[-2000:]
    published += publish(broker, unique_name, 100, start=300)  # the next read's
    for expected_read in (1, 2):
        done = job("commit")
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads(done.stdout.splitlines()[-1]) == {"read": expected_read}

    import pyarrow.parquet as pq

    ids = [str(i) for i in pq.read_table(output, columns=["messageId"]).column(0).to_pylist()]
    assert_exactly_once(ids, published)
    assert sorted(p.name for p in output.iterdir() if p.name.startswith("read=")) == ["read=1", "read=2"]
    assert_backlog_empty(broker, client_id, unique_name, [name])

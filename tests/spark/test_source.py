"""The ``jms`` stream source on real brokers and real Spark: rows, triggers, limits, and exactly once
through SIGKILLs of the Spark driver and of the broker.

The sink is Spark's Parquet file sink (idempotent: it records committed files in ``_spark_metadata``);
what it holds is read back through that log, as Spark itself reads it. The broker side is checked with
the conformance probes (raw STOMP on ActiveMQ, the management API on RabbitMQ), not with jmslike.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import MESSAGES, ROUNDS, Pipeline, broker_url, publish, subscribe
from faults import KillRounds, assert_backlog_empty, assert_exactly_once, kill_durability, source_options

from jmslike import DeliveryMode


@pytest.mark.timeout(300)
def test_available_now_reads_the_backlog_with_every_column(
    broker: Any, unique_name: str, pipeline_factory: Callable[[dict[str, str]], Pipeline]
) -> None:
    client_id, name = f"{unique_name}-c", f"{unique_name}-s"
    subscribe(broker, unique_name, client_id, [(name, None)])
    published = publish(broker, unique_name, 300)
    published += publish(broker, unique_name, 20, start=300, mode=DeliveryMode.NON_PERSISTENT)
    pipeline = pipeline_factory(source_options(broker, unique_name, client_id, name))
    pipeline.run("available-now")

    import pyarrow.parquet as pq

    assert_exactly_once(pipeline.sink_ids(), published)
    table = pq.read_table(pipeline.output, columns=None).to_pylist()
    row = next(r for r in table if r["text"] == "message 7")
    assert row["messageId"] == published[7]
    assert row["destination"] == f"topic://{unique_name}"
    assert row["deliveryMode"] == DeliveryMode.PERSISTENT and row["priority"] == 4
    assert row["redelivered"] is False and row["expiration"] == 0
    assert row["timestamp"] is not None
    assert ("n", "7") in row["properties"] and ("lane", "odd") in row["properties"]
    assert row["body"] == b"message 7"
    assert sum(1 for r in table if r["deliveryMode"] == DeliveryMode.NON_PERSISTENT) == 20
    assert_backlog_empty(broker, client_id, unique_name, [name])


@pytest.mark.timeout(300)
def test_processing_trigger_honours_max_messages_per_trigger_across_lanes(
    broker: Any, unique_name: str, pipeline_factory: Callable[[dict[str, str]], Pipeline]
) -> None:
    client_id, name = f"{unique_name}-c", f"{unique_name}-s"
    lanes = ["lane = 'even'", "lane = 'odd'"]
    subscribe(broker, unique_name, client_id, [(f"{name}-lane{i}", s) for i, s in enumerate(lanes)])
    published = publish(broker, unique_name, 1000)
    pipeline = pipeline_factory(
        source_options(
            broker,
            unique_name,
            client_id,
            name,
            maxMessagesPerTrigger="300",
            stagingChunkMessages="100",
            laneSelectors=json.dumps(lanes),
        )
    )
    done = pipeline.run("drain")
    assert_exactly_once(pipeline.sink_ids(), published)
    assert done["batches"] and max(done["batches"]) <= 300, done["batches"]
    assert len(done["batches"]) >= 4, done["batches"]
    assert_backlog_empty(broker, client_id, unique_name, [f"{name}-lane0", f"{name}-lane1"])


@pytest.mark.restart
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_exactly_once_through_driver_and_broker_sigkills(
    broker: Any, unique_name: str, pipeline_factory: Callable[[dict[str, str]], Pipeline]
) -> None:
    """Rounds of SIGKILL: the driver, both at once, the broker, both again, ...; then a last run. The
    sink must hold every published message exactly once and the subscription must end empty."""
    client_id, name = f"{unique_name}-c", f"{unique_name}-s"
    subscribe(broker, unique_name, client_id, [(name, None)])
    pipeline = pipeline_factory(
        source_options(
            broker, unique_name, client_id, name, maxMessagesPerTrigger="400", stagingChunkMessages="200"
        )
    )
    rounds = KillRounds(pipeline, broker, unique_name, lambda: pipeline.start("run"), seed=unique_name)
    with kill_durability(broker):
        rounds.run((["driver", "both", "broker", "both"] * ROUNDS)[:ROUNDS], MESSAGES)
        rounds.check(client_id, [name])


def test_unknown_and_missing_options_fail_at_load(spark: Any) -> None:
    def load(**options: str) -> Any:
        reader = spark.readStream.format("jms")  # a fresh builder each time: option() mutates it
        for name, value in options.items():
            reader = reader.option(name, value)
        return reader.load()

    base = {"url": "activemq://127.0.0.1:1", "queue": "q"}
    with pytest.raises(Exception, match="stagingLocation"):
        load(**base)
    with pytest.raises(Exception, match=r"(?i)maxMesagesPerTrigger.*did you mean 'maxMessagesPerTrigger'"):
        load(**base, stagingLocation="/tmp/x", maxMesagesPerTrigger="5")
    with pytest.raises(Exception, match="maxMessagesPerTrigger' must be at least 1"):
        load(**base, stagingLocation="/tmp/x", maxMessagesPerTrigger="0")
    with pytest.raises(Exception, match="clientId"):
        load(url="activemq://127.0.0.1:1", topic="t", stagingLocation="/tmp/x")
    frame = load(**base, stagingLocation="/tmp/x")  # load() does not connect: nothing listens on port 1
    assert frame.isStreaming
    assert frame.columns == [
        "messageId",
        "destination",
        "timestamp",
        "deliveryMode",
        "priority",
        "redelivered",
        "correlationId",
        "type",
        "expiration",
        "properties",
        "body",
        "text",
    ]


@pytest.mark.timeout(300)
def test_queue_with_two_competing_lanes(
    broker: Any, unique_name: str, pipeline_factory: Callable[[dict[str, str]], Pipeline]
) -> None:
    from jmslike import ConnectionFactory, Session

    connection = ConnectionFactory(broker_url(broker)).createConnection(broker.user, broker.password)
    published = []
    try:
        session = connection.createSession(True, Session.SESSION_TRANSACTED)
        producer = session.createProducer(session.createQueue(unique_name))
        for i in range(500):
            message = session.createTextMessage(f"q{i}")
            producer.send(message)
            published.append(message.getJMSMessageID())
        session.commit()
    finally:
        connection.close()
    pipeline = pipeline_factory(
        {
            "url": broker_url(broker),
            "queue": unique_name,
            "lanes": "2",
            "user": broker.user,
            "password": broker.password,
        }
    )
    pipeline.run("available-now")
    assert_exactly_once(pipeline.sink_ids(), published)

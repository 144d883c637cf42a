"""The ``jms`` writer on real brokers: rows become messages (text or bytes, properties, priority,
delivery mode), in batch and in streaming queries; bad frames fail before anything is sent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import broker_url

from jmslike import BytesMessage, ConnectionFactory, DeliveryMode, Message, Session, TextMessage
from jmslike.spark_sink.options import parse_sink_options
from jmslike.spark_sink.publish import publish_rows


def drain(broker: Any, queue: str, expected: int) -> list[Message]:
    connection = ConnectionFactory(broker_url(broker)).createConnection(broker.user, broker.password)
    try:
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        consumer = session.createConsumer(session.createQueue(queue))
        connection.start()
        got: list[Message] = []
        while True:
            message = consumer.receive(5000 if len(got) < expected else 1000)
            if message is None:
                return got
            got.append(message)
    finally:
        connection.close()


def writer_options(broker: Any, queue: str) -> dict[str, str]:
    return {"url": broker_url(broker), "queue": queue, "user": broker.user, "password": broker.password}


def stream_write(spark: Any, tmp_path: Path, count: int, options: dict[str, str]) -> None:
    """Rows ``{"text": "s<i>"}`` for i < ``count`` from a JSON file through a streaming query (AvailableNow)
    into the ``jms`` writer; returns once the query ended, and fails if it failed."""
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    (incoming / "part1.json").write_text("\n".join(json.dumps({"text": f"s{i}"}) for i in range(count)))
    query = (
        spark.readStream.schema("text STRING")
        .json(str(incoming))
        .writeStream.format("jms")
        .options(**options)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(240)
    assert query.exception() is None


@pytest.mark.timeout(300)
def test_batch_write_publishes_every_row_with_its_headers(broker: Any, unique_name: str, spark: Any) -> None:
    rows = [
        {"text": f"row {i}", "properties": {"n": str(i)}, "priority": i % 10, "deliveryMode": "PERSISTENT"}
        for i in range(40)
    ]
    rows[3]["deliveryMode"] = "NON_PERSISTENT"
    frame = spark.createDataFrame(
        rows, "text STRING, properties MAP<STRING,STRING>, priority INT, deliveryMode STRING"
    )
    frame.repartition(2).write.format("jms").options(**writer_options(broker, unique_name)).mode(
        "append"
    ).save()
    bytes_frame = spark.createDataFrame([(b"\x00\x01binary",)], "body BINARY")
    bytes_frame.write.format("jms").options(**writer_options(broker, unique_name)).mode("append").save()

    got = drain(broker, unique_name, 41)
    texts = {m.getText(): m for m in got if isinstance(m, TextMessage)}
    assert sorted(texts) == sorted(r["text"] for r in rows)
    seven = texts["row 7"]
    assert seven.getStringProperty("n") == "7"
    assert seven.getJMSDeliveryMode() == DeliveryMode.PERSISTENT
    if broker.kind != "rabbitmq":  # priorities are ordering hints; RabbitMQ keeps none without x-max-priority
        assert seven.getJMSPriority() == 7
    assert texts["row 3"].getJMSDeliveryMode() == DeliveryMode.NON_PERSISTENT
    binary = [m for m in got if isinstance(m, BytesMessage)]
    assert len(binary) == 1 and binary[0].getBody(bytes) == b"\x00\x01binary"
    assert len({m.getJMSMessageID() for m in got}) == 41


@pytest.mark.timeout(300)
def test_stream_write_and_bad_columns(broker: Any, unique_name: str, spark: Any, tmp_path: Path) -> None:
    stream_write(spark, tmp_path, 25, writer_options(broker, unique_name))
    got = drain(broker, unique_name, 25)
    assert sorted(m.getText() for m in got if isinstance(m, TextMessage)) == sorted(
        f"s{i}" for i in range(25)
    )

    wrong = spark.createDataFrame([("x", 1)], "text STRING, colour INT")
    with pytest.raises(Exception, match="colour"):
        wrong.write.format("jms").options(**writer_options(broker, unique_name)).mode("append").save()
    assert drain(broker, unique_name, 0) == []


def _only_artemis(broker: Any) -> None:
    if broker.kind != "artemis":
        pytest.skip(f"deduplicate is Artemis's duplicate detection (_AMQ_DUPL_ID); {broker.kind} has none")


def _crashing(rows: list[dict[str, Any]], after: int) -> Iterator[dict[str, Any]]:
    """A task's rows that stop with an error after ``after`` of them, as an executor that dies mid-task."""
    for index, row in enumerate(rows):
        if index == after:
            raise RuntimeError("the task died")
        yield row


@pytest.mark.timeout(300)
def test_deduplicating_writer_publishes_each_row_once_across_attempts(broker: Any, unique_name: str) -> None:
    """Three attempts of one task, each cut into other transactions and ordering its rows differently: every
    row, the two identical ones included, is on the queue exactly once."""
    _only_artemis(broker)
    options = writer_options(broker, unique_name)
    rows = [{"text": f"row {i}", "properties": {"n": str(i)}} for i in range(12)] + [{"text": "same"}] * 2
    with pytest.raises(RuntimeError, match="the task died"):  # commits rows 0-2 and 3-5, loses 6
        publish_rows(
            parse_sink_options({**options, "transactionSize": "3", "deduplicate": "true"}),
            _crashing(rows, 7),
            "task-0",
        )
    with pytest.raises(RuntimeError, match="the task died"):  # reversed, in fours: commits 13..10, loses 9, 8
        publish_rows(
            parse_sink_options({**options, "transactionSize": "4", "deduplicate": "true"}),
            _crashing(rows[::-1], 6),
            "task-0",
        )
    last = publish_rows(
        parse_sink_options({**options, "transactionSize": "5", "deduplicate": "true"}), iter(rows), "task-0"
    )
    # In fives: 0-4 refused (all there), 5-9 refused and sent one by one (6-9 go out), 10-13 refused.
    assert last == 4
    got = drain(broker, unique_name, 14)
    assert sorted(m.getText() for m in got if isinstance(m, TextMessage)) == sorted(r["text"] for r in rows)


@pytest.mark.timeout(300)
def test_deduplicating_batch_write_through_spark(broker: Any, unique_name: str, spark: Any) -> None:
    _only_artemis(broker)
    frame = spark.createDataFrame([(f"row {i}",) for i in range(30)], "text STRING").repartition(3)
    options = {**writer_options(broker, unique_name), "deduplicate": "true", "transactionSize": "4"}
    frame.write.format("jms").options(**options).mode("append").save()
    frame.write.format("jms").options(**options).mode("append").save()  # a new write: published again
    got = drain(broker, unique_name, 60)
    assert sorted(m.getText() for m in got if isinstance(m, TextMessage)) == sorted(
        [f"row {i}" for i in range(30)] * 2
    )


@pytest.mark.timeout(300)
def test_deduplicating_stream_write_names_rows_by_query_and_micro_batch(
    broker: Any, unique_name: str, spark: Any, tmp_path: Path
) -> None:
    _only_artemis(broker)
    stream_write(spark, tmp_path, 20, {**writer_options(broker, unique_name), "deduplicate": "true"})
    got = drain(broker, unique_name, 20)
    assert sorted(m.getText() for m in got if isinstance(m, TextMessage)) == sorted(
        f"s{i}" for i in range(20)
    )

"""The ``jms`` writer on real brokers: rows become messages (text or bytes, properties, priority,
delivery mode), in batch and in streaming queries; bad frames fail before anything is sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import broker_url

from jmslike import BytesMessage, ConnectionFactory, DeliveryMode, Message, Session, TextMessage


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
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    (incoming / "part1.json").write_text("\n".join(json.dumps({"text": f"s{i}"}) for i in range(25)))
    stream = spark.readStream.schema("text STRING").json(str(incoming))
    query = (
        stream.writeStream.format("jms")
        .options(**writer_options(broker, unique_name))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(240)
    assert query.exception() is None
    got = drain(broker, unique_name, 25)
    assert sorted(m.getText() for m in got if isinstance(m, TextMessage)) == sorted(
        f"s{i}" for i in range(25)
    )

    wrong = spark.createDataFrame([("x", 1)], "text STRING, colour INT")
    with pytest.raises(Exception, match="colour"):
        wrong.write.format("jms").options(**writer_options(broker, unique_name)).mode("append").save()
    assert drain(broker, unique_name, 0) == []

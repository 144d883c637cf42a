"""``python -m benchmarks.spark --broker activemq|rabbitmq``: the ``jms`` Spark source against jmslike.

One run, one broker (launched by our launchers), two measurements on equal backlogs of ``--messages``
PERSISTENT messages of ``--size`` bytes in a durable subscription:

- raw: jmslike itself draining the subscription (CLIENT_ACKNOWLEDGE, acknowledge every
  ``--ack-every`` messages) — the ceiling the source cannot beat, since it does the same receiving;
- spark: a Spark query (local mode, JVM already started) from the ``jms`` source into a Parquet sink,
  from ``start()`` until every message is committed in the sink (processAllAvailable).

Prints both rates and the ratio (target >= 0.70). Filling the backlogs is not timed. The machine is
shared: compare the ratio of one run, not absolute rates across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from typing import Any

from jmslike import ConnectionFactory, DeliveryMode, Session
from jmslike.conformance.brokers import launch

from . import launch_options

TARGET = 0.70


URL_OPTIONS: list[str] = []  # extra jmslike URL keys for both sides (--prefetch)


def _url(broker: Any, *extra: str) -> str:
    management = getattr(broker, "management_url", None)
    keys = [f"management_url={management}"] if management else []
    keys += URL_OPTIONS
    keys += extra
    return str(broker.url) + ("?" + "&".join(keys) if keys else "")


def _subscribe(broker: Any, topic: str, client_id: str, name: str) -> None:
    connection = ConnectionFactory(_url(broker)).createConnection(broker.user, broker.password)
    try:
        connection.setClientID(client_id)
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        session.createDurableSubscriber(session.createTopic(topic), name).close()
    finally:
        connection.close()


def _fill(broker: Any, topic: str, count: int, size: int) -> None:
    # No heart-beats: ActiveMQ throttles a fast producer by not reading from it, and its inactivity
    # monitor would then drop the connection in the middle of a large fill (as in workloads.fill).
    connection = ConnectionFactory(_url(broker, "heartbeat_ms=0")).createConnection(
        broker.user, broker.password
    )
    try:
        session = connection.createSession(True, Session.SESSION_TRANSACTED)
        producer = session.createProducer(session.createTopic(topic))
        producer.setDeliveryMode(DeliveryMode.PERSISTENT)
        body = (b"x" * size)[:size]
        for i in range(count):
            message = session.createBytesMessage()
            message.writeBytes(body)
            message.setIntProperty("n", i)
            producer.send(message)
            if i % 1000 == 999:
                session.commit()
        session.commit()
    finally:
        connection.close()


def raw_rate(broker: Any, topic: str, client_id: str, name: str, count: int, ack_every: int) -> float:
    """jmslike draining ``count`` messages from the durable subscription: msg/s."""
    connection = ConnectionFactory(_url(broker)).createConnection(broker.user, broker.password)
    try:
        connection.setClientID(client_id)
        session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
        subscriber = session.createDurableSubscriber(session.createTopic(topic), name)
        connection.start()
        received = 0
        started = time.perf_counter()
        last = None
        while received < count:
            message = subscriber.receive(30_000)
            if message is None:
                raise RuntimeError(f"raw drain stalled after {received} of {count} messages")
            received += 1
            last = message
            if received % ack_every == 0:
                message.acknowledge()
        if last is not None:
            last.acknowledge()
        return count / (time.perf_counter() - started)
    finally:
        connection.close()


def spark_rate(
    spark: Any,
    broker: Any,
    topic: str,
    client_id: str,
    name: str,
    count: int,
    root: str,
    options: dict[str, str],
) -> dict[str, Any]:
    """A jms -> Parquet query draining the backlog: msg/s from start() to everything committed."""
    reader = spark.readStream.format("jms")
    for key, value in {
        "url": _url(broker),
        "topic": topic,
        "clientId": client_id,
        "subscriptionName": name,
        "user": broker.user,
        "password": broker.password,
        "stagingLocation": os.path.join(root, "staging"),
        **options,
    }.items():
        reader = reader.option(key, value)
    output = os.path.join(root, "output")
    started = time.perf_counter()
    query = (
        reader.load()
        .writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", os.path.join(root, "checkpoint"))
        .trigger(processingTime="0 seconds")
        .start()
    )
    query.processAllAvailable()
    elapsed = time.perf_counter() - started
    query.stop()
    rows = spark.read.parquet(output).count()
    if rows != count:
        raise RuntimeError(f"the sink holds {rows} rows, {count} were published")
    progress = [p for p in query.recentProgress if p.get("numInputRows")]
    durations: dict[str, int] = {}
    for p in progress:
        for key, value in (p.get("durationMs") or {}).items():
            durations[key] = durations.get(key, 0) + int(value)
    return {
        "rate": count / elapsed,
        "seconds": elapsed,
        "batches": len(progress),
        "rows": rows,
        "durations_ms": durations,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.spark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker", choices=("activemq", "rabbitmq"), default="activemq")
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--ack-every", type=int, default=1000)
    parser.add_argument("--max-messages-per-trigger", type=int, default=0, help="0 = no limit")
    parser.add_argument("--chunk", type=int, default=5000, help="stagingChunkMessages")
    parser.add_argument("--prefetch", type=int, default=0, help="jmslike URL key prefetch for both sides")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if args.prefetch:
        URL_OPTIONS.append(f"prefetch={args.prefetch}")

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = tempfile.mkdtemp(prefix="jmslike-bench-spark-")
    broker = launch(args.broker, **launch_options(args.broker))
    try:
        tag = uuid.uuid4().hex[:8]
        raw_topic, spark_topic = f"bench-raw-{tag}", f"bench-spark-{tag}"
        client_id = f"bench-{tag}"
        _subscribe(broker, raw_topic, client_id + "-raw", "raw")
        _subscribe(broker, spark_topic, client_id, "lake")
        print(f"filling 2 x {args.messages} messages of {args.size} B on {args.broker} ...", flush=True)
        _fill(broker, raw_topic, args.messages, args.size)
        _fill(broker, spark_topic, args.messages, args.size)

        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[2]")
            .appName("jmslike-benchmark")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "1g")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("WARN")
        from jmslike.spark_sink import register

        register(spark)
        spark.range(1).count()  # the JVM and a Python worker are up before anything is timed

        raw = raw_rate(broker, raw_topic, client_id + "-raw", "raw", args.messages, args.ack_every)
        options = {"stagingChunkMessages": str(args.chunk), "maxTriggerDelayMs": "10000"}
        if args.max_messages_per_trigger:
            options["maxMessagesPerTrigger"] = str(args.max_messages_per_trigger)
        result = spark_rate(spark, broker, spark_topic, client_id, "lake", args.messages, root, options)
        spark.stop()
    finally:
        broker.close()
        shutil.rmtree(root, ignore_errors=True)

    ratio = result["rate"] / raw
    import pyspark

    report = {
        "broker": args.broker,
        "messages": args.messages,
        "size": args.size,
        "prefetch": args.prefetch or 1000,
        "pyspark": pyspark.__version__,
        "raw_msgs_per_s": round(raw, 1),
        "spark_msgs_per_s": round(result["rate"], 1),
        "spark_seconds": round(result["seconds"], 2),
        "spark_batches": result["batches"],
        "spark_durations_ms": result["durations_ms"],
        "ratio": round(ratio, 3),
        "target": TARGET,
        "options": options,
    }
    print(f"jmslike raw receive:          {raw:10.0f} msg/s")
    print(f"spark jms -> parquet:         {result['rate']:10.0f} msg/s ({result['batches']} batches)")
    print(f"ratio spark/raw:              {ratio:10.2f}  (target >= {TARGET:.2f})")
    print(f"spark time per phase (ms):    {result['durations_ms']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A Spark driver for the tests: a ``jms`` stream into a Parquet sink, run as its own process.

The tests SIGKILL this process (with its JVM and Python workers: they share its process group) and start
it again on the same checkpoint and staging location. Modes:

- ``run``: processing-time trigger until killed (or ``--seconds`` pass, then a graceful stop);
- ``drain``: processing-time trigger until a trigger finds nothing new, then stop (processAllAvailable);
- ``available-now``: ``Trigger.AvailableNow`` until Spark ends the query.

``--master`` is ``local[2]`` by default, or a standalone cluster's ``spark://`` URL (tests/spark/test_cluster.py):
then executors are separate JVMs, one per worker.

Prints one JSON line ``{"event": "started"}`` once the query runs, and ``{"event": "done", ...}`` at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=("run", "drain", "available-now"), required=True)
    parser.add_argument("--option", action="append", default=[], help="source option name=value")
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--trigger-ms", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=0)
    parser.add_argument("--master", default="local[2]", help="local[2], or a standalone spark://host:port")
    args = parser.parse_args()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(args.master)
        .appName("jmslike-spark-test")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "512m")
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.streaming.minBatchesToRetain", "20")
    )
    if args.master.startswith("spark://"):  # one small executor per worker, on loopback
        builder = (
            builder.config("spark.executor.memory", "512m")
            .config("spark.executor.cores", "1")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
        )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    from jmslike.spark_sink import register

    register(spark)
    reader = spark.readStream.format("jms")
    for item in args.option:
        name, _, value = item.partition("=")
        reader = reader.option(name, value)
    writer = (
        reader.load()
        .writeStream.format("parquet")
        .option("path", args.output)
        .option("checkpointLocation", args.checkpoint)
    )
    if args.mode == "available-now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{args.trigger_ms} milliseconds")
    query = writer.start()
    print(json.dumps({"event": "started"}), flush=True)
    if args.mode == "available-now":
        query.awaitTermination()
    elif args.mode == "drain":
        query.processAllAvailable()
        query.stop()
    else:
        query.awaitTermination(args.seconds or None)  # raises if the query failed
        query.stop()
    batches = [int(p["numInputRows"]) for p in query.recentProgress if p.get("numInputRows")]
    print(json.dumps({"event": "done", "batches": batches}), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

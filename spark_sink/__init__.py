"""Spark Structured Streaming source and writer fed by durable subscriptions (format ``jms``).

::

    from jmslike.spark_sink import register
    register(spark)
    stream = (spark.readStream.format("jms")
              .option("url", "activemq://broker:61613").option("topic", "orders")
              .option("clientId", "spark-orders").option("subscriptionName", "orders-lake")
              .option("stagingLocation", "/shared/staging/orders").load())

``spark.read.format("jms")`` reads what a subscription holds now, as a batch read that stays open
until ``commit_read(options)`` (``open_read(options)`` numbers it); see batch.py.

Exactly once into an idempotent sink (file/Parquet): every batch is staged durably before the broker is
acknowledged, and batches are replayed from the staged files. See README.md in this folder for the
options, the guarantee and its argument, lanes and cluster deployment. Needs the ``spark`` extra
(pyspark, pyarrow); importing this package does not import pyspark, ``register`` does.
"""

from __future__ import annotations

from typing import Any

from jmslike.spark_sink.batch import JmsRead, commit_read, open_read

__all__ = ["FORMAT", "JmsRead", "commit_read", "open_read", "register"]

FORMAT = "jms"


def register(spark: Any) -> None:
    """Register the ``jms`` format with ``spark`` (a SparkSession)."""
    from jmslike.spark_sink.source import JmsDataSource

    spark.dataSource.register(JmsDataSource)

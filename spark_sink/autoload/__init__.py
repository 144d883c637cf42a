"""``pyspark_jmslike``: lets ``spark.readStream.format("jms")`` work without ``register(spark)``.

PySpark (4.0+) looks, the first time a session needs a Python data source, through the installed
top-level modules whose names start with ``pyspark_`` and registers each one's ``DefaultSource``. This
shim is installed under that name (pyproject package-dir) and only re-exports the ``jms`` data source;
everything else lives in ``jmslike.spark_sink``.
"""

from __future__ import annotations

from jmslike.spark_sink.source import JmsDataSource as DefaultSource

__all__ = ["DefaultSource"]

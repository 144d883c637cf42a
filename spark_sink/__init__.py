"""Spark Structured Streaming source and writer fed by durable subscriptions."""

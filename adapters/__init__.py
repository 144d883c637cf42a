"""Broker dialects: everything broker-specific, and the only place that imports stomp.py."""

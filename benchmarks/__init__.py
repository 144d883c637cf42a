"""Benchmarks of jmslike against raw stomp.py (not shipped): ``python -m benchmarks --help``."""

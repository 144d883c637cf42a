"""Broker launchers, the pytest plugin and the JMS conformance suite."""

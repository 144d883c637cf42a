"""Broker launchers: start, stop, kill and restart real brokers for tests, benchmarks and the CLI.

``launch(kind, launcher="process", **options)`` is the entry point; it returns a started
:class:`BrokerHandle`. Launchers: ``process`` (ActiveMQ Classic and RabbitMQ installed on this
machine, see :mod:`.activemq` and :mod:`.rabbitmq`), ``docker`` (:mod:`.docker`) and ``external``
(a broker given by URL, :mod:`.external`). This package must not import the jmslike API: it is what
the API is tested against.
"""

from __future__ import annotations

from typing import Any

from jmslike.conformance.brokers.base import (
    DEFAULT_CREDENTIALS,
    KINDS,
    LAUNCHERS,
    BrokerControlError,
    BrokerError,
    BrokerHandle,
    BrokerKind,
    BrokerNotInstalledError,
    BrokerStartError,
    LauncherName,
    LauncherUnavailableError,
    PortInUseError,
    RestartMode,
    check_kind,
    check_launcher,
)

__all__ = [
    "DEFAULT_CREDENTIALS",
    "KINDS",
    "LAUNCHERS",
    "BrokerControlError",
    "BrokerError",
    "BrokerHandle",
    "BrokerKind",
    "BrokerNotInstalledError",
    "BrokerStartError",
    "LauncherName",
    "LauncherUnavailableError",
    "PortInUseError",
    "RestartMode",
    "check_kind",
    "check_launcher",
    "create",
    "launch",
]

ARTEMIS_PROCESS_REASON = "artemis: no local install; use --broker-launcher docker or external"


def create(kind: str, launcher: str = "process", **options: Any) -> BrokerHandle:
    """Build a handle without starting it (``launch`` = ``create`` + ``start``).

    ``options`` go to the launcher's class: :class:`~.activemq.ActiveMQBroker`,
    :class:`~.rabbitmq.RabbitMQBroker`, :class:`~.docker.DockerBroker` or
    :class:`~.external.ExternalBroker` (which needs ``url``).
    """
    checked_kind = check_kind(kind)
    checked_launcher = check_launcher(launcher)
    if checked_launcher == "process":
        if checked_kind == "activemq":
            from jmslike.conformance.brokers.activemq import ActiveMQBroker

            return ActiveMQBroker(**options)
        if checked_kind == "rabbitmq":
            from jmslike.conformance.brokers.rabbitmq import RabbitMQBroker

            return RabbitMQBroker(**options)
        raise LauncherUnavailableError(ARTEMIS_PROCESS_REASON)
    if checked_launcher == "docker":
        from jmslike.conformance.brokers.docker import DockerBroker

        return DockerBroker(checked_kind, **options)
    from jmslike.conformance.brokers.external import ExternalBroker

    return ExternalBroker.for_kind(checked_kind, **options)


def launch(kind: str, launcher: str = "process", **options: Any) -> BrokerHandle:
    """Start a broker of ``kind`` ("activemq", "rabbitmq", "artemis") with ``launcher`` ("process",
    "docker", "external") and return its handle once it answers a STOMP CONNECT.

    On failure nothing is left running and the error (a :class:`BrokerStartError`) names the cause
    and carries the tail of the broker log. Use the handle as a context manager to stop it::

        with launch("activemq") as broker:
            print(broker.url)
    """
    handle = create(kind, launcher, **options)
    try:
        handle.start()
    except BaseException:
        handle.close()
        raise
    return handle

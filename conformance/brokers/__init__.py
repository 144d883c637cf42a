"""Broker launchers: start, stop, kill and restart real brokers for tests, benchmarks and the CLI.

``launch(kind, launcher="process", **options)`` is the entry point; it returns a started
:class:`BrokerHandle`. Launchers: ``process`` (ActiveMQ Classic and RabbitMQ installed on this
machine, see :mod:`.activemq` and :mod:`.rabbitmq`; Artemis from ``$ARTEMIS_HOME``, :mod:`.artemis`), ``docker`` (:mod:`.docker`) and ``external``
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
    "default_kinds",
    "launch",
]


def default_kinds() -> tuple[tuple[BrokerKind, ...], str | None]:
    """The brokers a run covers when none are named: ActiveMQ and RabbitMQ, plus Artemis when
    ``ARTEMIS_HOME`` names a distribution; and, when Artemis is left out, the reason to print."""
    from jmslike.conformance.brokers.artemis import ARTEMIS_HOME_REASON, find_artemis_home

    if find_artemis_home() is None:
        return ("activemq", "rabbitmq"), ARTEMIS_HOME_REASON
    return ("activemq", "rabbitmq", "artemis"), None


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
        from jmslike.conformance.brokers.artemis import ArtemisBroker

        return ArtemisBroker(**options)  # LauncherUnavailableError saying why when ARTEMIS_HOME is unset
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

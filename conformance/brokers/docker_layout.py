"""What a broker container on the host's network runs: its files, mounts, command and ports (pure).

Owns the host-network mode of the docker launcher (:mod:`.docker`), used with the local images of
:mod:`.images`. A container on the host's network shares its loopback with every other broker, so each one
listens on free ports of its own, written into its configuration. That configuration is rendered by the same
pure functions the process launchers use (one rule, one place), written into a host directory and mounted;
the data lives in a named volume, kept across graceful restarts and SIGKILLs of the same container.

Nothing here does I/O: :func:`host_layout` returns a :class:`HostLayout` that the launcher carries out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from jmslike.conformance.brokers.activemq import (
    XSTREAM_JAR_DIR,
    XSTREAM_JARS,
    ActiveMQConfig,
    activemq_command,
    render_activemq_xml,
    render_log4j2_properties,
    render_log4j_properties,
)
from jmslike.conformance.brokers.artemis import create_command
from jmslike.conformance.brokers.base import DEFAULT_CREDENTIALS, BrokerKind
from jmslike.conformance.brokers.rabbitmq import (
    RabbitMQConfig,
    rabbitmq_environment,
    render_enabled_plugins,
    render_rabbitmq_conf,
)

#: Where everything of ours lives inside a container.
CONTAINER_BASE: Final = Path("/jmslike")
#: Where the images put the brokers (Debian's packages; Artemis copied from ARTEMIS_HOME).
ACTIVEMQ_HOME_IN_IMAGE: Final = Path("/usr/share/activemq")
RABBITMQ_SERVER_IN_IMAGE: Final = "/usr/lib/rabbitmq/bin/rabbitmq-server"
ARTEMIS_HOME_IN_IMAGE: Final = Path("/opt/artemis")

#: The loopback ports each kind listens on, by role (STOMP is the handle's ``port``; the others are chosen
#: free by the launcher and kept across restarts).
HOST_PORT_ROLES: Final[Mapping[BrokerKind, tuple[str, ...]]] = {
    "activemq": (),
    "rabbitmq": ("amqp", "management", "erlang distribution", "epmd"),
    "artemis": (),
}

Access = Literal["ro", "rw"]


@dataclass(frozen=True)
class HostLayout:
    """One broker container on the host's network.

    ``files`` (path relative to the host directory → content) are written before every start; ``binds`` mount
    host directories (relative to the host directory) at container paths; the named data volume goes to
    ``data_path``. ``setup_command``, when set, runs once in a throw-away container with the same mounts before
    the first start (Artemis: ``artemis create``)."""

    files: Mapping[str, str] = field(repr=False)  # may hold an account
    binds: Mapping[str, tuple[str, Access]]
    data_path: str
    command: tuple[str, ...]
    environment: Mapping[str, str] = field(default_factory=dict, repr=False)
    setup_command: tuple[str, ...] | None = field(default=None, repr=False)


def activemq_layout(*, stomp_port: int, heap_mb: int = 512) -> HostLayout:
    """ActiveMQ Classic: the process launcher's activemq.xml and command, XStream on the classpath."""
    base = CONTAINER_BASE
    config = ActiveMQConfig(stomp_port=stomp_port, data_dir=str(base / "data"))
    classpath = ":".join(str(XSTREAM_JAR_DIR / alternatives[0]) for alternatives in XSTREAM_JARS)
    command = activemq_command(
        java="java",
        home=ACTIVEMQ_HOME_IN_IMAGE,
        base_dir=base,
        heap_mb=heap_mb,
        jvm_args=(f"-Dactivemq.classpath={classpath}",),
    )
    return HostLayout(
        files={
            "conf/activemq.xml": render_activemq_xml(config),
            "conf/log4j.properties": render_log4j_properties(),
            "conf/log4j2.properties": render_log4j2_properties(),
        },
        binds={"conf": (str(base / "conf"), "ro")},
        data_path=str(base / "data"),
        command=tuple(command),
    )


def rabbitmq_layout(
    *, stomp_port: int, ports: Mapping[str, int], node_name: str, user: str, password: str
) -> HostLayout:
    """RabbitMQ: the process launcher's rabbitmq.conf and environment; the log in a mounted directory."""
    base = CONTAINER_BASE
    default_user, default_password = DEFAULT_CREDENTIALS["rabbitmq"]
    account = ""
    if (user, password) != (default_user, default_password):
        account = f"default_user = {user}\ndefault_pass = {password}"
    config = RabbitMQConfig(
        stomp_port=stomp_port,
        amqp_port=ports["amqp"],
        management_port=ports["management"],
        extra_config=account,
    )
    environment = rabbitmq_environment(
        base_dir=base,
        node_name=node_name,
        dist_port=ports["erlang distribution"],
        epmd_port=ports["epmd"],
        amqp_port=ports["amqp"],
    )
    return HostLayout(
        files={
            "conf/rabbitmq.conf": render_rabbitmq_conf(config),
            "conf/enabled_plugins": render_enabled_plugins(config),
            "conf/rabbitmq-env.conf": "# empty: the launcher sets everything in the environment\n",
            "log/.keep": "",
        },
        binds={"conf": (str(base / "conf"), "ro"), "log": (str(base / "log"), "rw")},
        data_path=str(base / "mnesia"),
        command=(RABBITMQ_SERVER_IN_IMAGE,),
        environment=environment,
    )


def artemis_layout(*, user: str, password: str) -> HostLayout:
    """Artemis: ``artemis create`` into a mounted directory once (the launcher then sets its acceptors and heap
    with the process launcher's rules), the journal in the volume under ``instance/data``."""
    instance = CONTAINER_BASE / "instance"
    setup = tuple(create_command(ARTEMIS_HOME_IN_IMAGE, instance, user=user, password=password))
    return HostLayout(
        files={},
        binds={"instance": (str(instance), "rw")},
        data_path=str(instance / "data"),
        command=(str(instance / "bin" / "artemis"), "run"),
        setup_command=setup,
    )


def host_layout(
    kind: BrokerKind,
    *,
    stomp_port: int,
    ports: Mapping[str, int],
    user: str,
    password: str,
    node_name: str,
) -> HostLayout:
    """The layout of ``kind`` listening on ``stomp_port`` (and ``ports`` for :data:`HOST_PORT_ROLES`)."""
    if kind == "activemq":
        return activemq_layout(stomp_port=stomp_port)
    if kind == "rabbitmq":
        return rabbitmq_layout(
            stomp_port=stomp_port, ports=ports, node_name=node_name, user=user, password=password
        )
    return artemis_layout(user=user, password=password)

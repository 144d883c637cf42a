"""Brokers in Docker containers: pure container specs and the docker launcher.

Owns the ``docker`` launcher: :func:`container_spec` builds, without any I/O, what to run for each
kind (image, environment, loopback port bindings, a named volume for the data, the command), and
:class:`DockerBroker` runs it through the Docker SDK (imported lazily: ``pip install 'jmslike[docker]'``).
Restarts reuse the same container, so the host port and the volume are kept; ``kill()`` is
``container.kill("SIGKILL")``. When no engine is reachable, :class:`LauncherUnavailableError` says
what is missing (the pytest plugin turns it into a skip).
"""

from __future__ import annotations

import importlib
import logging
import os
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Self

from jmslike.conformance.brokers.base import (
    DEFAULT_CREDENTIALS,
    BrokerError,
    BrokerHandle,
    BrokerKind,
    BrokerStartError,
    LauncherName,
    LauncherUnavailableError,
    tail_lines,
)
from jmslike.conformance.brokers.ports import LOOPBACK, free_port, port_accepts, wait_port_closed
from jmslike.conformance.brokers.readiness import ProbeResult, stomp_probe, wait_until_ready

logger = logging.getLogger(__name__)

DOCKER_IMAGES: Final[Mapping[BrokerKind, str]] = {
    "activemq": "apache/activemq-classic:latest",
    "artemis": "apache/activemq-artemis:latest",
    "rabbitmq": "rabbitmq:3-management",
}
CONTAINER_STOMP_PORT: Final = 61613
CONTAINER_MANAGEMENT_PORT: Final = 15672
CONTAINER_DATA_DIRS: Final[Mapping[BrokerKind, str]] = {
    "activemq": "/opt/apache-activemq/data",
    "artemis": "/var/lib/artemis-instance",
    "rabbitmq": "/var/lib/rabbitmq",
}
LABEL: Final = "org.jmslike.launcher"


@dataclass(frozen=True)
class ContainerSpec:
    """What ``docker run`` gets. ``ports`` maps ``"61613/tcp"`` to a ``(host_ip, host_port)``."""

    image: str
    name: str
    hostname: str
    ports: Mapping[str, tuple[str, int]]
    volumes: Mapping[str, Mapping[str, str]]
    environment: Mapping[str, str] = field(default_factory=dict, repr=False)
    command: tuple[str, ...] | None = None
    labels: Mapping[str, str] = field(default_factory=dict)

    def run_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``client.containers.run(detach=True, **kwargs)``."""
        kwargs: dict[str, Any] = {
            "image": self.image,
            "name": self.name,
            "hostname": self.hostname,
            "ports": dict(self.ports),
            "volumes": {k: dict(v) for k, v in self.volumes.items()},
            "environment": dict(self.environment),
            "labels": dict(self.labels),
            "detach": True,
        }
        if self.command is not None:
            kwargs["command"] = list(self.command)
        return kwargs


def container_spec(
    kind: BrokerKind,
    *,
    host_port: int,
    volume: str,
    name: str,
    management_port: int | None = None,
    image: str | None = None,
    user: str | None = None,
    password: str | None = None,
) -> ContainerSpec:
    """The container for ``kind`` with STOMP published on ``127.0.0.1:host_port`` (pure)."""
    default_user, default_password = DEFAULT_CREDENTIALS[kind]
    user = user or default_user
    password = password or default_password
    ports: dict[str, tuple[str, int]] = {f"{CONTAINER_STOMP_PORT}/tcp": (LOOPBACK, host_port)}
    environment: dict[str, str] = {}
    command: tuple[str, ...] | None = None
    if kind == "rabbitmq":
        if management_port is not None:
            ports[f"{CONTAINER_MANAGEMENT_PORT}/tcp"] = (LOOPBACK, management_port)
        environment = {"RABBITMQ_DEFAULT_USER": user, "RABBITMQ_DEFAULT_PASS": password}
        # The image enables management only; STOMP is enabled offline before the server starts.
        command = (
            "sh",
            "-c",
            "rabbitmq-plugins enable --offline rabbitmq_stomp >/dev/null "
            "&& exec docker-entrypoint.sh rabbitmq-server",
        )
    elif kind == "artemis":
        environment = {"ARTEMIS_USER": user, "ARTEMIS_PASSWORD": password, "ANONYMOUS_LOGIN": "false"}
    else:  # activemq classic: no authentication by default, any login is accepted
        environment = {}
    return ContainerSpec(
        image=image or DOCKER_IMAGES[kind],
        name=name,
        hostname=f"jmslike-{kind}",
        ports=ports,
        volumes={volume: {"bind": CONTAINER_DATA_DIRS[kind], "mode": "rw"}},
        environment=environment,
        command=command,
        labels={LABEL: "docker", "org.jmslike.kind": kind},
    )


def _docker_endpoint() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


def docker_client() -> Any:
    """A connected Docker SDK client, or :class:`LauncherUnavailableError` saying what is missing."""
    try:
        sdk = importlib.import_module("docker")
    except ImportError as exc:
        raise LauncherUnavailableError(
            "docker launcher: the `docker` Python package is not installed "
            "(pip install 'jmslike[docker]'); or use --broker-launcher process or external"
        ) from exc
    try:
        client = sdk.from_env(timeout=10)
        client.ping()
    except Exception as exc:
        raise LauncherUnavailableError(
            f"docker launcher: no Docker engine reachable at {_docker_endpoint()} ({exc}); "
            "start a Docker engine (or set DOCKER_HOST), or use --broker-launcher process or external"
        ) from exc
    return client


def docker_unavailable_reason() -> str | None:
    """None when a Docker engine answers, else why not (for skips)."""
    try:
        docker_client().close()
    except LauncherUnavailableError as exc:
        return exc.reason
    return None


class DockerBroker(BrokerHandle):
    """A broker in a Docker container, published on loopback. ``close()`` removes the container and,
    unless ``keep_volume``, its data volume."""

    launcher: LauncherName = "docker"

    def __init__(
        self,
        kind: BrokerKind,
        *,
        port: int | None = None,
        management_port: int | None = None,
        image: str | None = None,
        user: str | None = None,
        password: str | None = None,
        name: str | None = None,
        volume: str | None = None,
        keep_volume: bool = False,
        start_timeout_s: float = 180.0,
    ) -> None:
        default_user, default_password = DEFAULT_CREDENTIALS[kind]
        super().__init__(
            kind,
            host=LOOPBACK,
            port=port if port is not None else free_port(),
            user=user or default_user,
            password=password or default_password,
        )
        if kind == "rabbitmq":
            self.management_port = management_port if management_port is not None else free_port()
        token = secrets.token_hex(4)
        self.container_name = name or f"jmslike-{kind}-{token}"
        self.volume = volume or f"jmslike-{kind}-{token}-data"
        self.keep_volume = keep_volume
        self.start_timeout_s = start_timeout_s
        self.spec = container_spec(
            kind,
            host_port=self.port,
            volume=self.volume,
            name=self.container_name,
            management_port=self.management_port,
            image=image,
            user=self.user,
            password=self.password,
        )
        self._client: Any = None
        self._container: Any = None

    def _docker(self) -> Any:
        if self._client is None:
            self._client = docker_client()
        return self._client

    def _status(self) -> str:
        if self._container is None:
            return "absent"
        try:
            self._container.reload()
        except Exception:
            return "absent"
        return str(self._container.status)

    @property
    def pid(self) -> int | None:
        if self._status() != "running":
            return None
        return int(self._container.attrs["State"]["Pid"]) or None

    def _state(self) -> str:
        return "running" if self._container is not None and self._status() == "running" else "stopped"

    def is_running(self) -> bool:
        return self._status() == "running"

    def logs(self) -> str:
        if self._container is None:
            return "(container not created yet)"
        try:
            return bytes(self._container.logs()).decode("utf-8", "replace")
        except Exception as exc:
            return f"(could not read container logs: {exc})"

    def start(self) -> Self:
        client = self._docker()
        if self._container is None:
            logger.info("docker: starting %s from %s", self.container_name, self.spec.image)
            self._container = client.containers.run(**self.spec.run_kwargs())
        elif self._status() != "running":
            self._container.start()
        else:
            return self

        def exited() -> str | None:
            status = self._status()
            if status in ("exited", "dead", "absent"):
                code = self._container.attrs.get("State", {}).get("ExitCode") if self._container else None
                return f"container {self.container_name} {status} (exit code {code})"
            return None

        ok, detail = wait_until_ready(self._probe, timeout_s=self.start_timeout_s, exited=exited)
        if not ok:
            tail = tail_lines(self.logs())
            raise BrokerStartError(f"{self.kind} container did not start: {detail}", log_tail=tail)
        logger.info("docker: %s ready at %s", self.container_name, self.url)
        return self

    def _probe(self, timeout_s: float) -> ProbeResult:
        result = stomp_probe(
            self.host, self.port, login=self.user, passcode=self.password, timeout_s=timeout_s
        )
        if (
            result.ready
            and self.management_port is not None
            and not port_accepts(self.host, self.management_port, timeout_s=timeout_s)
        ):
            return ProbeResult(False, "management port not open yet")
        return result

    def stop(self, timeout_s: float = 30.0) -> None:
        if self._container is None or self._status() != "running":
            return
        self._container.stop(timeout=int(timeout_s))
        wait_port_closed(self.host, self.port, timeout_s=10.0)

    def kill(self) -> None:
        if self._container is None or self._status() != "running":
            return
        self._container.kill("SIGKILL")
        deadline = time.monotonic() + 30.0
        while self._status() == "running" and time.monotonic() < deadline:
            time.sleep(0.05)
        wait_port_closed(self.host, self.port, timeout_s=10.0)

    def close(self) -> None:
        if self._container is None:
            return
        try:
            self.stop()
            self._container.remove(force=True)
            if not self.keep_volume:
                self._docker().volumes.get(self.volume).remove(force=True)
        except Exception as exc:
            raise BrokerError(f"docker: could not remove {self.container_name}: {exc}") from exc
        finally:
            self._container = None

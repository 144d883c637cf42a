"""Brokers in Docker containers: container specs and the docker launcher.

Owns the ``docker`` launcher. A broker runs one of two ways:

* **host network** (``network="host"``), with a local image built by :mod:`.images` (``python -m
  jmslike.conformance.brokers images``): the broker listens on free loopback ports of its own, written into a
  configuration that :mod:`.docker_layout` renders with the process launchers' rules and the launcher mounts.
  This is the way on a machine that reaches no registry and must keep test traffic on loopback.
* **port bindings** (``network="bridge"``), with the official images (:data:`DOCKER_IMAGES`): STOMP
  published on ``127.0.0.1`` (:func:`container_spec`). The default where no local image was built.

Either way the data is in a named volume, restarts reuse the same container (same ports, same volume), ``kill()``
is ``container.kill("SIGKILL")``, readiness is a STOMP CONNECT, and a failed start carries the container log.
Every container and volume is labelled with the pid of the process that made it, so leftovers of a crashed run
are removed by the next one (:func:`remove_leftovers`, also ``python -m jmslike.conformance.brokers cleanup``).
The Docker SDK is imported lazily (``pip install 'jmslike[docker]'``); without an engine,
:class:`LauncherUnavailableError` says what is missing (the pytest plugin turns it into a skip).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import logging
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal, Self

from jmslike.conformance.brokers.artemis import configure_instance
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
from jmslike.conformance.brokers.docker_layout import HOST_PORT_ROLES, HostLayout, host_layout
from jmslike.conformance.brokers.images import IMAGE_REPOSITORY, LABEL, local_image
from jmslike.conformance.brokers.ports import (
    LOOPBACK,
    check_ports_free,
    free_port,
    port_accepts,
    wait_port_closed,
)
from jmslike.conformance.brokers.process import pid_alive
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
#: Labels of our containers and volumes: the pid that made them, and the host directory mounted into them.
OWNER_LABEL: Final = "org.jmslike.owner-pid"
HOST_DIR_LABEL: Final = "org.jmslike.host-dir"
ARTEMIS_HEAP_MB: Final = 1024

Network = Literal["host", "bridge"]


@dataclass(frozen=True)
class ContainerSpec:
    """What ``docker run`` gets. ``ports`` maps ``"61613/tcp"`` to a ``(host_ip, host_port)``."""

    image: str
    name: str
    hostname: str | None
    ports: Mapping[str, tuple[str, int]]
    volumes: Mapping[str, Mapping[str, str]]
    environment: Mapping[str, str] = field(default_factory=dict, repr=False)
    command: tuple[str, ...] | None = field(default=None, repr=False)
    labels: Mapping[str, str] = field(default_factory=dict)
    #: ``"host"``: the container shares the host's network (no port bindings); None: Docker's default bridge.
    network_mode: str | None = None

    def run_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``client.containers.run(detach=True, **kwargs)``."""
        kwargs: dict[str, Any] = {
            "image": self.image,
            "name": self.name,
            "volumes": {k: dict(v) for k, v in self.volumes.items()},
            "environment": dict(self.environment),
            "labels": dict(self.labels),
            "detach": True,
        }
        if self.hostname is not None:
            kwargs["hostname"] = self.hostname
        if self.ports:
            kwargs["ports"] = dict(self.ports)
        if self.network_mode is not None:
            kwargs["network_mode"] = self.network_mode
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


def host_container_spec(
    layout: HostLayout, *, image: str, name: str, volume: str, host_dir: Path, labels: Mapping[str, str]
) -> ContainerSpec:
    """The container for ``layout`` on the host's network: the named volume at the layout's data path, the host
    directories mounted where the layout says (pure)."""
    volumes: dict[str, dict[str, str]] = {volume: {"bind": layout.data_path, "mode": "rw"}}
    for relative, (container_path, mode) in layout.binds.items():
        volumes[str(host_dir / relative)] = {"bind": container_path, "mode": mode}
    return ContainerSpec(
        image=image,
        name=name,
        hostname=None,  # the host's: a container on the host network cannot have its own
        ports={},
        volumes=volumes,
        environment=layout.environment,
        command=layout.command,
        labels={**labels, HOST_DIR_LABEL: str(host_dir)},
        network_mode="host",
    )


def choose_image(
    kind: BrokerKind, *, image: str | None, network: Network | None, local: str | None
) -> tuple[str, Network]:
    """Which image to run and how (pure): what the caller named wins; else the local image on the host network
    when one was built, else the official image with port bindings."""
    chosen = image or local or DOCKER_IMAGES[kind]
    if network is None:
        network = "host" if chosen.startswith(f"{IMAGE_REPOSITORY}/") else "bridge"
    return chosen, network


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
        # Generous: a graceful stop waits up to 30 s for the broker inside the API call.
        client = sdk.from_env(timeout=120)
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


def _is_not_found(exc: BaseException) -> bool:
    return type(exc).__name__ == "NotFound"


def remove_leftovers(client: Any, *, everything: bool = False) -> list[str]:
    """Remove our containers, volumes and host directories whose owning process is gone (all of them with
    ``everything``); returns what was removed. What a live run owns is left alone, so two runs can share an
    engine."""
    removed: list[str] = []

    def orphaned(labels: Mapping[str, str]) -> bool:
        owner = labels.get(OWNER_LABEL, "")
        return everything or not owner.isdigit() or not pid_alive(int(owner))

    for container in client.containers.list(all=True, filters={"label": f"{LABEL}=docker"}):
        labels = container.labels or {}
        if not orphaned(labels):
            continue
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed.append(f"container {container.name}")
        host_dir = labels.get(HOST_DIR_LABEL)
        if host_dir and Path(host_dir).name.startswith("jmslike-docker-"):
            shutil.rmtree(host_dir, ignore_errors=True)
    for volume in client.volumes.list(filters={"label": f"{LABEL}=docker"}):
        if not orphaned(volume.attrs.get("Labels") or {}):
            continue
        with contextlib.suppress(Exception):
            volume.remove(force=True)
            removed.append(f"volume {volume.name}")
    return removed


_live: dict[int, DockerBroker] = {}
_swept = False


def _close_live() -> None:
    """At exit: remove whatever this process still has running (a test run interrupted half-way)."""
    for broker in list(_live.values()):
        with contextlib.suppress(Exception):
            broker.close()


class DockerBroker(BrokerHandle):
    """A broker in a Docker container on loopback (see the module docstring for the two network modes).

    ``image``/``network`` default to the local image on the host network when ``images`` built one, else the
    official image with port bindings. ``close()`` removes the container, its host directory and, unless
    ``keep_volume``, its data volume."""

    launcher: LauncherName = "docker"

    def __init__(
        self,
        kind: BrokerKind,
        *,
        port: int | None = None,
        management_port: int | None = None,
        image: str | None = None,
        network: Network | None = None,
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
        self._management_port_arg = management_port
        self._image_arg = image
        self._network_arg = network
        token = secrets.token_hex(4)
        self.container_name = name or f"jmslike-{kind}-{token}"
        self.volume = volume or f"jmslike-{kind}-{token}-data"
        self.keep_volume = keep_volume
        self.start_timeout_s = start_timeout_s
        #: What runs, once the first start chose it (image, network, mounts).
        self.spec: ContainerSpec | None = None
        #: The host directory holding the mounted configuration and logs (host network only).
        self.host_dir: Path | None = None
        #: Every loopback port the broker listens on besides STOMP, by role (host network only).
        self.extra_ports: dict[str, int] = {}
        self._client: Any = None
        self._container: Any = None
        self._volume_created = False

    @property
    def image(self) -> str | None:
        """The image the container runs (None before the first start)."""
        return self.spec.image if self.spec is not None else None

    @property
    def launcher_detail(self) -> str:
        if self.spec is None:
            return ""
        network = "host network" if self.spec.network_mode == "host" else "port bindings"
        return f"image {self.spec.image}, {network}"

    def _docker(self) -> Any:
        global _swept
        if self._client is None:
            self._client = docker_client()
            if not _swept:
                _swept = True
                for what in remove_leftovers(self._client):
                    logger.info("docker: removed leftover %s of an earlier run", what)
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
            parts = [bytes(self._container.logs()).decode("utf-8", "replace")]
        except Exception as exc:
            parts = [f"(could not read container logs: {exc})"]
        if self.host_dir is not None:
            for path in sorted(self.host_dir.rglob("*.log")):
                with contextlib.suppress(OSError):
                    parts.append(
                        f"==> {path.relative_to(self.host_dir)} <==\n{path.read_text(errors='replace')}"
                    )
        return "\n".join(parts)

    def _ports(self) -> dict[str, int]:
        return {"stomp": self.port, **self.extra_ports}

    def start(self) -> Self:
        client = self._docker()
        if self._container is None:
            self._create(client)
        elif self._status() != "running":
            if self.spec is not None and self.spec.network_mode == "host":
                check_ports_free(self._ports(), self.host, kind=self.kind)
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
        logger.info("docker: %s ready at %s (%s)", self.container_name, self.url, self.launcher_detail)
        return self

    def _create(self, client: Any) -> None:
        image, network = choose_image(
            self.kind,
            image=self._image_arg,
            network=self._network_arg,
            local=None if self._image_arg else local_image(client, self.kind),
        )
        labels = {LABEL: "docker", "org.jmslike.kind": self.kind, OWNER_LABEL: str(os.getpid())}
        _live[id(self)] = self
        if len(_live) == 1:
            atexit.register(_close_live)
        client.volumes.create(self.volume, labels=labels)
        self._volume_created = True
        if network == "host":
            self.spec = self._host_spec(client, image, labels)
            check_ports_free(self._ports(), self.host, kind=self.kind)
        else:
            if self.kind == "rabbitmq":
                self.management_port = self._management_port_arg or free_port()
            self.spec = container_spec(
                self.kind,
                host_port=self.port,
                volume=self.volume,
                name=self.container_name,
                management_port=self.management_port,
                image=image,
                user=self.user,
                password=self.password,
            )
            self.spec = replace(self.spec, labels={**self.spec.labels, **labels})
        logger.info("docker: starting %s (%s)", self.container_name, self.launcher_detail)
        self._container = client.containers.run(**self.spec.run_kwargs())

    def _host_spec(self, client: Any, image: str, labels: Mapping[str, str]) -> ContainerSpec:
        """Choose the ports, write the configuration into a fresh host directory, run the layout's one-off setup."""
        for role in HOST_PORT_ROLES[self.kind]:
            chosen = self._management_port_arg if role == "management" else None
            self.extra_ports[role] = chosen or free_port()
        self.management_port = self.extra_ports.get("management")
        layout = host_layout(
            self.kind,
            stomp_port=self.port,
            ports=self.extra_ports,
            user=self.user,
            password=self.password,
            node_name=f"jmslike-{secrets.token_hex(4)}@localhost",
        )
        self.host_dir = Path(tempfile.mkdtemp(prefix=f"jmslike-docker-{self.kind}-"))
        for relative in layout.binds:
            (self.host_dir / relative).mkdir(parents=True, exist_ok=True)
        for relative, content in layout.files.items():
            path = self.host_dir / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            path.chmod(0o600)
        spec = host_container_spec(
            layout,
            image=image,
            name=self.container_name,
            volume=self.volume,
            host_dir=self.host_dir,
            labels=labels,
        )
        if layout.setup_command is not None:
            self._run_setup(client, spec, layout.setup_command)
        if self.kind == "artemis":
            configure_instance(
                self.host_dir / "instance", stomp_port=self.port, core_port=None, heap_mb=ARTEMIS_HEAP_MB
            )
        return spec

    def _run_setup(self, client: Any, spec: ContainerSpec, command: tuple[str, ...]) -> None:
        """The layout's one-off command in a throw-away container with the same mounts (the account it may carry
        as arguments is never logged)."""
        try:
            client.containers.run(
                spec.image,
                command=list(command),
                volumes={k: dict(v) for k, v in spec.volumes.items()},
                network_mode="host",
                labels=dict(spec.labels),
                remove=True,
                stdout=True,
                stderr=True,
            )
        except Exception as exc:
            stderr = getattr(exc, "stderr", b"") or b""
            detail = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else str(stderr)
            raise BrokerStartError(
                f"{self.kind}: the image's setup ({command[0]} {command[1]}) failed: {type(exc).__name__}",
                log_tail=tail_lines(detail),
            ) from None

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
        _live.pop(id(self), None)
        if self._container is None and not self._volume_created and self.host_dir is None:
            return
        try:
            if self._container is not None:
                self.stop()
                self._container.remove(force=True)
            if self._volume_created and not self.keep_volume:
                try:
                    self._docker().volumes.get(self.volume).remove(force=True)
                except Exception as exc:
                    if not _is_not_found(exc):
                        raise
        except Exception as exc:
            raise BrokerError(f"docker: could not remove {self.container_name}: {exc}") from exc
        finally:
            self._container = None
            self._volume_created = False
            if self.host_dir is not None:
                shutil.rmtree(self.host_dir, ignore_errors=True)

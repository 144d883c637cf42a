"""ActiveMQ Artemis as a local process, from the distribution ``ARTEMIS_HOME`` names.

Artemis is in no package registry these machines reach, so the project never installs or downloads it:
the user points ``ARTEMIS_HOME`` at an unpacked distribution (the directory holding ``bin/artemis`` and
``lib/``) and this launcher uses it. Without ``ARTEMIS_HOME`` every Artemis launch is refused with
:data:`ARTEMIS_HOME_REASON`, which the pytest plugin and the conformance CLI print as their skip reason.

Each handle gets a fresh broker instance: ``artemis create`` into the handle's private directory (once:
the instance and its journal are kept across restarts), then the generated ``broker.xml`` keeps only the
STOMP acceptor, on loopback and a free port (no web console, no AMQP/MQTT/HornetQ ports; a CORE acceptor only
when ``core_port`` asks for one, for a Java JMS client beside jmslike), and the JVM heap is sized for a small
machine. ``bin/artemis run`` execs the JVM, so the spawned pid is the broker's:
SIGTERM runs Artemis's shutdown hook (a clean journal close), SIGKILL is a crash that keeps the journal.
Readiness is a real STOMP CONNECT with the instance's account.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Final

from jmslike.conformance.brokers.base import (
    DEFAULT_CREDENTIALS,
    BrokerNotInstalledError,
    LauncherUnavailableError,
)
from jmslike.conformance.brokers.ports import LOOPBACK, free_port
from jmslike.conformance.brokers.process import BrokerProcess, LocalBroker, RunAs

ARTEMIS_HOME_ENV: Final = "ARTEMIS_HOME"
ARTEMIS_HOME_REASON: Final = (
    "artemis: ARTEMIS_HOME is not set; point it at an unpacked ActiveMQ Artemis distribution (the directory "
    "with bin/artemis and lib/) to run Artemis here (the docker launcher's local image is built from it too), "
    "or use --broker-launcher external, or docker on an engine that can pull apache/activemq-artemis"
)
# The acceptors `artemis create` writes besides STOMP: not needed by jmslike, and each would take a port.
_OTHER_ACCEPTORS: Final = re.compile(r'\s*<acceptor name="(?!stomp")[^"]*">.*?</acceptor>', re.S)
_STOMP_ACCEPTOR: Final = re.compile(r'(<acceptor name="stomp">)tcp://[^:<]+:\d+')
_HEAP: Final = re.compile(r"-Xms\d+[MmGg] -Xmx\d+[MmGg]")


def find_artemis_home(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The Artemis distribution to use: ``explicit``, else ``$ARTEMIS_HOME``, else None (not available)."""
    value = explicit if explicit is not None else os.environ.get(ARTEMIS_HOME_ENV)
    return Path(value) if value else None


def check_artemis_home(home: Path) -> None:
    """Raise BrokerNotInstalledError unless ``home`` looks like an Artemis distribution: a set but wrong
    ARTEMIS_HOME is a mistake to report, not a reason to skip."""
    hint = (
        f"point {ARTEMIS_HOME_ENV} at an unpacked Artemis distribution "
        "(`python -m jmslike.conformance.brokers ensure artemis` says more)"
    )
    if not (home / "bin" / "artemis").is_file():
        raise BrokerNotInstalledError(
            f"artemis: not installed at {ARTEMIS_HOME_ENV}={home} (no bin/artemis); {hint}"
        )
    if not any((home / "lib").glob("artemis-server-*.jar")):
        raise BrokerNotInstalledError(
            f"artemis: not installed completely at {ARTEMIS_HOME_ENV}={home} (no lib/artemis-server-*.jar); {hint}"
        )


def configure_broker_xml(text: str, host: str, stomp_port: int, core_port: int | None = None) -> str:
    """The generated broker.xml with only the STOMP acceptor on ``host:stomp_port``, and a CORE acceptor on
    ``host:core_port`` when one is asked for (pure; idempotent)."""
    text = _OTHER_ACCEPTORS.sub("", text)
    configured, count = _STOMP_ACCEPTOR.subn(rf"\g<1>tcp://{host}:{stomp_port}", text)
    if count != 1:
        raise ValueError(
            "broker.xml has no STOMP acceptor to configure (did `artemis create` change its format?)"
        )
    if core_port is not None:
        stomp_end = configured.index("</acceptor>", configured.index('<acceptor name="stomp">')) + len(
            "</acceptor>"
        )
        core = f'\n         <acceptor name="core">tcp://{host}:{core_port}?protocols=CORE</acceptor>'
        configured = configured[:stomp_end] + core + configured[stomp_end:]
    return configured


def configure_profile(text: str, heap_mb: int) -> str:
    """artemis.profile with the JVM heap set to ``heap_mb`` (pure; idempotent)."""
    configured, count = _HEAP.subn(f"-Xms{min(256, heap_mb)}M -Xmx{heap_mb}M", text)
    if count == 0:
        raise ValueError("artemis.profile has no -Xms/-Xmx in JAVA_ARGS to size the heap")
    return configured


def create_command(home: Path, instance: Path, *, user: str, password: str) -> list[str]:
    """``artemis create`` of a fresh instance as every launcher makes it: no web console, login required,
    loopback (pure). The process launcher runs it on this machine, the docker launcher in its image."""
    return [
        str(home / "bin" / "artemis"),
        "create",
        "--silent",
        "--force",
        "--no-web",
        "--require-login",
        "--host",
        LOOPBACK,
        "--user",
        user,
        "--password",
        password,
        str(instance),
    ]


def configure_instance(instance: Path, *, stomp_port: int, core_port: int | None, heap_mb: int) -> None:
    """Point an instance made by ``artemis create`` at its loopback ports and heap (before every start: both
    edits are idempotent). The process launcher and the docker launcher's host-network mode share it."""
    broker_xml = instance / "etc" / "broker.xml"
    broker_xml.write_text(configure_broker_xml(broker_xml.read_text(), LOOPBACK, stomp_port, core_port))
    profile = instance / "etc" / "artemis.profile"
    profile.write_text(configure_profile(profile.read_text(), heap_mb))


class ArtemisBroker(LocalBroker):
    """``launch("artemis")``: a private Artemis instance from ``ARTEMIS_HOME`` (see the module docstring)."""

    start_timeout_s = 90.0

    def __init__(
        self,
        *,
        port: int | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        artemis_home: str | os.PathLike[str] | None = None,
        heap_mb: int = 1024,
        core_port: int | None = None,
        user: str | None = None,
        password: str | None = None,
        start_timeout_s: float | None = None,
    ) -> None:
        home = find_artemis_home(artemis_home)
        if home is None:
            raise LauncherUnavailableError(ARTEMIS_HOME_REASON)
        default_user, default_password = DEFAULT_CREDENTIALS["artemis"]
        super().__init__(
            "artemis",
            port=port if port is not None else free_port(),
            user=user or default_user,
            password=password or default_password,
            data_dir=data_dir,
            start_timeout_s=start_timeout_s,
        )
        self.home = home
        self.heap_mb = heap_mb
        #: Port of the CORE acceptor for Java JMS clients (``tcp://127.0.0.1:PORT``), None for STOMP only.
        self.core_port = core_port

    @property
    def instance(self) -> Path:
        return self.base_dir / "instance"

    def _check_installation(self) -> None:
        check_artemis_home(self.home)

    def _ports(self) -> dict[str, int]:
        return {"stomp": self.port, **self._client_ports()}

    def _client_ports(self) -> dict[str, int]:
        return {"core": self.core_port} if self.core_port is not None else {}

    def _prepare(self) -> None:
        if not (self.instance / "etc" / "broker.xml").is_file():
            self._create_instance()
        configure_instance(
            self.instance, stomp_port=self.port, core_port=self.core_port, heap_mb=self.heap_mb
        )

    def _create_instance(self) -> None:
        """``artemis create`` with the handle's account (a test account: ``artemis create`` takes it only as
        arguments, so it is visible to local ``ps`` for the second the command runs; never logged)."""
        argv = create_command(self.home, self.instance, user=self.user, password=self.password)
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=self._env())
        if result.returncode != 0 or not (self.instance / "etc" / "broker.xml").is_file():
            raise BrokerNotInstalledError(
                f"artemis: `artemis create` failed (exit {result.returncode}) with ARTEMIS_HOME={self.home}: "
                f"{(result.stderr or result.stdout)[-2000:]}"
            )

    def _env(self) -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if not k.startswith("ARTEMIS_INSTANCE")}

    def _command(self) -> tuple[list[str], dict[str, str], RunAs | None]:
        return [str(self.instance / "bin" / "artemis"), "run"], self._env(), None

    def _console_log(self) -> Path:
        return self.base_dir / "console.log"

    def _log_files(self) -> list[Path]:
        return [self._console_log(), self.instance / "log" / "artemis.log"]

    def _request_graceful_stop(self, proc: BrokerProcess, timeout_s: float) -> None:
        # bin/artemis execs the JVM; SIGTERM runs the broker's shutdown hook (journal closed cleanly).
        proc.popen.terminate()

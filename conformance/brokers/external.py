"""External brokers: a broker someone else runs, reached by URL, optionally controlled by commands.

Owns the ``external`` launcher: :func:`parse_broker_url` (pure), :func:`urls_from_spec` (the
``kind=url,kind=url`` form of ``--broker-url``/``JMSLIKE_BROKER_URL``) and :class:`ExternalBroker`, which
probes readiness like the other launchers and runs shell commands for start/stop/kill/restart when
they are configured. Without the command an operation needs, it raises :class:`BrokerControlError`
naming the option to set. Commands get ``JMSLIKE_BROKER_KIND``/``_URL``/``_HOST``/``_PORT`` in their
environment, so one command can serve several kinds; they are expected to return when done
(``systemctl restart ...``, ``docker restart ...``).
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Self
from urllib.parse import unquote, urlsplit

from jmslike.conformance.brokers.base import (
    DEFAULT_CREDENTIALS,
    BrokerControlError,
    BrokerHandle,
    BrokerKind,
    BrokerStartError,
    LauncherName,
    LauncherUnavailableError,
    RestartMode,
    check_kind,
)
from jmslike.conformance.brokers.ports import port_accepts, wait_port_closed
from jmslike.conformance.brokers.readiness import ProbeResult, stomp_probe, wait_until_ready

logger = logging.getLogger(__name__)

URL_ENV: Final = ("JMSLIKE_BROKER_URL", "JMSLIKE_EXTERNAL_URL")
DEFAULT_STOMP_PORT: Final = 61613


@dataclass(frozen=True)
class BrokerAddress:
    """A parsed broker URL. ``password`` is hidden from ``repr``."""

    kind: BrokerKind
    host: str
    port: int
    ssl: bool = False
    user: str | None = None
    password: str | None = field(default=None, repr=False)


def parse_broker_url(url: str) -> BrokerAddress:
    """Parse ``kind[+ssl]://[user[:password]@]host[:port]`` (pure). The port defaults to 61613."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    ssl = scheme.endswith("+ssl")
    kind_text = scheme.removesuffix("+ssl")
    try:
        kind = check_kind(kind_text)
    except ValueError as exc:
        raise ValueError(f"broker URL {url!r}: {exc}") from None
    if not parts.hostname:
        raise ValueError(f"broker URL {url!r} has no host")
    return BrokerAddress(
        kind=kind,
        host=parts.hostname,
        port=parts.port or DEFAULT_STOMP_PORT,
        ssl=ssl,
        user=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
    )


def urls_from_spec(spec: str) -> dict[BrokerKind, str]:
    """``"activemq=URL,rabbitmq=URL"`` or plain ``"URL,URL"`` -> URL by kind (kind from the scheme)."""
    result: dict[BrokerKind, str] = {}
    for item in (p.strip() for p in spec.split(",")):
        if not item:
            continue
        head, sep, rest = item.partition("=")
        if sep and "://" not in head:
            kind = check_kind(head.strip())
            url = rest.strip()
        else:
            url = item
            kind = parse_broker_url(url).kind
        result[kind] = url
    return result


def _env_url(kind: BrokerKind) -> str | None:
    for name in URL_ENV:
        value = os.environ.get(name)
        if value:
            return urls_from_spec(value).get(kind)
    return None


class ExternalBroker(BrokerHandle):
    """A broker reached by URL. Control operations run the configured shell commands."""

    launcher: LauncherName = "external"

    def __init__(
        self,
        url: str,
        restart_cmd: str | None = None,
        kill_cmd: str | None = None,
        start_cmd: str | None = None,
        stop_cmd: str | None = None,
        *,
        user: str | None = None,
        password: str | None = None,
        log_path: str | os.PathLike[str] | None = None,
        management_url: str | None = None,
        ready_timeout_s: float = 60.0,
        command_timeout_s: float = 180.0,
    ) -> None:
        address = parse_broker_url(url)
        default_user, default_password = DEFAULT_CREDENTIALS[address.kind]
        super().__init__(
            address.kind,
            host=address.host,
            port=address.port,
            user=user or address.user or os.environ.get("JMSLIKE_BROKER_USER") or default_user,
            password=password
            or address.password
            or os.environ.get("JMSLIKE_BROKER_PASSWORD")
            or default_password,
        )
        self.ssl = address.ssl
        self.restart_cmd = restart_cmd
        self.kill_cmd = kill_cmd
        self.start_cmd = start_cmd
        self.stop_cmd = stop_cmd
        self.log_path = Path(log_path) if log_path is not None else None
        self._management_url = management_url
        self.ready_timeout_s = ready_timeout_s
        self.command_timeout_s = command_timeout_s
        self._started_by_us = False

    @classmethod
    def for_kind(cls, kind: BrokerKind, url: str | None = None, **options: object) -> ExternalBroker:
        """An external broker of ``kind``; ``url`` defaults to ``$JMSLIKE_BROKER_URL`` (``kind=url`` pairs
        allowed). Command options default to ``$JMSLIKE_BROKER_{RESTART,KILL,START,STOP}_CMD``."""
        url = url or _env_url(kind)
        if not url:
            raise LauncherUnavailableError(
                f"{kind}: the external launcher needs a URL: pass url=..., --broker-url {kind}=URL "
                f"or set JMSLIKE_BROKER_URL={kind}=URL"
            )
        if parse_broker_url(url).kind != kind:
            raise ValueError(f"broker URL {url!r} is not a {kind} URL")
        for name in ("restart_cmd", "kill_cmd", "start_cmd", "stop_cmd"):
            env_name = f"JMSLIKE_BROKER_{name.upper()}"
            if options.get(name) is None and os.environ.get(env_name):
                options[name] = os.environ[env_name]
        return cls(url, **options)  # type: ignore[arg-type]

    @property
    def url(self) -> str:
        scheme = f"{self.kind}+ssl" if self.ssl else self.kind
        return f"{scheme}://{self.host}:{self.port}"

    @property
    def management_url(self) -> str | None:
        return self._management_url

    def _state(self) -> str:
        return "external"

    def _probe(self, timeout_s: float) -> ProbeResult:
        if self.ssl:  # readiness over TLS is not probed: accept an open port
            ok = port_accepts(self.host, self.port, timeout_s)
            return ProbeResult(ok, "port open" if ok else "port closed")
        return stomp_probe(self.host, self.port, login=self.user, passcode=self.password, timeout_s=timeout_s)

    def is_running(self) -> bool:
        return self._probe(2.0).ready

    def logs(self) -> str:
        if self.log_path is None:
            return f"(external broker {self.url}: no log available; pass log_path= to read one)"
        try:
            return self.log_path.read_text(errors="replace")
        except OSError as exc:
            return f"(could not read {self.log_path}: {exc})"

    def _run(self, what: str, command: str) -> None:
        env = dict(os.environ)
        env.update(
            JMSLIKE_BROKER_KIND=self.kind,
            JMSLIKE_BROKER_URL=self.url,
            JMSLIKE_BROKER_HOST=self.host,
            JMSLIKE_BROKER_PORT=str(self.port),
        )
        logger.info("external %s: running %s command", self.url, what)
        try:
            result = subprocess.run(
                command,
                shell=True,
                env=env,
                capture_output=True,
                text=True,
                timeout=self.command_timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise BrokerControlError(
                f"{self.kind}: {what} command did not finish within {self.command_timeout_s:.0f} s: {command}"
            ) from exc
        if result.returncode != 0:
            output = (result.stderr or result.stdout)[-1000:]
            raise BrokerControlError(
                f"{self.kind}: {what} command exited with {result.returncode}: {command}\n{output}"
            )

    def _wait_ready(self, after: str) -> None:
        ok, detail = wait_until_ready(self._probe, timeout_s=self.ready_timeout_s, exited=lambda: None)
        if not ok:
            raise BrokerStartError(f"{self.kind}: external broker {self.url} not ready {after}: {detail}")

    def _wait_down(self, after: str) -> None:
        if not wait_port_closed(self.host, self.port, timeout_s=self.ready_timeout_s):
            raise BrokerControlError(f"{self.kind}: {self.url} still accepts connections {after}")

    @staticmethod
    def _missing(operation: str, option: str) -> BrokerControlError:
        flag = option.replace("_", "-").removesuffix("-cmd")
        return BrokerControlError(
            f"cannot {operation} an external broker without a command: set {option} "
            f"(--broker-{flag}-cmd or JMSLIKE_BROKER_{option.upper()})"
        )

    def start(self) -> Self:
        if self.start_cmd and not self.is_running():
            self._run("start", self.start_cmd)
            self._started_by_us = True
        self._wait_ready("after start" if self.start_cmd else "(is it running? no start_cmd is set)")
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        if not self.stop_cmd:
            raise self._missing("stop", "stop_cmd")
        self._run("stop", self.stop_cmd)
        self._wait_down("after the stop command")

    def kill(self) -> None:
        if not self.kill_cmd:
            raise self._missing("kill", "kill_cmd")
        self._run("kill", self.kill_cmd)
        self._wait_down("after the kill command")

    def restart(self, mode: RestartMode = "graceful") -> None:
        t0 = time.monotonic()
        if mode == "graceful":
            if self.restart_cmd:
                self._run("restart", self.restart_cmd)
            elif self.stop_cmd and self.start_cmd:
                self.stop()
                self._run("start", self.start_cmd)
            else:
                raise self._missing("restart", "restart_cmd")
        elif mode == "kill":
            self.kill()
            if self.start_cmd:
                self._run("start", self.start_cmd)
            elif self.restart_cmd:
                self._run("restart", self.restart_cmd)
            # else: a supervisor (systemd, a Docker restart policy) is expected to bring it back
        else:
            raise ValueError(f"unknown restart mode {mode!r}; expected 'graceful' or 'kill'")
        self._wait_ready(f"after restart({mode!r})")
        logger.info("external %s restarted (%s) in %.1f s", self.url, mode, time.monotonic() - t0)

    def close(self) -> None:
        """Stop the broker only if this handle started it (with ``start_cmd``) and can stop it."""
        if self._started_by_us and self.stop_cmd:
            self.stop()

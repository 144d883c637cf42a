"""The broker handle every launcher returns, and the errors launchers raise.

This module owns the contract shared by the three launchers (local process, docker, external): what a
test or the CLI may do with a running broker (start, graceful stop, SIGKILL, restart, logs) and how a
failure is reported. It knows nothing about any particular broker or launcher; those live in their own
modules and subclass :class:`BrokerHandle`.

Credentials are kept out of ``repr`` and logs: a handle shows its kind, URL and state, never the password.
"""

from __future__ import annotations

import abc
import logging
from types import TracebackType
from typing import Final, Literal, Self, get_args

logger = logging.getLogger(__name__)

BrokerKind = Literal["activemq", "rabbitmq", "artemis"]
LauncherName = Literal["process", "docker", "external"]
RestartMode = Literal["graceful", "kill"]

KINDS: Final[tuple[BrokerKind, ...]] = get_args(BrokerKind)
LAUNCHERS: Final[tuple[LauncherName, ...]] = get_args(LauncherName)

#: The account each broker accepts out of the box (or that our generated config creates).
DEFAULT_CREDENTIALS: Final[dict[BrokerKind, tuple[str, str]]] = {
    "activemq": ("admin", "admin"),
    "rabbitmq": ("guest", "guest"),
    "artemis": ("artemis", "artemis"),
}

#: How many log lines an error message or a failed test report carries.
LOG_TAIL_LINES: Final = 60


def check_kind(kind: str) -> BrokerKind:
    """Return ``kind`` as a :data:`BrokerKind`, or raise ``ValueError`` listing the valid kinds."""
    for known in KINDS:
        if kind == known:
            return known
    raise ValueError(f"unknown broker kind {kind!r}; expected one of {', '.join(KINDS)}")


def check_launcher(name: str) -> LauncherName:
    """Return ``name`` as a :data:`LauncherName`, or raise ``ValueError`` listing the valid launchers."""
    for known in LAUNCHERS:
        if name == known:
            return known
    raise ValueError(f"unknown broker launcher {name!r}; expected one of {', '.join(LAUNCHERS)}")


def tail_lines(text: str, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of ``text`` (all of it when shorter)."""
    parts = text.splitlines()
    return "\n".join(parts[-lines:])


class BrokerError(Exception):
    """Base of every launcher error."""


class BrokerStartError(BrokerError):
    """A broker could not be started (or restarted). The message names the cause; ``log_tail`` holds
    the end of the broker's log from this start attempt, also appended to the message."""

    def __init__(self, reason: str, *, log_tail: str = "") -> None:
        self.reason = reason
        self.log_tail = log_tail
        if log_tail.strip():
            message = f"{reason}\n--- broker log (last lines) ---\n{log_tail}\n--- end of broker log ---"
        else:
            message = f"{reason}\n(the broker wrote no log for this attempt)"
        super().__init__(message)


class BrokerNotInstalledError(BrokerStartError):
    """The broker (or Java, for ActiveMQ) is not installed where the launcher looked."""


class PortInUseError(BrokerStartError):
    """A port the broker must listen on is taken by another process."""

    def __init__(self, reason: str, *, port: int, log_tail: str = "") -> None:
        self.port = port
        super().__init__(reason, log_tail=log_tail)


class LauncherUnavailableError(BrokerStartError):
    """This launcher cannot run this kind of broker on this machine (no Docker engine, no local Artemis).

    The pytest plugin turns this error into a skip carrying the message."""


class BrokerControlError(BrokerError):
    """A control operation (stop, kill, restart) is not possible for this handle, e.g. restarting an
    external broker for which no restart command was configured."""


class BrokerHandle(abc.ABC):
    """A broker the tests can talk to and control.

    ``host``/``port`` is the STOMP endpoint; ``url`` is the jmslike URL for it. ``user``/``password``
    are the broker's default account. Use as a context manager: ``with launch("activemq") as broker:``
    stops the broker (and removes private temporary data) on exit.
    """

    kind: BrokerKind
    launcher: LauncherName

    def __init__(self, kind: BrokerKind, *, host: str, port: int, user: str, password: str) -> None:
        self.kind = kind
        self.host = host
        self.port = port
        self.user = user
        self._password = password
        self.management_port: int | None = None

    @property
    def password(self) -> str:
        """Password of the default account (never shown in ``repr`` or logs)."""
        return self._password

    @property
    def url(self) -> str:
        """jmslike URL of the STOMP endpoint, e.g. ``activemq://127.0.0.1:61613`` (no credentials)."""
        return f"{self.kind}://{self.host}:{self.port}"

    @property
    def management_url(self) -> str | None:
        """Base URL of the broker's HTTP management API, when it has one (RabbitMQ)."""
        if self.management_port is None:
            return None
        return f"http://{self.host}:{self.management_port}"

    @property
    def launcher_detail(self) -> str:
        """How the launcher runs this broker beyond its name, for reports (docker: the image); "" when nothing
        more is worth saying."""
        return ""

    @property
    def pid(self) -> int | None:
        """Process id of the broker process itself (JVM, Erlang VM) when it runs locally, else None."""
        return None

    @abc.abstractmethod
    def start(self) -> Self:
        """Start the broker (no-op when it is running) and wait until it answers a STOMP CONNECT."""

    @abc.abstractmethod
    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the broker gracefully; escalate to SIGKILL (with a warning) after ``timeout_s``."""

    @abc.abstractmethod
    def kill(self) -> None:
        """SIGKILL the broker process itself (a crash, not a shutdown); returns once it is gone."""

    @abc.abstractmethod
    def is_running(self) -> bool:
        """Whether the broker process is alive (for external brokers: whether it answers)."""

    @abc.abstractmethod
    def logs(self) -> str:
        """Text of the broker log (all runs of this handle), or an explanation when there is none."""

    def restart(self, mode: RestartMode = "graceful") -> None:
        """Stop (``graceful``) or kill (``kill``) the broker, then start it again on the same port with
        the same data."""
        if mode == "graceful":
            self.stop()
        elif mode == "kill":
            self.kill()
        else:
            raise ValueError(f"unknown restart mode {mode!r}; expected 'graceful' or 'kill'")
        self.start()

    def close(self) -> None:
        """Stop the broker and release what the handle owns. The handle cannot be started again."""
        self.stop()

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of :meth:`logs`."""
        return tail_lines(self.logs(), lines)

    def _state(self) -> str:
        return "running" if self.is_running() else "stopped"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.launcher} {self.url} {self._state()}>"

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

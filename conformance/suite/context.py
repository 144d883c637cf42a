"""The object every scenario function receives: broker, connections, names, probes, proxies.

A :class:`Context` lives for one phase of one scenario (``run``, or ``setup``/``verify`` around the
shared restart) on one broker. It owns what the scenario opens through it -- connections, proxies,
subprocesses -- and closes them when the phase ends (setup-phase connections opened with
``keep=True`` live on until the scenario's verify phase is over). It also owns unique names, so
scenarios never collide on a shared broker, and a seeded random generator, so a run can be replayed.
Credentials stay in here: scenarios call :meth:`Context.connect` and never see them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import secrets
import subprocess
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Literal, cast
from urllib.parse import urlencode

from jmslike import Connection, ConnectionFactory, JMSException
from jmslike.config import QUERY_KEYS
from jmslike.conformance.proxy import FaultProxy
from jmslike.conformance.suite.probe import BrokerProbe, probe_for
from jmslike.conformance.suite.restarts import FLUSH_NOTE, flushes, restart

if TYPE_CHECKING:
    from jmslike.conformance.brokers import BrokerHandle

log = logging.getLogger(__name__)

Phase = Literal["run", "setup", "verify"]
#: Which of jmslike's APIs the scenarios drive: the threaded one, or jmslike.aio through the blocking bridge, on
#: asyncio's event loop or on uvloop's (what uvicorn, and so FastAPI, runs when it is installed).
Api = Literal["threaded", "aio", "aio-uvloop"]
APIS: tuple[Api, ...] = ("threaded", "aio", "aio-uvloop")


class ScenarioSkipped(Exception):
    """Raised by a scenario that cannot run on this broker for a reason outside JMS (recorded as
    skipped, e.g. a fault that needs a local process the external launcher cannot give)."""


class Resources:
    """What a phase opened; closed in reverse order. Thread-safe (scenarios may start threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._closers: list[Callable[[], None]] = []

    def add(self, closer: Callable[[], None]) -> None:
        with self._lock:
            self._closers.append(closer)

    def close_all(self) -> None:
        with self._lock:
            closers, self._closers = self._closers, []
        for closer in reversed(closers):
            try:
                closer()
            except Exception:
                log.debug("cleanup failed", exc_info=True)


class Context:
    """One scenario phase on one broker; see the module docstring."""

    def __init__(
        self,
        broker: BrokerHandle,
        *,
        scenario_id: str,
        mode: str | None,
        phase: Phase,
        seed: int,
        resources: Resources,
        kept: Resources | None = None,
        api: Api = "threaded",
    ) -> None:
        self.broker = broker
        self.api = api
        self.kind: str = broker.kind
        self.scenario_id = scenario_id
        self.mode = mode
        self.phase = phase
        self.seed = seed
        self.rng = random.Random(f"{seed}:{scenario_id}:{broker.kind}:{mode}")
        self._resources = resources
        self._kept = kept or resources
        self._probe: BrokerProbe | None = None
        self._short = scenario_id.replace(".", "-")[:32]  # names stay dot-free: safe in any broker's naming
        self.notes: list[str] = []
        self.restart_hooks: list[tuple[Callable[[], None], Callable[[], None]]] = []

    # -- names ----------------------------------------------------------------------------------------

    def name(self, role: str = "d") -> str:
        """A destination or subscription name unique to this run, valid on every broker."""
        return f"jc-{self._short}-{role}-{secrets.token_hex(4)}"

    def client_id(self, role: str = "c") -> str:
        return f"jc-{self._short}-{role}-{secrets.token_hex(4)}"

    # -- connections ----------------------------------------------------------------------------------

    def url(
        self, via: FaultProxy | None = None, options: Mapping[str, object] | None = None, **more: object
    ) -> str:
        """The jmslike URL of the broker (or of ``via``, a proxy in front of it), without credentials;
        URL options come from ``options`` and keyword arguments."""
        base = self.broker.url if via is None else f"{self.kind}://{via.host}:{via.port}"
        merged = {**(options or {}), **more}
        query = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in merged.items()}
        management = self.broker.management_url
        if management and "management_url" in QUERY_KEYS and "management_url" not in query:
            query["management_url"] = management  # the broker's admin API, where the adapter needs it
        return base + ("?" + urlencode(query) if query else "")

    def factory(
        self, via: FaultProxy | None = None, options: Mapping[str, object] | None = None, **more: object
    ) -> ConnectionFactory:
        """The API's ConnectionFactory for the broker (without credentials: pass them to createConnection)."""
        if self.api != "threaded":
            from jmslike.conformance.suite import aio_bridge

            return cast(ConnectionFactory, aio_bridge.factory(self.url(via, options, **more), self.api))
        return ConnectionFactory(self.url(via, options, **more))

    def connect(
        self,
        client_id: str | None = None,
        *,
        start: bool = True,
        keep: bool = False,
        via: FaultProxy | None = None,
        options: Mapping[str, object] | None = None,
        **more: object,
    ) -> Connection:
        """A connection with the broker's credentials, closed when the phase ends.

        ``keep=True`` in a setup phase keeps it open across the shared restart until verify has run
        (give it ``reconnect=True`` if it must work after the restart). URL options are keyword
        arguments: ``ctx.connect(reconnect=True, heartbeat_ms=500)``.
        """
        if self.api != "threaded":  # jmslike.aio, seen through blocking calls (suite/aio_bridge.py)
            from jmslike.conformance.suite import aio_bridge

            bridged = aio_bridge.factory(self.url(via, options, **more), self.api)
            connection = cast(Connection, bridged.createConnection(self.broker.user, self.broker.password))
        else:
            connection = self.factory(via, options, **more).createConnection(
                self.broker.user, self.broker.password
            )
        (self._kept if keep else self._resources).add(connection.close)
        if client_id is not None:
            connection.setClientID(client_id)
        if start:
            connection.start()
        return connection

    def server(self) -> str:
        """The broker's CONNECTED ``server`` header, through jmslike's ConnectionMetaData."""
        connection = self.connect(start=False)
        try:
            return connection.getMetaData().getBrokerServer()
        finally:
            with contextlib.suppress(JMSException):
                connection.close()

    # -- probes, proxies, processes -------------------------------------------------------------------

    @property
    def probe(self) -> BrokerProbe:
        """Raw broker probe (no jmslike code); may raise ProbeUnavailable on some brokers."""
        if self._probe is None:
            self._probe = probe_for(self.broker)
        return self._probe

    def proxy(self) -> FaultProxy:
        """A started fault proxy in front of the broker's STOMP port, closed when the phase ends."""
        proxy = FaultProxy(self.broker.host, self.broker.port).start()
        self._resources.add(proxy.close)
        return proxy

    def spawn(self, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """A child process (killed when the phase ends) with stdout piped as text; ``env`` is added to
        this process's environment (pass secrets there, never on the command line)."""
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )

        def reap() -> None:
            if process.poll() is None:
                process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.communicate(timeout=5)

        self._resources.add(reap)
        return process

    def child_env(self, via: FaultProxy | None = None, **options: object) -> dict[str, str]:
        """Environment for a child jmslike process: ``JMSLIKE_CONFORMANCE_URL``, ``_USER``, ``_PASSWORD``."""
        return {
            "JMSLIKE_CONFORMANCE_URL": self.url(via, options),
            "JMSLIKE_CONFORMANCE_USER": self.broker.user,
            "JMSLIKE_CONFORMANCE_PASSWORD": self.broker.password,
        }

    def defer(self, closer: Callable[[], None]) -> None:
        """Run ``closer`` when the phase ends (stop a thread, delete a subscription...)."""
        self._resources.add(closer)

    # -- broker control -------------------------------------------------------------------------------

    def restart(self) -> None:
        """Restart the broker in this run's mode. Only per-mode scenarios may call it."""
        if self.mode is None:
            raise RuntimeError(f"{self.scenario_id}: restart() needs a per-mode scenario (per_mode=True)")
        if flushes(self.broker, self.mode) and FLUSH_NOTE not in self.notes:
            self.note(FLUSH_NOTE)
        restart(self.broker, self.mode)  # type: ignore[arg-type]

    def around_restart(self, before: Callable[[], None], after: Callable[[], None]) -> None:
        """Setup phase: call ``before`` right before the shared restart and ``after`` once the broker is
        back (e.g. to record the fault in an operation log)."""
        self.restart_hooks.append((before, after))

    def note(self, text: str) -> None:
        """Add a line to the result's note (shown in the report next to the outcome)."""
        self.notes.append(text)

    def require(self, condition: bool, reason: str) -> None:
        """Skip the scenario on this broker when ``condition`` is false (not a JMS judgement)."""
        if not condition:
            raise ScenarioSkipped(reason)

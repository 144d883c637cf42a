"""Running the suite: brokers up, scenarios with timeouts, one shared restart per (broker, mode).

Order per broker: plain scenarios (once); then for each restart mode: every restart scenario's
``setup``, ONE restart of the broker, every ``verify`` ("set up many, restart once, verify many"), then
the per-mode scenarios that restart the broker themselves. A broker without a jmslike adapter, or one
this launcher cannot run here, is recorded as skipped with the reason, not failed. A scenario that hangs
is abandoned at its timeout (its connections are closed to unblock it) and recorded as a failure.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

from jmslike.conformance.brokers import (
    BrokerError,
    BrokerHandle,
    BrokerNotInstalledError,
    LauncherUnavailableError,
    check_kind,
    launch,
)
from jmslike.conformance.suite.classify import TABLE_EXPECTED, ScenarioTimeout, Verdict, classify
from jmslike.conformance.suite.context import Api, Context, Resources
from jmslike.conformance.suite.expectations import expectation_for
from jmslike.conformance.suite.model import (
    MODE_FAULT,
    BrokerInfo,
    RunReport,
    ScenarioInfo,
    ScenarioResult,
)
from jmslike.conformance.suite.registry import PlainScenario, RestartScenario, Scenario, with_timeout
from jmslike.conformance.suite.restarts import FLUSH_NOTE, flushes, restart
from jmslike.registry import adapter_names

log = logging.getLogger(__name__)

Launcher = Callable[..., BrokerHandle]


class Progress(Protocol):
    """What the runner tells its caller (the CLI draws a bar or prints lines)."""

    def begin(self, total: int) -> None: ...

    def started(self, label: str) -> None: ...

    def finished(self, result: ScenarioResult) -> None: ...

    def message(self, text: str) -> None: ...

    def end(self) -> None: ...


class SilentProgress:
    def begin(self, total: int) -> None:
        pass

    def started(self, label: str) -> None:
        pass

    def finished(self, result: ScenarioResult) -> None:
        pass

    def message(self, text: str) -> None:
        log.info("%s", text)

    def end(self) -> None:
        pass


@dataclass
class RunOptions:
    brokers: tuple[str, ...]
    modes: tuple[str, ...] = ("graceful", "kill")
    launcher: str = "process"
    urls: dict[str, str] = field(default_factory=dict)
    seed: int = 0
    timeout_s: float | None = None
    quick: bool = False
    filters: dict[str, list[str]] = field(default_factory=dict)
    launch_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    api: Api = "threaded"


def planned_results(scenarios: Sequence[Scenario], modes: Sequence[str], brokers: int) -> int:
    per_broker = sum(len(modes) if s.info.per_mode else 1 for s in scenarios)
    return per_broker * brokers


def stale_note(results: Sequence[ScenarioResult]) -> str | None:
    """One run note for every pass the expectations table expected otherwise (each result keeps its own
    note with the reason), instead of the same warning on each of them."""
    passed = sorted({f"{r.id} ({r.broker})" for r in results if r.note.startswith(TABLE_EXPECTED)})
    if not passed:
        return None
    return (
        f"{len(passed)} scenario(s) passed on a broker where conformance/suite/expectations.py lists a deviation or refusal "
        f"(pass*): {', '.join(passed)}. The table may be stale, or the behaviour intermittent (its reason says)."
    )


def _result(
    info: ScenarioInfo, broker: str, mode: str | None, verdict: Verdict, expected: str, duration_s: float
) -> ScenarioResult:
    faults: tuple[str, ...] = info.faults
    if mode is not None and info.per_mode:
        faults = (MODE_FAULT[mode], *[f for f in info.faults if f not in ("G", "K")])
    return ScenarioResult(
        id=info.id,
        category=info.category,
        rule=info.rule,
        section=info.section,
        strength=info.strength,
        broker=broker,
        mode=mode,
        outcome=verdict.outcome,
        detail=verdict.detail,
        note=verdict.note,
        expected=expected,
        duration_s=duration_s,
        faults=faults,
    )


def call_with_timeout(
    fn: Callable[[], None], timeout_s: float, on_timeout: Callable[[], None]
) -> BaseException | None:
    """Run ``fn`` on a daemon thread; its exception, or ScenarioTimeout if it outlives ``timeout_s``."""
    box: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as exc:
            box.append(exc)

    thread = threading.Thread(target=target, name="scenario", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        on_timeout()
        thread.join(5.0)  # closing its connections usually unblocks it
        return ScenarioTimeout(
            f"did not finish within {timeout_s:.0f}s (abandoned; its connections were closed)"
        )
    return box[0] if box else None


def _setup_into(scenario: RestartScenario[Any], ctx: Context, box: list[Any]) -> None:
    box.append(scenario.setup(ctx))


class Runner:
    """Runs ``scenarios`` on the brokers of ``options``; see the module docstring."""

    def __init__(
        self,
        scenarios: Sequence[Scenario],
        options: RunOptions,
        progress: Progress | None = None,
        launcher: Launcher = launch,
    ) -> None:
        self.scenarios = list(scenarios)
        self.options = options
        self.progress = progress or SilentProgress()
        self._launch = launcher
        self.results: list[ScenarioResult] = []
        self.brokers: list[BrokerInfo] = []
        self.notes: list[str] = []
        self.secrets: set[str] = set()

    # -- top level ------------------------------------------------------------------------------------

    def run(self) -> RunReport:
        started = dt.datetime.now(dt.UTC)
        t0 = time.monotonic()
        self.progress.begin(planned_results(self.scenarios, self.options.modes, len(self.options.brokers)))
        try:
            for kind in self.options.brokers:
                self._run_broker(kind)
        finally:
            self.progress.end()
        stale = stale_note(self.results)
        if stale:
            self.notes.append(stale)
        return RunReport(
            results=self.results,
            brokers=self.brokers,
            modes=tuple(self.options.modes),
            seed=self.options.seed,
            started_at=started.isoformat(timespec="seconds"),
            wall_time_s=time.monotonic() - t0,
            quick=self.options.quick,
            filters=self.options.filters,
            notes=self.notes,
            api=self.options.api,
        )

    def _record(self, result: ScenarioResult) -> None:
        self.results.append(result)
        self.progress.finished(result)

    def _skip_all(self, kind: str, reason: str, outcome: str = "skipped") -> None:
        for scenario in self.scenarios:
            modes: Sequence[str | None] = self.options.modes if scenario.info.per_mode else [None]
            for mode in modes:
                verdict = Verdict("fail" if outcome == "fail" else "skipped", detail=reason)
                self._record(_result(scenario.info, kind, mode, verdict, "pass", 0.0))

    def _run_broker(self, kind: str) -> None:
        info = BrokerInfo(kind=kind, launcher=self.options.launcher)
        self.brokers.append(info)
        if kind not in adapter_names():
            info.status = "skipped"
            info.reason = f"no jmslike adapter for {kind} is installed yet (installed: {', '.join(adapter_names()) or 'none'})"
            self.progress.message(f"{kind}: skipped -- {info.reason}")
            self._skip_all(kind, info.reason)
            return
        self.progress.message(f"{kind}: starting broker ({self.options.launcher} launcher)")
        try:
            broker = self._start(kind)
        except (LauncherUnavailableError, BrokerNotInstalledError) as exc:
            info.status = "skipped"
            info.reason = getattr(exc, "reason", str(exc)).splitlines()[0]
            self.progress.message(f"{kind}: skipped -- {info.reason}")
            self._skip_all(kind, info.reason)
            return
        except (BrokerError, ValueError, OSError) as exc:
            info.status = "failed"
            info.reason = f"broker did not start: {str(exc).splitlines()[0]}"
            self.progress.message(f"{kind}: {info.reason}")
            self._skip_all(kind, info.reason, outcome="fail")
            return
        self.secrets.add(broker.password)
        info.url = broker.url
        info.launcher_detail = broker.launcher_detail
        try:
            info.server = self._server(broker)
            self.progress.message(f"{kind}: {info.server or 'server header not sent'} at {broker.url}")
            self._run_on(broker)
        finally:
            with contextlib.suppress(Exception):
                broker.close()

    def _start(self, kind: str) -> BrokerHandle:
        options = dict(self.options.launch_options.get(kind, {}))
        if self.options.launcher == "external":
            url = self.options.urls.get(kind)
            if url is None:
                raise LauncherUnavailableError(
                    f"{kind}: no URL for the external launcher; pass --broker-url {kind}=URL"
                )
            options["url"] = url
        return self._launch(check_kind(kind), self.options.launcher, **options)

    def _server(self, broker: BrokerHandle) -> str:
        resources = Resources()
        ctx = Context(
            broker,
            scenario_id="metadata",
            mode=None,
            phase="run",
            seed=self.options.seed,
            resources=resources,
        )
        try:
            server = ctx.server()
            self._warm_up(ctx)
            return server
        except Exception as exc:
            log.warning("could not read the broker's server header: %s", exc)
            return ""
        finally:
            resources.close_all()

    @staticmethod
    def _warm_up(ctx: Context) -> None:
        """One round trip before the first scenario, so a freshly started broker is not part of it."""
        from jmslike import Session

        connection = ctx.connect()
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        queue = session.createQueue(ctx.name("warm-up"))
        session.createProducer(queue).send(session.createTextMessage("warm-up"))
        session.createConsumer(queue).receive(10_000)
        connection.close()

    # -- one broker -----------------------------------------------------------------------------------

    def _run_on(self, broker: BrokerHandle) -> None:
        plain = [s for s in self.scenarios if isinstance(s, PlainScenario) and not s.info.per_mode]
        restart = [s for s in self.scenarios if isinstance(s, RestartScenario)]
        per_mode = [s for s in self.scenarios if isinstance(s, PlainScenario) and s.info.per_mode]
        for scenario in plain:
            self._run_plain(broker, scenario, None)
        for mode in self.options.modes:
            if restart:
                self._restart_round(broker, restart, mode)
            for scenario in per_mode:
                self._run_plain(broker, scenario, mode)

    def _ensure_running(self, broker: BrokerHandle) -> None:
        if not broker.is_running():
            self.progress.message(f"{broker.kind}: broker was down after a scenario; starting it again")
            broker.start()

    def _context(
        self,
        broker: BrokerHandle,
        info: ScenarioInfo,
        mode: str | None,
        phase: str,
        resources: Resources,
        kept: Resources | None = None,
    ) -> Context:
        return Context(
            broker,
            scenario_id=info.id,
            mode=mode,
            phase=phase,  # type: ignore[arg-type]
            seed=self.options.seed,
            resources=resources,
            kept=kept,
            api=self.options.api,
        )

    def _finish(
        self,
        info: ScenarioInfo,
        broker: str,
        mode: str | None,
        error: BaseException | None,
        duration_s: float,
        notes: list[str],
    ) -> None:
        expectation = expectation_for(info.id, broker, mode)
        verdict = classify(error, expectation)
        if notes:
            joined = "; ".join(notes)
            verdict = Verdict(
                verdict.outcome, verdict.detail, f"{verdict.note}; {joined}" if verdict.note else joined
            )
        self._record(_result(info, broker, mode, verdict, expectation.outcome, duration_s))

    def _run_plain(self, broker: BrokerHandle, scenario: PlainScenario, mode: str | None) -> None:
        info = with_timeout(scenario.info, self.options.timeout_s)
        self.progress.started(f"{broker.kind} {mode or '-'} {info.id}")
        resources = Resources()
        ctx = self._context(broker, info, mode, "run", resources)
        t0 = time.monotonic()
        error = call_with_timeout(lambda: scenario.run(ctx), info.timeout_s, resources.close_all)
        duration = time.monotonic() - t0
        resources.close_all()
        self._finish(info, broker.kind, mode, error, duration, ctx.notes)
        try:
            self._ensure_running(broker)
        except BrokerError as exc:
            self.progress.message(f"{broker.kind}: could not bring the broker back: {exc}")
            raise

    def _restart_round(self, broker: BrokerHandle, scenarios: list[RestartScenario[Any]], mode: str) -> None:
        prepared: list[tuple[RestartScenario[Any], ScenarioInfo, Any, Resources, list[str], float]] = []
        hooks: list[tuple[Callable[[], None], Callable[[], None]]] = []
        for scenario in scenarios:
            info = with_timeout(scenario.info, self.options.timeout_s)
            self.progress.started(f"{broker.kind} {mode} {info.id} (setup)")
            resources, kept = Resources(), Resources()
            ctx = self._context(broker, info, mode, "setup", resources, kept)
            box: list[Any] = []
            t0 = time.monotonic()
            error = call_with_timeout(
                partial(_setup_into, scenario, ctx, box), info.timeout_s, resources.close_all
            )
            duration = time.monotonic() - t0
            resources.close_all()
            if error is not None:
                kept.close_all()
                self._finish(info, broker.kind, mode, error, duration, ctx.notes)
                continue
            prepared.append((scenario, info, box[0] if box else None, kept, ctx.notes, duration))
            hooks.extend(ctx.restart_hooks)
        if not prepared:
            return
        self.progress.started(f"{broker.kind} {mode} -- shared restart ({len(prepared)} scenarios)")
        for before, _ in hooks:
            with contextlib.suppress(Exception):
                before()
        if flushes(broker, mode) and (note := f"{broker.kind}: {FLUSH_NOTE}") not in self.notes:
            self.notes.append(note)
        t0 = time.monotonic()
        try:
            restart(broker, mode)  # type: ignore[arg-type]
        except BrokerError as exc:
            reason = f"the shared {mode} restart failed: {str(exc).splitlines()[0]}"
            for _scenario, info, _, kept, _notes, duration in prepared:
                kept.close_all()
                self._record(_result(info, broker.kind, mode, Verdict("fail", reason), "pass", duration))
            with contextlib.suppress(BrokerError):
                broker.start()
            return
        restart_s = time.monotonic() - t0
        for _, after in hooks:
            with contextlib.suppress(Exception):
                after()
        self.notes.append(
            f"{broker.kind}: shared {mode} restart took {restart_s:.1f}s for {len(prepared)} scenarios"
        )
        for scenario, info, state, kept, notes, setup_s in prepared:
            self.progress.started(f"{broker.kind} {mode} {info.id} (verify)")
            resources = Resources()
            ctx = self._context(broker, info, mode, "verify", resources)
            ctx.notes = list(notes)
            t0 = time.monotonic()
            error = call_with_timeout(
                partial(scenario.run_verify, ctx, state), info.timeout_s, resources.close_all
            )
            duration = time.monotonic() - t0
            resources.close_all()
            kept.close_all()
            self._finish(info, broker.kind, mode, error, setup_s + duration, ctx.notes)
            self._ensure_running(broker)

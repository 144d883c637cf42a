"""pytest plugin: real brokers as fixtures, markers, and broker logs in failure reports.

Loaded through the ``pytest11`` entry point, so any project with jmslike installed gets it. It owns:

* options ``--broker activemq,rabbitmq[,artemis]``, ``--broker-launcher process|docker|external``,
  ``--broker-url`` (``kind=url`` pairs), ``--broker-restart-cmd``, ``--broker-kill-cmd`` (each with a
  ``JMSLIKE_*`` environment default);
* fixtures ``broker`` (one shared broker per kind per session, started lazily and started again
  before a test if an earlier test stopped or killed it), ``broker_kind`` (the parametrisation: every
  test that uses it runs once per selected kind, id = kind), ``broker_launcher``, ``fresh_broker``
  (a private broker for one test) and ``unique_name``;
* markers (also declared in pyproject, registered here so the plugin works elsewhere); tests using a
  broker fixture get the ``broker`` marker automatically; ``docker`` tests are skipped with the reason
  when no Docker engine answers; brokers a launcher cannot run here (Artemis without Docker) skip;
* on failure, the tail of each broker log the test used is attached to the report.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Final

import pytest

from jmslike.conformance.brokers import (
    KINDS,
    LAUNCHERS,
    BrokerHandle,
    BrokerKind,
    BrokerStartError,
    LauncherName,
    LauncherUnavailableError,
    check_kind,
    check_launcher,
    create,
    default_kinds,
    launch,
)
from jmslike.conformance.brokers.external import urls_from_spec

MARKERS: Final[dict[str, str]] = {
    "broker": "needs a real broker started by the launchers",
    "restart": "restarts or kills the broker",
    "slow": "takes more than a few seconds",
    "spark": "needs pyspark and Java",
    "docker": "needs a Docker engine",
    "java": "needs Java and the ActiveMQ client jars",
}
_DEFAULT_KINDS, _DEFAULT_NOTE = default_kinds()
#: ActiveMQ and RabbitMQ, and Artemis when ARTEMIS_HOME names a distribution (else _DEFAULT_NOTE says why not).
DEFAULT_BROKERS: Final = ",".join(_DEFAULT_KINDS)
BROKER_FIXTURES: Final = ("broker", "fresh_broker")


@dataclass(frozen=True)
class BrokerSettings:
    """The parsed plugin options."""

    kinds: tuple[BrokerKind, ...]
    launcher: LauncherName
    urls: dict[BrokerKind, str] = field(default_factory=dict)
    restart_cmd: str | None = None
    kill_cmd: str | None = None

    def launch_options(self, kind: BrokerKind) -> dict[str, object]:
        """Options for :func:`create`/:func:`launch` of ``kind`` with the chosen launcher."""
        if self.launcher != "external":
            return {}
        url = self.urls.get(kind)
        if url is None:
            raise LauncherUnavailableError(
                f"{kind}: no URL for the external launcher; pass --broker-url {kind}=URL"
            )
        return {"url": url, "restart_cmd": self.restart_cmd, "kill_cmd": self.kill_cmd}


_SETTINGS: Final = pytest.StashKey[BrokerSettings]()
_USED_HANDLES: Final = pytest.StashKey[list[BrokerHandle]]()
_DOCKER_REASON: Final = pytest.StashKey[str | None]()


def parse_settings(
    brokers: str, launcher: str, url_spec: str | None, restart_cmd: str | None, kill_cmd: str | None
) -> BrokerSettings:
    """Validate option values (pure); ``ValueError`` says what is wrong."""
    kinds = tuple(dict.fromkeys(check_kind(k.strip()) for k in brokers.split(",") if k.strip()))
    if not kinds:
        raise ValueError(f"--broker needs at least one of {', '.join(KINDS)}")
    return BrokerSettings(
        kinds=kinds,
        launcher=check_launcher(launcher),
        urls=urls_from_spec(url_spec) if url_spec else {},
        restart_cmd=restart_cmd or None,
        kill_cmd=kill_cmd or None,
    )


def make_unique_name(test_name: str, *, max_prefix: int = 40) -> str:
    """``test_name`` shortened and cleaned (letters, digits, '-', '_', '.') plus random hex."""
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", test_name).strip("._-") or "test"
    return f"{base[:max_prefix].rstrip('._-')}-{secrets.token_hex(4)}"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jmslike", "jmslike brokers")
    group.addoption(
        "--broker",
        dest="jmslike_brokers",
        default=os.environ.get("JMSLIKE_BROKERS", DEFAULT_BROKERS),
        help=f"comma-separated broker kinds to run broker tests against ({', '.join(KINDS)}); "
        f"default {DEFAULT_BROKERS} or $JMSLIKE_BROKERS",
    )
    group.addoption(
        "--broker-launcher",
        dest="jmslike_launcher",
        default=os.environ.get("JMSLIKE_BROKER_LAUNCHER", "process"),
        choices=LAUNCHERS,
        help="how brokers are run: process (installed here), docker, external (default process)",
    )
    group.addoption(
        "--broker-url",
        dest="jmslike_broker_url",
        default=os.environ.get("JMSLIKE_BROKER_URL") or os.environ.get("JMSLIKE_EXTERNAL_URL"),
        help="external broker URLs: URL or kind=URL pairs, comma-separated",
    )
    group.addoption(
        "--broker-restart-cmd",
        dest="jmslike_restart_cmd",
        default=os.environ.get("JMSLIKE_BROKER_RESTART_CMD"),
        help="shell command restarting an external broker (env JMSLIKE_BROKER_KIND/URL/HOST/PORT)",
    )
    group.addoption(
        "--broker-kill-cmd",
        dest="jmslike_kill_cmd",
        default=os.environ.get("JMSLIKE_BROKER_KILL_CMD"),
        help="shell command killing an external broker (env JMSLIKE_BROKER_KIND/URL/HOST/PORT)",
    )


def pytest_report_header(config: pytest.Config) -> str:
    settings = _settings(config)
    line = f"jmslike brokers: {', '.join(settings.kinds)} ({settings.launcher} launcher)"
    if "artemis" not in settings.kinds and _DEFAULT_NOTE is not None:
        line += f"\n{_DEFAULT_NOTE}"
    return line


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    try:
        config.stash[_SETTINGS] = parse_settings(
            config.getoption("jmslike_brokers"),
            config.getoption("jmslike_launcher"),
            config.getoption("jmslike_broker_url"),
            config.getoption("jmslike_restart_cmd"),
            config.getoption("jmslike_kill_cmd"),
        )
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from exc


def _settings(config: pytest.Config) -> BrokerSettings:
    return config.stash[_SETTINGS]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "broker_kind" not in metafunc.fixturenames:
        return
    for marker in metafunc.definition.iter_markers("parametrize"):
        argnames = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        names = [n.strip() for n in argnames.split(",")] if isinstance(argnames, str) else list(argnames)
        if "broker_kind" in names:
            return  # the test chose its kinds itself
    kinds = list(_settings(metafunc.config).kinds)
    metafunc.parametrize("broker_kind", kinds, ids=kinds, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        fixturenames = getattr(item, "fixturenames", ())
        if any(name in fixturenames for name in BROKER_FIXTURES):
            item.add_marker(pytest.mark.broker)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker") is None:
        return
    if _DOCKER_REASON not in item.config.stash:
        from jmslike.conformance.brokers.docker import docker_unavailable_reason

        item.config.stash[_DOCKER_REASON] = docker_unavailable_reason()
    reason = item.config.stash[_DOCKER_REASON]
    if reason is not None:
        pytest.skip(reason)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        for handle in item.stash.get(_USED_HANDLES, []):
            try:
                tail = handle.log_tail()
            except Exception as exc:  # the report must not fail because a log is unreadable
                tail = f"(could not read the broker log: {exc})"
            report.sections.append((f"broker log: {handle.kind} at {handle.url} (last lines)", tail))
    return report


def _remember(node: pytest.Item | None, handle: BrokerHandle) -> None:
    if node is not None:
        node.stash.setdefault(_USED_HANDLES, []).append(handle)


class BrokerPool:
    """The session's shared brokers: one per kind, started on first use, closed at session end."""

    def __init__(self, settings: BrokerSettings) -> None:
        self.settings = settings
        self._handles: dict[BrokerKind, BrokerHandle] = {}
        self._failures: dict[BrokerKind, BrokerStartError] = {}

    def get(self, kind: BrokerKind) -> BrokerHandle:
        """The running shared broker of ``kind`` (started, or started again, as needed).

        Raises :class:`LauncherUnavailableError` / :class:`BrokerStartError`; a first start that
        failed is not retried for every test (the same error is raised again at once)."""
        if kind in self._failures:
            raise self._failures[kind]
        handle = self._handles.get(kind)
        if handle is None:
            try:
                handle = launch(kind, self.settings.launcher, **self.settings.launch_options(kind))
            except BrokerStartError as exc:
                self._failures[kind] = exc
                raise
            self._handles[kind] = handle
        elif not handle.is_running():
            handle.start()
        return handle

    def close_all(self) -> None:
        errors: list[BaseException] = []
        for handle in self._handles.values():
            try:
                handle.close()
            except Exception as exc:
                errors.append(exc)
        self._handles.clear()
        if errors:
            raise errors[0]


@pytest.fixture(scope="session")
def jmslike_broker_pool(request: pytest.FixtureRequest) -> Iterator[BrokerPool]:
    """Session-wide pool behind the ``broker`` fixture."""
    pool = BrokerPool(_settings(request.config))
    yield pool
    pool.close_all()


@pytest.fixture
def broker_kind(request: pytest.FixtureRequest) -> BrokerKind:
    """The broker kind of this test run ("activemq", "rabbitmq", "artemis")."""
    param = getattr(request, "param", None)
    if param is None:
        return _settings(request.config).kinds[0]
    return check_kind(str(param))


@pytest.fixture
def broker_launcher(request: pytest.FixtureRequest) -> LauncherName:
    """The launcher chosen with ``--broker-launcher``."""
    return _settings(request.config).launcher


@pytest.fixture
def broker(
    jmslike_broker_pool: BrokerPool, broker_kind: BrokerKind, request: pytest.FixtureRequest
) -> BrokerHandle:
    """The shared, running broker of ``broker_kind`` (restartable; restarted for the next test)."""
    try:
        handle = jmslike_broker_pool.get(broker_kind)
    except LauncherUnavailableError as exc:
        pytest.skip(exc.reason)
    _remember(request.node if isinstance(request.node, pytest.Item) else None, handle)
    return handle


@pytest.fixture
def fresh_broker(broker_kind: BrokerKind, request: pytest.FixtureRequest) -> Iterator[BrokerHandle]:
    """A private broker of ``broker_kind`` for this test only, closed afterwards."""
    settings = _settings(request.config)
    if settings.launcher == "external":
        pytest.skip("fresh_broker needs --broker-launcher process or docker (an external broker is shared)")
    try:
        handle = create(broker_kind, settings.launcher)
    except LauncherUnavailableError as exc:
        pytest.skip(exc.reason)
    _remember(request.node if isinstance(request.node, pytest.Item) else None, handle)
    try:
        handle.start()
    except LauncherUnavailableError as exc:
        handle.close()
        pytest.skip(exc.reason)
    except BaseException:
        handle.close()
        raise
    try:
        yield handle
    finally:
        handle.close()


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A name unique to this test, valid for queues and topics on every broker."""
    return make_unique_name(request.node.name)

"""Local broker processes: spawning, stopping, killing and never leaving one behind.

This module owns what ActiveMQ and RabbitMQ launchers share when the broker runs as a child process:

* :class:`BrokerProcess` -- one spawned broker in its own session (so the whole tree can be killed as
  a group), its output appended to a log file, and the pid of the broker process itself (the JVM, or
  the Erlang VM that Debian's wrapper script starts), which is what ``kill()`` SIGKILLs.
* :class:`LocalBroker` -- the :class:`~jmslike.conformance.brokers.base.BrokerHandle` implementation
  for local processes: private data directory (a temp dir, or one given) and ports kept across
  restarts, readiness by STOMP CONNECT, graceful stop with a SIGKILL fallback, errors with log tails.
  Subclasses supply the broker-specific parts (command, config files, graceful stop, log files).
* the process-wide registry of live local brokers, emptied by ``atexit`` and by SIGTERM/SIGHUP
  handlers, so that nothing keeps running when a test session or the CLI ends.
"""

from __future__ import annotations

import abc
import atexit
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, Any, Self

from jmslike.conformance.brokers.base import (
    LOG_TAIL_LINES,
    BrokerError,
    BrokerHandle,
    BrokerKind,
    BrokerNotInstalledError,
    BrokerStartError,
    LauncherName,
    tail_lines,
)
from jmslike.conformance.brokers.ports import LOOPBACK, check_ports_free, port_accepts, wait_port_closed
from jmslike.conformance.brokers.readiness import ProbeResult, stomp_probe, wait_until_ready

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------------
# pids and process groups


def _exited(stat_path: Path) -> bool:
    """True when the task behind a ``/proc/.../stat`` file is gone or a zombie."""
    try:
        stat = stat_path.read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    # Field 3 (after the parenthesised command name, which may contain spaces) is the state.
    return stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X")


def pid_alive(pid: int) -> bool:
    """True while any thread of process ``pid`` still runs.

    A zombie has released its sockets and files, but a zombie *thread-group leader* has not: when a
    multi-threaded VM (beam.smp, the JVM) is killed, the leader turns "Z" at once while its other threads
    are still tearing down a large heap, and the listening sockets close only when the last one exits.
    """
    proc = Path(f"/proc/{pid}")
    try:
        if not _exited(proc / "stat"):
            return True
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    try:
        tasks = list((proc / "task").iterdir())
    except OSError:
        return False
    return any(not _exited(task / "stat") for task in tasks)


def wait_pid_gone(pid: int, timeout_s: float) -> bool:
    """Poll until every thread of ``pid`` is gone (or a zombie); False after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def child_pids(parent: int) -> list[int]:
    """Pids whose parent is ``parent`` (from /proc)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1] == str(parent):
            found.append(int(entry.name))
    return found


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to every process of group ``pgid``; silently nothing when the group is empty."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@dataclass(frozen=True)
class RunAs:
    """Unix user and group a broker must run as (Debian's RabbitMQ runs as ``rabbitmq``)."""

    user: str
    group: str


class BrokerProcess:
    """One spawned broker: a process group led by the spawned program, output in a log file."""

    def __init__(self, popen: subprocess.Popen[bytes], log: IO[bytes], name: str) -> None:
        self.popen = popen
        self.pgid = popen.pid  # start_new_session=True: the child leads its own session and group
        self._log = log
        self.name = name
        self.broker_pid: int = popen.pid  # replaced by the launcher when a wrapper starts the real VM

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path,
        log_path: Path,
        run_as: RunAs | None = None,
        name: str,
    ) -> BrokerProcess:
        """Start ``argv`` in a new session, stdout and stderr appended to ``log_path``."""
        log = open(log_path, "ab")  # noqa: SIM115 - owned by the BrokerProcess, closed in release()
        kwargs: dict[str, Any] = {}
        if run_as is not None:
            kwargs.update(user=run_as.user, group=run_as.group, extra_groups=[])
        try:
            popen = subprocess.Popen(
                list(argv),
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                **kwargs,
            )
        except BaseException:
            log.close()
            raise
        logger.debug("spawned %s: pid %d: %s", name, popen.pid, " ".join(argv))
        return cls(popen, log, name)

    def exit_reason(self) -> str | None:
        """None while the spawned program runs, else a sentence saying how it ended."""
        code = self.popen.poll()
        if code is None:
            if self.broker_pid != self.popen.pid and not pid_alive(self.broker_pid):
                return f"broker process {self.broker_pid} is gone"
            return None
        if code < 0:
            return f"exited on signal {signal.Signals(-code).name}"
        return f"exited with code {code}"

    def broker_alive(self) -> bool:
        return self.exit_reason() is None

    def wait_broker_gone(self, timeout_s: float) -> bool:
        """Wait until the broker process itself is gone (reaping it when it is our child)."""
        deadline = time.monotonic() + timeout_s
        if self.broker_pid == self.popen.pid:
            try:
                self.popen.wait(timeout=max(0.0, timeout_s))
            except subprocess.TimeoutExpired:
                return False
            return True
        if not wait_pid_gone(self.broker_pid, timeout_s):
            return False
        # The wrapper notices its child is gone and exits on its own; give it the rest of the time.
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
        return True

    def sigkill_broker(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.broker_pid, signal.SIGKILL)

    def release(self) -> None:
        """Kill whatever is left of the group, reap the spawned program and close the log file."""
        kill_group(self.pgid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=10)
        self._log.close()

    def emergency_kill(self) -> None:
        """From a signal handler or atexit: no locks, no waiting beyond a short reap."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.broker_pid, signal.SIGKILL)
        kill_group(self.pgid)
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            self.popen.wait(timeout=5)
        # The broker process is not our child (RabbitMQ's VM runs under su as another user), so reaping the
        # wrapper does not mean it is gone; a loaded machine takes a moment to tear a large VM down.
        wait_pid_gone(self.broker_pid, 10.0)


# --------------------------------------------------------------------------------------------------
# registry of live brokers: nothing outlives the Python process


_live: dict[int, tuple[str, Callable[[], None]]] = {}  # id(owner) -> (what, its emergency cleanup)
_live_lock = threading.RLock()  # re-entrant: a signal handler may run while it is held
_handlers_installed = False
_previous_handlers: dict[int, Any] = {}


def register_cleanup(owner: object, what: str, cleanup: Callable[[], None]) -> None:
    """Have ``cleanup`` run at exit and on SIGTERM/SIGHUP unless ``owner`` unregisters first: for anything
    this process starts that must not outlive it (brokers, and the Spark cluster of the tests). ``cleanup``
    runs from a signal handler or atexit: no locks, no long waits."""
    with _live_lock:
        _live[id(owner)] = (what, cleanup)
    _install_exit_handlers()


def unregister_cleanup(owner: object) -> None:
    with _live_lock:
        _live.pop(id(owner), None)


def _register(broker: LocalBroker) -> None:
    register_cleanup(broker, str(broker.url), broker.emergency_cleanup)


def _unregister(broker: LocalBroker) -> None:
    unregister_cleanup(broker)


def cleanup_all() -> None:
    """Kill every broker (and whatever else registered) this process started and remove their temporary
    directories.

    Called at exit and on SIGTERM/SIGHUP; safe to call at any time (it does not take handle locks)."""
    with _live_lock:
        entries = list(_live.values())
        _live.clear()
    for what, cleanup in entries:
        try:
            cleanup()
        except Exception:  # pragma: no cover - best effort at exit
            logger.exception("cleanup of %s failed", what)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    cleanup_all()
    previous = _previous_handlers.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
        return
    if previous == signal.SIG_IGN:
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_exit_handlers() -> None:
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(cleanup_all)
    if threading.current_thread() is not threading.main_thread():
        logger.debug("not on the main thread: brokers are cleaned up at exit only, not on SIGTERM")
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        previous = signal.getsignal(signum)
        if previous == signal.SIG_IGN:
            continue
        _previous_handlers[signum] = previous
        signal.signal(signum, _on_signal)


# --------------------------------------------------------------------------------------------------
# the handle for local processes


class LocalBroker(BrokerHandle, abc.ABC):
    """A broker run as a local child process with a private directory and loopback ports.

    The directory (``data_dir``, or a temp dir removed by :meth:`close`) and every port are chosen
    once and kept across restarts, so a restart finds its persistent messages on the same port.
    """

    launcher: LauncherName = "process"
    start_timeout_s: float = 60.0
    stop_timeout_s: float = 30.0

    def __init__(
        self,
        kind: BrokerKind,
        *,
        port: int,
        user: str,
        password: str,
        data_dir: str | os.PathLike[str] | None,
        start_timeout_s: float | None = None,
    ) -> None:
        super().__init__(kind, host=LOOPBACK, port=port, user=user, password=password)
        if data_dir is None:
            self.base_dir = Path(tempfile.mkdtemp(prefix=f"jmslike-{kind}-"))
            self._owns_dir = True
        else:
            self.base_dir = Path(data_dir).resolve()
            self._owns_dir = False
        if start_timeout_s is not None:
            self.start_timeout_s = start_timeout_s
        self._proc: BrokerProcess | None = None
        self._lock = threading.RLock()
        self._closed = False
        self._starts = 0
        self.last_start_s: float | None = None
        if self._owns_dir:
            _register(self)  # so the temp dir goes away at exit even if the handle is never closed

    # -- broker-specific parts --------------------------------------------------------------------

    @abc.abstractmethod
    def _check_installation(self) -> None:
        """Raise :class:`BrokerNotInstalledError` saying what is missing and how to install it."""

    @abc.abstractmethod
    def _ports(self) -> dict[str, int]:
        """Every port the broker will listen on, by role (checked free before each start)."""

    @abc.abstractmethod
    def _prepare(self) -> None:
        """Create directories and (re)write config files; called before every start."""

    @abc.abstractmethod
    def _command(self) -> tuple[list[str], dict[str, str], RunAs | None]:
        """argv, environment and the user to run as."""

    @abc.abstractmethod
    def _console_log(self) -> Path:
        """File receiving the spawned program's stdout and stderr."""

    @abc.abstractmethod
    def _log_files(self) -> list[Path]:
        """Log files making up :meth:`logs`, in reading order."""

    @abc.abstractmethod
    def _request_graceful_stop(self, proc: BrokerProcess, timeout_s: float) -> None:
        """Ask the broker to shut down gracefully (do not wait for it to exit)."""

    def _probe(self, timeout_s: float) -> ProbeResult:
        """Ready when STOMP answers CONNECT and every other port clients use accepts connections."""
        result = stomp_probe(
            self.host, self.port, login=self.user, passcode=self.password, timeout_s=timeout_s
        )
        if not result.ready:
            return result
        for name, port in self._client_ports().items():
            if not port_accepts(self.host, port, timeout_s):
                return ProbeResult(False, f"STOMP answers, but the {name} port {port} does not accept yet")
        return result

    def _client_ports(self) -> dict[str, int]:
        """Hook: the ports clients use besides STOMP (TLS, other connectors, management)."""
        return {}

    def _before_spawn(self) -> None:
        """Hook: start helpers the broker needs (RabbitMQ: a private epmd)."""

    def _on_ready(self, proc: BrokerProcess) -> None:
        """Hook: learn the broker pid when the spawned program is a wrapper."""

    def _after_stop(self) -> None:
        """Hook: stop the helpers started by :meth:`_before_spawn`."""

    def _emergency_helpers_cleanup(self) -> None:
        """Hook: kill helpers without waiting (from a signal handler or atexit)."""

    # -- BrokerHandle -----------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.broker_pid if proc is not None and proc.broker_alive() else None

    def is_running(self) -> bool:
        proc = self._proc
        return proc is not None and proc.broker_alive()

    def logs(self) -> str:
        parts: list[str] = []
        files = self._log_files()
        for path in files:
            try:
                text = path.read_text(errors="replace")
            except FileNotFoundError:
                continue
            parts.append(f"==> {path.name} <==\n{text}" if len(files) > 1 else text)
        return "\n".join(parts) if parts else f"(no log written yet in {self.base_dir})"

    def start(self) -> Self:
        with self._lock:
            if self._closed:
                raise BrokerError(f"{self.kind} broker handle was closed; launch a new one")
            if self._proc is not None:
                if self._proc.broker_alive():
                    return self
                self._release_process()  # crashed or killed: clean up before starting again
            self._check_installation()
            self._prepare()
            check_ports_free(self._ports(), self.host, kind=self.kind)
            offsets = self._log_offsets()
            self._starts += 1
            self._write_marker(f"start #{self._starts} of {self.kind} on {self.url}")
            _register(self)
            t0 = time.monotonic()
            try:
                self._before_spawn()
                argv, env, run_as = self._command()
                try:
                    proc = BrokerProcess.spawn(
                        argv,
                        env=env,
                        cwd=self.base_dir,
                        log_path=self._console_log(),
                        run_as=run_as,
                        name=f"{self.kind} broker",
                    )
                except FileNotFoundError as exc:
                    raise BrokerNotInstalledError(
                        f"{self.kind}: cannot run {argv[0]!r}: {exc.strerror}"
                    ) from exc
                self._proc = proc
                ok, detail = wait_until_ready(
                    self._probe, timeout_s=self.start_timeout_s, exited=proc.exit_reason
                )
                if not ok:
                    raise BrokerStartError(
                        self._explain_failure(detail, offsets), log_tail=self._log_excerpt(offsets)
                    )
                self._on_ready(proc)
            except BaseException:
                self._release_process()
                self._after_stop()
                raise
            self.last_start_s = time.monotonic() - t0
            logger.info(
                "%s broker ready at %s in %.1f s (pid %s, dir %s)",
                self.kind,
                self.url,
                self.last_start_s,
                proc.broker_pid,
                self.base_dir,
            )
            return self

    def stop(self, timeout_s: float | None = None) -> None:
        timeout = self.stop_timeout_s if timeout_s is None else timeout_s
        with self._lock:
            proc = self._proc
            if proc is None:
                self._after_stop()
                return
            if proc.broker_alive():
                t0 = time.monotonic()
                try:
                    self._request_graceful_stop(proc, timeout)
                except Exception as exc:
                    logger.warning("%s: graceful stop request failed (%s); sending SIGTERM", self.url, exc)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(proc.broker_pid, signal.SIGTERM)
                remaining = max(0.5, timeout - (time.monotonic() - t0))
                if not proc.wait_broker_gone(remaining):
                    logger.warning(
                        "%s broker at %s did not stop within %.0f s; sending SIGKILL",
                        self.kind,
                        self.url,
                        timeout,
                    )
                    proc.sigkill_broker()
                    proc.wait_broker_gone(10.0)
                logger.info("%s broker at %s stopped in %.1f s", self.kind, self.url, time.monotonic() - t0)
            self._release_process()
            self._after_stop()
            self._write_marker(f"stopped {self.kind} on {self.url}")

    def kill(self) -> None:
        with self._lock:
            proc = self._proc
            if proc is None:
                return
            proc.sigkill_broker()
            if not proc.wait_broker_gone(10.0):  # pragma: no cover - SIGKILL cannot be ignored
                logger.warning("%s broker pid %d survived SIGKILL for 10 s", self.kind, proc.broker_pid)
            self._release_process()
            self._write_marker(f"killed {self.kind} on {self.url} (SIGKILL)")
            logger.info("%s broker at %s killed", self.kind, self.url)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                self.stop()
            finally:
                self._closed = True
                _unregister(self)
                self._remove_dir()

    # -- internals --------------------------------------------------------------------------------

    def _release_process(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.release()
            wait_port_closed(self.host, self.port, timeout_s=5.0)

    def emergency_cleanup(self) -> None:
        """Kill the broker from an atexit or signal handler: nothing graceful, nothing that may block."""
        proc = self._proc
        if proc is not None:
            proc.emergency_kill()
        self._emergency_helpers_cleanup()
        self._remove_dir()

    def _remove_dir(self) -> None:
        if self._owns_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def _write_marker(self, text: str) -> None:
        log = self._console_log()
        if not log.parent.is_dir():
            return
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with open(log, "a") as fh:
            fh.write(f"#### jmslike launcher {stamp}: {text} ####\n")

    def _log_offsets(self) -> dict[Path, int]:
        offsets: dict[Path, int] = {}
        for path in self._log_files():
            try:
                offsets[path] = path.stat().st_size
            except FileNotFoundError:
                offsets[path] = 0
        return offsets

    def _log_excerpt(self, offsets: Mapping[Path, int], lines: int = LOG_TAIL_LINES) -> str:
        """The tail of what each log file got since ``offsets`` (i.e. during this start attempt)."""
        parts: list[str] = []
        for path, offset in offsets.items():
            try:
                with open(path, "rb") as fh:
                    fh.seek(offset)
                    text = fh.read().decode("utf-8", "replace")
            except FileNotFoundError:
                continue
            if text.strip():
                parts.append(f"[{path}]\n{tail_lines(text, lines)}")
        return "\n".join(parts)

    def _explain_failure(self, detail: str, offsets: Mapping[Path, int]) -> str:
        excerpt = self._log_excerpt(offsets, lines=10_000).lower()
        hint = ""
        if "address already in use" in excerpt or "eaddrinuse" in excerpt:
            hint = " (a port it needs is already in use)"
        return f"{self.kind} broker did not start: {detail}{hint}; data dir {self.base_dir}"

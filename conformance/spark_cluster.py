"""A Spark standalone cluster on loopback, started from the installed PySpark, for tests and benchmarks.

The ``jms`` source's executors are separate JVMs with their own Python workers that unpickle the reader
and read staged chunk files by name; local mode hides all of that. This launcher runs what a real
cluster runs (``spark-class org.apache.spark.deploy.master.Master`` and ``...worker.Worker``, from the
PySpark distribution's ``bin/``), every daemon in its own process group on 127.0.0.1, so a test can
SIGKILL a worker together with the executor JVMs it launched (their Python workers put themselves in a
group of their own, and exit when their executor is gone), and start it again.

Everything stays on loopback (``SPARK_LOCAL_IP``, ``--host``), the master's REST submission server is
off (it would take the fixed port 6066), every port comes from :func:`ports.free_port` and a taken one
fails the daemon instead of making it move to the next (``spark.port.maxRetries=0``), and ``SPARK_HOME``
and an empty ``SPARK_CONF_DIR`` make sure the installed PySpark runs with Spark's defaults. Readiness is
the master's own account (its web UI's ``/json``, asked without any HTTP proxy): a worker counts once the
master lists it ``ALIVE``. Daemons are killed at exit and on SIGTERM like the launchers' brokers.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Self

from jmslike.conformance.brokers.base import tail_lines
from jmslike.conformance.brokers.ports import LOOPBACK, free_port
from jmslike.conformance.brokers.process import BrokerProcess, register_cleanup, unregister_cleanup

# Readiness asks the master on loopback: never through an http_proxy from the environment.
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# The daemons' own heap (not the executors'): a master and a worker need little.
DAEMON_MEMORY = "256m"
START_TIMEOUT_S = 120.0


class SparkClusterError(RuntimeError):
    """The cluster could not be started, or a daemon died; the message carries the log's tail."""


def spark_home() -> Path:
    """The installed PySpark's distribution directory (it has ``bin/spark-class`` and ``jars/``)."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").is_file():
        raise SparkClusterError(
            f"{home} has no bin/spark-class: this PySpark cannot run a standalone cluster"
        )
    return home


class _Daemon:
    """One master or worker process group and its log."""

    def __init__(self, name: str, argv: list[str], env: Mapping[str, str], root: Path) -> None:
        self.name = name
        self.log_path = root / f"{name}.log"
        self.process = BrokerProcess.spawn(argv, env=env, cwd=root, log_path=self.log_path, name=name)
        # Killed at exit or on SIGTERM even if nobody calls kill() (a test run that is interrupted).
        register_cleanup(self, f"Spark {name}", self.process.emergency_kill)

    def alive(self) -> bool:
        return self.process.exit_reason() is None

    def kill(self) -> None:
        """SIGKILL the whole group: the daemon, and for a worker the executor JVMs it launched."""
        self.process.release()
        unregister_cleanup(self)

    def tail(self, lines: int = 30) -> str:
        try:
            return tail_lines(self.log_path.read_text(errors="replace"), lines)
        except OSError:
            return ""


class SparkCluster:
    """A master and ``workers`` workers of ``cores`` cores and ``memory`` each (executors fit in it).

    ``env`` is the environment of every daemon; executors inherit it from their worker, so it is where
    ``PYSPARK_PYTHON`` and ``PYTHONPATH`` for the Python workers go. ``root`` holds logs and the workers'
    work directories (each executor's stderr: ``work/<worker>/<app>/<executor>/stderr``); a temporary
    one is removed by :meth:`close`.
    """

    def __init__(
        self,
        workers: int = 2,
        *,
        cores: int = 1,
        memory: str = "1g",
        env: Mapping[str, str] | None = None,
        root: Path | None = None,
    ) -> None:
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self._own_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="jmslike-spark-cluster-")) if root is None else root
        self.root.mkdir(parents=True, exist_ok=True)
        self._env = {**(env if env is not None else os.environ)}
        conf = self.root / "conf"  # empty: Spark's defaults, whatever SPARK_CONF_DIR the caller has
        conf.mkdir(exist_ok=True)
        no_retries = "-Dspark.port.maxRetries=0"
        self._env.update(
            SPARK_HOME=str(spark_home()),
            SPARK_CONF_DIR=str(conf),
            SPARK_LOCAL_IP=LOOPBACK,
            SPARK_DAEMON_MEMORY=DAEMON_MEMORY,
            SPARK_MASTER_OPTS=f"-Dspark.master.rest.enabled=false {no_retries}",
            SPARK_WORKER_OPTS=no_retries,
            SPARK_LOG_DIR=str(self.root),
        )
        self._restarted: dict[int, float] = {}
        self._port = free_port()
        self._ui_port = free_port()
        self.master_url = f"spark://{LOOPBACK}:{self._port}"
        self._master: _Daemon | None = None
        self._workers: dict[int, _Daemon] = {}

    def __repr__(self) -> str:
        return f"SparkCluster({self.master_url}, workers={self.workers})"

    # ----------------------------------------------------------------------------------------- lifecycle

    def start(self) -> Self:
        spark_class = str(spark_home() / "bin" / "spark-class")
        master = "org.apache.spark.deploy.master.Master"
        argv = [spark_class, master, "--host", LOOPBACK, "--port", str(self._port)]
        argv += ["--webui-port", str(self._ui_port)]
        try:
            self._master = _Daemon("master", argv, self._env, self.root)
            self._wait(lambda state: state.get("status") == "ALIVE", "the master to be elected leader")
            for index in range(self.workers):
                self.start_worker(index)
        except BaseException:
            self.close()
            raise
        return self

    def start_worker(self, index: int) -> None:
        """Start worker ``index`` (again, after :meth:`kill_worker`) and wait until the master lists it."""
        work = self.work_dir(index)
        work.mkdir(parents=True, exist_ok=True)
        port = free_port()  # a new one each time: the master may still list the killed worker's
        argv = [str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker"]
        argv += [self.master_url, "--host", LOOPBACK, "--port", str(port), "--cores", str(self.cores)]
        argv += ["--memory", self.memory, "--webui-port", str(free_port()), "--work-dir", str(work)]
        self._restarted[index] = time.time()
        self._workers[index] = _Daemon(f"worker{index}", argv, self._env, self.root)
        # The master names a worker worker-<time>-<host>-<port>.
        suffix = f"-{LOOPBACK}-{port}"
        self._wait(
            lambda state: any(
                w.get("id", "").endswith(suffix) and w.get("state") == "ALIVE"
                for w in state.get("workers", [])
            ),
            f"worker {index} to register with the master",
        )

    def kill_worker(self, index: int) -> None:
        """SIGKILL worker ``index`` with the executors it runs (a lost node, as far as Spark can tell)."""
        self._workers.pop(index).kill()

    def close(self) -> None:
        for daemon in [*self._workers.values(), *([self._master] if self._master else [])]:
            daemon.kill()
        self._workers.clear()
        self._master = None
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------- queries

    def pids(self) -> list[int]:
        """The daemons' pids (a worker's executors, and their Python workers, are its descendants)."""
        return [d.process.popen.pid for d in [self._master, *self._workers.values()] if d is not None]

    def work_dir(self, index: int) -> Path:
        return self.root / "work" / f"worker{index}"

    def state(self) -> dict[str, Any]:
        """The master's own account of the cluster (its web UI's JSON)."""
        url = f"http://{LOOPBACK}:{self._ui_port}/json/"
        with _NO_PROXY.open(url, timeout=5) as response:
            return json.loads(response.read())  # type: ignore[no-any-return]

    def executor_logs(self, index: int) -> list[Path]:
        """The stderr of every executor worker ``index`` ever ran (kept across its restarts)."""
        return sorted(self.work_dir(index).glob("*/*/stderr"))

    def tasks_run(self, index: int, *, since_start: bool = False) -> int:
        """How many tasks the executors of worker ``index`` finished (from their logs, which Spark writes at
        INFO by default); with ``since_start`` only executors that worker launched since it last started."""
        started = self._restarted.get(index, 0.0) if since_start else 0.0
        return sum(
            path.read_text(errors="replace").count("Finished task")
            for path in self.executor_logs(index)
            if path.parent.stat().st_mtime >= started
        )

    def _wait(self, ready: Callable[[dict[str, Any]], bool], what: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            for daemon in [self._master, *self._workers.values()]:
                if daemon is not None and not daemon.alive():
                    raise SparkClusterError(
                        f"Spark {daemon.name} died while waiting for {what}: {daemon.process.exit_reason()}"
                        f"\n{daemon.tail()}"
                    )
            try:
                if ready(self.state()):
                    return
            except OSError:
                pass  # the web UI is not up yet
            if time.monotonic() >= deadline:
                tails = "\n".join(d.tail(10) for d in [self._master, *self._workers.values()] if d)
                raise SparkClusterError(
                    f"timed out after {START_TIMEOUT_S:.0f} s waiting for {what}\n{tails}"
                )
            time.sleep(0.2)

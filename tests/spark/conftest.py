"""Fixtures for the Spark tests: real brokers (the plugin's ``broker``), real Spark in local mode.

Every test here is marked ``spark``; the module skips, saying why, without pyspark, pyarrow or Java.
Streaming queries run in a child process (tests/spark/driver.py) in its own process group, so a test
can SIGKILL the whole driver — Python, the JVM and its Python workers — and start it again on the same
checkpoint and staging location. Sizes: ``JMSLIKE_SPARK_MESSAGES`` (default 3000 messages per fault
test) and ``JMSLIKE_SPARK_ROUNDS`` (default 4 fault rounds) make a longer run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jmslike import ConnectionFactory, DeliveryMode, Session

HERE = Path(__file__).resolve().parent
MESSAGES = int(os.environ.get("JMSLIKE_SPARK_MESSAGES", "3000"))
ROUNDS = int(os.environ.get("JMSLIKE_SPARK_ROUNDS", "4"))


def _missing() -> str | None:
    for module in ("pyspark", "pyarrow"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install 'jmslike[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java is not installed (Spark needs a JVM; Java 17 works)"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _missing()
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.spark)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))


def broker_url(broker: Any) -> str:
    management = getattr(broker, "management_url", None)
    return str(broker.url) + (f"?management_url={management}" if management else "")


def child_env() -> dict[str, str]:
    """The environment of Spark processes: the jmslike this test imports, for the Python workers too."""
    import jmslike

    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    package_root = str(Path(jmslike.__file__).resolve().parent.parent)
    if (Path(package_root) / "pyproject.toml").is_file():  # a source checkout: workers need it on the path
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    return env


def publish(
    broker: Any, topic: str, count: int, start: int = 0, mode: int = DeliveryMode.PERSISTENT
) -> list[str]:
    """Publish ``count`` text messages (property n = index) in transactions; their JMS message IDs."""
    connection = ConnectionFactory(broker_url(broker)).createConnection(broker.user, broker.password)
    ids = []
    try:
        session = connection.createSession(True, Session.SESSION_TRANSACTED)
        producer = session.createProducer(session.createTopic(topic))
        producer.setDeliveryMode(mode)
        for i in range(start, start + count):
            message = session.createTextMessage(f"message {i}")
            message.setIntProperty("n", i)
            message.setStringProperty("lane", "even" if i % 2 == 0 else "odd")
            producer.send(message)
            ids.append(message.getJMSMessageID())
            if len(ids) % 500 == 0:
                session.commit()
        session.commit()
    finally:
        connection.close()
    return ids


def subscribe(
    broker: Any, topic: str, client_id: str, names_and_selectors: list[tuple[str, str | None]]
) -> None:
    """Create durable subscriptions (so they retain what is published from now on), then detach."""
    connection = ConnectionFactory(broker_url(broker)).createConnection(broker.user, broker.password)
    try:
        connection.setClientID(client_id)
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        for name, selector in names_and_selectors:
            session.createDurableSubscriber(session.createTopic(topic), name, selector).close()
    finally:
        connection.close()


class Driver:
    """One Spark driver process running tests/spark/driver.py."""

    def __init__(self, argv: list[str], log_path: Path) -> None:
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in wait()/kill()
        self.process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=child_env(),
            cwd=str(log_path.parent),
            start_new_session=True,
        )
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                continue

    def kill(self) -> None:
        """SIGKILL the driver's whole process group (Python driver, JVM, Python workers)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)
        self._log.close()

    def wait(self, timeout_s: float) -> int:
        try:
            code = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"the Spark driver did not finish in {timeout_s} s; log: {self.tail()}"
            ) from None
        self._reader.join(timeout=10)
        self._log.close()
        return code

    def done(self) -> dict[str, Any]:
        for event in self.events:
            if event.get("event") == "done":
                return event
        raise AssertionError(f"the driver did not report done; log: {self.tail()}")

    def tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


class Pipeline:
    """A ``jms`` -> Parquet query's files (checkpoint, staging, output) and its driver runs."""

    def __init__(self, root: Path, options: dict[str, str]) -> None:
        self.root = root
        self.options = options
        self.checkpoint = root / "checkpoint"
        self.output = root / "output"
        self.staging = Path(options["stagingLocation"])
        self.drivers: list[Driver] = []
        self.cleared_first_offset: list[str] = []  # see clear_interrupted_first_offset

    def start(self, mode: str, *extra: str) -> Driver:
        self.clear_interrupted_first_offset()
        argv = [sys.executable, str(HERE / "driver.py"), "--mode", mode]
        argv += ["--checkpoint", str(self.checkpoint), "--output", str(self.output), *extra]
        for name, value in self.options.items():
            argv += ["--option", f"{name}={value}"]
        driver = Driver(argv, self.root / f"driver-{len(self.drivers)}.log")
        self.drivers.append(driver)
        return driver

    def run(self, mode: str, *extra: str, timeout_s: float = 300) -> dict[str, Any]:
        driver = self.start(mode, *extra)
        code = driver.wait(timeout_s)
        assert code == 0, f"the Spark driver failed ({code}): {driver.tail()}"
        return driver.done()

    def clear_interrupted_first_offset(self) -> None:
        """What spark_sink/README.md tells users to do after a driver died while Spark wrote the query's very
        first offset-log entry: Spark 4.x then finds only that entry's temporary file (``offsets/.0.<uuid>.tmp``)
        and refuses to start the query again (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY: "should be empty on
        batch 0", MicroBatchExecution.verifyNewCheckpointDirectory). Nothing was logged or committed then, so
        the temporary files are removed; only in exactly that state (no offset or commit file at all)."""
        offsets, commits = self.checkpoint / "offsets", self.checkpoint / "commits"
        if not offsets.is_dir():
            return
        entries = list(offsets.iterdir())
        logged = [e for e in entries if not e.name.startswith(".")]
        committed = [e for e in commits.iterdir() if not e.name.startswith(".")] if commits.is_dir() else []
        if logged or committed or not entries:
            return
        for entry in entries:
            if entry.name.endswith((".tmp", ".tmp.crc")):
                entry.unlink()
                self.cleared_first_offset.append(entry.name)

    def staged_chunks(self) -> int:
        chunks = self.staging / "chunks"
        return len(list(chunks.glob("*.arrow"))) if chunks.is_dir() else 0

    def committed(self) -> int:
        try:
            return int(json.loads((self.staging / "committed.json").read_text())["seq"])
        except (OSError, ValueError, KeyError):
            return 0

    def progress(self) -> int:
        """A number that grows while the query works: staged chunk files (the tests' de-duplication
        window keeps them all) and the committed chunk."""
        return self.staged_chunks() * 1_000_000 + self.committed()

    def sink_ids(self) -> list[str]:
        import pyarrow.parquet as pq

        files = [p for p in self.output.rglob("*.parquet")] if self.output.is_dir() else []
        if not files:
            return []
        # Only files the sink committed count (Spark's _spark_metadata log lists them).
        committed = committed_sink_files(self.output)
        ids: list[str] = []
        for path in files:
            if path.name in committed:
                ids += [str(v) for v in pq.read_table(path, columns=["messageId"]).column(0).to_pylist()]
        return ids

    def close(self) -> None:
        for driver in self.drivers:
            if driver.process.poll() is None:
                driver.kill()


def committed_sink_files(output: Path) -> set[str]:
    """File names in the Parquet sink's metadata log (the sink's exactly-once record)."""
    names: set[str] = set()
    meta = output / "_spark_metadata"
    if not meta.is_dir():
        return names
    for entry in meta.iterdir():
        if entry.name.startswith(".") or entry.name.endswith(".tmp"):
            continue
        for line in entry.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                names.add(Path(json.loads(line)["path"]).name)
    return names


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.1) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(interval_s)


@pytest.fixture
def pipeline_factory(tmp_path: Path) -> Iterator[Callable[[dict[str, str]], Pipeline]]:
    made: list[Pipeline] = []

    def make(options: dict[str, str]) -> Pipeline:
        root = tmp_path / f"pipeline{len(made)}"
        root.mkdir()
        options = {"stagingLocation": str(root / "staging"), **options}
        pipeline = Pipeline(root, options)
        made.append(pipeline)
        return pipeline

    yield make
    for pipeline in made:
        pipeline.close()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A Spark standalone cluster on loopback (a master, two one-core workers) for the whole session:
    executors are separate JVMs that inherit the Python workers' environment from their worker."""
    from jmslike.conformance.spark_cluster import SparkCluster

    cluster = SparkCluster(2, env=child_env(), root=tmp_path_factory.mktemp("spark-cluster"))
    with cluster:
        yield cluster


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """An in-process SparkSession (local mode, small) for tests that need no driver kill."""
    for name, value in child_env().items():
        if name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH"):
            os.environ[name] = value
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("jmslike-spark-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "512m")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    from jmslike.spark_sink import register

    register(session)
    yield session
    session.stop()

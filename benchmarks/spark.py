"""``python -m benchmarks.spark --broker activemq|rabbitmq``: the ``jms`` Spark source against jmslike.

One run, one broker (launched by our launchers), two measurements on equal backlogs of ``--messages``
PERSISTENT messages of ``--size`` bytes in a durable subscription:

- raw: jmslike itself draining the subscription (CLIENT_ACKNOWLEDGE, acknowledge every
  ``--ack-every`` messages) — the ceiling the source cannot beat, since it does the same receiving;
- spark: a Spark query (JVM and executors already started) from the ``jms`` source into a Parquet sink,
  from ``start()`` until every message is committed in the sink (processAllAvailable). ``--master local``
  runs Spark in local mode (local[2]); ``--master cluster`` on a standalone cluster of two one-core
  workers on loopback (jmslike.conformance.spark_cluster), executors in their own JVMs.

Prints both rates, the ratio (target >= 0.70) and the CPU each side spent per 1,000 messages in
core-seconds: raw is this process's CPU time while it drains; spark is every process of the Spark side
(this process, the driver JVM and its Python workers, and on a cluster the master, the workers, their
executors and Python workers) while the query drains, sampled per process from /proc (CpuSampler), the
broker excluded. Filling
the backlogs is not timed. The machine is shared: compare the ratio of one run, not absolute rates
across runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from jmslike import ConnectionFactory, DeliveryMode, Session
from jmslike.conformance.brokers import launch

from . import launch_options
from .proc_stat import cpu_seconds, stat_fields

TARGET = 0.70


URL_OPTIONS: list[str] = []  # extra jmslike URL keys for both sides (--prefetch)


def _url(broker: Any, *extra: str) -> str:
    management = getattr(broker, "management_url", None)
    keys = [f"management_url={management}"] if management else []
    keys += URL_OPTIONS
    keys += extra
    return str(broker.url) + ("?" + "&".join(keys) if keys else "")


def _subscribe(broker: Any, topic: str, client_id: str, name: str) -> None:
    connection = ConnectionFactory(_url(broker)).createConnection(broker.user, broker.password)
    try:
        connection.setClientID(client_id)
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        session.createDurableSubscriber(session.createTopic(topic), name).close()
    finally:
        connection.close()


def _fill(broker: Any, topic: str, count: int, size: int) -> None:
    # No heart-beats: ActiveMQ throttles a fast producer by not reading from it, and its inactivity
    # monitor would then drop the connection in the middle of a large fill (as in workloads.fill).
    connection = ConnectionFactory(_url(broker, "heartbeat_ms=0")).createConnection(
        broker.user, broker.password
    )
    try:
        session = connection.createSession(True, Session.SESSION_TRANSACTED)
        producer = session.createProducer(session.createTopic(topic))
        producer.setDeliveryMode(DeliveryMode.PERSISTENT)
        body = (b"x" * size)[:size]
        for i in range(count):
            message = session.createBytesMessage()
            message.writeBytes(body)
            message.setIntProperty("n", i)
            producer.send(message)
            if i % 1000 == 999:
                session.commit()
        session.commit()
    finally:
        connection.close()


def _role(pid: int, parent_role: str | None) -> str:
    """Which part of the Spark side a process is, from its command line and its parent's role."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return parent_role or "other"
    line = b" ".join(argv)
    if pid == os.getpid():
        return "benchmark process"
    if b"CoarseGrainedExecutorBackend" in line:
        return "executor JVMs"
    if b"deploy.master.Master" in line or b"deploy.worker.Worker" in line:
        return "master and workers"
    if parent_role == "executor JVMs" or parent_role == "executor Python workers":
        return "executor Python workers"
    if os.path.basename(argv[0]) == b"java":
        return "driver JVM"
    return (
        "driver Python workers"
        if parent_role == "driver JVM" or parent_role == "driver Python workers"
        else (parent_role or "other")
    )


class CpuSampler:
    """CPU time of the process trees under ``roots`` while it runs, by role (:func:`_role`), without the
    process group ``exclude_pgid`` (the broker).

    Every ``interval_s`` it reads each living process's own utime + stime from /proc and keeps the first
    and the last value per pid; the total is what each pid spent between them (from 0 for a pid born
    meanwhile). Per pid, because the children's columns of /proc do not add up here: PySpark's daemon
    ignores SIGCHLD, so its exited Python workers are reaped by the kernel and their CPU reaches no
    parent's cutime. A process that lives less than ``interval_s`` can be missed."""

    def __init__(self, roots: list[int], exclude_pgid: int | None, interval_s: float = 0.2) -> None:
        self._roots = roots
        self._exclude = exclude_pgid
        self._interval = interval_s
        self._first: dict[int, float] = {}
        self._last: dict[int, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-sampler", daemon=True)

    def __enter__(self) -> CpuSampler:
        self._sample(first=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(first=False)

    def by_role(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for pid, (role, last) in self._last.items():
            totals[role] = totals.get(role, 0.0) + last - self._first.get(pid, 0.0)
        return totals

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample(first=False)

    def _sample(self, *, first: bool) -> None:
        children: dict[int, list[int]] = {}
        stats: dict[int, list[str]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                fields = stat_fields(int(entry.name))
                if fields is not None:
                    stats[int(entry.name)] = fields
                    children.setdefault(int(fields[1]), []).append(int(entry.name))
        todo: list[tuple[int, str | None]] = [(pid, None) for pid in self._roots]
        seen: set[int] = set()
        while todo:
            pid, parent_role = todo.pop()
            fields = stats.get(pid)
            if (
                pid in seen
                or fields is None
                or (self._exclude is not None and int(fields[2]) == self._exclude)
            ):
                continue
            seen.add(pid)
            role = _role(pid, parent_role)
            spent = cpu_seconds(fields)
            if first:
                self._first[pid] = spent
            self._last[pid] = (role, spent)
            todo += [(child, role) for child in children.get(pid, [])]


def raw_rate(
    broker: Any, topic: str, client_id: str, name: str, count: int, ack_every: int
) -> tuple[float, float]:
    """jmslike draining ``count`` messages from the durable subscription: msg/s, and this process's CPU
    seconds per 1,000 messages."""
    connection = ConnectionFactory(_url(broker)).createConnection(broker.user, broker.password)
    try:
        connection.setClientID(client_id)
        session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
        subscriber = session.createDurableSubscriber(session.createTopic(topic), name)
        connection.start()
        received = 0
        started, cpu = time.perf_counter(), time.process_time()
        last = None
        while received < count:
            message = subscriber.receive(30_000)
            if message is None:
                raise RuntimeError(f"raw drain stalled after {received} of {count} messages")
            received += 1
            last = message
            if received % ack_every == 0:
                message.acknowledge()
        if last is not None:
            last.acknowledge()
        return count / (time.perf_counter() - started), (time.process_time() - cpu) / count * 1000
    finally:
        connection.close()


def spark_rate(
    spark: Any,
    broker: Any,
    topic: str,
    client_id: str,
    name: str,
    count: int,
    root: str,
    options: dict[str, str],
    sampler: CpuSampler,
) -> dict[str, Any]:
    """A jms -> Parquet query draining the backlog: msg/s from start() to everything committed, and the
    Spark side's CPU seconds per 1,000 messages (``sampler`` watches it meanwhile)."""
    reader = spark.readStream.format("jms")
    for key, value in {
        "url": _url(broker),
        "topic": topic,
        "clientId": client_id,
        "subscriptionName": name,
        "user": broker.user,
        "password": broker.password,
        "stagingLocation": os.path.join(root, "staging"),
        **options,
    }.items():
        reader = reader.option(key, value)
    output = os.path.join(root, "output")
    with sampler:
        started = time.perf_counter()
        query = (
            reader.load()
            .writeStream.format("parquet")
            .option("path", output)
            .option("checkpointLocation", os.path.join(root, "checkpoint"))
            .trigger(processingTime="0 seconds")
            .start()
        )
        query.processAllAvailable()
        elapsed = time.perf_counter() - started
    spent = sampler.by_role()
    per_role = {role: round(seconds / count * 1000, 3) for role, seconds in sorted(spent.items())}
    cpu_spent = sum(spent.values())
    query.stop()
    rows = spark.read.parquet(output).count()
    if rows != count:
        raise RuntimeError(f"the sink holds {rows} rows, {count} were published")
    progress = [p for p in query.recentProgress if p.get("numInputRows")]
    durations: dict[str, int] = {}
    for p in progress:
        for key, value in (p.get("durationMs") or {}).items():
            durations[key] = durations.get(key, 0) + int(value)
    return {
        "rate": count / elapsed,
        "cpu_s_per_1000": cpu_spent / count * 1000,
        "cpu_s_per_1000_by_role": per_role,
        "seconds": elapsed,
        "batches": len(progress),
        "rows": rows,
        "durations_ms": durations,
    }


def _cluster(root: str) -> Any:
    """A standalone cluster whose executors' Python workers import this jmslike."""
    from jmslike.conformance.spark_cluster import SparkCluster

    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "pyproject.toml").is_file():  # a source checkout: the workers need it on their path
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(checkout), env.get("PYTHONPATH")) if p)
    return SparkCluster(2, env=env, root=Path(root) / "cluster").start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.spark", description=__doc__.split("\n\n")[0])
    parser.add_argument("--broker", choices=("activemq", "rabbitmq"), default="activemq")
    parser.add_argument(
        "--master",
        choices=("local", "cluster"),
        default="local",
        help="Spark local[2] or a standalone cluster",
    )
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--ack-every", type=int, default=1000)
    parser.add_argument("--max-messages-per-trigger", type=int, default=0, help="0 = no limit")
    parser.add_argument("--chunk", type=int, default=5000, help="stagingChunkMessages")
    parser.add_argument("--prefetch", type=int, default=0, help="jmslike URL key prefetch for both sides")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    if args.prefetch:
        URL_OPTIONS.append(f"prefetch={args.prefetch}")

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = tempfile.mkdtemp(prefix="jmslike-bench-spark-")
    broker = launch(args.broker, **launch_options(args.broker))
    cluster = None
    try:
        tag = uuid.uuid4().hex[:8]
        raw_topic, spark_topic = f"bench-raw-{tag}", f"bench-spark-{tag}"
        client_id = f"bench-{tag}"
        _subscribe(broker, raw_topic, client_id + "-raw", "raw")
        _subscribe(broker, spark_topic, client_id, "lake")
        print(f"filling 2 x {args.messages} messages of {args.size} B on {args.broker} ...", flush=True)
        _fill(broker, raw_topic, args.messages, args.size)
        _fill(broker, spark_topic, args.messages, args.size)

        from pyspark.sql import SparkSession

        builder = (
            SparkSession.builder.appName("jmslike-benchmark")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "1g")
        )
        roots = [os.getpid()]
        if args.master == "cluster":
            cluster = _cluster(root)
            roots += cluster.pids()
            builder = (
                builder.master(cluster.master_url)
                .config("spark.executor.memory", "512m")
                .config("spark.executor.cores", "1")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
            )
        else:
            builder = builder.master("local[2]")
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
        from jmslike.spark_sink import register

        register(spark)
        # The JVM, the executors and their Python workers are up before anything is timed.
        spark.range(0, 4, numPartitions=4).rdd.map(lambda x: x).count()

        raw, raw_cpu = raw_rate(broker, raw_topic, client_id + "-raw", "raw", args.messages, args.ack_every)
        broker_pgid = os.getpgid(broker.pid) if broker.pid else None
        options = {"stagingChunkMessages": str(args.chunk), "maxTriggerDelayMs": "10000"}
        if args.max_messages_per_trigger:
            options["maxMessagesPerTrigger"] = str(args.max_messages_per_trigger)
        result = spark_rate(
            spark,
            broker,
            spark_topic,
            client_id,
            "lake",
            args.messages,
            root,
            options,
            CpuSampler(roots, broker_pgid),
        )
        spark.stop()
    finally:
        if cluster is not None:
            cluster.close()
        broker.close()
        shutil.rmtree(root, ignore_errors=True)

    ratio = result["rate"] / raw
    import pyspark

    report = {
        "broker": args.broker,
        "master": args.master,
        "messages": args.messages,
        "size": args.size,
        "prefetch": args.prefetch or 1000,
        "pyspark": pyspark.__version__,
        "raw_msgs_per_s": round(raw, 1),
        "raw_cpu_s_per_1000": round(raw_cpu, 3),
        "spark_msgs_per_s": round(result["rate"], 1),
        "spark_cpu_s_per_1000": round(result["cpu_s_per_1000"], 3),
        "spark_cpu_s_per_1000_by_role": result["cpu_s_per_1000_by_role"],
        "spark_seconds": round(result["seconds"], 2),
        "spark_batches": result["batches"],
        "spark_durations_ms": result["durations_ms"],
        "ratio": round(ratio, 3),
        "target": TARGET,
        "options": options,
    }
    print(f"jmslike raw receive:          {raw:10.0f} msg/s   {raw_cpu:6.3f} core-s per 1,000 messages")
    print(
        f"spark jms -> parquet ({args.master}): {result['rate']:6.0f} msg/s   "
        f"{result['cpu_s_per_1000']:6.3f} core-s per 1,000 messages ({result['batches']} batches)"
    )
    print(f"ratio spark/raw:              {ratio:10.2f}  (target >= {TARGET:.2f})")
    print(f"spark time per phase (ms):    {result['durations_ms']}")
    print(f"spark core-s per 1,000 by role: {result['cpu_s_per_1000_by_role']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

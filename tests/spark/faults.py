"""SIGKILL rounds against a running ``jms`` -> Parquet query, and the exactly-once verdict afterwards.

Shared by the local-mode kill test (test_source.py) and the standalone-cluster one (test_cluster.py): a
slice of messages is published before every fault, so each fault lands while there is work; the fault
waits for the query to make progress, then for a random pause (where exactly a kill lands is left to
chance on purpose, seeded by the test's name). At the end the last driver runs until the sink holds every
published message, then is killed too; only what the sink committed counts, and the subscription must end
empty. No expectation covers a loss: ``kill_durability`` names the per-broker table, which has no entry.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import random
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Driver, Pipeline, broker_url, publish, wait_until

from jmslike.conformance.suite.probe import ProbeUnavailable, probe_for
from jmslike.conformance.suite.restarts import restart


@functools.cache
def integration_module(name: str) -> Any:
    """A support module of the integration tests (tests/integration/<name>.py): the one table of per-broker
    expectations, and the restart helper."""
    path = Path(__file__).resolve().parent.parent / "integration" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"integration_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


def kill_durability(broker: Any) -> contextlib.AbstractContextManager[None]:
    """What a broker SIGKILL may cost on this broker, from the integration tests' expectation table
    (tests/integration/expectations.py); it has no "kill-durability" entry today, so a loss fails."""
    return integration_module("expectations").expected("kill-durability", broker.kind)  # type: ignore[no-any-return]


def kill_broker(broker: Any) -> None:
    """SIGKILL and restart the broker. RabbitMQ 3.10 can drop a queue declared just before a SIGKILL
    (docs/conformance.md): the suite's restart makes one more declaration first, as everywhere."""
    restart(broker, "kill")


def source_options(broker: Any, topic: str, client_id: str, name: str, **extra: str) -> dict[str, str]:
    return {
        "url": broker_url(broker),
        "topic": topic,
        "clientId": client_id,
        "subscriptionName": name,
        "user": broker.user,
        "password": broker.password,
        **extra,
    }


def assert_backlog_empty(broker: Any, client_id: str, topic: str, names: list[str]) -> None:
    try:
        probe = probe_for(broker)
        for name in names:
            left = probe.durable_backlog(client_id, topic, name)
            assert left == [], f"durable subscription {name} still holds {len(left)} message(s): {left[:5]}"
    except ProbeUnavailable as exc:
        pytest.skip(f"cannot look at the subscription independently on {broker.kind}: {exc}")


def backlog(broker: Any, client_id: str, topic: str, name: str) -> int | None:
    """How many messages the durable subscription still holds (None: no independent probe here).
    Right after a driver was killed the broker may not yet have noticed that its connection is gone
    (ActiveMQ then refuses the client ID): retry for a while."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return len(probe_for(broker).durable_backlog(client_id, topic, name))
        except ProbeUnavailable:
            return None
        except Exception as exc:
            if "already connected" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def assert_exactly_once(ids: list[str], published: list[str]) -> None:
    counts = Counter(ids)
    duplicated = [i for i, n in counts.items() if n > 1]
    missing = set(published) - set(counts)
    unexpected = set(counts) - set(published)
    assert not duplicated, f"{len(duplicated)} message(s) in the sink more than once, e.g. {duplicated[:3]}"
    assert not missing, (
        f"{len(missing)} published message(s) missing from the sink, e.g. {sorted(missing)[:3]}"
    )
    assert not unexpected, f"{len(unexpected)} unexpected message(s) in the sink"
    assert len(ids) == len(set(ids)) == len(published)


def pause(seconds: float) -> None:
    """Fault injection timing (where a kill lands), not synchronisation."""
    time.sleep(seconds)


class KillRounds:
    """One query under faults: ``start`` launches a driver (again after its kill); ``inject`` maps a fault
    name to what it kills ("driver" and "broker" are built in; a cluster test adds its workers)."""

    def __init__(
        self,
        pipeline: Pipeline,
        broker: Any,
        topic: str,
        start: Callable[[], Driver],
        seed: str,
        extra_faults: dict[str, Callable[[], None]] | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.broker = broker
        self.topic = topic
        self._start = start
        self._rng = random.Random(seed)
        self._faults = dict(extra_faults or {})
        self.published: list[str] = []
        self.driver: Driver | None = None

    def run(self, faults: list[str], total: int) -> None:
        """Publish a first slice, start the query, then before each fault one more slice; ``total``
        messages in all."""
        slices = [total // (len(faults) + 1)] * len(faults)
        slices.insert(0, total - sum(slices))
        self.published = publish(self.broker, self.topic, slices[0])
        self.driver = self._start()
        for size, fault in zip(slices[1:], faults, strict=True):
            before = self.pipeline.progress()
            self.published += publish(self.broker, self.topic, size, start=len(self.published))
            wait_until(
                lambda before=before: self.pipeline.progress() > before,
                180,
                f"stream progress before the fault {fault!r}",
            )
            pause(self._rng.uniform(0.0, 1.5))
            self._inject(fault)

    def _inject(self, fault: str) -> None:
        assert self.driver is not None
        if fault in ("driver", "both"):
            self.driver.kill()
        if fault in ("broker", "both"):
            kill_broker(self.broker)
        if fault in ("driver", "both"):
            self.driver = self._start()
        if fault in self._faults:
            self._faults[fault]()
        elif fault not in ("driver", "broker", "both"):
            raise ValueError(f"unknown fault {fault!r}")

    def check(self, client_id: str, names: list[str]) -> None:
        """The last driver runs until the sink holds as many distinct messages as were published (or the
        deadline passes), then goes the hard way too; the sink must hold each exactly once and every
        subscription must be empty."""
        driver = self.driver
        assert driver is not None
        with contextlib.suppress(AssertionError):  # the assertions below say what is missing
            wait_until(
                lambda: (
                    len(set(self.pipeline.sink_ids())) >= len(self.published)
                    or driver.process.poll() is not None
                ),
                300,
                "the sink to hold every published message",
                interval_s=1.0,
            )
        assert driver.process.poll() is None, f"the Spark driver died: {driver.tail()}"
        driver.kill()
        ids = self.pipeline.sink_ids()
        try:
            for name in names:
                left = backlog(self.broker, client_id, self.topic, name)
                assert left in (None, 0), (
                    f"the subscription {name} still holds {left} message(s); the sink has {len(ids)} rows"
                )
            assert_exactly_once(ids, self.published)
        except AssertionError as exc:  # shown in the summary even where the table makes it an xfail
            warnings.warn(f"{self.broker.kind} after SIGKILLs: {str(exc)[:300]}", stacklevel=1)
            raise

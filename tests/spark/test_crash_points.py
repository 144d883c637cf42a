"""The source's driver side killed at exact points between stage, acknowledge and offer.

Random SIGKILLs of a whole Spark driver (test_source.py) mostly land while Spark runs a batch; these
tests put the kill exactly where the argument in spark_sink/README.md is most delicate. A child process
runs the driver-side :class:`~jmslike.spark_sink.stager.Stager` (what Spark's driver worker runs) against
the real broker and SIGKILLs itself right after a chunk became durable but before the broker got the
ACK, or right after the ACK but before the offset reached Spark. A fresh Stager on the same staging
location must then turn the redeliveries away and offer every staged chunk, so that the staged chunks
hold each published message exactly once and the subscription ends empty.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import broker_url, child_env, publish, subscribe

from jmslike.conformance.suite.probe import ProbeUnavailable, probe_for
from jmslike.spark_sink.options import parse_source_options
from jmslike.spark_sink.records import KEY_COLUMN
from jmslike.spark_sink.stager import Stager

CHILD = textwrap.dedent(
    """
    import json, os, signal, sys
    from jmslike.spark_sink.options import parse_source_options
    from jmslike.spark_sink.stager import Stager

    options, point = json.loads(sys.argv[1]), sys.argv[2]
    stager = Stager(parse_source_options(options))
    stager.start()
    if point == "after-stage":
        real_write = stager.store.write_chunk

        def write_then_die(seq, table):
            done = real_write(seq, table)
            os.kill(os.getpid(), signal.SIGKILL)  # durable, not acknowledged
            return done

        stager.store.write_chunk = write_then_die
    stager.latest(None, int(options["maxMessagesPerTrigger"]))
    os.kill(os.getpid(), signal.SIGKILL)  # "after-ack": staged and acknowledged, never offered
    """
)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("point", ["after-stage", "after-ack"])
def test_kill_between_stage_ack_and_offer(broker: Any, unique_name: str, tmp_path: Path, point: str) -> None:
    import json

    client_id, name = f"{unique_name}-c", f"{unique_name}-s"
    subscribe(broker, unique_name, client_id, [(name, None)])
    published = publish(broker, unique_name, 600)
    options = {
        "url": broker_url(broker),
        "topic": unique_name,
        "clientId": client_id,
        "subscriptionName": name,
        "user": broker.user,
        "password": broker.password,
        "stagingLocation": str(tmp_path / "staging"),
        "maxMessagesPerTrigger": "200",
        "stagingChunkMessages": "100",
    }
    child = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(options), point],
        env=child_env(),
        cwd=str(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == -9, (
        f"the child was to die by SIGKILL: {child.returncode} {child.stderr[-2000:]}"
    )

    stager = Stager(parse_source_options(options))
    try:
        staged_before = stager.store.list_chunks()
        assert staged_before, "the child staged nothing before it died"
        first = stager.latest(None, 200)
        assert first >= max(staged_before), "a chunk staged before the crash was not offered"
        offsets = [first]
        while True:  # what Spark's triggers would do until the subscription is drained
            end = stager.latest(None, 200)
            if end == offsets[-1]:
                break
            offsets.append(end)
            stager.commit(offsets[-2])
        if point == "after-stage":
            assert stager.stats["duplicates"] >= 100, (
                f"the unacknowledged staged chunk should have come back and been turned away: {stager.stats}"
            )
        keys: list[str] = []
        ids: list[str] = []
        for seq in stager.store.list_chunks():
            keys += stager.store.read_keys(seq, KEY_COLUMN)
            ids += stager.store.read_keys(seq, "messageId")
    finally:
        stager.close()
    assert len(ids) == len(set(ids)) == len(published), f"{len(ids)} staged, {len(set(ids))} distinct"
    assert set(ids) == set(published)
    assert keys == ids  # jmslike producers: the key is the stable message ID
    try:
        assert probe_for(broker).durable_backlog(client_id, unique_name, name) == []
    except ProbeUnavailable as exc:
        pytest.skip(f"no independent probe of the subscription on {broker.kind}: {exc}")

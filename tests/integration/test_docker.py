"""The docker launcher's host-network mode on a real engine, with the local images (``python -m
jmslike.conformance.brokers images``).

What the shared broker tests cannot show: a broker in a container listens on loopback only, ``close()`` leaves no
container, volume or host directory, a run that crashed has its leftovers removed by the next one, and ActiveMQ in
its image has XStream (MapMessages through ``transformation: jms-map-json``). Every test skips, saying why, when
no engine answers or the image has not been built.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from probes import LOOPBACK_LISTENERS, listening_addresses

from jmslike import ConnectionFactory, Session
from jmslike.conformance.brokers import BrokerKind, launch
from jmslike.conformance.brokers.docker import DockerBroker, docker_client, remove_leftovers
from jmslike.conformance.brokers.images import local_image

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture
def client() -> Any:
    """A Docker SDK client (the ``docker`` marker has already skipped when no engine answers)."""
    engine = docker_client()
    yield engine
    engine.close()


def _require_image(client: Any, kind: BrokerKind) -> str:
    image = local_image(client, kind)
    if image is None:
        pytest.skip(
            f"no local {kind} image on this engine; build it: python -m jmslike.conformance.brokers images"
        )
    return image


@pytest.mark.parametrize("kind", ["activemq", "rabbitmq"])
def test_host_network_broker_listens_on_loopback_only_and_leaves_nothing(
    client: Any, kind: BrokerKind
) -> None:
    image = _require_image(client, kind)
    broker = launch(kind, "docker")
    try:
        assert isinstance(broker, DockerBroker)
        assert broker.image == image and "host network" in broker.launcher_detail
        for port in (broker.port, *broker.extra_ports.values()):
            addresses = listening_addresses(port)
            assert addresses and addresses <= LOOPBACK_LISTENERS, (port, addresses)
        container, volume, host_dir = broker.container_name, broker.volume, broker.host_dir
        assert host_dir is not None and host_dir.is_dir()
    finally:
        broker.close()
    assert not client.containers.list(all=True, filters={"name": container})
    assert not client.volumes.list(filters={"name": volume})
    assert not host_dir.exists()


def test_leftovers_of_a_killed_run_are_removed(client: Any, tmp_path: Path) -> None:
    _require_image(client, "activemq")
    script = tmp_path / "crash.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, signal
            from jmslike.conformance.brokers import launch
            broker = launch("activemq", "docker")
            print(broker.container_name, broker.volume, broker.host_dir, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)  # a crashed run: no atexit, no close()
            """
        )
    )
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert result.returncode == -9, result.stderr[-2000:]
    container, volume, host_dir = result.stdout.split()
    assert client.containers.list(all=True, filters={"name": container}), (
        "the crashed run left nothing to clean"
    )
    removed = remove_leftovers(client)
    assert f"container {container}" in removed and f"volume {volume}" in removed
    assert not client.containers.list(all=True, filters={"name": container})
    assert not client.volumes.list(filters={"name": volume})
    assert not Path(host_dir).exists()


def test_activemq_image_has_xstream_for_map_messages(client: Any, unique_name: str) -> None:
    """A broker without XStream drops a connection whose subscription asks for a transformation; the image's
    broker converts the map and a second jmslike reads it back as a MapMessage."""
    _require_image(client, "activemq")
    with launch("activemq", "docker") as broker:
        factory = ConnectionFactory(f"{broker.url}?activemq_map_transformation=true")
        connection = factory.createConnection(broker.user, broker.password)
        try:
            connection.start()
            session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
            queue = session.createQueue(unique_name)
            consumer = session.createConsumer(queue)
            message = session.createMapMessage()
            message.setInt("count", 3)
            message.setString("name", "x")
            session.createProducer(queue).send(message)
            received = consumer.receive(10_000)
            assert received is not None, "no MapMessage came back through the broker's transformation"
            assert (received.getInt("count"), received.getString("name")) == (3, "x")
        finally:
            connection.close()

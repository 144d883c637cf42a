"""Rules the broker must enforce across OS processes (a lock in our own process would prove nothing),
and credentials.

A child process holds a client ID and a durable subscription; this process then tries to use them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from jmslike import (
    Connection,
    ConnectionFactory,
    InvalidClientIDException,
    JMSException,
    JMSSecurityException,
    Session,
    TextMessage,
)

HOLDER = textwrap.dedent(
    """
    import sys
    from jmslike import ConnectionFactory
    url, user, password, client_id, topic = sys.argv[1:6]
    connection = ConnectionFactory(url).createConnection(user, password)
    connection.setClientID(client_id)
    session = connection.createSession(False, 1)
    session.createDurableSubscriber(session.createTopic(topic), "held")
    connection.start()
    print("ready", flush=True)
    sys.stdin.readline()  # hold the client ID until told to go (or killed)
    connection.close()
    """
)


@pytest.fixture
def holder(
    url: str, broker: Any, unique_name: str, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A child process holding client ID ``holder-...`` with durable subscription "held"."""
    client_id = f"holder-{uuid.uuid4().hex[:8]}"
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, url, broker.user, broker.password, client_id, unique_name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,  # "python -c" puts the cwd first on sys.path: keep the source tree out of it
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # the child prints "ready" or dies (EOF): no hang either way
        assert line.strip() == "ready", (
            f"holder did not start: {line!r} {process.stderr.read() if process.stderr else ''}"
        )
        yield process, client_id
    finally:
        process.kill()
        process.wait(timeout=30)


def test_client_id_held_by_another_process_is_refused(
    holder: tuple[subprocess.Popen[str], str], connect: Callable[..., Connection]
) -> None:
    _, client_id = holder
    connection = connect(start=False)
    with pytest.raises(InvalidClientIDException):
        connection.setClientID(client_id)
    assert connection.getClientID() is None  # nothing half-applied


def test_second_consumer_from_another_process_is_refused(
    holder: tuple[subprocess.Popen[str], str], connect: Callable[..., Connection], unique_name: str
) -> None:
    """A durable subscription is (client ID, name): another process can only reach it under the same
    client ID, which the broker refuses while the holder lives, so its second consumer never exists."""
    _, client_id = holder
    with pytest.raises(JMSException):
        connection = connect(client_id)
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        session.createDurableSubscriber(session.createTopic(unique_name), "held")


def test_killed_holder_releases_the_client_id_and_the_subscription_stays(
    holder: tuple[subprocess.Popen[str], str], connect: Callable[..., Connection], unique_name: str
) -> None:
    process, client_id = holder
    publisher = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    publisher.createProducer(publisher.createTopic(unique_name)).send(publisher.createTextMessage("kept"))
    process.kill()  # a client crash: no DISCONNECT, the broker sees the socket close
    process.wait(timeout=30)
    connection = connect(client_id)  # the broker released the ID
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(unique_name), "held")
    got = subscriber.receive(10_000)
    assert isinstance(got, TextMessage) and got.getText() == "kept"
    subscriber.close()
    session.unsubscribe("held")


def test_bad_credentials(broker: Any, url: str) -> None:
    if broker.kind == "activemq":
        from jmslike.conformance.brokers import launch
        from jmslike.conformance.brokers.activemq import ActiveMQUser

        # The shared ActiveMQ accepts any login; this one has a user.
        with launch("activemq", users=(ActiveMQUser("alice", "s3cret-pw"),)) as secured:
            _check_credentials(ConnectionFactory(secured.url), "alice", "s3cret-pw")
    else:
        _check_credentials(ConnectionFactory(url), broker.user, broker.password)


def _check_credentials(factory: ConnectionFactory, user: str, password: str) -> None:
    attempted = "wrong-" + password
    with pytest.raises(JMSSecurityException) as info:
        factory.createConnection(user, attempted)
    assert attempted not in str(info.value) and attempted not in repr(info.value)
    factory.createConnection(user, password).close()

"""Subscription administration from another process (jmslike.admin, ``jmslike subscriptions``), on
real brokers. A child process owns a live durable subscription; this process administers it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from expectations import expected

from jmslike import Connection, IllegalStateException, InvalidDestinationException, Session
from jmslike.admin import Admin
from jmslike.subscriptions import SubscriptionInfo

OWNER = textwrap.dedent(
    """
    import sys
    from jmslike import ConnectionFactory
    url, user, password, client_id, topic = sys.argv[1:6]
    connection = ConnectionFactory(url).createConnection(user, password)
    connection.setClientID(client_id)
    session = connection.createSession(False, 1)
    subscriber = session.createDurableSubscriber(session.createTopic(topic), "owned", "n > 0")
    connection.start()
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "receive":
            message = subscriber.receive(10000)
            print("got", message.getText() if message is not None else None, flush=True)
        elif line.strip() == "close":
            subscriber.close()
            print("closed", flush=True)
    connection.close()
    """
)


@pytest.fixture
def owner(
    url: str, broker: Any, unique_name: str, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    client_id = f"owner-{uuid.uuid4().hex[:8]}"
    process = subprocess.Popen(
        [sys.executable, "-c", OWNER, url, broker.user, broker.password, client_id, unique_name],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.strip() == "ready", (
            f"owner did not start: {line!r} {process.stderr.read() if process.stderr else ''}"
        )
        yield process, client_id
    finally:
        process.kill()
        process.wait(timeout=30)


def _tell(process: subprocess.Popen[str], command: str) -> str:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(command + "\n")
    process.stdin.flush()
    return process.stdout.readline().strip()


def _row(admin: Admin, client_id: str, name: str) -> SubscriptionInfo | None:
    return next((r for r in admin.subscriptions() if (r.clientId, r.name) == (client_id, name)), None)


def _wait_row(
    admin: Admin,
    client_id: str,
    name: str,
    test: Callable[[SubscriptionInfo | None], bool],
    timeout_s: float = 15,
) -> SubscriptionInfo | None:
    """Poll the listing: RabbitMQ's queue statistics lag by up to its statistics interval (5 s)."""
    deadline = time.monotonic() + timeout_s
    while True:
        row = _row(admin, client_id, name)
        if test(row) or time.monotonic() > deadline:
            return row
        threading.Event().wait(0.3)


def test_list_shows_a_live_subscription_and_delete_is_refused_while_owner_is_connected(
    owner: tuple[subprocess.Popen[str], str],
    url: str,
    broker: Any,
    connect: Callable[..., Connection],
    unique_name: str,
) -> None:
    process, client_id = owner
    with Admin(url, broker.user, broker.password) as admin:
        row = _wait_row(admin, client_id, "owned", lambda r: r is not None and r.active is True)
        assert row is not None and row.active is True, row
        assert (row.topic, row.selector, row.durable) == (unique_name, "n > 0", True)

        with pytest.raises(IllegalStateException, match="is connected"):
            admin.deleteSubscription(client_id, "owned")
        # The live subscriber is untouched: it still receives.
        session = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
        message = session.createTextMessage("still-here")
        message.setIntProperty("n", 1)
        session.createProducer(session.createTopic(unique_name)).send(message)
        assert _tell(process, "receive") == "got still-here"

        assert _tell(process, "close") == "closed"
        process.stdin.close()  # type: ignore[union-attr]
        process.wait(timeout=30)  # the owner disconnects: now the subscription can be administered
        row = _wait_row(admin, client_id, "owned", lambda r: r is not None and r.active is False)
        assert row is not None and row.active is False and row.lastActive is not None, row
        assert abs(row.lastActive - time.time()) < 120

        admin.deleteSubscription(client_id, "owned")
        assert _row(admin, client_id, "owned") is None
        with pytest.raises(InvalidDestinationException):
            admin.deleteSubscription(client_id, "owned")
    session = connect(client_id).createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(InvalidDestinationException):
        session.resumeDurableSubscriber("owned")


def test_killed_owner_can_be_cleaned_up_by_the_admin(
    owner: tuple[subprocess.Popen[str], str], url: str, broker: Any
) -> None:
    process, client_id = owner
    process.kill()  # a crash: no close, no record of detaching
    process.wait(timeout=30)
    with Admin(url, broker.user, broker.password) as admin:
        row = _wait_row(admin, client_id, "owned", lambda r: r is not None and r.active is False)
        assert row is not None and row.active is False, row
        admin.deleteSubscription(client_id, "owned")
        assert _row(admin, client_id, "owned") is None


def test_pending_count_where_the_broker_tells(
    url: str, broker: Any, connect: Callable[..., Connection], unique_name: str, broker_kind: str
) -> None:
    client_id = f"pending-{uuid.uuid4().hex[:8]}"
    connection = connect(client_id)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(unique_name), "backlog").close()
    producer = session.createProducer(session.createTopic(unique_name))
    for n in range(3):
        producer.send(session.createTextMessage(f"m{n}"))
    connection.close()
    with Admin(url, broker.user, broker.password) as admin:
        row = _wait_row(admin, client_id, "backlog", lambda r: r is not None and r.pending == 3, 8)
        assert row is not None
        try:
            with expected("admin-pending-count", broker_kind):
                assert row.pending == 3
        finally:
            admin.deleteSubscription(client_id, "backlog")


def test_cli_list_and_delete(
    url: str, broker: Any, connect: Callable[..., Connection], unique_name: str, tmp_path: Path
) -> None:
    client_id = f"cli-{uuid.uuid4().hex[:8]}"
    connection = connect(client_id)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(unique_name), "by-cli").close()
    connection.close()
    env = {**os.environ, "JMSLIKE_PASSWORD": broker.password}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable,
                "-m",
                "jmslike.cli",
                "subscriptions",
                *args,
                "--url",
                url,
                "--user",
                broker.user,
            ],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )

    listed = run("list")
    assert listed.returncode == 0, listed.stderr
    header, *lines = listed.stdout.splitlines()
    assert header.split()[:3] == ["client", "ID", "name"]
    assert any(line.split()[:3] == [client_id, "by-cli", unique_name] for line in lines), listed.stdout
    deleted = run("delete", client_id, "by-cli")
    assert deleted.returncode == 0, deleted.stderr
    again = run("delete", client_id, "by-cli")
    assert again.returncode == 1 and "InvalidDestinationException" in again.stderr

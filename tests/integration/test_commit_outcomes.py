"""What commit() says when its outcome is not known (issue #17): through the fault proxy, deterministically.

JMS: a commit whose outcome is unknown raises a plain JMSException (in doubt), never
TransactionRolledBackException, which would tell the application its messages are gone when the broker
may have committed them. And the next transaction of the session must not pay for the previous one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from jmslike import Connection, JMSException, Session, TransactionRolledBackException
from jmslike.conformance.proxy import FaultProxy
from jmslike.conformance.suite.helpers import drain, text_of

pytestmark = pytest.mark.timeout(90)


def test_a_commit_receipt_that_never_comes_is_in_doubt_not_rolled_back(
    proxy: FaultProxy, via_proxy: Callable[..., Connection], connect: Any, unique_name: str
) -> None:
    """The COMMIT reaches the broker, its receipt does not reach us: the broker committed, so saying
    'rolled back' would be a lie the application acts on (it would send the messages again)."""
    connection = via_proxy(receipt_timeout_ms=1500)
    try:
        session = connection.createSession(True, Session.SESSION_TRANSACTED)
        producer = session.createProducer(session.createQueue(unique_name))
        producer.send(session.createTextMessage("committed, unconfirmed"))
        proxy.stall("to_client")  # from here on the broker's answers stay in the proxy
        with pytest.raises(JMSException) as raised:
            session.commit()
        assert not isinstance(raised.value, TransactionRolledBackException), (
            f"a commit whose receipt never came was reported as rolled back: {raised.value}"
        )
    finally:
        proxy.resume()
        proxy.drop()
        connection.close()
    assert [text_of(m) for m in drain(connect(), unique_name, 2000)] == ["committed, unconfirmed"]


def test_a_connection_lost_during_commit_does_not_poison_the_next_transaction(
    proxy: FaultProxy, via_proxy: Callable[..., Connection], connect: Any, unique_name: str
) -> None:
    """Lost while COMMIT waits: the outcome is unknown (JMSException); after the reconnect the session's
    next transaction commits normally instead of failing for the previous one."""
    connection = via_proxy(reconnect="true", reconnect_delay_ms=100)
    try:
        session = connection.createSession(True, Session.SESSION_TRANSACTED)
        producer = session.createProducer(session.createQueue(unique_name))
        producer.send(session.createTextMessage("first"))
        proxy.stall("to_client")
        sent_before = proxy.forwarded("to_broker")
        outcome: list[BaseException | None] = []
        committing = threading.Thread(target=lambda: outcome.append(_commit(session)))
        committing.start()
        assert proxy.wait_forwarded("to_broker", sent_before, 10), "COMMIT never left the client"
        proxy.drop()
        proxy.resume()
        committing.join(30)
        assert outcome and isinstance(outcome[0], JMSException), f"commit should be in doubt, got {outcome}"
        assert not isinstance(outcome[0], TransactionRolledBackException)
        assert proxy.wait_connections(1, 20), "the connection did not come back"
        producer.send(session.createTextMessage("second"))
        session.commit()  # must not fail because of the transaction before
    finally:
        connection.close()
    texts = sorted(text_of(m) for m in drain(connect(), unique_name, 2000))
    assert "second" in texts and texts.count("second") == 1
    assert set(texts) <= {"first", "second"}


def _commit(session: Session) -> BaseException | None:
    try:
        session.commit()
    except BaseException as exc:
        return exc
    return None

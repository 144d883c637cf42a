"""Retained publications, subscriptions on request only and request update, on the real brokers.

Every behaviour of issue #7 against ActiveMQ and RabbitMQ started by the launchers: retain / replace /
clear, wildcard request update over several topics, selectors, NoRetainedMessageException, what a broker
restart (graceful and SIGKILL) keeps, on-request-only subscriptions getting no live traffic and building
nothing up (checked with a raw probe, not through jmslike), the owner rule, transactions and concurrent
publishers. Broker differences come from the one expectations table (expectations.py).
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from expectations import EXPECTATIONS, expected
from probes import durable_backlog

from jmslike import (
    Connection,
    DeliveryMode,
    IllegalStateException,
    InvalidDestinationException,
    JMSException,
    JMSSecurityException,
    Message,
    MessageConsumer,
    NoRetainedMessageException,
    Session,
    TextMessage,
)
from jmslike.conformance.suite.helpers import receive_all, text_of, wait_until
from jmslike.conformance.suite.probe import probe_for
from jmslike.conformance.suite.restarts import restart
from jmslike.contract import RETAINED_STORE_PREFIX
from jmslike.retained import ON_REQUEST_PREFIX, RETAINED_PROPERTY, Envelope

RECEIVE_MS = 5000
QUIET_MS = 500


@pytest.fixture(autouse=True)
def _retained_supported(request: pytest.FixtureRequest, broker: Any) -> None:
    """Brokers where the table says jmslike refuses retained publications run only the refusal test."""
    entry = EXPECTATIONS.get(("retained", broker.kind))
    if (
        entry is not None
        and entry.kind == "unsupported"
        and request.node.originalname != "test_refused_where_unsupported"
    ):
        pytest.skip(f"retained publications are unsupported on {broker.kind}: {entry.reason}")


def test_refused_where_unsupported(broker: Any, connect: Callable[..., Connection], unique_name: str) -> None:
    """Where the broker cannot keep retained publications, jmslike refuses (the table says where)."""
    with expected("retained", broker.kind):
        retain(connect(), unique_name, "x")
        on_request(connect(), unique_name).requestUpdate()


def retain(
    connection: Connection,
    topic: str,
    text: str | None,
    mode: int = DeliveryMode.PERSISTENT,
    properties: dict[str, Any] | None = None,
    ttl_ms: int = 0,
) -> None:
    """One retained publication (``text=None`` or "" clears the topic) from a fresh AUTO session."""
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    try:
        message = session.createTextMessage(text)
        for key, value in (properties or {}).items():
            message.setObjectProperty(key, value)
        producer = session.createProducer(session.createTopic(topic))
        producer.send(message, mode, 4, ttl_ms, retain=True)
    finally:
        session.close()


def on_request(connection: Connection, topic: str, selector: str | None = None) -> MessageConsumer:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    return session.createConsumer(session.createTopic(topic), selector, onRequestOnly=True)


def updates(consumer: MessageConsumer) -> dict[str, str]:
    """requestUpdate(), then {destination name: text} of what it delivered (exactly that many)."""
    count = consumer.requestUpdate()
    got = receive_all(consumer, QUIET_MS)
    assert len(got) == count, f"requestUpdate said {count}, {len(got)} arrived"
    for message in got:
        assert message.getBooleanProperty(RETAINED_PROPERTY) is True
    return {str(m.getJMSDestination().name): text_of(m) for m in got}  # type: ignore[union-attr]


def test_retain_replace_clear(broker: Any, connect: Callable[..., Connection], unique_name: str) -> None:
    topic = f"{unique_name}/State/LatestScore"
    publisher = connect()
    live_session = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    live = live_session.createConsumer(live_session.createTopic(topic))
    subscriber = on_request(connect(), topic)

    retain(publisher, topic, "1-0")
    retain(publisher, topic, "2-0")
    assert updates(subscriber) == {topic.replace("/", "."): "2-0"}, "the newer publication replaces the older"
    assert updates(subscriber) == {topic.replace("/", "."): "2-0"}, "a request update consumes nothing"

    retain(publisher, topic, "")  # an empty body clears the topic
    with pytest.raises(NoRetainedMessageException):
        subscriber.requestUpdate()
    retain(publisher, topic, "3-0")
    assert updates(subscriber) == {topic.replace("/", "."): "3-0"}, "retained again after a clear"
    # The broker holds exactly one copy: the older ones are gone, not just hidden (raw probe).
    held = probe_for(broker).queue_bodies(RETAINED_STORE_PREFIX + topic.replace("/", "."))
    assert len(held) == 1, f"the store holds {len(held)} copies"
    copy = Envelope.decode(held[0].encode())
    assert copy is not None and copy.body == b"3-0" and not copy.clear
    retain(publisher, topic, None)  # a null body clears too
    with pytest.raises(NoRetainedMessageException):
        subscriber.requestUpdate()

    # Live subscribers get every publication, the clearing ones included, without the retained mark.
    got = receive_all(live, QUIET_MS)
    assert [text_of(m) for m in got] == ["1-0", "2-0", "", "3-0", ""]
    assert all(not m.propertyExists(RETAINED_PROPERTY) for m in got)


def test_retained_message_is_the_publication(connect: Callable[..., Connection], unique_name: str) -> None:
    """Headers, properties and body arrive as published; the JMS property marks it retained."""
    topic = f"{unique_name}/x"
    publisher = connect()
    session = publisher.createSession(False, Session.AUTO_ACKNOWLEDGE)
    message = session.createTextMessage("payload")
    message.setIntProperty("league", 3)
    message.setStringProperty("team", "a:b\nc")
    message.setJMSCorrelationID("corr-1")
    session.createProducer(session.createTopic(topic)).send(message, retain=True)
    subscriber = on_request(connect(), topic)
    assert subscriber.requestUpdate() == 1
    got = subscriber.receive(RECEIVE_MS)
    assert isinstance(got, TextMessage) and got.getText() == "payload"
    assert got.getJMSMessageID() == message.getJMSMessageID()
    assert got.getJMSCorrelationID() == "corr-1"
    assert got.getJMSDeliveryMode() == DeliveryMode.PERSISTENT
    assert got.getJMSRedelivered() is False
    assert got.getObjectProperty("league") == 3
    assert got.getStringProperty("team") == "a:b\nc"
    assert got.getObjectProperty(RETAINED_PROPERTY) is True
    assert subscriber.getTopic() == session.createTopic(topic)
    assert subscriber.requestUpdate(correlationID="update-7") == 1  # the subscriber's own tag
    tagged = subscriber.receive(RECEIVE_MS)
    assert tagged is not None and tagged.getJMSCorrelationID() == "update-7"
    assert tagged.getObjectProperty("league") == 3
    subscriber.close()
    with pytest.raises(IllegalStateException):
        subscriber.getTopic()  # the topic asked for, but closed objects' getters raise


def test_wildcard_request_update(connect: Callable[..., Connection], unique_name: str) -> None:
    base = unique_name
    publisher = connect()
    for path, text in [
        ("", "root"),
        ("/A/Score", "a"),
        ("/B/Score", "b"),
        ("/A/Score/Detail", "a-detail"),
        ("/C/Other", "c"),
    ]:
        retain(publisher, base + path, text)
    dotted = base.replace("/", ".")
    connection = connect()
    assert updates(on_request(connection, f"{base}/+/Score")) == {
        f"{dotted}.A.Score": "a",
        f"{dotted}.B.Score": "b",
    }
    assert updates(on_request(connection, f"{base}/#")) == {
        dotted: "root",
        f"{dotted}.A.Score": "a",
        f"{dotted}.B.Score": "b",
        f"{dotted}.A.Score.Detail": "a-detail",
        f"{dotted}.C.Other": "c",
    }
    assert updates(on_request(connection, f"{base}/A/#")) == {
        f"{dotted}.A.Score": "a",
        f"{dotted}.A.Score.Detail": "a-detail",
    }
    with pytest.raises(NoRetainedMessageException):
        on_request(connection, f"{base}/+/Nothing").requestUpdate()


def test_portable_wildcards_for_live_subscriptions(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    """The same notation subscribes to the same topics on every broker (mapped to its syntax)."""
    session = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    one = session.createConsumer(session.createTopic(f"{unique_name}/+/Score"))
    many = session.createConsumer(session.createTopic(f"{unique_name}/#"))
    publisher = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    for path in ["/A/Score", "/A/Score/Deep", ""]:
        publisher.createProducer(publisher.createTopic(unique_name + path)).send(
            publisher.createTextMessage(path or "root")
        )
    assert [text_of(m) for m in receive_all(one, QUIET_MS)] == ["/A/Score"]
    assert sorted(text_of(m) for m in receive_all(many, QUIET_MS)) == ["/A/Score", "/A/Score/Deep", "root"]


def test_selector_filters_retained(connect: Callable[..., Connection], unique_name: str) -> None:
    publisher = connect()
    retain(publisher, f"{unique_name}/one", "first", properties={"league": 1})
    retain(publisher, f"{unique_name}/two", "second", properties={"league": 2})
    retain(
        publisher, f"{unique_name}/three", "third", properties={"league": 1}, mode=DeliveryMode.NON_PERSISTENT
    )
    connection = connect()
    assert sorted(updates(on_request(connection, f"{unique_name}/#", "league = 1")).values()) == [
        "first",
        "third",
    ]
    assert list(updates(on_request(connection, f"{unique_name}/#", "league > 1")).values()) == ["second"]
    assert list(
        updates(on_request(connection, f"{unique_name}/#", "JMSDeliveryMode = 'NON_PERSISTENT'")).values()
    ) == ["third"]
    with pytest.raises(NoRetainedMessageException) as raised:
        on_request(connection, f"{unique_name}/#", "league = 9").requestUpdate()
    assert "league = 9" in str(raised.value)


def test_no_retained_message(connect: Callable[..., Connection], unique_name: str) -> None:
    subscriber = on_request(connect(), f"{unique_name}/nothing/#")
    with pytest.raises(NoRetainedMessageException) as raised:
        subscriber.requestUpdate()
    assert isinstance(raised.value, JMSException)
    assert subscriber.receive(QUIET_MS) is None


def test_expired_retained_publication_is_not_delivered(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    import time

    retain(connect(), unique_name, "short-lived", ttl_ms=300)
    subscriber = on_request(connect(), unique_name)
    deadline = time.time() + 0.3
    wait_until(lambda: time.time() > deadline + 0.1, 5.0, "the publication's expiry")
    with pytest.raises(NoRetainedMessageException):
        subscriber.requestUpdate()


def test_on_request_only_gets_no_live_traffic_and_builds_nothing_up(
    broker: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    topic = f"{unique_name}/live"
    cid = f"onreq-{uuid.uuid4().hex[:8]}"
    owner = connect(cid)
    session = owner.createSession(False, Session.AUTO_ACKNOWLEDGE)
    durable = session.createDurableSubscriber(session.createTopic(topic), "onreq", onRequestOnly=True)
    plain = on_request(owner, topic)
    durable.close()  # inactive: a normal durable subscription would now accumulate
    publisher = connect()
    retain(publisher, topic, "kept")
    for i in range(5):
        retain(publisher, topic, f"live-{i}")
    back = session.createDurableSubscriber(session.createTopic(topic), "onreq", onRequestOnly=True)
    assert back.receive(QUIET_MS) is None, "an on-request-only durable subscription got live traffic"
    assert plain.receive(QUIET_MS) is None, "an on-request-only consumer got live traffic"
    assert updates(back) == {topic.replace("/", "."): "live-4"}
    assert updates(plain) == {topic.replace("/", "."): "live-4"}
    back.close()
    owner.close()
    # The broker itself holds nothing for it (raw probe, not jmslike).
    held = durable_backlog(broker, cid, ON_REQUEST_PREFIX + topic.replace("/", "."), "onreq")
    assert held == [], f"the on-request-only subscription built up {held}"


def test_on_request_only_durable_keeps_its_identity(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    """It is a durable subscription of its client ID: one consumer at a time, and unsubscribe deletes it."""
    topic = f"{unique_name}/t"
    session = connect(f"id-{uuid.uuid4().hex[:8]}").createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(topic), "s", onRequestOnly=True)
    with pytest.raises(JMSException):
        session.createDurableSubscriber(session.createTopic(topic), "s", onRequestOnly=True)
    with pytest.raises(IllegalStateException):
        session.unsubscribe("s")
    subscriber.close()
    session.unsubscribe("s")


def test_on_request_only_durable_resumes_by_name_still_on_request(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    """Subscription management meets retained publications: resuming by name restores on-request-only
    (no live traffic) and its topic; combining it with an inactiveSelector is refused up front."""
    topic = f"{unique_name}/resume"
    session = connect(f"rs-{uuid.uuid4().hex[:8]}").createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(JMSException, match="inactiveSelector"):
        session.createDurableSubscriber(
            session.createTopic(topic), "r", None, False, True, inactiveSelector="JMSPriority > 4"
        )
    session.createDurableSubscriber(session.createTopic(topic), "r", None, False, True).close()
    publisher = connect()
    retain(publisher, topic, "latest")
    retain(publisher, topic, "live-after")
    resumed = session.resumeDurableSubscriber("r")
    assert resumed.getTopic() == session.createTopic(topic)
    assert resumed.receive(QUIET_MS) is None, "a resumed on-request-only subscription got live traffic"
    assert updates(resumed) == {topic.replace("/", "."): "live-after"}
    resumed.close(removeSubscription=True)


def test_owner_rule(connect: Callable[..., Connection], unique_name: str) -> None:
    """Only the subscription's owner gets its update: the same name under another client ID is another
    subscription, a closed subscriber cannot ask, nor can a queue consumer."""
    topic = f"{unique_name}/owned"
    retain(connect(), topic, "v")
    mine = connect(f"owner-{uuid.uuid4().hex[:8]}").createSession(False, Session.AUTO_ACKNOWLEDGE)
    theirs = connect(f"other-{uuid.uuid4().hex[:8]}").createSession(False, Session.AUTO_ACKNOWLEDGE)
    my_sub = mine.createDurableSubscriber(mine.createTopic(topic), "shared-name", onRequestOnly=True)
    their_sub = theirs.createDurableSubscriber(theirs.createTopic(topic), "shared-name", onRequestOnly=True)
    assert their_sub.requestUpdate() == 1
    assert my_sub.receive(QUIET_MS) is None, "another client's request update reached this subscription"
    assert text_of(their_sub.receive(RECEIVE_MS)) == "v"
    # The check itself: a handle whose subscription belongs to another client ID is refused. jmslike never
    # hands such a handle out (only the client ID's connection can create it), so one is forged here.
    forged = dataclasses.replace(their_sub.spec, client_id="somebody-else")
    their_sub.spec, real = forged, their_sub.spec
    with pytest.raises(JMSSecurityException):
        their_sub.requestUpdate()
    their_sub.spec = real
    my_sub.close()
    with pytest.raises(IllegalStateException):
        my_sub.requestUpdate()
    queue_consumer = mine.createConsumer(mine.createQueue(unique_name))
    with pytest.raises(InvalidDestinationException):
        queue_consumer.requestUpdate()
    their_sub.close()
    theirs.unsubscribe("shared-name")
    mine.unsubscribe("shared-name")


def test_request_update_to_a_listener_and_live_subscriber(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    topic = f"{unique_name}/l"
    retain(connect(), topic, "retained")
    session = connect().createSession(False, Session.CLIENT_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createTopic(topic))  # a live subscriber may ask too
    got: list[Message] = []
    arrived = threading.Event()

    def listener(message: Message) -> None:
        got.append(message)
        arrived.set()

    consumer.setMessageListener(listener)
    assert consumer.requestUpdate() == 1
    assert arrived.wait(RECEIVE_MS / 1000)
    assert text_of(got[0]) == "retained" and got[0].getBooleanProperty(RETAINED_PROPERTY)
    got[0].acknowledge()  # nothing to acknowledge on the broker: must not fail


def test_no_local_applies_to_retained(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    retain(connection, unique_name, "own")
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    own = session.createConsumer(session.createTopic(unique_name), None, True, onRequestOnly=True)
    with pytest.raises(NoRetainedMessageException):
        own.requestUpdate()
    assert updates(on_request(connect(), unique_name)) == {unique_name: "own"}


def test_transacted_retained_send(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    tx = connection.createSession(True, Session.SESSION_TRANSACTED)
    producer = tx.createProducer(tx.createTopic(unique_name))
    producer.send(tx.createTextMessage("rolled-back"), retain=True)
    tx.rollback()
    subscriber = on_request(connect(), unique_name)
    with pytest.raises(NoRetainedMessageException):
        subscriber.requestUpdate()
    producer.send(tx.createTextMessage("committed"), retain=True)
    tx.commit()
    assert updates(subscriber) == {unique_name: "committed"}


def test_bad_input(connect: Callable[..., Connection], unique_name: str) -> None:
    session = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(InvalidDestinationException):
        session.createProducer(session.createTopic(f"{unique_name}/+")).send(
            session.createTextMessage("x"), retain=True
        )
    with pytest.raises(InvalidDestinationException):
        session.createProducer(session.createQueue(unique_name)).send(
            session.createTextMessage("x"), retain=True
        )
    with pytest.raises(InvalidDestinationException):
        session.createConsumer(session.createQueue(unique_name), onRequestOnly=True)
    with pytest.raises(InvalidDestinationException):
        session.createTopic("a/#/b")
    with pytest.raises(InvalidDestinationException):
        session.createTopic("a//b")


def test_concurrent_publishers_leave_one_latest(
    broker: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    sent: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def publish(worker: int) -> None:
        try:
            connection = connect()
            for i in range(10):
                text = f"w{worker}-{i}"
                retain(connection, unique_name, text)
                with lock:
                    sent.append(text)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=publish, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    subscriber = on_request(connect(), unique_name)
    result = updates(subscriber)
    assert len(result) == 1 and result[unique_name] in sent
    retain(connect(), unique_name, "final")
    assert updates(subscriber) == {unique_name: "final"}
    # A later, lone send leaves exactly one copy on the broker, whatever the race left behind (raw probe).
    assert len(probe_for(broker).queue_bodies(RETAINED_STORE_PREFIX + unique_name)) == 1


@pytest.mark.restart
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["graceful", "kill"])
def test_restart_keeps_persistent_loses_non_persistent(
    broker: Any, connect: Callable[..., Connection], unique_name: str, mode: str
) -> None:
    publisher = connect()
    retain(publisher, f"{unique_name}/p", "persistent")
    retain(publisher, f"{unique_name}/np", "non-persistent", mode=DeliveryMode.NON_PERSISTENT)
    retain(publisher, f"{unique_name}/replaced", "old-persistent")
    retain(publisher, f"{unique_name}/replaced", "new-non-persistent", mode=DeliveryMode.NON_PERSISTENT)
    retain(publisher, f"{unique_name}/cleared", "gone")
    retain(publisher, f"{unique_name}/cleared", "")
    tx = publisher.createSession(True, Session.SESSION_TRANSACTED)  # replaced within transactions
    tx_producer = tx.createProducer(tx.createTopic(f"{unique_name}/tx-replaced"))
    tx_producer.send(tx.createTextMessage("tx-old"), DeliveryMode.PERSISTENT, 4, 0, retain=True)
    tx.commit()
    tx_producer.send(tx.createTextMessage("tx-new"), DeliveryMode.NON_PERSISTENT, 4, 0, retain=True)
    tx.commit()
    cid = f"restart-{uuid.uuid4().hex[:8]}"
    owner = connect(cid)
    session = owner.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(
        session.createTopic(f"{unique_name}/#"), "kept", onRequestOnly=True
    ).close()
    assert len(updates(on_request(connect(), f"{unique_name}/#"))) == 4
    publisher.close()
    owner.close()
    restart(broker, mode)
    session = connect(cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(
        session.createTopic(f"{unique_name}/#"), "kept", onRequestOnly=True
    )
    assert updates(subscriber) == {f"{unique_name}.p": "persistent"}
    subscriber.close()
    session.unsubscribe("kept")  # the on-request-only durable subscription survived the restart


def test_concurrent_request_updates_all_see_it(connect: Callable[..., Connection], unique_name: str) -> None:
    """Readers do not consume: several reading at once each get the retained publication."""
    retain(connect(), unique_name, "shared")
    counts: list[int] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            subscriber = on_request(connect(), unique_name)
            for _ in range(10):
                counts.append(subscriber.requestUpdate())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    assert counts == [1] * 40


@pytest.mark.restart
@pytest.mark.slow
def test_on_request_subscriber_survives_reconnect(
    broker: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    """With ?reconnect=true the same subscriber object works after the broker came back (re-subscribed to
    its parking topic, so still no live traffic)."""
    retain(connect(), unique_name, "before")
    connection = connect(
        f"reconnect-{uuid.uuid4().hex[:8]}", url_options="reconnect=true&reconnect_attempts=60"
    )
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(unique_name), "rc", onRequestOnly=True)
    broker.restart("graceful")
    counts: list[int] = []

    def answered() -> bool:
        try:
            counts.append(subscriber.requestUpdate())
        except JMSException:
            return False  # still reconnecting
        return True

    wait_until(answered, 60.0, "a request update after the reconnect")
    assert counts == [1]
    assert text_of(subscriber.receive(RECEIVE_MS)) == "before"
    retain(connect(), unique_name, "live-after")
    message = subscriber.receive(QUIET_MS)
    assert message is None, "the re-subscribed on-request-only subscription got live traffic"
    assert updates(subscriber) == {unique_name: "live-after"}
    subscriber.close()
    session.unsubscribe("rc")

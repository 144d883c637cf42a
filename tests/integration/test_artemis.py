"""ActiveMQ Artemis through jmslike, on a real broker: what the adapter adds on top of Artemis's STOMP.

Artemis cannot run on every machine (no Debian package: the process launcher needs ``ARTEMIS_HOME``), so
these tests run only when asked for and reachable::

    ARTEMIS_HOME=/path/to/artemis pytest tests/integration/test_artemis.py --broker artemis
    pytest tests/integration/test_artemis.py --broker artemis --broker-launcher external \\
        --broker-url artemis=artemis://USER:PASSWORD@HOST:61613

Otherwise every test is skipped with the reason (Artemis not selected, no launcher for it here, broker not
reachable, or no artemis adapter registered). Where a test must not trust jmslike's own view of the broker
("is the second consumer really refused by Artemis?"), it uses an independent raw STOMP client (stompest).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from jmslike import (
    Connection,
    DeliveryMode,
    IllegalStateException,
    InvalidClientIDException,
    InvalidDestinationException,
    JMSException,
    Session,
)
from jmslike.conformance.brokers import BrokerHandle, BrokerStartError, LauncherUnavailableError
from jmslike.conformance.suite.helpers import text_of

RECEIVE_MS = 5000
QUIET_MS = 500


@pytest.fixture
def broker(request: pytest.FixtureRequest, jmslike_broker_pool: Any) -> BrokerHandle:
    """The shared Artemis broker (overrides the plugin's fixture: these tests are about Artemis only)."""
    selected = [k.strip() for k in str(request.config.getoption("jmslike_brokers")).split(",")]
    if "artemis" not in selected:
        pytest.skip(
            "Artemis not selected: run with --broker artemis and ARTEMIS_HOME set (the process launcher), or "
            "--broker-launcher external --broker-url artemis=artemis://HOST:61613"
        )
    try:
        handle: BrokerHandle = jmslike_broker_pool.get("artemis")
    except LauncherUnavailableError as exc:
        pytest.skip(exc.reason)
    except BrokerStartError as exc:
        pytest.skip(f"no Artemis broker reachable: {exc.reason}")
    return handle


def client_id() -> str:
    return f"client-{uuid.uuid4().hex[:10]}"


def publish(connection: Connection, topic: str, texts: list[str], **properties: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createTopic(topic))
    for text in texts:
        message = session.createTextMessage(text)
        for name, value in properties.items():
            message.setStringProperty(name, value)
        producer.send(message)
    session.close()


def receive_all(consumer: Any, wait_ms: int = QUIET_MS) -> list[str]:
    texts = []
    while (message := consumer.receive(wait_ms)) is not None:
        texts.append(text_of(message))
    return texts


@pytest.fixture
def raw_stomp(broker: BrokerHandle) -> Iterator[Callable[[str], Any]]:
    """``open(client_id)``: a raw STOMP 1.2 connection (stompest) carrying that client ID."""
    from stompest.config import StompConfig
    from stompest.protocol import StompSpec
    from stompest.sync import Stomp

    opened: list[Any] = []

    def open_client(cid: str) -> Any:
        config = StompConfig(
            f"tcp://{broker.host}:{broker.port}",
            login=broker.user,
            passcode=broker.password,
            version=StompSpec.VERSION_1_2,
        )
        client = Stomp(config)
        client.connect(headers={"client-id": cid}, versions=[StompSpec.VERSION_1_2], connectedTimeout=10)
        opened.append(client)
        return client

    yield open_client
    for client in opened:
        try:
            client.disconnect()
        except Exception:
            client.close()


def first_answer(client: Any, receipt: str, timeout_s: float = 10.0) -> Any:
    """The RECEIPT or ERROR the broker sends for ``receipt`` (MESSAGE frames are skipped)."""
    while client.canRead(timeout_s):
        frame = client.receiveFrame()
        if frame.command in ("RECEIPT", "ERROR"):
            return frame
    raise AssertionError(f"no answer to {receipt} within {timeout_s}s")


# -- messaging ----------------------------------------------------------------------------------------


def test_queue_round_trip_keeps_headers_and_properties(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect()
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    producer = session.createProducer(queue)
    producer.setPriority(7)
    message = session.createTextMessage("héllo")
    message.setJMSCorrelationID("corr-1")
    message.setIntProperty("count", 3)
    message.setStringProperty("region", "EU")
    producer.send(message)
    sent_id = message.getJMSMessageID()

    received = session.createConsumer(queue).receive(RECEIVE_MS)
    assert text_of(received) == "héllo"
    assert received is not None
    assert received.getJMSMessageID() == sent_id  # jmslike-id, not Artemis's "consumerID,messageID"
    assert received.getJMSCorrelationID() == "corr-1"
    assert received.getJMSPriority() == 7
    assert received.getJMSDeliveryMode() == DeliveryMode.PERSISTENT
    assert received.getJMSDestination() == queue
    assert received.getIntProperty("count") == 3
    names = set(received.getPropertyNames()) - {"JMSXDeliveryCount"}
    assert names == {"count", "region"}  # no _AMQ_* internals, no leaked SEND headers


def test_topic_round_trip_and_no_local(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    everything = session.createConsumer(topic)
    not_mine = session.createConsumer(topic, None, True)
    session.createProducer(topic).send(session.createTextMessage("own"))
    publish(connect(), unique_name, ["other"])
    assert sorted(receive_all(everything)) == ["other", "own"]
    assert receive_all(not_mine) == ["other"]


def test_selector_on_header_fields(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    consumer = session.createConsumer(queue, "JMSPriority > 5 AND JMSDeliveryMode = 'PERSISTENT'")
    producer = session.createProducer(queue)
    producer.send(session.createTextMessage("low"), DeliveryMode.PERSISTENT, 2, 0)
    producer.send(session.createTextMessage("volatile"), DeliveryMode.NON_PERSISTENT, 9, 0)
    producer.send(session.createTextMessage("match"), DeliveryMode.PERSISTENT, 9, 0)
    assert receive_all(consumer) == ["match"]


# -- durable subscriptions ----------------------------------------------------------------------------


def test_durable_subscription_retained_while_inactive(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    cid = client_id()
    connection = connect(cid)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    durable = session.createDurableSubscriber(topic, "keep")
    publish(connect(), unique_name, ["live"])
    assert text_of(durable.receive(RECEIVE_MS)) == "live"
    durable.close()
    publish(connect(), unique_name, ["away-1", "away-2"])
    back = session.createDurableSubscriber(topic, "keep")
    assert receive_all(back) == ["away-1", "away-2"]
    back.close()
    session.unsubscribe("keep")


def test_unsubscribe_deletes_the_subscription_and_its_backlog(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    cid = client_id()
    connection = connect(cid)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    subscriber = session.createDurableSubscriber(topic, "gone")
    with pytest.raises(IllegalStateException):
        session.unsubscribe("gone")  # still has its consumer
    subscriber.close()
    publish(connect(), unique_name, ["backlog"])
    session.unsubscribe("gone")
    with pytest.raises(InvalidDestinationException):
        session.unsubscribe("gone")  # Artemis's own UNSUBSCRIBE would not say so
    again = session.createDurableSubscriber(topic, "gone")
    assert receive_all(again) == []
    again.close()
    session.unsubscribe("gone")


def test_second_consumer_on_a_durable_subscription_is_refused(
    connect: Callable[..., Connection], unique_name: str, raw_stomp: Callable[[str], Any]
) -> None:
    cid = client_id()
    connection = connect(cid)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    first = session.createDurableSubscriber(topic, "single")
    with pytest.raises(JMSException, match="active consumer"):
        session.createDurableSubscriber(topic, "single")
    # The broker itself refuses: a raw client with the same client ID gets an ERROR (max-consumers=1).
    raw = raw_stomp(cid)
    raw.subscribe(
        unique_name,
        {
            "id": "probe",
            "ack": "auto",
            "subscription-type": "MULTICAST",
            "durable-subscription-name": "single",
            "receipt": "probe-1",
        },
    )
    answer = first_answer(raw, "probe-1")
    assert answer.command == "ERROR"
    assert "Maximum Consumer Limit" in answer.headers.get("message", "") + answer.body.decode(
        "utf-8", "replace"
    )
    first.close()
    session.unsubscribe("single")


def test_client_id_in_use_is_refused(connect: Callable[..., Connection]) -> None:
    cid = client_id()
    holder = connect(cid)
    with pytest.raises(InvalidClientIDException):
        connect(cid)
    holder.close()
    connect(cid).close()  # free again once the holder is gone


def test_changed_selector_recreates_the_subscription(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    cid = client_id()
    connection = connect(cid)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    session.createDurableSubscriber(topic, "sel", "region = 'EU'").close()
    publish(connect(), unique_name, ["eu-old"], region="EU")
    publish(connect(), unique_name, ["us-old"], region="US")
    changed = session.createDurableSubscriber(topic, "sel", "region = 'US'")
    assert receive_all(changed) == []  # the old subscription and its backlog are gone
    publish(connect(), unique_name, ["eu-new"], region="EU")
    publish(connect(), unique_name, ["us-new"], region="US")
    assert receive_all(changed) == ["us-new"]
    changed.close()
    session.unsubscribe("sel")


def test_changed_topic_recreates_the_subscription(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    cid = client_id()
    connection = connect(cid)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(unique_name), "moved").close()
    publish(connect(), unique_name, ["old-topic"])
    moved = session.createDurableSubscriber(session.createTopic(unique_name + ".b"), "moved")
    assert receive_all(moved) == []
    publish(connect(), unique_name + ".b", ["new-topic"])
    assert receive_all(moved) == ["new-topic"]
    moved.close()
    session.unsubscribe("moved")


# -- transactions -------------------------------------------------------------------------------------


def test_transacted_receive_rollback_redelivers(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    sender = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    sender.createProducer(sender.createQueue(unique_name)).send(sender.createTextMessage("work"))

    session = connection.createSession(True, Session.SESSION_TRANSACTED)
    consumer = session.createConsumer(session.createQueue(unique_name))
    first = consumer.receive(RECEIVE_MS)
    assert text_of(first) == "work" and first is not None and not first.getJMSRedelivered()
    session.rollback()
    again = consumer.receive(RECEIVE_MS)
    assert text_of(again) == "work"
    assert again is not None and again.getJMSRedelivered()
    session.commit()
    session.close()

    check = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    assert receive_all(check.createConsumer(check.createQueue(unique_name))) == []


def test_transacted_consume_and_produce_commit_together(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect()
    sender = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    sender.createProducer(sender.createQueue(unique_name)).send(sender.createTextMessage("in"))
    session = connection.createSession(True, Session.SESSION_TRANSACTED)
    consumer = session.createConsumer(session.createQueue(unique_name))
    producer = session.createProducer(session.createQueue(unique_name + ".out"))
    assert text_of(consumer.receive(RECEIVE_MS)) == "in"
    producer.send(session.createTextMessage("out"))
    session.commit()
    session.close()
    check = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    assert receive_all(check.createConsumer(check.createQueue(unique_name))) == []
    assert receive_all(check.createConsumer(check.createQueue(unique_name + ".out"))) == ["out"]


# -- temporary destinations ---------------------------------------------------------------------------


def test_temporary_queue_request_reply(connect: Callable[..., Connection], unique_name: str) -> None:
    requester = connect()
    session = requester.createSession(False, Session.AUTO_ACKNOWLEDGE)
    replies = session.createTemporaryQueue()
    reply_consumer = session.createConsumer(replies)
    request = session.createTextMessage("ping")
    request.setJMSReplyTo(replies)
    session.createProducer(session.createQueue(unique_name)).send(request)

    responder = connect()
    other = responder.createSession(False, Session.AUTO_ACKNOWLEDGE)
    received = other.createConsumer(other.createQueue(unique_name)).receive(RECEIVE_MS)
    assert text_of(received) == "ping" and received is not None
    reply_to = received.getJMSReplyTo()
    assert reply_to is not None
    other.createProducer(reply_to).send(other.createTextMessage("pong"))
    assert text_of(reply_consumer.receive(RECEIVE_MS)) == "pong"

"""Bad input gets the right JMS exception, and hostile-looking values survive the trip intact.

Each case also checks the connection is still usable afterwards: a refused call must not cost the
application its connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from jmslike import (
    Connection,
    ConnectionFactory,
    DeliveryMode,
    IllegalStateException,
    InvalidDestinationException,
    JMSException,
    MessageFormatException,
    MessageNotWriteableException,
    Session,
    TextMessage,
    UnsupportedOperationException,
)
from jmslike.config import ConfigurationError

RECEIVE_MS = 5000

AWKWARD_VALUES = [
    "colon:inside",
    "new\nline",
    "back\\slash",
    "\\n literally",
    "trailing carriage return\r",
    "\r",
    "crlf\r\nin the middle",
    "nul\x00inside",
    "tab\tand unicode \u00e9\u4e2d\U0001f600",
    "",
]


def assert_usable(session: Session, queue: str) -> None:
    session.createProducer(session.createQueue(queue)).send(session.createTextMessage("still usable"))
    got = session.createConsumer(session.createQueue(queue)).receive(RECEIVE_MS)
    assert isinstance(got, TextMessage) and got.getText() == "still usable"


@pytest.mark.parametrize("value", AWKWARD_VALUES)
def test_awkward_header_and_property_values_round_trip(
    connection: Connection, unique_name: str, value: str
) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    message = session.createTextMessage(value)
    message.setStringProperty("awkward", value)
    message.setJMSCorrelationID(value or None)
    message.setJMSType(value or None)
    session.createProducer(queue).send(message)
    got = session.createConsumer(queue).receive(RECEIVE_MS)
    assert isinstance(got, TextMessage)
    assert got.getText() == value
    assert got.getStringProperty("awkward") == value
    assert got.getJMSCorrelationID() == (value or None)
    assert got.getJMSType() == (value or None)


def test_oversized_property_refused_before_it_costs_the_connection(
    connection: Connection, unique_name: str
) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    message = session.createTextMessage("x")
    message.setStringProperty("big", "x" * 50_000)
    producer = session.createProducer(session.createQueue(unique_name))
    if connection.adapter.max_header_line_bytes is None:  # e.g. RabbitMQ: no limit, it must arrive intact
        producer.send(message)
        consumer = session.createConsumer(session.createQueue(unique_name))
        got = consumer.receive(RECEIVE_MS)
        assert got is not None and got.getStringProperty("big") == "x" * 50_000
        consumer.close()
    else:
        with pytest.raises(MessageFormatException, match="big"):
            producer.send(message)
    assert_usable(session, unique_name)


def test_text_that_utf8_cannot_carry(connection: Connection, unique_name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(MessageFormatException, match="surrogate"):
        session.createProducer(session.createQueue(unique_name)).send(session.createTextMessage("\ud800"))
    assert_usable(session, unique_name)


def test_wrong_types_and_values(connection: Connection, unique_name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    producer = session.createProducer(queue)
    with pytest.raises(MessageFormatException):
        producer.send("not a message")
    with pytest.raises(JMSException, match="priority"):
        producer.setPriority(10)
    with pytest.raises(JMSException, match="delivery mode"):
        producer.setDeliveryMode(3)
    with pytest.raises(JMSException, match="time to live"):
        producer.setTimeToLive(-1)
    with pytest.raises(JMSException, match="give all three"):
        producer.send(session.createTextMessage("x"), DeliveryMode.PERSISTENT)
    with pytest.raises(UnsupportedOperationException):
        producer.send(queue, session.createTextMessage("x"))
    with pytest.raises(UnsupportedOperationException):
        session.createProducer(None).send(session.createTextMessage("x"))
    with pytest.raises(InvalidDestinationException):
        session.createQueue("bad\nname")
    with pytest.raises(InvalidDestinationException):
        session.createConsumer("queue-as-a-string")  # type: ignore[arg-type]
    with pytest.raises(MessageFormatException):
        session.createTextMessage("x").setIntProperty("not valid", 1)
    with pytest.raises(JMSException):
        connection.createSession(False, 99)
    assert_usable(session, unique_name)


def test_received_message_is_read_only(connection: Connection, unique_name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    session.createProducer(queue).send(session.createTextMessage("x"))
    got = session.createConsumer(queue).receive(RECEIVE_MS)
    assert isinstance(got, TextMessage)
    with pytest.raises(MessageNotWriteableException):
        got.setText("changed")
    with pytest.raises(MessageNotWriteableException):
        got.setStringProperty("p", "v")
    got.clearProperties()
    got.setStringProperty("p", "v")  # writable again, as JMS says


def test_closed_objects_raise_illegal_state(connect: Callable[..., Connection], unique_name: str) -> None:
    connection = connect()
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    producer = session.createProducer(queue)
    consumer = session.createConsumer(queue)
    consumer.close()
    with pytest.raises(IllegalStateException):
        consumer.receive(100)
    producer.close()
    with pytest.raises(IllegalStateException):
        producer.send(session.createTextMessage("x"))
    session.close()
    with pytest.raises(IllegalStateException):
        session.createTextMessage("x")
    with pytest.raises(IllegalStateException):
        session.commit()
    connection.close()
    connection.close()  # idempotent
    with pytest.raises(IllegalStateException):
        connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(IllegalStateException):
        connection.start()


def test_getters_of_closed_objects_raise_illegal_state(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    """JMS: a closed object is not to be used, its getters included (Qpid JMS checks in each); they answered
    with stale values before."""
    connection = connect(client_id=f"getters-{unique_name}")
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    producer = session.createProducer(topic)
    consumer = session.createConsumer(topic)
    consumer.setMessageListener(lambda message: None)
    subscriber = session.createDurableSubscriber(topic, "getters")
    assert subscriber.getTopic() == topic and subscriber.getNoLocal() is False  # open: they answer
    for closed in (producer, consumer, subscriber):
        closed.close()
    session.unsubscribe("getters")
    getters: list[Callable[[], object]] = [
        producer.getDisableMessageID,
        producer.getDisableMessageTimestamp,
        producer.getDestination,
        consumer.getMessageListener,
        consumer.getMessageSelector,
        subscriber.getTopic,
        subscriber.getNoLocal,
    ]
    connection.close()
    getters += [connection.getClientID, connection.getExceptionListener, connection.getMetaData]
    for getter in getters:
        with pytest.raises(IllegalStateException):
            getter()


def test_receive_raises_once_the_connection_is_lost(broker: Any, connect: Callable[..., Connection]) -> None:
    connection = connect(url_options="heartbeat_ms=1000")
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue("jmslike.lost"))
    broker.kill()
    with pytest.raises(JMSException, match="lost"):
        consumer.receive(15_000)


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("kafka://127.0.0.1:9092", ConfigurationError),
        ("activemq://127.0.0.1:61613?bogus=1", ConfigurationError),
    ],
)
def test_bad_urls(url: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        ConnectionFactory(url)


def test_unreachable_broker_fails_fast_with_a_clear_error() -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(JMSException, match="cannot reach broker"):
        ConnectionFactory(f"activemq://127.0.0.1:{port}?connect_timeout_ms=2000").createConnection()

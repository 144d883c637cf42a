"""JMS 2.0 on real brokers: createSession's forms, the simplified API (JMSContext, JMSProducer,
JMSConsumer) and its unchecked exceptions. Each behaviour is the JMS 1.1 one underneath; these tests check
that the JMS 2.0 shape reaches it exactly."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from expectations import expected

from jmslike import (
    BytesMessage,
    Connection,
    ConnectionFactory,
    DeliveryMode,
    IllegalStateException,
    IllegalStateRuntimeException,
    InvalidDestinationRuntimeException,
    JMSContext,
    JMSException,
    JMSRuntimeException,
    MapMessage,
    Message,
    MessageFormatRuntimeException,
    Session,
    TextMessage,
)
from jmslike.conformance.suite.helpers import drain, text_of

RECEIVE_MS = 5000


@pytest.fixture
def contexts(broker: Any, factory: ConnectionFactory) -> Iterator[Callable[..., JMSContext]]:
    """``contexts(sessionMode=AUTO)``: a JMSContext with the broker's credentials, closed after the test."""
    opened: list[JMSContext] = []

    def make(sessionMode: int = JMSContext.AUTO_ACKNOWLEDGE) -> JMSContext:
        context = factory.createContext(broker.user, broker.password, sessionMode)
        opened.append(context)
        return context

    yield make
    for context in opened:
        context.close()


def _send(connection: Connection, queue_name: str, texts: list[str]) -> None:
    session = connection.createSession()
    producer = session.createProducer(session.createQueue(queue_name))
    for text in texts:
        producer.send(session.createTextMessage(text))
    session.close()


# -- createSession's JMS 2.0 forms --------------------------------------------------------------------


def test_create_session_with_client_acknowledge_alone_is_a_client_ack_session(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    """Issue #16: the one-argument JMS 2.0 form used to give a transacted session, which acknowledged
    nothing and rolled everything back on close: "a" came back and "b" stayed."""
    connection = connect()
    _send(connection, unique_name, ["a", "b"])
    session = connection.createSession(Session.CLIENT_ACKNOWLEDGE)
    assert session.getTransacted() is False
    assert session.getAcknowledgeMode() == Session.CLIENT_ACKNOWLEDGE
    consumer = session.createConsumer(session.createQueue(unique_name))
    first = consumer.receive(RECEIVE_MS)
    assert text_of(first) == "a"
    assert first is not None
    first.acknowledge()
    session.close()
    assert [text_of(m) for m in drain(connect(), unique_name)] == ["b"]


def test_create_session_without_arguments_auto_acknowledges(
    connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect()
    _send(connection, unique_name, ["only"])
    session = connection.createSession()
    assert session.getAcknowledgeMode() == Session.AUTO_ACKNOWLEDGE
    assert text_of(session.createConsumer(session.createQueue(unique_name)).receive(RECEIVE_MS)) == "only"
    session.close()
    assert drain(connect(), unique_name) == []


def test_create_session_refuses_a_non_bool_transacted_and_leaves_no_session(connection: Connection) -> None:
    before = len(connection.sessions())
    with pytest.raises(JMSException, match="transacted must be True or False"):
        connection.createSession(2, Session.AUTO_ACKNOWLEDGE)
    assert len(connection.sessions()) == before


# -- JMSContext, JMSProducer, JMSConsumer --------------------------------------------------------------


def test_context_sends_each_body_kind_and_receive_body_returns_it(
    contexts: Callable[..., JMSContext], unique_name: str
) -> None:
    context = contexts()
    queue = context.createQueue(unique_name)
    producer = context.createProducer()
    producer.send(queue, "text").send(queue, b"\x00\x01").send(queue, {"k": 7, "s": "v"})
    consumer = context.createConsumer(queue)
    assert consumer.receiveBody(str, RECEIVE_MS) == "text"
    data = consumer.receive(RECEIVE_MS)
    assert isinstance(data, BytesMessage) and data.getBody(bytes) == b"\x00\x01"
    mapped = consumer.receive(RECEIVE_MS)
    assert isinstance(mapped, MapMessage)
    assert mapped.getBody(dict) == {"k": 7, "s": "v"}
    assert consumer.receiveNoWait() is None


def test_producer_settings_and_properties_reach_the_message(
    contexts: Callable[..., JMSContext], unique_name: str
) -> None:
    context = contexts()
    queue = context.createQueue(unique_name)
    reply = context.createQueue(unique_name + ".reply")
    producer = (
        context.createProducer()
        .setDeliveryMode(DeliveryMode.NON_PERSISTENT)
        .setPriority(7)
        .setTimeToLive(60_000)
        .setJMSCorrelationID("corr-1")
        .setJMSType("order")
        .setJMSReplyTo(reply)
        .setProperty("count", 3)
        .setProperty("flag", True)
        .setProperty("name", "x")
    )
    assert producer.getIntProperty("count") == 3 and producer.getStringProperty("count") == "3"
    assert producer.getPropertyNames() == {"count", "flag", "name"}
    message = context.createTextMessage("hello")
    message.setStringProperty("name", "overridden by the producer")
    producer.send(queue, message)
    got = context.createConsumer(queue).receive(RECEIVE_MS)
    assert isinstance(got, TextMessage) and got.getText() == "hello"
    assert got.getJMSDeliveryMode() == DeliveryMode.NON_PERSISTENT
    assert got.getJMSPriority() == 7
    assert got.getJMSExpiration() > 0
    assert got.getJMSCorrelationID() == "corr-1"
    assert got.getJMSType() == "order"
    assert got.getJMSReplyTo() == reply
    assert got.getIntProperty("count") == 3
    assert got.getBooleanProperty("flag") is True
    assert got.getStringProperty("name") == "x"


def test_receive_body_of_the_wrong_type_leaves_the_message_in_auto_mode(
    contexts: Callable[..., JMSContext], unique_name: str
) -> None:
    context = contexts()
    queue = context.createQueue(unique_name)
    context.createProducer().send(queue, "not bytes")
    consumer = context.createConsumer(queue)
    with pytest.raises(MessageFormatRuntimeException) as raised:
        consumer.receiveBody(bytes, RECEIVE_MS)
    assert raised.value.getCause() is not None
    again = consumer.receive(RECEIVE_MS)  # as if the failed call had not happened: same, not redelivered
    assert text_of(again) == "not bytes"
    assert again is not None and again.getJMSRedelivered() is False


def test_client_acknowledge_context_acknowledges_what_it_consumed(
    contexts: Callable[..., JMSContext],
    connect: Callable[..., Connection],
    unique_name: str,
    broker_kind: str,
) -> None:
    context = contexts(JMSContext.CLIENT_ACKNOWLEDGE)
    queue = context.createQueue(unique_name)
    context.createProducer().send(queue, "a").send(queue, "b").send(queue, "c")
    consumer = context.createConsumer(queue)
    assert consumer.receiveBody(str, RECEIVE_MS) == "a"
    assert consumer.receiveBody(str, RECEIVE_MS) == "b"
    context.acknowledge()
    assert consumer.receiveBody(str, RECEIVE_MS) == "c"
    context.close()  # "c" was not acknowledged: it comes back, flagged
    left = drain(connect(), unique_name)
    assert [text_of(m) for m in left] == ["c"]
    with expected("redelivered-after-close", broker_kind):
        assert left[0].getJMSRedelivered() is True


def test_transacted_context_commits_and_rolls_back(
    contexts: Callable[..., JMSContext], connect: Callable[..., Connection], unique_name: str
) -> None:
    context = contexts(JMSContext.SESSION_TRANSACTED)
    assert context.getTransacted() is True
    queue = context.createQueue(unique_name)
    producer = context.createProducer()
    producer.send(queue, "rolled back")
    context.rollback()
    producer.send(queue, "committed")
    context.commit()
    assert [text_of(m) for m in drain(connect(), unique_name)] == ["committed"]


def test_sibling_context_shares_the_connection_which_closes_with_the_last(
    contexts: Callable[..., JMSContext], unique_name: str
) -> None:
    first = contexts()
    first.setClientID(unique_name)  # right after createContext: the session is created on first use
    second = first.createContext(JMSContext.CLIENT_ACKNOWLEDGE)
    assert second.getClientID() == unique_name
    queue = second.createQueue(unique_name)
    first.close()
    second.createProducer().send(queue, "still open")  # the connection lives while a context uses it
    consumer = second.createConsumer(queue)
    assert consumer.receiveBody(str, RECEIVE_MS) == "still open"
    second.close()
    with pytest.raises(IllegalStateRuntimeException):
        second.createQueue("closed")
    with pytest.raises(IllegalStateRuntimeException):
        first.createContext(JMSContext.AUTO_ACKNOWLEDGE)


def test_set_client_id_after_use_is_an_illegal_state_runtime_exception(
    contexts: Callable[..., JMSContext], unique_name: str
) -> None:
    context = contexts()
    context.createQueue(unique_name)  # first use creates the session, which fixes the client ID
    with pytest.raises(IllegalStateRuntimeException) as raised:
        context.setClientID(unique_name)
    assert isinstance(raised.value.getCause(), IllegalStateException)
    assert not isinstance(raised.value, JMSException)


def test_autostart_off_delivers_only_after_start(
    contexts: Callable[..., JMSContext], unique_name: str
) -> None:
    context = contexts()
    context.setAutoStart(False)
    queue = context.createQueue(unique_name)
    context.createProducer().send(queue, "waiting")
    consumer = context.createConsumer(queue)
    assert consumer.receiveNoWait() is None
    context.start()
    assert consumer.receiveBody(str, RECEIVE_MS) == "waiting"


def test_listener_and_async_send_run_and_close_refuses_inside_them(
    contexts: Callable[..., JMSContext], unique_name: str
) -> None:
    context = contexts()
    queue = context.createQueue(unique_name)
    got: list[str] = []
    refused: list[BaseException] = []
    delivered = threading.Event()

    def on_message(message: Message) -> None:
        got.append(str(message.getBody(str)))
        try:
            context.close()
        except JMSRuntimeException as exc:
            refused.append(exc)
        delivered.set()

    completed = threading.Event()

    class Listener:
        def onCompletion(self, message: Message) -> None:
            completed.set()

        def onException(self, message: Message, exception: JMSException) -> None:
            refused.append(exception)

    context.createConsumer(queue).setMessageListener(on_message)
    context.createProducer().setAsync(Listener()).send(queue, "async")
    assert completed.wait(RECEIVE_MS / 1000), "the CompletionListener did not run"
    assert delivered.wait(RECEIVE_MS / 1000), "the MessageListener did not run"
    assert got == ["async"]
    assert len(refused) == 1 and isinstance(refused[0], IllegalStateRuntimeException)


def test_simplified_api_errors_are_runtime_exceptions(
    contexts: Callable[..., JMSContext], unique_name: str
) -> None:
    context = contexts()
    with pytest.raises(InvalidDestinationRuntimeException):
        context.createProducer().send(None, "nowhere")  # type: ignore[arg-type]
    with pytest.raises(JMSRuntimeException):
        context.createProducer().setPriority(12)


def test_durable_consumer_of_a_context_keeps_messages_while_closed(
    contexts: Callable[..., JMSContext], unique_name: str
) -> None:
    context = contexts()
    context.setClientID(unique_name)
    topic = context.createTopic(unique_name)
    context.createDurableConsumer(topic, "sub").close()
    context.createProducer().send(topic, "kept")
    consumer = context.createDurableConsumer(topic, "sub")
    assert consumer.receiveBody(str, RECEIVE_MS) == "kept"
    consumer.close()
    context.unsubscribe("sub")

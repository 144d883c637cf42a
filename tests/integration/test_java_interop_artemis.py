"""jmslike (STOMP) and Artemis's own JMS 2.0 client (core protocol) on the same Artemis broker.

The Java side is ``tests/interop/JmsPeer.java`` built against the ``lib/`` of the distribution ``ARTEMIS_HOME``
names (see ``tests/interop/java_peer.py``), one JVM per command. The broker is a private Artemis launched for
this module with a CORE acceptor beside STOMP; the ``broker`` fixture is overridden so that ``connect`` (from
conftest) talks to it. What crosses the bridge and what does not is written up in ``docs/interop.md``; where
Artemis's STOMP-to-core conversion loses something, the test asserts what it does (observed on 2.21.0), so a
broker that starts carrying it fails the test and the documentation gets corrected.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from java_interop_support import java_peer, use_private_broker
from java_interop_support import props as java_props

from jmslike import (
    BytesMessage,
    Connection,
    DeliveryMode,
    Queue,
    Session,
    TemporaryQueue,
    TextMessage,
)
from jmslike.conformance.brokers import (
    BrokerHandle,
    BrokerNotInstalledError,
    LauncherUnavailableError,
    launch,
)
from jmslike.conformance.brokers.artemis import find_artemis_home
from jmslike.conformance.brokers.ports import LOOPBACK, free_port

RECEIVE_MS = 10_000

pytestmark = pytest.mark.java

TYPED_PROPERTIES: dict[str, list[object]] = {
    "flag": ["boolean", True],
    "count": ["int", 42],
    "big": ["long", 2**60 + 1],
    "ratio": ["double", 1.5],
    "name": ["String", "héllo: wörld"],
}


# -- fixtures ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def artemis_java(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Artemis's JMS client and JmsPeer compiled against it (skips, saying why, without a JDK or Artemis)."""
    kinds = [k.strip() for k in str(request.config.getoption("jmslike_brokers")).split(",")]
    if "artemis" not in kinds:
        pytest.skip("Java interop on Artemis runs with --broker artemis")
    if request.config.getoption("jmslike_launcher") != "process":
        pytest.skip("Java interop on Artemis needs a CORE acceptor, which only the process launcher adds")
    home = find_artemis_home()
    if home is None:
        pytest.skip("Java interop on Artemis needs ARTEMIS_HOME (the distribution holds the Java client)")
    client = java_peer.artemis_client(Path(home))
    reason = java_peer.unavailable_reason(client)
    if reason is not None:
        pytest.skip(reason)
    return client, str(java_peer.compile_peer(tmp_path_factory.mktemp("jms-peer-artemis"), client))


@pytest.fixture(scope="module")
def core_broker(artemis_java: Any) -> Iterator[tuple[BrokerHandle, str]]:
    """A private Artemis with STOMP and CORE acceptors: the handle and the core URL."""
    core_port = free_port()
    try:
        handle = launch("artemis", core_port=core_port)
    except (BrokerNotInstalledError, LauncherUnavailableError) as error:
        pytest.skip(error.reason)
    try:
        yield handle, f"tcp://{LOOPBACK}:{core_port}"
    finally:
        handle.close()


@pytest.fixture
def broker(core_broker: tuple[BrokerHandle, str], request: pytest.FixtureRequest) -> BrokerHandle:
    """Overrides the plugin's shared broker: conftest's ``connect`` then uses the one with a CORE acceptor."""
    return use_private_broker(core_broker[0], request)


@pytest.fixture
def java(artemis_java: Any, core_broker: tuple[BrokerHandle, str]) -> Any:
    """The Java JMS peer on Artemis's core protocol, logged in with the broker's account."""
    client, classpath = artemis_java
    handle, core_url = core_broker
    return java_peer.JavaPeer(classpath, core_url, client.factory_class, handle.user, handle.password)


@pytest.fixture
def session(connect: Callable[..., Connection]) -> Session:
    return connect().createSession(False, Session.AUTO_ACKNOWLEDGE)


# -- Java -> jmslike --------------------------------------------------------------------------------------


def test_java_text_message_arrives_as_text_message(java: Any, session: Session, unique_name: str) -> None:
    sent = java.send(
        unique_name,
        {
            "type": "text",
            "text": "grüße from Java ✓",
            "properties": TYPED_PROPERTIES,
            "correlationId": "corr-42",
            "jmsType": "greeting",
            "priority": 7,
            "deliveryMode": "NON_PERSISTENT",
            "replyTo": f"queue:{unique_name}.replies",
        },
    )
    got = session.createConsumer(session.createQueue(unique_name)).receive(RECEIVE_MS)

    assert isinstance(got, TextMessage)
    assert got.getText() == "grüße from Java ✓"
    assert got.getJMSCorrelationID() == "corr-42"
    assert got.getJMSType() == "greeting"
    assert got.getJMSPriority() == 7
    assert got.getJMSDeliveryMode() == DeliveryMode.NON_PERSISTENT
    assert got.getJMSReplyTo() == Queue(f"{unique_name}.replies")
    assert got.getJMSTimestamp() == sent["timestamp"]  # a core message keeps its sender's timestamp
    assert got.getJMSRedelivered() is False
    # Artemis's STOMP never carries the core user ID, which is Java's JMSMessageID: jmslike names the message
    # by the broker's message ID instead (JMS: an ID starting "ID:", the same on every redelivery).
    assert sent["messageId"].startswith("ID:")
    assert got.getJMSMessageID() != sent["messageId"]
    assert (got.getJMSMessageID() or "").startswith("ID:artemis-")
    # Typed properties arrive as header strings; the typed getters convert them by JMS 1.1 §3.5.4.
    assert got.getObjectProperty("count") == "42"
    assert got.getIntProperty("count") == 42
    assert got.getLongProperty("big") == 2**60 + 1
    assert got.getBooleanProperty("flag") is True
    assert got.getDoubleProperty("ratio") == 1.5
    assert got.getStringProperty("name") == "héllo: wörld"


def test_java_bytes_message_arrives_with_exact_bytes(java: Any, session: Session, unique_name: str) -> None:
    payload = bytes(range(256)) + b"\x00\xff\xfe not utf-8 \xc3\x28"
    java.send(unique_name, {"type": "bytes", "bytes": base64.b64encode(payload).decode()})
    got = session.createConsumer(session.createQueue(unique_name)).receive(RECEIVE_MS)

    assert isinstance(got, BytesMessage)
    assert got.getBodyLength() == len(payload)
    buffer = bytearray(len(payload))
    assert got.readBytes(buffer) == len(payload) and bytes(buffer) == payload


def test_broker_selector_on_java_string_property(java: Any, session: Session, unique_name: str) -> None:
    """A string comparison on a queue is pushed down to Artemis's filter and matches the Java message."""
    java.send(unique_name, {"type": "text", "text": "light", "properties": {"kind": ["String", "light"]}})
    java.send(unique_name, {"type": "text", "text": "heavy", "properties": {"kind": ["String", "heavy"]}})
    got = session.createConsumer(session.createQueue(unique_name), "kind = 'heavy'").receive(RECEIVE_MS)
    assert isinstance(got, TextMessage) and got.getText() == "heavy"


def test_numeric_selector_on_java_typed_property_on_a_topic(
    java: Any, session: Session, unique_name: str
) -> None:
    """A Java int arrives over STOMP as the string "42", which jmslike could not compare as a number: on a topic
    the broker evaluates the selector on the Java message's typed properties (``client_side_filter``) and
    jmslike on its own messages, whose types it knows; both kinds of publisher are selected right."""
    subscriber = session.createConsumer(session.createTopic(unique_name), "weight > 10")
    java.send(f"topic:{unique_name}", {"type": "text", "text": "light", "properties": {"weight": ["int", 3]}})
    java.send(
        f"topic:{unique_name}", {"type": "text", "text": "heavy", "properties": {"weight": ["int", 42]}}
    )
    publisher = session.createProducer(session.createTopic(unique_name))
    for weight in (5, 50):
        mine = session.createTextMessage(f"jmslike-{weight}")
        mine.setIntProperty("weight", weight)
        publisher.send(mine)
    got = [subscriber.receive(RECEIVE_MS) for _ in range(2)]
    assert [m.getText() if isinstance(m, TextMessage) else m for m in got] == ["heavy", "jmslike-50"]
    assert subscriber.receiveNoWait() is None


def test_java_publishes_to_a_jmslike_durable_subscriber(
    java: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect(f"interop-{unique_name[-8:]}")
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(unique_name), "java-feed")
    java.send(f"topic:{unique_name}", {"type": "text", "text": "news", "deliveryMode": "PERSISTENT"})
    got = subscriber.receive(RECEIVE_MS)
    assert isinstance(got, TextMessage) and got.getText() == "news"
    assert got.getJMSDeliveryMode() == DeliveryMode.PERSISTENT
    subscriber.close()
    session.unsubscribe("java-feed")


# -- jmslike -> Java --------------------------------------------------------------------------------------


def test_jmslike_text_message_arrives_in_java_as_text_message(
    java: Any, session: Session, unique_name: str
) -> None:
    queue = session.createQueue(unique_name)
    message = session.createTextMessage("grüße from Python ✓")
    message.setIntProperty("count", 42)
    message.setStringProperty("name", "héllo")
    message.setJMSCorrelationID("corr-7")
    message.setJMSType("greeting")
    message.setJMSReplyTo(session.createQueue(unique_name + ".replies"))
    session.createProducer(queue).send(message, DeliveryMode.NON_PERSISTENT, 8, 60_000)

    got = java.receive(unique_name, RECEIVE_MS, reads=["count:int", "count:long", "name:String"])

    assert got["received"] is True
    # No content-length on SEND makes Artemis build a core TextMessage.
    assert got["class"] == "TextMessage"
    assert got["text"] == "grüße from Python ✓"
    assert got["correlationId"] == "corr-7"
    assert got["jmsType"] == "greeting"
    assert got["priority"] == 8
    assert got["deliveryMode"] == "NON_PERSISTENT"
    assert got["replyTo"] == f"ActiveMQQueue[{unique_name}.replies]"
    assert got["expiration"] == message.getJMSExpiration() != 0
    assert got["redelivered"] is False
    # Artemis stamps its own arrival time on a STOMP message; jmslike's timestamp rides in a property.
    props = java_props(got)
    assert props["jmslike-timestamp"] == ("String", str(message.getJMSTimestamp()))
    # A STOMP SEND sets no core user ID, so a Java receiver's getJMSMessageID() is null; jmslike's ID is the
    # jmslike-id property.
    assert got["messageId"] is None
    assert props["jmslike-id"] == ("String", message.getJMSMessageID())
    # Every property is a java.lang.String, which Java's typed getters convert by the JMS rules.
    assert props["count"] == ("String", "42")
    assert got["reads"]["count:int"] == {"type": "Integer", "value": 42}
    assert got["reads"]["count:long"] == {"type": "Long", "value": 42}
    assert got["reads"]["name:String"] == {"type": "String", "value": "héllo"}
    # Artemis turns every SEND header it does not map into a property, the frame's own included.
    assert {"destination", "receipt"} <= set(props)


def test_jmslike_bytes_message_arrives_in_java_with_exact_bytes(
    java: Any, session: Session, unique_name: str
) -> None:
    payload = bytes(range(256))
    message = session.createBytesMessage()
    message.writeBytes(payload)
    session.createProducer(session.createQueue(unique_name)).send(message)

    got = java.receive(unique_name, RECEIVE_MS)

    assert got["class"] == "BytesMessage"
    assert base64.b64decode(got["bytes"]) == payload
    assert got["deliveryMode"] == "PERSISTENT"


def test_jmslike_map_message_reaches_java_as_json_bytes(
    java: Any, session: Session, unique_name: str
) -> None:
    """Artemis has no STOMP map transformation: a Java receiver gets jmslike's JSON body as a BytesMessage,
    marked by the ``jmslike-type`` property (docs/interop.md)."""
    message = session.createMapMessage()
    message.setInt("a", 1)
    session.createProducer(session.createQueue(unique_name)).send(message)

    got = java.receive(unique_name, RECEIVE_MS)

    assert got["class"] == "BytesMessage"
    assert java_props(got)["jmslike-type"] == ("String", "map")
    assert base64.b64decode(got["bytes"]) == b'{"a":["int",1]}'


# -- request/reply ----------------------------------------------------------------------------------------


def test_jmslike_requests_java_replies_correlated_on_correlation_id(
    java: Any, session: Session, unique_name: str
) -> None:
    replies = session.createTemporaryQueue()
    reply_consumer = session.createConsumer(replies)
    request = session.createTextMessage("ping")
    request.setJMSCorrelationID("req-1")
    request.setJMSReplyTo(replies)
    session.createProducer(session.createQueue(unique_name)).send(request)

    seen = java.reply(unique_name, RECEIVE_MS, "correlation-id")
    reply = reply_consumer.receive(RECEIVE_MS)

    assert seen["request"]["correlationId"] == "req-1"
    assert isinstance(reply, TextMessage)
    assert reply.getText() == "reply:ping"
    assert reply.getJMSCorrelationID() == "req-1"


def test_java_reply_correlated_on_message_id_has_no_id_to_copy(
    java: Any, session: Session, unique_name: str
) -> None:
    """A Java responder that copies the request's JMSMessageID copies null on Artemis (see the text test):
    jmslike requesters talking to such responders must set a JMSCorrelationID (docs/interop.md)."""
    replies = session.createQueue(unique_name + ".replies")
    reply_consumer = session.createConsumer(replies)
    request = session.createTextMessage("ping")
    request.setJMSReplyTo(replies)
    session.createProducer(session.createQueue(unique_name)).send(request)

    seen = java.reply(unique_name, RECEIVE_MS, "message-id")
    reply = reply_consumer.receive(RECEIVE_MS)

    assert seen["request"]["messageId"] is None
    assert isinstance(reply, TextMessage) and reply.getText() == "reply:ping"
    assert reply.getJMSCorrelationID() is None


def test_java_requests_jmslike_replies_to_its_temporary_queue(
    java: Any, session: Session, unique_name: str
) -> None:
    requests = session.createConsumer(session.createQueue(unique_name))
    running = java.start_request(
        unique_name,
        {"type": "text", "text": "ping", "replyTo": "temp-queue", "correlationId": "q-9"},
        RECEIVE_MS,
    )
    try:
        request = requests.receive(RECEIVE_MS)
        assert isinstance(request, TextMessage) and request.getText() == "ping"
        reply_to = request.getJMSReplyTo()
        assert isinstance(reply_to, TemporaryQueue)
        reply = session.createTextMessage("pong")
        reply.setJMSCorrelationID(request.getJMSCorrelationID())
        session.createProducer(reply_to).send(reply)
        result = running.result()
    finally:
        running.kill()

    assert result["reply"]["received"] is True
    assert result["reply"]["class"] == "TextMessage"
    assert result["reply"]["text"] == "pong"
    assert result["reply"]["correlationId"] == "q-9"

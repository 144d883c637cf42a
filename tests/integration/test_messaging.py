"""Sending and receiving through a real broker: message types, headers, properties, selectors."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from expectations import expected

from jmslike import (
    BytesMessage,
    Connection,
    ConnectionFactory,
    DeliveryMode,
    InvalidDestinationException,
    InvalidSelectorException,
    JMSException,
    MapMessage,
    MessageFormatException,
    ObjectMessage,
    Session,
    StreamMessage,
    TextMessage,
)
from jmslike.config import ConnectionConfig

RECEIVE_MS = 5000


def test_text_round_trip_with_headers(connection: Connection, unique_name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    reply_to = session.createQueue(unique_name + ".replies")
    producer = session.createProducer(queue)
    consumer = session.createConsumer(queue)
    message = session.createTextMessage("héllo wörld")
    message.setJMSCorrelationID("corr-1")
    message.setJMSReplyTo(reply_to)
    message.setJMSType("greeting")
    before = int(time.time() * 1000)
    producer.send(message)
    assert message.getJMSMessageID() is not None and message.getJMSMessageID().startswith("ID:")
    assert message.getJMSTimestamp() >= before
    got = consumer.receive(RECEIVE_MS)
    assert isinstance(got, TextMessage)
    assert got.getText() == "héllo wörld"
    assert got.getJMSMessageID() == message.getJMSMessageID()
    assert got.getJMSCorrelationID() == "corr-1"
    assert got.getJMSReplyTo() == reply_to
    assert got.getJMSType() == "greeting"
    assert got.getJMSDestination() == queue
    assert got.getJMSTimestamp() == message.getJMSTimestamp()
    assert got.getJMSDeliveryMode() == DeliveryMode.PERSISTENT
    assert got.getJMSPriority() == 4
    assert got.getJMSRedelivered() is False
    assert got.getIntProperty("JMSXDeliveryCount") == 1


def test_every_body_type_round_trips(connection: Connection, unique_name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    producer = session.createProducer(queue)
    consumer = session.createConsumer(queue)

    data = session.createBytesMessage()
    data.writeInt(42)
    data.writeUTF("ünï")
    data.writeBytes(b"\x00\x01\xff")
    mapped = session.createMapMessage()
    mapped.setInt("count", 3)
    mapped.setString("name", "x")
    mapped.setBytes("raw", b"\x00\x02")
    mapped.setDouble("ratio", 0.5)
    stream = session.createStreamMessage()
    stream.writeLong(2**40)
    stream.writeBoolean(True)
    stream.writeString("s")
    obj = session.createObjectMessage({"k": [1, 2, "three"]})
    empty = session.createTextMessage()
    for message in (data, mapped, stream, obj, empty):
        producer.send(message)

    got_bytes = consumer.receive(RECEIVE_MS)
    assert isinstance(got_bytes, BytesMessage)
    assert got_bytes.readInt() == 42
    assert got_bytes.readUTF() == "ünï"
    buffer = bytearray(10)
    assert got_bytes.readBytes(buffer) == 3
    assert bytes(buffer[:3]) == b"\x00\x01\xff"

    got_map = consumer.receive(RECEIVE_MS)
    assert isinstance(got_map, MapMessage)
    assert got_map.getInt("count") == 3
    assert got_map.getString("name") == "x"
    assert got_map.getBytes("raw") == b"\x00\x02"
    assert got_map.getDouble("ratio") == 0.5

    got_stream = consumer.receive(RECEIVE_MS)
    assert isinstance(got_stream, StreamMessage)
    assert got_stream.readLong() == 2**40
    assert got_stream.readBoolean() is True
    assert got_stream.readString() == "s"

    got_obj = consumer.receive(RECEIVE_MS)
    assert isinstance(got_obj, ObjectMessage)
    assert got_obj.getObject() == {"k": [1, 2, "three"]}

    got_empty = consumer.receive(RECEIVE_MS)
    assert isinstance(got_empty, TextMessage)
    assert got_empty.getText() in (None, "")


def test_typed_properties_survive_exactly(connection: Connection, unique_name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    message = session.createTextMessage("p")
    message.setBooleanProperty("flag", True)
    message.setByteProperty("b", -5)
    message.setShortProperty("s", 300)
    message.setIntProperty("i", -70000)
    message.setLongProperty("l", 2**50)
    message.setFloatProperty("f", 1.5)
    message.setDoubleProperty("d", 2.25)
    message.setStringProperty("text", "a:b\nc\\d")  # STOMP header escaping
    message.setStringProperty("priority", "user-property-named-like-a-header")
    session.createProducer(queue).send(message)
    got = session.createConsumer(queue).receive(RECEIVE_MS)
    assert got is not None
    assert got.getObjectProperty("flag") is True
    assert got.getByteProperty("b") == -5
    assert got.getShortProperty("s") == 300
    assert got.getIntProperty("i") == -70000
    assert got.getLongProperty("l") == 2**50
    assert got.getFloatProperty("f") == 1.5
    assert got.getDoubleProperty("d") == 2.25
    assert got.getStringProperty("text") == "a:b\nc\\d"
    assert got.getStringProperty("priority") == "user-property-named-like-a-header"
    assert got.getJMSPriority() == 4
    assert set(got.getPropertyNames()) >= {"flag", "b", "s", "i", "l", "f", "d", "text", "priority"}
    with pytest.raises(MessageFormatException):
        got.getIntProperty("flag")


def test_message_delivery_mode_set_before_send_has_no_effect(
    connection: Connection, unique_name: str
) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    producer = session.createProducer(queue)
    producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)
    message = session.createTextMessage("x")
    message.setJMSDeliveryMode(DeliveryMode.PERSISTENT)
    message.setJMSPriority(9)
    producer.send(message)
    assert message.getJMSDeliveryMode() == DeliveryMode.NON_PERSISTENT
    assert message.getJMSPriority() == 4
    got = session.createConsumer(queue).receive(RECEIVE_MS)
    assert got is not None
    assert got.getJMSDeliveryMode() == DeliveryMode.NON_PERSISTENT
    assert got.getJMSPriority() == 4


def test_per_send_mode_priority_ttl(connection: Connection, unique_name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    producer = session.createProducer(None)
    before = int(time.time() * 1000)
    producer.send(queue, session.createTextMessage("x"), DeliveryMode.NON_PERSISTENT, 7, 60_000)
    got = session.createConsumer(queue).receive(RECEIVE_MS)
    assert got is not None
    assert got.getJMSDeliveryMode() == DeliveryMode.NON_PERSISTENT
    assert got.getJMSPriority() == 7
    assert before + 60_000 <= got.getJMSExpiration() <= int(time.time() * 1000) + 60_000


def test_expired_messages_are_not_delivered(connection: Connection, unique_name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    producer = session.createProducer(queue)
    producer.setTimeToLive(20)
    short_lived = session.createTextMessage("short-lived")
    producer.send(short_lived)
    producer.setTimeToLive(0)
    # The condition itself is "the wall clock passed the message's expiration": poll exactly that.
    deadline = time.monotonic() + 5
    while int(time.time() * 1000) <= short_lived.getJMSExpiration() and time.monotonic() < deadline:
        time.sleep(0.005)
    producer.send(session.createTextMessage("kept"))
    consumer = session.createConsumer(queue)
    got = consumer.receive(RECEIVE_MS)
    assert isinstance(got, TextMessage) and got.getText() == "kept"
    assert consumer.receiveNoWait() is None


# What each broker needs to order a backlog by priority: stock ActiveMQ and RabbitMQ deliver in arrival order.
PRIORITY_URL_OPTIONS: dict[str, list[str]] = {"rabbitmq": ["rabbitmq_max_priority=9"]}
PRIORITY_BROKER_OPTIONS: dict[str, dict[str, object]] = {
    "activemq": {"policy_entries_xml": '<policyEntry queue=">" prioritizedMessages="true"/>'},
}


@pytest.mark.slow
def test_priority_overtakes_in_backlog(broker: Any, unique_name: str) -> None:
    from jmslike.conformance.brokers import launch

    options = PRIORITY_BROKER_OPTIONS.get(broker.kind, {})
    with launch(broker.kind, **options) as prioritized, expected("priority", broker.kind):
        management = getattr(prioritized, "management_url", None)
        query = [f"management_url={management}"] if management else []
        query += PRIORITY_URL_OPTIONS.get(broker.kind, [])
        url = prioritized.url + ("?" + "&".join(query) if query else "")
        connection = ConnectionFactory(url).createConnection(prioritized.user, prioritized.password)
        with connection:
            connection.start()
            session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
            queue = session.createQueue(unique_name)
            producer = session.createProducer(queue)
            for priority in (1, 1, 9, 1, 9):
                producer.send(session.createTextMessage(str(priority)), DeliveryMode.PERSISTENT, priority, 0)
            consumer = session.createConsumer(queue)
            texts = [consumer.receive(RECEIVE_MS) for _ in range(5)]
            assert [m.getText() for m in texts if isinstance(m, TextMessage)] == ["9", "9", "1", "1", "1"]


def test_order_within_a_session(connection: Connection, unique_name: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    producer = session.createProducer(queue)
    modes = {}
    for i in range(200):
        modes[i] = DeliveryMode.PERSISTENT if i % 3 else DeliveryMode.NON_PERSISTENT
        producer.send(session.createTextMessage(str(i)), modes[i], 4, 0)
    consumer = session.createConsumer(queue)
    by_mode: dict[int, list[int]] = {DeliveryMode.PERSISTENT: [], DeliveryMode.NON_PERSISTENT: []}
    for _ in range(200):
        got = consumer.receive(RECEIVE_MS)
        assert isinstance(got, TextMessage)
        by_mode[got.getJMSDeliveryMode()].append(int(got.getText() or -1))
    # JMS 1.1 §4.4.10: order holds within a delivery mode (brokers may interleave the modes).
    for mode, received in by_mode.items():
        assert received == [i for i in range(200) if modes[i] == mode]


def test_broker_side_selector(connection: Connection, unique_name: str, broker_kind: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    producer = session.createProducer(queue)
    for color, size in (("red", "S"), ("blue", "L"), ("red", "L")):
        message = session.createTextMessage(f"{color}-{size}")
        message.setStringProperty("color", color)
        message.setStringProperty("size", size)
        producer.send(message)
    # Number comparisons on queues: test_selector_arithmetic.py (Artemis cannot make them on the broker).
    with expected("queue-selectors", broker_kind):
        consumer = session.createConsumer(queue, "color = 'red' AND size <> 'S'")
        assert consumer.getMessageSelector() == "color = 'red' AND size <> 'S'"
        got = consumer.receive(RECEIVE_MS)
        assert isinstance(got, TextMessage) and got.getText() == "red-L"
        assert consumer.receive(300) is None
        by_mode = session.createConsumer(queue, "JMSDeliveryMode = 'PERSISTENT' AND JMSPriority = 4")
        assert by_mode.receive(RECEIVE_MS) is not None


@pytest.mark.parametrize("selector", ["color = ", "a = 'x", "AND b", "x IN ()", "NOT", "a LIKE 5"])
def test_invalid_selector_refused_at_create(connection: Connection, unique_name: str, selector: str) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(InvalidSelectorException):
        session.createConsumer(session.createQueue(unique_name), selector)


def test_no_local_topic_subscriber(connect: Callable[..., Connection], unique_name: str) -> None:
    mine = connect()
    other = connect()
    session = mine.createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(unique_name)
    local_only = session.createConsumer(topic, None, True)
    everything = session.createConsumer(topic)
    session.createProducer(topic).send(session.createTextMessage("from-me"))
    other_session = other.createSession(False, Session.AUTO_ACKNOWLEDGE)
    other_session.createProducer(topic).send(other_session.createTextMessage("from-other"))
    got = local_only.receive(RECEIVE_MS)
    assert isinstance(got, TextMessage) and got.getText() == "from-other"
    assert local_only.receive(300) is None
    texts = {
        m.getText()
        for m in (everything.receive(RECEIVE_MS), everything.receive(RECEIVE_MS))
        if isinstance(m, TextMessage)
    }
    assert texts == {"from-me", "from-other"}


def test_temporary_queue_request_reply(connect: Callable[..., Connection], unique_name: str) -> None:
    requester = connect()
    responder = connect()
    session = requester.createSession(False, Session.AUTO_ACKNOWLEDGE)
    replies = session.createTemporaryQueue()
    reply_consumer = session.createConsumer(replies)
    service_queue = session.createQueue(unique_name)
    request = session.createTextMessage("ping")
    request.setJMSReplyTo(replies)
    session.createProducer(service_queue).send(request)

    service = responder.createSession(False, Session.AUTO_ACKNOWLEDGE)
    received = service.createConsumer(service_queue).receive(RECEIVE_MS)
    assert received is not None and received.getJMSReplyTo() is not None
    reply = service.createTextMessage("pong")
    reply.setJMSCorrelationID(received.getJMSMessageID())
    service.createProducer(None).send(received.getJMSReplyTo(), reply)

    got = reply_consumer.receive(RECEIVE_MS)
    assert isinstance(got, TextMessage) and got.getText() == "pong"
    assert got.getJMSCorrelationID() == request.getJMSMessageID()
    with pytest.raises(InvalidDestinationException):
        service.createConsumer(received.getJMSReplyTo())


def test_temporary_queue_request_reply_across_connections_and_death(
    connect: Callable[..., Connection], unique_name: str, broker_kind: str
) -> None:
    owner = connect()
    other = connect()
    owner_session = owner.createSession(False, Session.AUTO_ACKNOWLEDGE)
    temp = owner_session.createTemporaryQueue()
    other_session = other.createSession(False, Session.AUTO_ACKNOWLEDGE)
    with expected("temporary-local-names", broker_kind), pytest.raises(InvalidDestinationException):
        other_session.createProducer(temp)  # on ActiveMQ our name for it would silently be another queue
    carrier = owner_session.createTextMessage("reply here")
    carrier.setJMSReplyTo(temp)
    owner_session.createProducer(owner_session.createQueue(unique_name)).send(carrier)
    received = other_session.createConsumer(other_session.createQueue(unique_name)).receive(RECEIVE_MS)
    assert received is not None
    remote = received.getJMSReplyTo()
    assert remote is not None
    other_session.createProducer(remote).send(other_session.createTextMessage("alive"))
    reply = owner_session.createConsumer(temp).receive(RECEIVE_MS)
    assert isinstance(reply, TextMessage) and reply.getText() == "alive"
    owner.close()
    with expected("send-to-deleted-temporary", broker_kind), pytest.raises(InvalidDestinationException):
        other_session.createProducer(remote).send(other_session.createTextMessage("after close"))


def test_queue_browser_sees_without_consuming(
    connection: Connection, unique_name: str, broker_kind: str
) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    producer = session.createProducer(queue)
    for i in range(5):
        message = session.createTextMessage(str(i))
        message.setIntProperty("n", i)
        producer.send(message)
    with expected("browsing", broker_kind):
        browsed = [
            m.getText() for m in session.createBrowser(queue).getEnumeration() if isinstance(m, TextMessage)
        ]
        assert browsed == ["0", "1", "2", "3", "4"]
        selected = [m.getText() for m in session.createBrowser(queue, "n >= 3") if isinstance(m, TextMessage)]
        assert selected == ["3", "4"]
        consumer = session.createConsumer(queue)
        assert [consumer.receive(RECEIVE_MS).getText() for _ in range(5)] == ["0", "1", "2", "3", "4"]  # type: ignore[union-attr]


def test_queue_browse_streams_and_stops_when_abandoned(
    connect: Any, unique_name: str, broker_kind: str
) -> None:
    """A browse hands messages over one by one (500, in order, with a small prefetch), and one abandoned after
    the first message ends its subscription without consuming anything."""
    connection = connect(url_options="prefetch=10")
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    producer = session.createProducer(queue)
    producer.setDeliveryMode(DeliveryMode.NON_PERSISTENT)
    for i in range(500):
        producer.send(session.createTextMessage(str(i)))
    with expected("browsing", broker_kind):
        browsed = [m.getText() for m in session.createBrowser(queue).getEnumeration(10_000)]  # type: ignore[attr-defined]
        assert browsed == [str(i) for i in range(500)]
        enumeration = session.createBrowser(queue).getEnumeration(10_000)
        first = next(enumeration)
        assert isinstance(first, TextMessage) and first.getText() == "0"
        enumeration.close()  # type: ignore[attr-defined]
        consumer = session.createConsumer(queue)
        received = [consumer.receive(RECEIVE_MS) for _ in range(500)]
        assert [m.getText() for m in received if isinstance(m, TextMessage)] == [str(i) for i in range(500)]
        assert consumer.receive(500) is None, "the browses must not have added or consumed anything"


def test_listener_receives_in_order_on_dispatch_thread(connection: Connection, unique_name: str) -> None:
    import threading

    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    seen: list[str] = []
    threads: set[str] = set()
    done = threading.Event()

    def on_message(message: object) -> None:
        assert isinstance(message, TextMessage)
        seen.append(message.getText() or "")
        threads.add(threading.current_thread().name)
        if len(seen) == 50:
            done.set()

    session.createConsumer(queue).setMessageListener(on_message)
    producer = session.createProducer(queue)
    for i in range(50):
        producer.send(session.createTextMessage(str(i)))
    assert done.wait(10)
    assert seen == [str(i) for i in range(50)]
    assert len(threads) == 1 and threading.current_thread().name not in threads


def test_async_send_completion_listener(connection: Connection, unique_name: str) -> None:
    import threading

    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    producer = session.createProducer(queue)
    completed: list[str] = []
    all_done = threading.Event()
    total = ConnectionConfig.send_window + 100  # past the default window: sends wait for places too

    class Listener:
        def onCompletion(self, message: object) -> None:
            completed.append(threading.current_thread().name)
            if len(completed) == total:
                all_done.set()

        def onException(self, message: object, exception: Exception) -> None:
            raise AssertionError(f"send failed: {exception}")

    for i in range(total):
        producer.send(session.createTextMessage(str(i)), completionListener=Listener())
    assert all_done.wait(20)
    assert all(name.startswith("jmslike-session") for name in completed)
    consumer = session.createConsumer(queue)
    texts = [consumer.receive(RECEIVE_MS).getText() for _ in range(total)]  # type: ignore[union-attr]
    assert texts == [str(i) for i in range(total)]


def test_session_close_right_after_asynchronous_sends_runs_every_completion_callback(
    connection: Connection, unique_name: str
) -> None:
    """JMS 2.0 §7.3.7: close() returns only after every completion callback of the session's asynchronous
    sends has returned (before, they ran after close, and one could be lost when the session's thread had
    already finished)."""
    import threading

    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createQueue(unique_name))
    total = 500
    completed: list[object] = []
    failed: list[Exception] = []
    all_done = threading.Event()

    class Listener:
        def onCompletion(self, message: object) -> None:
            completed.append(message)
            if len(completed) == total:
                all_done.set()

        def onException(self, message: object, exception: Exception) -> None:
            failed.append(exception)

    for i in range(total):
        producer.send(session.createTextMessage(str(i)), completionListener=Listener())
    session.close()
    assert len(completed) == total, (
        f"close() returned with {len(completed)} of {total} callbacks run: {failed}"
    )
    assert not failed


def test_commit_returns_after_the_transactions_completion_callbacks(
    connection: Connection, unique_name: str
) -> None:
    """JMS 2.0 §7.3.7: commit() returns only once each asynchronous send's callback has returned."""
    session = connection.createSession(True, Session.SESSION_TRANSACTED)
    producer = session.createProducer(session.createQueue(unique_name))
    completed: list[object] = []

    class Listener:
        def onCompletion(self, message: object) -> None:
            completed.append(message)

        def onException(self, message: object, exception: Exception) -> None:
            completed.append(exception)

    for i in range(50):
        producer.send(session.createTextMessage(str(i)), completionListener=Listener())
    session.commit()
    assert len(completed) == 50, f"commit() returned with {len(completed)} of 50 callbacks run"
    assert all(not isinstance(c, Exception) for c in completed)


def test_a_callback_cannot_close_commit_or_roll_back_its_own_session(
    connection: Connection, unique_name: str
) -> None:
    """JMS 2.0 §7.3.8 and §4.4.1: IllegalStateException instead of waiting for itself; the session stays usable."""
    import threading

    from jmslike import IllegalStateException

    session = connection.createSession(True, Session.SESSION_TRANSACTED)
    queue = session.createQueue(unique_name)
    refused: list[str] = []
    done = threading.Event()

    class Listener:
        def onCompletion(self, message: object) -> None:
            for name, call in (
                ("close", session.close),
                ("commit", session.commit),
                ("rollback", session.rollback),
            ):
                try:
                    call()
                except IllegalStateException:
                    refused.append(name)
            done.set()

        def onException(self, message: object, exception: Exception) -> None:
            done.set()

    session.createProducer(queue).send(session.createTextMessage("x"), completionListener=Listener())
    session.commit()
    assert done.is_set() and refused == ["close", "commit", "rollback"]
    listening = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    closes: list[BaseException] = []
    heard = threading.Event()

    def on_message(message: object) -> None:
        try:
            listening.close()
        except IllegalStateException as exc:
            closes.append(exc)
        heard.set()

    listening.createConsumer(queue).setMessageListener(on_message)
    assert heard.wait(RECEIVE_MS / 1000), "the committed message never reached the listener"
    assert len(closes) == 1, "a MessageListener closing its own session must get IllegalStateException"
    listening.close()


def test_a_callback_run_by_its_listeners_commit_cannot_commit_or_roll_back_either(
    connection: Connection, unique_name: str
) -> None:
    """A MessageListener that sends asynchronously and commits runs the completion callbacks inside its commit (they
    would otherwise wait behind it); they are CompletionListeners there too (JMS 2.0 §7.3.8), so a commit or rollback
    of their own session is refused, not nested inside the listener's commit."""
    import threading

    from jmslike import IllegalStateException

    session = connection.createSession(True, Session.SESSION_TRANSACTED)
    inbound = session.createQueue(unique_name)
    outbound = session.createQueue(unique_name + ".out")
    producer = session.createProducer(outbound)
    refused: list[str] = []
    problems: list[BaseException] = []
    done = threading.Event()

    class Completion:
        def onCompletion(self, message: object) -> None:
            for name, call in (("commit", session.commit), ("rollback", session.rollback)):
                try:
                    call()
                except IllegalStateException:
                    refused.append(name)

        def onException(self, message: object, exception: Exception) -> None:
            problems.append(exception)

    def on_message(message: object) -> None:
        try:
            producer.send(session.createTextMessage("reply"), completionListener=Completion())
            session.commit()
        except BaseException as exc:
            problems.append(exc)
        done.set()

    session.createConsumer(inbound).setMessageListener(on_message)
    other = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    other.createProducer(inbound).send(other.createTextMessage("request"))
    assert done.wait(RECEIVE_MS / 1000), "the request never reached the listener"
    assert not problems, problems
    assert refused == ["commit", "rollback"]
    session.close()
    replies = other.createConsumer(outbound)
    reply = replies.receive(RECEIVE_MS)
    assert isinstance(reply, TextMessage) and reply.getText() == "reply", (
        "the listener's committed send is missing"
    )
    assert replies.receive(500) is None, "the reply came twice"
    assert other.createConsumer(inbound).receive(500) is None, "the consumed request was not committed"


def test_receive_on_a_stopped_connection_says_why_once(
    connect: Callable[..., Connection], unique_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue #23: a first script's receive() before connection.start() used to wait without a word."""
    connection = connect(start=False)
    session = connection.createSession()
    consumer = session.createConsumer(session.createQueue(unique_name))
    with caplog.at_level("WARNING", logger="jmslike.connection"):
        assert consumer.receive(100) is None
        assert consumer.receive(100) is None
    hints = [r for r in caplog.records if "not started" in r.getMessage()]
    assert len(hints) == 1 and "connection.start()" in hints[0].getMessage()


def test_rabbitmq_quorum_queue_declared_by_someone_else(
    broker: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    """An operator made the queue a quorum queue: jmslike uses it with ``rabbitmq_queue_type=quorum``, and
    without it the broker refuses jmslike's classic re-declaration (the reason the option exists)."""
    if broker.kind != "rabbitmq":
        pytest.skip("quorum queues are RabbitMQ's")
    from jmslike.adapters.rabbitmq_management import RabbitMQManagement

    RabbitMQManagement(broker.management_url, broker.user, broker.password).declare_queue(
        "/", unique_name, {"x-queue-type": "quorum"}
    )
    session = connect(url_options="rabbitmq_queue_type=quorum").createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(unique_name)
    session.createProducer(queue).send(session.createTextMessage("in a quorum queue"))
    got = session.createConsumer(queue).receive(RECEIVE_MS)
    assert isinstance(got, TextMessage) and got.getText() == "in a quorum queue"

    classic = connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(JMSException, match="x-queue-type"):
        classic.createProducer(classic.createQueue(unique_name)).send(classic.createTextMessage("refused"))


def test_rabbitmq_refusal_reaches_the_refused_send_not_an_open_transactions_send(
    broker: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    """RabbitMQ answers a transactional SEND only at COMMIT, so it waits in front of every later frame; when
    another session's SEND is refused (an ERROR naming no receipt, then the connection closes), the refusal went to
    the transaction's send and the refused send got a plain loss (review finding). Now the refused send raises the
    broker's reason and the transaction ends with the loss."""
    if broker.kind != "rabbitmq":
        pytest.skip(
            "only RabbitMQ answers transactional SENDs at COMMIT and refuses without naming the receipt"
        )
    from jmslike.adapters.rabbitmq_management import RabbitMQManagement

    RabbitMQManagement(broker.management_url, broker.user, broker.password).declare_queue(
        "/", unique_name, {"x-queue-type": "quorum"}
    )
    connection = connect()
    transacted = connection.createSession(True, Session.SESSION_TRANSACTED)
    transacted.createProducer(transacted.createQueue(unique_name + "-tx")).send(
        transacted.createTextMessage("waits for COMMIT")
    )
    plain = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    with pytest.raises(JMSException, match="x-queue-type"):  # a classic re-declaration: refused
        plain.createProducer(plain.createQueue(unique_name)).send(plain.createTextMessage("refused"))
    with pytest.raises(JMSException) as ended:
        transacted.commit()
    assert "x-queue-type" not in str(ended.value), ended.value

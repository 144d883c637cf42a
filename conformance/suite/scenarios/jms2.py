"""JMS 2.0 (Jakarta Messaging 3): createSession's forms, the simplified API, delivery delay, shared
subscriptions and the JMS 1.0.2 domain interfaces, each through jmslike's public API on the real broker."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from jmslike import (
    BytesMessage,
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
    QueueConnectionFactory,
    QueueRequestor,
    Session,
)
from jmslike.conformance.suite import Context, restart_scenario, scenario
from jmslike.conformance.suite.helpers import RECEIVE_MS, drain_texts, expect_raises, send_texts, text_of

CAT = "jms2"
SEC = "JMS 2.0 [Jakarta Messaging 3.1]"
DELAY_MS = 1500


def _context(ctx: Context, mode: int = JMSContext.AUTO_ACKNOWLEDGE) -> JMSContext:
    context = ctx.factory().createContext(ctx.broker.user, ctx.broker.password, mode)
    ctx.defer(context.close)
    return context


@scenario(
    "jms2.create-session-mode-alone",
    category=CAT,
    rule="createSession(CLIENT_ACKNOWLEDGE) gives a non-transacted CLIENT_ACKNOWLEDGE session: an "
    "acknowledged message is gone, an unacknowledged one comes back",
    section=f"{SEC} Connection.createSession(int)",
    quick=True,
)
def create_session_mode(ctx: Context) -> None:
    queue = ctx.name("q")
    send_texts(ctx.connect(), queue, ["acked", "not-acked"])
    connection = ctx.connect()
    session = connection.createSession(Session.CLIENT_ACKNOWLEDGE)
    assert not session.getTransacted(), "createSession(CLIENT_ACKNOWLEDGE) gave a transacted session"
    assert session.getAcknowledgeMode() == Session.CLIENT_ACKNOWLEDGE
    consumer = session.createConsumer(session.createQueue(queue))
    first = consumer.receive(RECEIVE_MS)
    assert text_of(first) == "acked"
    assert first is not None
    first.acknowledge()
    assert text_of(consumer.receive(RECEIVE_MS)) == "not-acked"
    session.close()
    assert drain_texts(ctx.connect(), queue) == ["not-acked"]


@scenario(
    "jms2.context-bodies-and-receive-body",
    category=CAT,
    rule="JMSProducer.send turns str, bytes and Map bodies into Text, Bytes and MapMessages; "
    "receiveBody returns the body, and in AUTO mode leaves a message it cannot convert in place",
    section=f"{SEC} §7.3, JMSConsumer.receiveBody",
    quick=True,
)
def context_bodies(ctx: Context) -> None:
    context = _context(ctx)
    queue = context.createQueue(ctx.name("q"))
    context.createProducer().send(queue, "text").send(queue, b"\x01\x02").send(queue, {"n": 1})
    consumer = context.createConsumer(queue)
    expect_raises(
        MessageFormatRuntimeException, lambda: consumer.receiveBody(bytes, RECEIVE_MS), "text as bytes"
    )
    assert consumer.receiveBody(str, RECEIVE_MS) == "text", "the unconvertible message did not stay in place"
    data = consumer.receive(RECEIVE_MS)
    assert isinstance(data, BytesMessage) and data.getBody(bytes) == b"\x01\x02"
    mapped = consumer.receive(RECEIVE_MS)
    assert isinstance(mapped, MapMessage) and mapped.getBody(dict) == {"n": 1}


@scenario(
    "jms2.context-transactions",
    category=CAT,
    rule="A SESSION_TRANSACTED JMSContext commits and rolls back its sends and receives",
    section=f"{SEC} JMSContext.commit/rollback",
)
def context_transactions(ctx: Context) -> None:
    queue_name = ctx.name("q")
    send_texts(ctx.connect(), queue_name, ["in"])
    context = _context(ctx, JMSContext.SESSION_TRANSACTED)
    queue = context.createQueue(queue_name)
    out = context.createQueue(ctx.name("out"))
    consumer = context.createConsumer(queue)
    assert consumer.receiveBody(str, RECEIVE_MS) == "in"
    context.createProducer().send(out, "rolled back")
    context.rollback()
    redelivered = consumer.receive(RECEIVE_MS)
    assert text_of(redelivered) == "in" and redelivered is not None and redelivered.getJMSRedelivered()
    context.createProducer().send(out, "committed")
    context.commit()
    context.close()
    assert drain_texts(ctx.connect(), queue_name) == []
    assert drain_texts(ctx.connect(), out.getQueueName()) == ["committed"]


@scenario(
    "jms2.context-runtime-exceptions",
    category=CAT,
    rule="The simplified API raises the JMSRuntimeException family, each linked to the checked exception",
    section=f"{SEC} §10 (JMSRuntimeException)",
)
def context_runtime_exceptions(ctx: Context) -> None:
    context = _context(ctx)
    context.createQueue(ctx.name("q"))  # first use: the client ID is fixed from here on
    late = expect_raises(
        IllegalStateRuntimeException, lambda: context.setClientID(ctx.client_id()), "late ID"
    )
    assert late.getCause() is not None and isinstance(late.getCause(), JMSException)
    expect_raises(
        InvalidDestinationRuntimeException,
        lambda: context.createProducer().send(None, "x"),  # type: ignore[arg-type]
        "send to None",
    )
    context.close()
    expect_raises(IllegalStateRuntimeException, lambda: context.createTopic("t"), "use after close")


@scenario(
    "jms2.delivery-delay-not-early",
    category=CAT,
    rule="A message sent with a delivery delay is not delivered before JMSDeliveryTime, and is after it",
    section=f"{SEC} §7.9 (delivery delay), §3.4.13 (JMSDeliveryTime)",
    quick=True,
)
def delivery_delay(ctx: Context) -> None:
    context = _context(ctx)
    queue = context.createQueue(ctx.name("q"))
    consumer = context.createConsumer(queue)
    producer = context.createProducer()
    later = context.createTextMessage("later")
    producer.setDeliveryDelay(DELAY_MS).send(queue, later)
    producer.setDeliveryDelay(0).send(queue, "now")
    first = consumer.receive(RECEIVE_MS)
    assert text_of(first) == "now", "the delayed message was delivered before an undelayed one sent after it"
    delayed = consumer.receive(RECEIVE_MS + DELAY_MS)
    assert text_of(delayed) == "later" and delayed is not None
    assert later.getJMSDeliveryTime() == later.getJMSTimestamp() + DELAY_MS, "JMSDeliveryTime not stamped"
    assert delayed.getJMSDeliveryTime() == later.getJMSDeliveryTime(), "JMSDeliveryTime changed in transit"
    assert time.time() * 1000 >= delayed.getJMSDeliveryTime() - 50, "delivered before its delivery time"


@dataclass
class DelayedState:
    queue: str
    delivery_time: int


@restart_scenario(
    "jms2.delivery-delay-persistent-survives",
    category=CAT,
    rule="A PERSISTENT message with a delivery delay survives a broker restart and is delivered after its time",
    section=f"{SEC} §7.9, JMS 1.1 §4.10",
)
def delayed_survives(ctx: Context) -> DelayedState:
    connection = ctx.connect()
    session = connection.createSession()
    queue = ctx.name("q")
    producer = session.createProducer(session.createQueue(queue))
    producer.setDeliveryDelay(DELAY_MS)
    message = session.createTextMessage("delayed")
    producer.send(message, DeliveryMode.PERSISTENT, 4, 0)
    return DelayedState(queue, message.getJMSDeliveryTime())


@delayed_survives.verify
def _delayed_survives(ctx: Context, state: DelayedState) -> None:
    session = ctx.connect().createSession()
    got = session.createConsumer(session.createQueue(state.queue)).receive(RECEIVE_MS + DELAY_MS)
    assert text_of(got) == "delayed", "the delayed PERSISTENT message was lost by the restart"
    assert time.time() * 1000 >= state.delivery_time - 50, "delivered before its delivery time"
    session.close()
    assert drain_texts(ctx.connect(), state.queue) == [], "the delayed message came twice"


@scenario(
    "jms2.shared-durable-subscription",
    category=CAT,
    rule="Consumers of one shared durable subscription (same name, same client ID or none) share its "
    "messages: each message goes to exactly one of them",
    section=f"{SEC} §8.3.4 (shared durable subscriptions)",
)
def shared_durable(ctx: Context) -> None:
    context = _context(ctx)
    topic = context.createTopic(ctx.name("t"))
    name = ctx.name("s")
    first = context.createSharedDurableConsumer(topic, name)
    second = _context(ctx).createSharedDurableConsumer(topic, name)
    texts = [f"m{i}" for i in range(10)]
    producer = context.createProducer()
    for text in texts:
        producer.send(topic, text)
    got: list[str] = []
    for consumer in (first, second):
        while (body := consumer.receiveBody(str, 1000)) is not None:
            got.append(body)
    assert sorted(got) == sorted(texts), f"each message once across the two consumers, got {got}"
    first.close()
    second.close()
    context.unsubscribe(name)


@scenario(
    "jms2.legacy-queue-requestor",
    category=CAT,
    rule="The JMS 1.0.2 domain interfaces work as the unified API: QueueConnectionFactory, "
    "createQueueSession, createSender/createReceiver, QueueRequestor",
    section="JMS 1.1 §5.10 (QueueRequestor), Appendix (domain interfaces)",
)
def legacy_requestor(ctx: Context) -> None:
    factory = QueueConnectionFactory(ctx.url())
    server = factory.createQueueConnection(ctx.broker.user, ctx.broker.password)
    ctx.defer(server.close)
    client = factory.createQueueConnection(ctx.broker.user, ctx.broker.password)
    ctx.defer(client.close)
    server_session = server.createQueueSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = server_session.createQueue(ctx.name("q"))
    replier = server_session.createSender(None)

    def answer(request: Message) -> None:
        destination = request.getJMSReplyTo()
        if destination is not None:
            replier.send(destination, server_session.createTextMessage("pong"))

    server_session.createReceiver(queue).setMessageListener(answer)
    server.start()
    client.start()
    session = client.createQueueSession(False, Session.AUTO_ACKNOWLEDGE)
    requestor = QueueRequestor(session, queue)
    reply = requestor.request(session.createTextMessage("ping"), RECEIVE_MS)
    requestor.close()
    assert text_of(reply) == "pong"


@scenario(
    "jms2.shared-nondurable-ends-with-last-consumer",
    category=CAT,
    rule="A shared non-durable subscription exists while it has a consumer: what is published after its "
    "last consumer closed is not kept for the next one",
    section=f"{SEC} §8.3.2 (shared non-durable subscriptions)",
)
def shared_nondurable(ctx: Context) -> None:
    context = _context(ctx)
    topic = context.createTopic(ctx.name("t"))
    name = ctx.name("s")
    context.createSharedConsumer(topic, name).close()
    context.createProducer().send(topic, "nobody listening")
    consumer = context.createSharedConsumer(topic, name)
    assert consumer.receiveNoWait() is None and consumer.receive(400) is None, "kept without a consumer"


@scenario(
    "jms2.shared-unshared-name-clash",
    category=CAT,
    rule="A shared durable and an unshared durable subscription may not have the same name and client ID",
    section=f"{SEC} §8.3.4",
)
def shared_clash(ctx: Context) -> None:
    context = _context(ctx)
    context.setClientID(ctx.client_id())
    topic = context.createTopic(ctx.name("t"))
    name = ctx.name("s")
    context.createSharedDurableConsumer(topic, name).close()
    expect_raises(
        JMSRuntimeException, lambda: context.createDurableConsumer(topic, name), "unshared after shared"
    )
    context.unsubscribe(name)
    context.createDurableConsumer(topic, name).close()
    expect_raises(
        JMSRuntimeException, lambda: context.createSharedDurableConsumer(topic, name), "shared after"
    )
    context.unsubscribe(name)


@scenario(
    "jms2.close-waits-for-completion-callbacks",
    category=CAT,
    rule="Session.close() returns only after every CompletionListener of its asynchronous sends has returned",
    section=f"{SEC} §7.3.7 (close and asynchronous send)",
    quick=True,
)
def close_waits(ctx: Context) -> None:
    session = ctx.connect().createSession()
    producer = session.createProducer(session.createQueue(ctx.name("q")))
    completed: list[object] = []

    class Listener:
        def onCompletion(self, message: Message) -> None:
            completed.append(message)

        def onException(self, message: Message, exception: JMSException) -> None:
            completed.append(exception)

    for i in range(200):
        producer.send(session.createTextMessage(str(i)), completionListener=Listener())
    session.close()
    assert len(completed) == 200, f"close() returned with {len(completed)} of 200 callbacks run"
    assert not [c for c in completed if isinstance(c, JMSException)], "a send failed"


@scenario(
    "jms2.callback-cannot-close-own-session",
    category=CAT,
    rule="A CompletionListener that closes or commits its own session gets IllegalStateException",
    section=f"{SEC} §7.3.8",
)
def callback_close(ctx: Context) -> None:
    session = ctx.connect().createSession(Session.SESSION_TRANSACTED)
    refused: list[str] = []

    class Listener:
        def onCompletion(self, message: Message) -> None:
            for what, call in (("close", session.close), ("commit", session.commit)):
                try:
                    call()
                except IllegalStateException:
                    refused.append(what)

        def onException(self, message: Message, exception: JMSException) -> None:
            refused.append(f"send failed: {exception}")

    producer = session.createProducer(session.createQueue(ctx.name("q")))
    producer.send(session.createTextMessage("x"), completionListener=Listener())
    session.commit()
    assert refused == ["close", "commit"], f"expected both refused, got {refused}"
    session.close()


_SHARED_CHILD = r"""
import os, sys
from jmslike import ConnectionFactory, JMSContext
factory = ConnectionFactory(os.environ["JMSLIKE_CONFORMANCE_URL"])
with factory.createContext(os.environ["JMSLIKE_CONFORMANCE_USER"], os.environ["JMSLIKE_CONFORMANCE_PASSWORD"]) as context:
    consumer = context.createSharedDurableConsumer(context.createTopic(sys.argv[1]), sys.argv[2])
    print("READY", flush=True)
    got = []
    first = consumer.receiveBody(str, 20000)
    while first is not None:
        got.append(first)
        first = consumer.receiveBody(str, 1500)
    consumer.close()
    print("GOT " + " ".join(got), flush=True)
"""


@scenario(
    "jms2.shared-durable-two-processes",
    category=CAT,
    rule="Consumers of one shared durable subscription in two processes share its messages: each message "
    "reaches exactly one of them",
    section=f"{SEC} §8.3.4",
)
def shared_two_processes(ctx: Context) -> None:
    topic, name = ctx.name("t"), ctx.name("s")
    context = _context(ctx)
    mine = context.createSharedDurableConsumer(context.createTopic(topic), name)
    child = ctx.spawn([sys.executable, "-c", _SHARED_CHILD, topic, name], env=ctx.child_env())
    assert child.stdout is not None
    ready = child.stdout.readline().strip()
    if ready != "READY":
        child.kill()
        _, err = child.communicate(timeout=5)
        raise AssertionError(f"the other process did not attach: {ready!r} {err[-500:]}")
    texts = [f"m{i}" for i in range(20)]
    producer = context.createProducer()
    for text in texts:
        producer.send(context.createTopic(topic), text)
    got_here: list[str] = []
    while (body := mine.receiveBody(str, 1500)) is not None:
        got_here.append(body)
    report = child.stdout.readline().strip()
    assert report.startswith("GOT"), f"the other process reported {report!r}"
    got_there = report.split()[1:]
    assert sorted(got_here + got_there) == sorted(texts), f"here {got_here}, there {got_there}"
    assert got_here and got_there, f"one process got everything: here {got_here}, there {got_there}"
    mine.close()
    child.wait(10)
    context.unsubscribe(name)


@dataclass
class SharedState:
    topic: str
    name: str
    texts: list[str]


@restart_scenario(
    "jms2.shared-durable-survives-restart",
    category=CAT,
    rule="A shared durable subscription and its PERSISTENT backlog survive a broker restart",
    section=f"{SEC} §8.3.4, JMS 1.1 §4.10",
)
def shared_restart(ctx: Context) -> SharedState:
    state = SharedState(ctx.name("t"), ctx.name("s"), ["kept-1", "kept-2", "kept-3"])
    context = _context(ctx)
    topic = context.createTopic(state.topic)
    context.createSharedDurableConsumer(topic, state.name).close()
    producer = context.createProducer().setDeliveryMode(DeliveryMode.PERSISTENT)
    for text in state.texts:
        producer.send(topic, text)
    return state


@shared_restart.verify
def _shared_restart(ctx: Context, state: SharedState) -> None:
    context = _context(ctx)
    consumer = context.createSharedDurableConsumer(context.createTopic(state.topic), state.name)
    got = []
    while (body := consumer.receiveBody(str, 1500)) is not None:
        got.append(body)
    assert got == state.texts, f"after the restart the shared subscription held {got}"
    consumer.close()
    context.unsubscribe(state.name)


@scenario(
    "jms2.context-sibling-and-autostart",
    category=CAT,
    rule="createContext(sessionMode) shares the connection and its client ID, which closes with the last "
    "context; with autoStart off nothing is delivered before start()",
    section=f"{SEC} JMSContext.createContext, setAutoStart",
)
def context_sibling(ctx: Context) -> None:
    first = _context(ctx)
    client_id = ctx.client_id()
    first.setClientID(client_id)  # right after createContext: the session comes with first use
    second = first.createContext(JMSContext.CLIENT_ACKNOWLEDGE)
    ctx.defer(second.close)
    assert second.getClientID() == client_id, "a sibling context must share the connection's client ID"
    second.setAutoStart(False)
    queue = second.createQueue(ctx.name("q"))
    first.close()
    second.createProducer().send(queue, "after the first closed")  # the connection lives on
    consumer = second.createConsumer(queue)
    assert consumer.receiveNoWait() is None, "delivered before start() with autoStart off"
    second.start()
    assert consumer.receiveBody(str, RECEIVE_MS) == "after the first closed"
    second.acknowledge()
    second.close()
    expect_raises(IllegalStateRuntimeException, lambda: second.createQueue("x"), "use after the last close")


@scenario(
    "jms2.context-client-acknowledge",
    category=CAT,
    rule="JMSContext.acknowledge() acknowledges everything the context consumed; what it did not "
    "acknowledge comes back after close",
    section=f"{SEC} JMSContext.acknowledge",
)
def context_client_ack(ctx: Context) -> None:
    queue_name = ctx.name("q")
    send_texts(ctx.connect(), queue_name, ["a", "b", "c"])
    context = _context(ctx, JMSContext.CLIENT_ACKNOWLEDGE)
    consumer = context.createConsumer(context.createQueue(queue_name))
    assert [consumer.receiveBody(str, RECEIVE_MS) for _ in range(2)] == ["a", "b"]
    context.acknowledge()
    assert consumer.receiveBody(str, RECEIVE_MS) == "c"
    context.close()
    assert drain_texts(ctx.connect(), queue_name) == ["c"], "acknowledged messages came back, or c was lost"


@scenario(
    "jms2.shared-changed-selector",
    category=CAT,
    rule="Creating a shared durable subscription with another selector replaces it (and its backlog) when "
    "it has no consumer, and is refused while it has one",
    section=f"{SEC} §8.3.4",
)
def shared_changed(ctx: Context) -> None:
    context = _context(ctx)
    topic = context.createTopic(ctx.name("t"))
    name = ctx.name("s")
    context.createSharedDurableConsumer(topic, name, "kind = 'a'").close()
    producer = context.createProducer().setProperty("kind", "a")
    producer.send(topic, "old backlog")
    active = context.createSharedDurableConsumer(topic, name, "kind = 'b'")  # unused: replaced, backlog gone
    other = _context(ctx)
    expect_raises(
        JMSRuntimeException,
        lambda: other.createSharedDurableConsumer(
            other.createTopic(topic.getTopicName()), name, "kind = 'c'"
        ),
        "changing a shared subscription that has a consumer",
    )
    producer.setProperty("kind", "b").send(topic, "new")
    assert active.receiveBody(str, RECEIVE_MS) == "new"
    assert active.receiveNoWait() is None, "the replaced subscription's backlog survived"
    active.close()
    context.unsubscribe(name)

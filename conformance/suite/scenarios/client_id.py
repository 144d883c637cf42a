"""Client ID rules and error cases (JMS 1.1 §4.3.2, §4.3.5, §4.4.1 [3.1 §6.1.2, §6.1.8, §6.2.1])."""

from __future__ import annotations

import contextlib

from jmslike import (
    IllegalStateException,
    InvalidClientIDException,
    InvalidDestinationException,
    JMSException,
    Session,
    Topic,
)
from jmslike.conformance.suite import Context, scenario
from jmslike.conformance.suite.helpers import drain_texts, expect_raises, send_texts

CAT = "client-id"
CID = "JMS 1.1 §4.3.2 [3.1 §6.1.2]"
CLOSE = "JMS 1.1 §4.3.5, §4.4.1 [3.1 §6.1.8, §6.2.1]"


@scenario(
    "cid.late-setclientid",
    category=CAT,
    rule="setClientID after any other call is IllegalStateException",
    section=CID,
    quick=True,
)
def late(ctx: Context) -> None:
    connection = ctx.connect(start=False)
    connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    expect_raises(IllegalStateException, lambda: connection.setClientID(ctx.client_id()), "late setClientID")


@scenario("cid.set-twice", category=CAT, rule="The client ID can be set only once", section=CID)
def twice(ctx: Context) -> None:
    connection = ctx.connect(ctx.client_id(), start=False)
    expect_raises(
        IllegalStateException, lambda: connection.setClientID(ctx.client_id("2")), "second setClientID"
    )


@scenario(
    "cid.duplicate-refused",
    category=CAT,
    rule="A client ID in use by another live connection is refused with InvalidClientIDException",
    section=CID,
    quick=True,
)
def duplicate(ctx: Context) -> None:
    cid = ctx.client_id()
    ctx.connect(cid)
    other = ctx.connect(start=False)
    expect_raises(InvalidClientIDException, lambda: other.setClientID(cid), "duplicate client ID")


@scenario(
    "cid.duplicate-leaves-connection-usable",
    category=CAT,
    rule="A refused client ID leaves the connection as it was: no client ID, still usable",
    section=CID,
)
def refused_usable(ctx: Context) -> None:
    cid = ctx.client_id()
    ctx.connect(cid)
    other = ctx.connect(start=False)
    with contextlib.suppress(InvalidClientIDException):
        other.setClientID(cid)
    assert other.getClientID() is None, f"half-applied client ID {other.getClientID()!r}"
    queue = ctx.name("q")
    send_texts(other, queue, ["still-usable"])
    assert drain_texts(ctx.connect(), queue) == ["still-usable"]


@scenario(
    "cid.reusable-after-close",
    category=CAT,
    rule="A client ID is free again once its connection closed",
    section=CID,
)
def reusable(ctx: Context) -> None:
    cid = ctx.client_id()
    ctx.connect(cid).close()
    connection = ctx.connect(cid)
    assert connection.getClientID() == cid


@scenario(
    "cid.empty-invalid", category=CAT, rule="An empty client ID is InvalidClientIDException", section=CID
)
def empty(ctx: Context) -> None:
    connection = ctx.connect(start=False)
    expect_raises(InvalidClientIDException, lambda: connection.setClientID(""), "empty client ID")


@scenario(
    "cid.durable-needs-client-id",
    category=CAT,
    rule="Creating an unshared durable subscription without a client ID is IllegalStateException; "
    "unsubscribing a name no subscription has without one is InvalidDestinationException (JMS 2.0: only "
    "shared durable subscriptions can lack a client ID)",
    section="JMS 1.1 §6.11.1 [3.1 §8.3.3]",
    quick=True,
)
def durable_needs_cid(ctx: Context) -> None:
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(ctx.name("t"))
    expect_raises(
        IllegalStateException,
        lambda: session.createDurableSubscriber(topic, "s"),
        "durable without client ID",
    )
    unknown = expect_raises(
        InvalidDestinationException, lambda: session.unsubscribe("s"), "unsubscribe without client ID"
    )
    assert "setClientID" in str(unknown), f"the error should point at setClientID: {unknown}"


@scenario(
    "closed.connection",
    category=CAT,
    rule="A closed connection raises IllegalStateException; close is idempotent",
    section=CLOSE,
)
def closed_connection(ctx: Context) -> None:
    connection = ctx.connect()
    connection.close()
    connection.close()
    expect_raises(
        IllegalStateException,
        lambda: connection.createSession(False, Session.AUTO_ACKNOWLEDGE),
        "createSession",
    )
    expect_raises(IllegalStateException, connection.start, "start")


@scenario("closed.session", category=CAT, rule="A closed session raises IllegalStateException", section=CLOSE)
def closed_session(ctx: Context) -> None:
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(ctx.name("q"))
    session.close()
    expect_raises(IllegalStateException, lambda: session.createProducer(queue), "createProducer")
    expect_raises(IllegalStateException, lambda: session.createTextMessage("x"), "createTextMessage")


@scenario(
    "closed.producer-and-consumer",
    category=CAT,
    rule="A closed producer or consumer raises IllegalStateException",
    section=CLOSE,
)
def closed_endpoints(ctx: Context) -> None:
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(ctx.name("q"))
    producer = session.createProducer(queue)
    consumer = session.createConsumer(queue)
    producer.close()
    consumer.close()
    expect_raises(
        IllegalStateException,
        lambda: producer.send(session.createTextMessage("x")),
        "send on closed producer",
    )
    expect_raises(IllegalStateException, lambda: consumer.receive(100), "receive on closed consumer")


@scenario(
    "closed.connection-close-ends-receive",
    category=CAT,
    rule="Closing the connection ends a blocked receive (it returns null) instead of hanging",
    section=CLOSE,
)
def close_ends_receive(ctx: Context) -> None:
    import threading

    connection = ctx.connect()
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(ctx.name("q")))
    result: list[object] = []
    done = threading.Event()

    def receive() -> None:
        try:
            result.append(consumer.receive(30_000))
        except JMSException as exc:
            result.append(exc)
        done.set()

    threading.Thread(target=receive, daemon=True).start()
    assert not done.wait(0.3), "receive returned although nothing was sent"
    connection.close()
    assert done.wait(10), "receive() still blocked 10 s after connection.close()"
    assert result[0] is None or isinstance(result[0], JMSException)


@scenario(
    "dest.invalid-name",
    category=CAT,
    rule="An empty or control-character destination name is InvalidDestinationException",
    section="JMS 1.1 §4.4.4",
)
def invalid_name(ctx: Context) -> None:
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    expect_raises(InvalidDestinationException, lambda: session.createQueue(""), "empty queue name")
    expect_raises(
        InvalidDestinationException, lambda: session.createTopic("bad\x00name"), "NUL in topic name"
    )


@scenario(
    "dest.durable-on-queue",
    category=CAT,
    rule="A durable subscription on a queue is InvalidDestinationException",
    section="JMS 1.1 §6.11.1",
)
def durable_on_queue(ctx: Context) -> None:
    session = ctx.connect(ctx.client_id()).createSession(False, Session.AUTO_ACKNOWLEDGE)
    queue = session.createQueue(ctx.name("q"))
    expect_raises(
        InvalidDestinationException,
        lambda: session.createDurableSubscriber(queue, "s"),  # type: ignore[arg-type]
        "durable subscription on a queue",
    )


@scenario(
    "dest.temporary-other-connection",
    category=CAT,
    rule="Only the connection that created a temporary queue may consume from it",
    section="JMS 1.1 §4.4.3 [3.1 §6.2.2]",
)
def temporary_other(ctx: Context) -> None:
    owner = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    temporary = owner.createTemporaryQueue()
    stranger = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    expect_raises(
        InvalidDestinationException,
        lambda: stranger.createConsumer(temporary),
        "consume another's temp queue",
    )


@scenario(
    "dest.topic-is-not-queue",
    category=CAT,
    rule="Queue and topic of the same name are different destinations",
    section="JMS 1.1 §4.4.4",
)
def queue_vs_topic(ctx: Context) -> None:
    name = ctx.name("same")
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createConsumer(Topic(name))
    send_texts(ctx.connect(), name, ["to-queue"])
    assert subscriber.receive(400) is None, "a queue message reached a topic subscriber of the same name"
    assert drain_texts(ctx.connect(), name) == ["to-queue"]

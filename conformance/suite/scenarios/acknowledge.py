"""Acknowledgement modes and redelivery (JMS 1.1 §4.4.11, §3.4.7 [3.1 §6.2.10, §3.5.11])."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from jmslike import DeliveryMode, IllegalStateException, Message, Session
from jmslike.conformance.suite import Context, restart_scenario, scenario
from jmslike.conformance.suite.helpers import (
    drain,
    drain_texts,
    expect_raises,
    publish,
    receive_n,
    receive_texts,
    send_texts,
    text_of,
)
from jmslike.conformance.suite.probe import ProbeUnavailable

CAT = "acknowledge"
SEC = "JMS 1.1 §4.4.11 [3.1 §6.2.10]"
REDELIVERY = "JMS 1.1 §3.4.7 [3.1 §3.4.7, §3.5.11]"


def _assert_redelivered(message: Message | None, what: str) -> None:
    assert message is not None, f"{what}: nothing came back"
    assert message.getJMSRedelivered() is True, f"{what}: JMSRedelivered is false"
    count = message.getIntProperty("JMSXDeliveryCount")
    assert count >= 2, f"{what}: JMSXDeliveryCount is {count}, expected >= 2"


@scenario(
    "ack.auto-consumes",
    category=CAT,
    rule="AUTO_ACKNOWLEDGE: a received message is consumed for good",
    section=SEC,
    quick=True,
)
def auto_consumes(ctx: Context) -> None:
    queue = ctx.name("q")
    connection = ctx.connect()
    send_texts(connection, queue, ["a", "b"])
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    assert text_of(session.createConsumer(session.createQueue(queue)).receive(5000)) == "a"
    session.close()
    left = drain_texts(ctx.connect(), queue)
    assert left == ["b"], f"after consuming 'a' in AUTO mode the queue holds {left}, expected ['b']"


@scenario(
    "ack.client-acknowledges-all-delivered",
    category=CAT,
    rule="CLIENT_ACKNOWLEDGE: acknowledge() acknowledges every message the session delivered so far",
    section=SEC,
    quick=True,
)
def client_ack_all(ctx: Context) -> None:
    queue, other = ctx.name("q1"), ctx.name("q2")
    connection = ctx.connect()
    send_texts(connection, queue, ["1", "2", "3"])
    send_texts(connection, other, ["x"])
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    first = session.createConsumer(session.createQueue(queue))
    second = session.createConsumer(session.createQueue(other))
    m1, _ = receive_n(first, 2)
    assert second.receive(5000) is not None
    m1.acknowledge()
    assert text_of(first.receive(5000)) == "3"
    session.close()
    left = drain(ctx.connect(), queue)
    assert [text_of(m) for m in left] == ["3"], "only the message delivered after acknowledge() stays"
    assert drain(ctx.connect(), other) == [], "acknowledge() covers every consumer of the session"


@scenario(
    "ack.client-close-does-not-ack",
    category=CAT,
    rule="Closing a CLIENT_ACKNOWLEDGE session does not acknowledge; the message comes back flagged",
    section=f"{SEC}; {REDELIVERY}",
)
def client_close(ctx: Context) -> None:
    queue = ctx.name("q")
    send_texts(ctx.connect(), queue, ["only"])
    session = ctx.connect().createSession(False, Session.CLIENT_ACKNOWLEDGE)
    first = session.createConsumer(session.createQueue(queue)).receive(5000)
    assert text_of(first) == "only"
    session.close()
    again = drain(ctx.connect(), queue)
    assert len(again) == 1, f"expected the message once more, got {len(again)}"
    _assert_redelivered(again[0], "after close")
    assert first is not None and again[0].getJMSMessageID() == first.getJMSMessageID()


@scenario("ack.dups-ok-consumes", category=CAT, rule="DUPS_OK_ACKNOWLEDGE consumes messages", section=SEC)
def dups_ok(ctx: Context) -> None:
    queue = ctx.name("q")
    send_texts(ctx.connect(), queue, ["1", "2"])
    session = ctx.connect().createSession(False, Session.DUPS_OK_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(queue))
    assert [text_of(m) for m in receive_n(consumer, 2)] == ["1", "2"]
    session.close()
    assert drain(ctx.connect(), queue) == []


@scenario(
    "ack.individual",
    category=CAT,
    rule="INDIVIDUAL_ACKNOWLEDGE (provider extension) acknowledges only that message",
    section="ActiveMQ extension; JMS 1.1 §4.4.11",
)
def individual(ctx: Context) -> None:
    queue = ctx.name("q")
    send_texts(ctx.connect(), queue, ["1", "2", "3"])
    session = ctx.connect().createSession(False, Session.INDIVIDUAL_ACKNOWLEDGE)
    received = receive_n(session.createConsumer(session.createQueue(queue)), 3)
    received[1].acknowledge()
    session.close()
    assert sorted(drain_texts(ctx.connect(), queue)) == ["1", "3"]


@scenario(
    "ack.recover-redelivers-flagged",
    category=CAT,
    rule="recover() redelivers from the first unacknowledged message, flagged, JMSXDeliveryCount 2",
    section=f"JMS 1.1 §4.4.11; {REDELIVERY}",
    quick=True,
)
def recover(ctx: Context) -> None:
    queue = ctx.name("q")
    send_texts(ctx.connect(), queue, ["a", "b", "c"])
    session = ctx.connect().createSession(False, Session.CLIENT_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(queue))
    a = consumer.receive(5000)
    assert a is not None
    a.acknowledge()
    b = consumer.receive(5000)
    assert text_of(b) == "b" and b is not None and not b.getJMSRedelivered()
    session.recover()
    again = consumer.receive(5000)
    assert text_of(again) == "b"
    _assert_redelivered(again, "after recover()")
    c = consumer.receive(5000)
    assert text_of(c) == "c" and c is not None and not c.getJMSRedelivered()
    c.acknowledge()
    session.close()
    assert drain(ctx.connect(), queue) == []


@scenario(
    "ack.recover-in-transacted-illegal",
    category=CAT,
    rule="recover() in a transacted session is an IllegalStateException",
    section=SEC,
)
def recover_transacted(ctx: Context) -> None:
    session = ctx.connect().createSession(True, Session.SESSION_TRANSACTED)
    expect_raises(IllegalStateException, session.recover, "recover() on a transacted session")


@scenario(
    "ack.listener-exception-redelivers",
    category=CAT,
    rule="In AUTO mode a message whose listener raised is redelivered, flagged",
    section="JMS 1.1 §4.5.2 [3.1 §8.7]",
)
def listener_redelivers(ctx: Context) -> None:
    queue = ctx.name("q")
    send_texts(ctx.connect(), queue, ["poison-once"])
    connection = ctx.connect()
    connection.setExceptionListener(lambda error: None)
    seen: list[tuple[str, bool]] = []
    done = threading.Event()

    def listener(message: Message) -> None:
        seen.append((text_of(message), message.getJMSRedelivered()))
        if len(seen) == 1:
            raise RuntimeError("first attempt fails")
        done.set()

    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createConsumer(session.createQueue(queue)).setMessageListener(listener)
    assert done.wait(10), f"no redelivery after the listener raised (seen {seen})"
    assert seen == [("poison-once", False), ("poison-once", True)]


@scenario(
    "ack.acknowledge-after-close-illegal",
    category=CAT,
    rule="acknowledge() on a message of a closed session is an IllegalStateException",
    section=SEC,
)
def ack_after_close(ctx: Context) -> None:
    queue = ctx.name("q")
    send_texts(ctx.connect(), queue, ["x"])
    session = ctx.connect().createSession(False, Session.CLIENT_ACKNOWLEDGE)
    message = session.createConsumer(session.createQueue(queue)).receive(5000)
    assert message is not None
    session.close()
    expect_raises(IllegalStateException, message.acknowledge, "acknowledge after close")


# -- across a restart --------------------------------------------------------------------------------


@dataclass
class Held:
    queue: str
    message_id: str
    cid: str = ""
    topic: str = ""
    sub: str = ""


@restart_scenario(
    "ack.unacked-queue-back-after-restart",
    category=CAT,
    rule="A queue message delivered but not acknowledged comes back after a restart, flagged redelivered",
    section=REDELIVERY,
    quick=True,
)
def unacked_queue(ctx: Context) -> Held:
    queue = ctx.name("q")
    send_texts(ctx.connect(), queue, ["held"])
    session = ctx.connect(keep=True).createSession(False, Session.CLIENT_ACKNOWLEDGE)
    message = session.createConsumer(session.createQueue(queue)).receive(5000)
    assert text_of(message) == "held"
    assert message is not None
    return Held(queue, message.getJMSMessageID() or "")


@unacked_queue.verify
def _unacked_queue(ctx: Context, state: Held) -> None:
    back = drain(ctx.connect(), state.queue, 1000)
    assert [m.getJMSMessageID() for m in back] == [state.message_id], (
        "the unacknowledged message must come back once"
    )
    _assert_redelivered(back[0], "after the restart")


@restart_scenario(
    "ack.unacked-durable-back-after-restart",
    category=CAT,
    rule="A durable-subscription message delivered but not acknowledged comes back after a restart, flagged",
    section=REDELIVERY,
)
def unacked_durable(ctx: Context) -> Held:
    cid, topic, sub = ctx.client_id(), ctx.name("t"), ctx.name("s")
    session = ctx.connect(cid, keep=True).createSession(False, Session.CLIENT_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(topic), sub)
    publish(ctx.connect(), topic, ["held"])
    message = subscriber.receive(5000)
    assert text_of(message) == "held"
    assert message is not None
    return Held("", message.getJMSMessageID() or "", cid, topic, sub)


@unacked_durable.verify
def _unacked_durable(ctx: Context, state: Held) -> None:
    session = ctx.connect(state.cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(state.topic), state.sub)
    back = [subscriber.receive(5000)]
    assert back[0] is not None and back[0].getJMSMessageID() == state.message_id, "the message must come back"
    assert receive_texts(subscriber) == [], "exactly once"
    subscriber.close()
    session.unsubscribe(state.sub)
    _assert_redelivered(back[0], "after the restart")


@restart_scenario(
    "ack.acknowledged-never-back-after-restart",
    category=CAT,
    rule="Acknowledged messages never come back, also after a restart (raw probe of the queue too)",
    section="JMS 1.1 §4.4.11, §4.10 [3.1 §6.2.10]",
)
def acked_never_back(ctx: Context) -> Held:
    queue = ctx.name("q")
    send_texts(ctx.connect(), queue, ["acked-1", "acked-2", "rest"], mode=DeliveryMode.PERSISTENT)
    session = ctx.connect().createSession(False, Session.CLIENT_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(queue))
    _, second = receive_n(consumer, 2)
    second.acknowledge()
    session.close()
    return Held(queue, "")


@acked_never_back.verify
def _acked_never_back(ctx: Context, state: Held) -> None:
    try:
        held = ctx.probe.queue_bodies(state.queue)
    except ProbeUnavailable as exc:
        ctx.note(f"raw probe skipped: {exc}")
    else:
        assert held == ["rest"], f"raw probe: the queue holds {held}"
    assert drain_texts(ctx.connect(), state.queue, 1000) == ["rest"]


@scenario(
    "ack.durable-close-redelivers-flagged",
    category=CAT,
    rule="A durable-subscription message left unacknowledged when its session closes comes back flagged",
    section=f"{SEC}; {REDELIVERY}",
)
def durable_close(ctx: Context) -> None:
    cid, topic, sub = ctx.client_id(), ctx.name("t"), ctx.name("s")
    session = ctx.connect(cid).createSession(False, Session.CLIENT_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(topic), sub)
    publish(ctx.connect(), topic, ["held"])
    first = subscriber.receive(5000)
    assert text_of(first) == "held"
    connection = session.connection
    session.close()
    reader = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    back = reader.createDurableSubscriber(reader.createTopic(topic), sub)
    message = back.receive(5000)
    assert text_of(message) == "held", "the unacknowledged message must come back"
    _assert_redelivered(message, "after the session closed")
    message.acknowledge()  # type: ignore[union-attr]

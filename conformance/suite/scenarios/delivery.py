"""Delivery mode x durability x restart: the reliability table of JMS 1.1 §4.10 [3.1 §9.1], cell by cell."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from jmslike import DeliveryMode, Session
from jmslike.conformance.suite import Context, restart_scenario, scenario
from jmslike.conformance.suite.helpers import (
    drain,
    drain_texts,
    publish,
    receive_all,
    receive_texts,
    send_texts,
    text_of,
)

CAT = "delivery"
SEC = "JMS 1.1 §4.10, §6.15 [3.1 §9.1, §4.2.11]"
P, NP = DeliveryMode.PERSISTENT, DeliveryMode.NON_PERSISTENT


@dataclass
class QueueState:
    queue: str
    texts: list[str] = field(default_factory=list)


@dataclass
class DurableState:
    cid: str
    topic: str
    sub: str
    texts: list[str] = field(default_factory=list)


def _durable(ctx: Context) -> DurableState:
    state = DurableState(ctx.client_id(), ctx.name("t"), ctx.name("s"))
    session = ctx.connect(state.cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(state.topic), state.sub).close()
    return state


def _durable_texts(ctx: Context, state: DurableState, wait_ms: int = 1000) -> list[str]:
    connection = ctx.connect(state.cid)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(state.topic), state.sub)
    texts = receive_texts(subscriber, wait_ms)
    subscriber.close()
    session.unsubscribe(state.sub)
    return texts


def _at_most_once(texts: list[str], sent: list[str]) -> None:
    dups = [t for t, n in Counter(texts).items() if n > 1]
    assert not dups, f"NON_PERSISTENT messages delivered more than once: {dups}"
    unexpected = [t for t in texts if t not in sent]
    assert not unexpected, f"unexpected messages: {unexpected}"


# -- queue, PERSISTENT / NON_PERSISTENT ---------------------------------------------------------------


@restart_scenario(
    "delivery.queue-persistent-survives",
    category=CAT,
    rule="PERSISTENT messages on a queue are delivered once and only once through a restart",
    section=SEC,
    quick=True,
)
def queue_persistent(ctx: Context) -> QueueState:
    state = QueueState(ctx.name("q"), [f"p{i}" for i in range(5)])
    send_texts(ctx.connect(), state.queue, state.texts, mode=P)
    return state


@queue_persistent.verify
def _queue_persistent(ctx: Context, state: QueueState) -> None:
    assert drain_texts(ctx.connect(), state.queue, 1000) == state.texts


@restart_scenario(
    "delivery.queue-nonpersistent-at-most-once",
    category=CAT,
    rule="NON_PERSISTENT messages on a queue may be lost by a restart but are never duplicated",
    section=SEC,
)
def queue_np(ctx: Context) -> QueueState:
    state = QueueState(ctx.name("q"), [f"np{i}" for i in range(5)])
    send_texts(ctx.connect(), state.queue, state.texts, mode=NP)
    return state


@queue_np.verify
def _queue_np(ctx: Context, state: QueueState) -> None:
    texts = drain_texts(ctx.connect(), state.queue, 1000)
    _at_most_once(texts, state.texts)
    if texts:
        ctx.note(f"{len(texts)} of {len(state.texts)} NON_PERSISTENT messages survived the restart")


@restart_scenario(
    "delivery.default-mode-persistent-survives",
    category=CAT,
    rule="A producer's default delivery mode is PERSISTENT, so a default send survives a restart",
    section="JMS 1.1 §3.4.2, §4.10 [3.1 §3.4.2]",
)
def default_persistent(ctx: Context) -> QueueState:
    state = QueueState(ctx.name("q"), ["default-mode"])
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createQueue(state.queue))
    assert producer.getDeliveryMode() == P, "a producer must default to PERSISTENT"
    producer.send(session.createTextMessage("default-mode"))
    return state


@default_persistent.verify
def _default_persistent(ctx: Context, state: QueueState) -> None:
    got = drain(ctx.connect(), state.queue, 1000)
    assert [text_of(m) for m in got] == state.texts
    assert got[0].getJMSDeliveryMode() == P


@restart_scenario(
    "delivery.confirmed-before-kill-not-lost",
    category=CAT,
    rule="A PERSISTENT send confirmed just before the broker goes down is not lost",
    section=SEC,
    quick=True,
)
def confirmed_before_kill(ctx: Context) -> QueueState:
    state = QueueState(ctx.name("q"), [f"c{i}" for i in range(200)])
    send_texts(ctx.connect(), state.queue, state.texts, mode=P)
    return state


@confirmed_before_kill.verify
def _confirmed_before_kill(ctx: Context, state: QueueState) -> None:
    texts = drain_texts(ctx.connect(), state.queue, 1000)
    missing = [t for t in state.texts if t not in texts]
    assert not missing, f"{len(missing)} confirmed PERSISTENT messages lost, first {missing[:5]}"
    assert texts == state.texts, "each exactly once, in order"


@restart_scenario(
    "delivery.nonpersistent-never-duplicated",
    category=CAT,
    rule="NON_PERSISTENT messages already consumed are never delivered again after a restart",
    section=SEC,
)
def np_never_dup(ctx: Context) -> QueueState:
    state = QueueState(ctx.name("q"), [f"np{i}" for i in range(6)])
    connection = ctx.connect()
    send_texts(connection, state.queue, state.texts, mode=NP)
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(state.queue))
    got = [consumer.receive(5000) for _ in range(3)]
    assert [text_of(m) for m in got] == state.texts[:3]
    assert got[-1] is not None
    got[-1].acknowledge()
    session.close()
    return state


@np_never_dup.verify
def _np_never_dup(ctx: Context, state: QueueState) -> None:
    texts = drain_texts(ctx.connect(), state.queue, 1000)
    again = [t for t in texts if t in state.texts[:3]]
    assert not again, f"acknowledged NON_PERSISTENT messages came back: {again}"
    _at_most_once(texts, state.texts[3:])


@restart_scenario(
    "delivery.queue-mixed-backlog",
    category=CAT,
    rule="A mixed backlog on a queue: every PERSISTENT message survives in order; NON_PERSISTENT at most once",
    section=SEC,
)
def queue_mixed(ctx: Context) -> QueueState:
    state = QueueState(ctx.name("q"))
    connection = ctx.connect()
    for i in range(10):
        mode = P if i % 2 == 0 else NP
        text = f"{'p' if mode == P else 'np'}{i}"
        send_texts(connection, state.queue, [text], mode=mode)
        state.texts.append(text)
    return state


@queue_mixed.verify
def _queue_mixed(ctx: Context, state: QueueState) -> None:
    texts = drain_texts(ctx.connect(), state.queue, 1000)
    persistent = [t for t in state.texts if t.startswith("p")]
    assert [t for t in texts if t.startswith("p")] == persistent
    _at_most_once([t for t in texts if t.startswith("np")], state.texts)


# -- durable subscription, PERSISTENT / NON_PERSISTENT ------------------------------------------------


@restart_scenario(
    "delivery.durable-persistent-survives",
    category=CAT,
    rule="PERSISTENT messages retained for an inactive durable subscription survive a restart",
    section=SEC,
)
def durable_persistent(ctx: Context) -> DurableState:
    state = _durable(ctx)
    state.texts = ["dp1", "dp2", "dp3"]
    publish(ctx.connect(), state.topic, state.texts, mode=P)
    return state


@durable_persistent.verify
def _durable_persistent(ctx: Context, state: DurableState) -> None:
    assert _durable_texts(ctx, state) == state.texts


@restart_scenario(
    "delivery.durable-nonpersistent-at-most-once",
    category=CAT,
    rule="NON_PERSISTENT messages for a durable subscription may be lost by a restart, never duplicated",
    section=SEC,
)
def durable_np(ctx: Context) -> DurableState:
    state = _durable(ctx)
    state.texts = ["dnp1", "dnp2", "dnp3"]
    publish(ctx.connect(), state.topic, state.texts, mode=NP)
    return state


@durable_np.verify
def _durable_np(ctx: Context, state: DurableState) -> None:
    _at_most_once(_durable_texts(ctx, state), state.texts)


@restart_scenario(
    "delivery.durable-mixed-backlog",
    category=CAT,
    rule="A mixed backlog of a durable subscription: PERSISTENT all in order, NON_PERSISTENT at most once",
    section=SEC,
)
def durable_mixed(ctx: Context) -> DurableState:
    state = _durable(ctx)
    connection = ctx.connect()
    for i in range(8):
        mode = P if i % 2 == 0 else NP
        text = f"{'p' if mode == P else 'np'}{i}"
        publish(connection, state.topic, [text], mode=mode)
        state.texts.append(text)
    return state


@durable_mixed.verify
def _durable_mixed(ctx: Context, state: DurableState) -> None:
    texts = _durable_texts(ctx, state)
    assert [t for t in texts if t.startswith("p")] == [t for t in state.texts if t.startswith("p")]
    _at_most_once([t for t in texts if t.startswith("np")], state.texts)


# -- non-durable subscriptions ----------------------------------------------------------------------


@scenario(
    "delivery.nondurable-once-while-exists",
    category=CAT,
    rule="A non-durable subscriber gets each message, PERSISTENT or not, exactly once while it exists",
    section=SEC,
    quick=True,
)
def nondurable_once(ctx: Context) -> None:
    topic = ctx.name("t")
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createConsumer(session.createTopic(topic))
    publisher = ctx.connect()
    publish(publisher, topic, ["p1", "p2"], mode=P)
    publish(publisher, topic, ["np1", "np2"], mode=NP)
    assert receive_texts(subscriber) == ["p1", "p2", "np1", "np2"]


@restart_scenario(
    "delivery.nondurable-nothing-after-restart",
    category=CAT,
    rule="A non-durable subscription does not outlive the provider: nothing from before a restart arrives",
    section=SEC,
)
def nondurable_restart(ctx: Context) -> QueueState:
    state = QueueState(ctx.name("t"))
    session = ctx.connect().createSession(False, Session.CLIENT_ACKNOWLEDGE)
    session.createConsumer(session.createTopic(state.queue))
    publish(ctx.connect(), state.queue, ["before-restart"], mode=P)
    return state


@nondurable_restart.verify
def _nondurable_restart(ctx: Context, state: QueueState) -> None:
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createConsumer(session.createTopic(state.queue))
    assert receive_texts(subscriber) == []
    publish(ctx.connect(), state.queue, ["after-restart"])
    assert receive_texts(subscriber) == ["after-restart"]


@scenario(
    "delivery.delivery-mode-header",
    category=CAT,
    rule="A received message carries the delivery mode it was sent with (JMSDeliveryMode)",
    section="JMS 1.1 §3.4.2 [3.1 §3.4.2]",
)
def mode_header(ctx: Context) -> None:
    queue = ctx.name("q")
    connection = ctx.connect()
    send_texts(connection, queue, ["p"], mode=P)
    send_texts(connection, queue, ["np"], mode=NP)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    got = receive_all(session.createConsumer(session.createQueue(queue)))
    assert [(text_of(m), m.getJMSDeliveryMode()) for m in got] == [("p", P), ("np", NP)]

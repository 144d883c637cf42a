"""Durable subscriptions: lifecycle and identity (JMS 1.1 §6.11.1 [Jakarta Messaging 3.1 §8.3.3])."""

from __future__ import annotations

from dataclasses import dataclass

from jmslike import (
    DeliveryMode,
    IllegalStateException,
    InvalidDestinationException,
    JMSException,
    Session,
)
from jmslike.conformance.suite import Context, restart_scenario, scenario
from jmslike.conformance.suite.helpers import (
    expect_raises,
    publish,
    receive_texts,
    text_of,
)
from jmslike.conformance.suite.probe import ProbeUnavailable

CAT = "durable"
SEC = "JMS 1.1 §6.11.1 [3.1 §8.3.3]"
RECEIVE_MS = 5000


@scenario(
    "durable.receive-while-active",
    category=CAT,
    rule="An active durable subscriber receives what is published to its topic",
    section=SEC,
    quick=True,
)
def receive_while_active(ctx: Context) -> None:
    topic = ctx.name("t")
    session = ctx.connect(ctx.client_id()).createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(topic), ctx.name("s"))
    publish(ctx.connect(), topic, ["one", "two"])
    assert receive_texts(subscriber) == ["one", "two"]


@scenario(
    "durable.retain-while-inactive",
    category=CAT,
    rule="A durable subscription retains messages published while it has no active subscriber",
    section=SEC,
    quick=True,
)
def retain_while_inactive(ctx: Context) -> None:
    topic, sub = ctx.name("t"), ctx.name("s")
    session = ctx.connect(ctx.client_id()).createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(topic), sub).close()
    publish(ctx.connect(), topic, ["away-1", "away-2"])
    back = session.createDurableSubscriber(session.createTopic(topic), sub)
    assert receive_texts(back) == ["away-1", "away-2"]


@scenario(
    "durable.nondurable-misses-while-inactive",
    category=CAT,
    rule="A non-durable subscriber gets nothing published while it did not exist",
    section="JMS 1.1 §6.11 [3.1 §8.3.1]",
)
def nondurable_misses(ctx: Context) -> None:
    topic = ctx.name("t")
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createConsumer(session.createTopic(topic)).close()
    publish(ctx.connect(), topic, ["missed"])
    again = session.createConsumer(session.createTopic(topic))
    assert receive_texts(again) == []
    publish(ctx.connect(), topic, ["seen"])
    assert receive_texts(again) == ["seen"]


@scenario(
    "durable.unsubscribe-deletes-backlog",
    category=CAT,
    rule="unsubscribe deletes the subscription and its backlog (checked with a raw STOMP probe too)",
    section=SEC,
)
def unsubscribe_deletes(ctx: Context) -> None:
    topic, sub, cid = ctx.name("t"), ctx.name("s"), ctx.client_id()
    connection = ctx.connect(cid)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(topic), sub).close()
    publish(ctx.connect(), topic, ["backlog"])
    session.unsubscribe(sub)
    publish(ctx.connect(), topic, ["after-delete"])
    again = session.createDurableSubscriber(session.createTopic(topic), sub)
    assert receive_texts(again) == [], "a re-created subscription must start empty"
    again.close()
    session.unsubscribe(sub)
    connection.close()
    try:
        held = ctx.probe.durable_backlog(cid, topic, sub)
    except ProbeUnavailable as exc:
        ctx.note(f"raw probe skipped: {exc}")
        return
    assert held == [], f"raw probe: the deleted subscription still holds {held}"


@dataclass
class Deleted:
    cid: str
    topic: str
    sub: str


@restart_scenario(
    "durable.unsubscribe-stays-deleted",
    category=CAT,
    rule="A deleted durable subscription stays deleted across a broker restart (raw probe)",
    section=SEC,
    quick=True,
)
def stays_deleted(ctx: Context) -> Deleted:
    state = Deleted(ctx.client_id(), ctx.name("t"), ctx.name("s"))
    session = ctx.connect(state.cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(state.topic), state.sub).close()
    publish(ctx.connect(), state.topic, ["before-delete"])
    session.unsubscribe(state.sub)
    publish(ctx.connect(), state.topic, ["after-delete"])
    return state


@stays_deleted.verify
def _stays_deleted(ctx: Context, state: Deleted) -> None:
    try:
        held = ctx.probe.durable_backlog(state.cid, state.topic, state.sub)
    except ProbeUnavailable as exc:
        ctx.note(f"raw probe skipped: {exc}")
        session = ctx.connect(state.cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
        expect_raises(
            InvalidDestinationException, lambda: session.unsubscribe(state.sub), "unsubscribe of deleted"
        )
        return
    assert held == [], f"the deleted subscription came back after the restart holding {held}"


@scenario(
    "durable.unsubscribe-while-active-fails",
    category=CAT,
    rule="unsubscribe while a subscriber is active fails, and the subscription survives",
    section=SEC,
)
def unsubscribe_active(ctx: Context) -> None:
    topic, sub = ctx.name("t"), ctx.name("s")
    session = ctx.connect(ctx.client_id()).createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(topic), sub)
    expect_raises(
        (IllegalStateException, JMSException), lambda: session.unsubscribe(sub), "unsubscribe while active"
    )
    publish(ctx.connect(), topic, ["still-here"])
    assert text_of(subscriber.receive(RECEIVE_MS)) == "still-here"
    subscriber.close()
    session.unsubscribe(sub)


@scenario(
    "durable.unsubscribe-with-unacked-fails",
    category=CAT,
    rule="unsubscribe while a received message is unacknowledged is an error",
    section=SEC,
)
def unsubscribe_unacked(ctx: Context) -> None:
    topic, sub = ctx.name("t"), ctx.name("s")
    session = ctx.connect(ctx.client_id()).createSession(False, Session.CLIENT_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(topic), sub)
    publish(ctx.connect(), topic, ["unacked"])
    message = subscriber.receive(RECEIVE_MS)
    assert message is not None
    subscriber.close()
    expect_raises(
        (IllegalStateException, JMSException), lambda: session.unsubscribe(sub), "unsubscribe with unacked"
    )
    message.acknowledge()
    session.unsubscribe(sub)


@scenario(
    "durable.second-consumer-fails",
    category=CAT,
    rule="A second active consumer on the same unshared durable subscription raises JMSException",
    section=SEC,
)
def second_consumer(ctx: Context) -> None:
    topic, sub = ctx.name("t"), ctx.name("s")
    connection = ctx.connect(ctx.client_id())
    first = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    other = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = first.createDurableSubscriber(first.createTopic(topic), sub)
    expect_raises(
        JMSException, lambda: other.createDurableSubscriber(other.createTopic(topic), sub), "second consumer"
    )
    publish(ctx.connect(), topic, ["to-the-first"])
    assert text_of(subscriber.receive(RECEIVE_MS)) == "to-the-first"


def _changed(ctx: Context, old: tuple[str, str | None, bool], new: tuple[str, str | None, bool]) -> None:
    """Create (topic, selector, noLocal) = ``old``, leave a backlog, re-create as ``new``: must be empty."""
    sub, cid = ctx.name("s"), ctx.client_id()
    session = ctx.connect(cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    old_topic, old_selector, old_nolocal = old
    session.createDurableSubscriber(session.createTopic(old_topic), sub, old_selector, old_nolocal).close()
    publish(ctx.connect(), old_topic, ["old-backlog"], properties={"kind": "a"})
    new_topic, new_selector, new_nolocal = new
    changed = session.createDurableSubscriber(session.createTopic(new_topic), sub, new_selector, new_nolocal)
    assert receive_texts(changed) == [], "the old subscription's backlog must go with it"
    publish(ctx.connect(), new_topic, ["new"], properties={"kind": "b"})
    assert receive_texts(changed) == ["new"], "the new subscription must receive under its new definition"


@scenario(
    "durable.change-selector-recreates",
    category=CAT,
    rule="Re-creating a durable subscription with another selector deletes the old one and its backlog",
    section=SEC,
)
def change_selector(ctx: Context) -> None:
    topic = ctx.name("t")
    _changed(ctx, (topic, "kind = 'a'", False), (topic, "kind = 'b'", False))


@scenario(
    "durable.change-topic-recreates",
    category=CAT,
    rule="Re-creating a durable subscription on another topic deletes the old one and its backlog",
    section=SEC,
)
def change_topic(ctx: Context) -> None:
    _changed(ctx, (ctx.name("t1"), None, False), (ctx.name("t2"), None, False))


@scenario(
    "durable.change-nolocal-recreates",
    category=CAT,
    rule="Re-creating a durable subscription with another noLocal deletes the old one and its backlog",
    section=SEC,
)
def change_nolocal(ctx: Context) -> None:
    topic = ctx.name("t")
    _changed(ctx, (topic, None, False), (topic, None, True))


@scenario(
    "durable.identity-client-id-and-name",
    category=CAT,
    rule="A durable subscription is identified by (client ID, name): same name, other client ID = other subscription",
    section=SEC,
)
def identity(ctx: Context) -> None:
    topic, sub = ctx.name("t"), ctx.name("s")
    first = ctx.connect(ctx.client_id("a")).createSession(False, Session.AUTO_ACKNOWLEDGE)
    second = ctx.connect(ctx.client_id("b")).createSession(False, Session.AUTO_ACKNOWLEDGE)
    a = first.createDurableSubscriber(first.createTopic(topic), sub)
    b = second.createDurableSubscriber(second.createTopic(topic), sub)
    publish(ctx.connect(), topic, ["both"])
    assert receive_texts(a) == ["both"]
    assert receive_texts(b) == ["both"]
    a.close()
    first.unsubscribe(sub)
    publish(ctx.connect(), topic, ["only-b"])
    assert receive_texts(b) == ["only-b"], "deleting (A, name) must not touch (B, name)"


@scenario(
    "durable.unknown-name-unsubscribe",
    category=CAT,
    rule="unsubscribe of a name that does not exist raises InvalidDestinationException",
    section=SEC,
)
def unknown_unsubscribe(ctx: Context) -> None:
    session = ctx.connect(ctx.client_id()).createSession(False, Session.AUTO_ACKNOWLEDGE)
    expect_raises(
        InvalidDestinationException, lambda: session.unsubscribe(ctx.name("never")), "unsubscribe unknown"
    )


@scenario(
    "durable.nolocal",
    category=CAT,
    rule="With noLocal, messages published by the subscriber's own connection are not added",
    section="JMS 1.1 §6.11.1, §6.10 [3.1 §8.3.3]",
)
def no_local(ctx: Context) -> None:
    topic, sub = ctx.name("t"), ctx.name("s")
    connection = ctx.connect(ctx.client_id())
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(topic), sub, None, True)
    publish(connection, topic, ["mine"])
    publish(ctx.connect(), topic, ["theirs"])
    assert receive_texts(subscriber) == ["theirs"]


@dataclass
class Durable:
    cid: str
    topic: str
    sub: str


@restart_scenario(
    "durable.survives-restart",
    category=CAT,
    rule="A durable subscription and its PERSISTENT backlog survive a broker restart",
    section="JMS 1.1 §4.10, §6.11.1 [3.1 §9.1]",
    quick=True,
)
def survives_restart(ctx: Context) -> Durable:
    state = Durable(ctx.client_id(), ctx.name("t"), ctx.name("s"))
    session = ctx.connect(state.cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(state.topic), state.sub).close()
    publish(ctx.connect(), state.topic, ["kept-1", "kept-2"], mode=DeliveryMode.PERSISTENT)
    return state


@survives_restart.verify
def _survives_restart(ctx: Context, state: Durable) -> None:
    session = ctx.connect(state.cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(state.topic), state.sub)
    assert receive_texts(subscriber, 1000) == ["kept-1", "kept-2"]
    publish(ctx.connect(), state.topic, ["after"])
    assert receive_texts(subscriber) == ["after"], (
        "the subscription must still be subscribed after the restart"
    )
    subscriber.close()
    session.unsubscribe(state.sub)

"""Subscription management beyond JMS (docs/subscriptions.md, design mq-pubsub.md): resume by name,
close keeping or removing, administration, per-topic policy, expiry, persistence-filtered subscriptions.

Not JMS 1.1 rules but the queue-manager behaviour jmslike promises on every broker; the "section" column
names the design document instead of the spec.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from jmslike import DeliveryMode, IllegalStateException, InvalidDestinationException, Session
from jmslike import selector as selectors
from jmslike.admin import Admin
from jmslike.conformance.suite import Context, restart_scenario, scenario
from jmslike.conformance.suite.helpers import expect_raises, publish, receive_texts, wait_until
from jmslike.conformance.suite.probe import ProbeUnavailable
from jmslike.subscriptions import durable_selector

CAT = "subscriptions"
SEC = "mq-pubsub.md (subscription lifecycle)"
MODE_FILTER = "JMSDeliveryMode = 'PERSISTENT'"
P, NP = DeliveryMode.PERSISTENT, DeliveryMode.NON_PERSISTENT


def _admin(ctx: Context) -> Admin:
    admin = Admin(ctx.url(), ctx.broker.user, ctx.broker.password)
    ctx.defer(admin.close)
    return admin


@scenario(
    "subs.resume-by-name",
    category=CAT,
    rule="A durable subscription is resumed by name alone: same topic, selector and backlog",
    section=SEC,
    quick=True,
)
def resume_by_name(ctx: Context) -> None:
    cid, topic, sub = ctx.client_id(), ctx.name("t"), ctx.name("s")
    connection = ctx.connect(cid)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(topic), sub, "n = 1").close()
    publish(ctx.connect(), topic, ["match"], properties={"n": 1})
    publish(ctx.connect(), topic, ["other"], properties={"n": 2})
    connection.close()
    session = ctx.connect(cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    resumed = session.resumeDurableSubscriber(sub)
    assert resumed.getMessageSelector() == "n = 1", resumed.getMessageSelector()
    assert receive_texts(resumed) == ["match"]
    resumed.close(removeSubscription=True)


@scenario(
    "subs.resume-unknown",
    category=CAT,
    rule="Resuming a name that does not exist is InvalidDestinationException",
    section=SEC,
    quick=True,
)
def resume_unknown(ctx: Context) -> None:
    session = ctx.connect(ctx.client_id()).createSession(False, Session.AUTO_ACKNOWLEDGE)
    expect_raises(InvalidDestinationException, lambda: session.resumeDurableSubscriber("nope"), "resume")


@scenario(
    "subs.close-keep-or-remove",
    category=CAT,
    rule="close() keeps a durable subscription; close(removeSubscription=True) deletes it and its backlog",
    section=SEC,
    quick=True,
)
def close_keep_or_remove(ctx: Context) -> None:
    cid, topic, sub = ctx.client_id(), ctx.name("t"), ctx.name("s")
    session = ctx.connect(cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(topic), sub).close()
    publish(ctx.connect(), topic, ["kept"])
    subscriber = session.resumeDurableSubscriber(sub)
    assert receive_texts(subscriber) == ["kept"]
    publish(ctx.connect(), topic, ["dropped-with-it"])
    subscriber.close(removeSubscription=True)
    expect_raises(InvalidDestinationException, lambda: session.resumeDurableSubscriber(sub), "resume")
    again = session.createDurableSubscriber(session.createTopic(topic), sub)
    assert receive_texts(again) == []
    again.close(removeSubscription=True)


@scenario(
    "subs.admin-list-and-delete",
    category=CAT,
    rule="Administration lists a subscription and deletes it by (client ID, name) from another connection",
    section=SEC,
)
def admin_list_and_delete(ctx: Context) -> None:
    cid, topic, sub = ctx.client_id(), ctx.name("t"), ctx.name("s")
    owner = ctx.connect(cid)
    session = owner.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(topic), sub, "n = 1")
    admin = _admin(ctx)
    rows = [r for r in admin.subscriptions() if (r.clientId, r.name) == (cid, sub)]
    assert len(rows) == 1 and (rows[0].topic, rows[0].selector, rows[0].durable) == (topic, "n = 1", True)
    expect_raises(IllegalStateException, lambda: admin.deleteSubscription(cid, sub), "delete while in use")
    owner.close()
    admin.deleteSubscription(cid, sub)
    assert not [r for r in admin.subscriptions() if (r.clientId, r.name) == (cid, sub)]
    session = ctx.connect(cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    expect_raises(InvalidDestinationException, lambda: session.resumeDurableSubscriber(sub), "resume deleted")


@scenario(
    "subs.topic-refuses-durable",
    category=CAT,
    rule="A topic configured to refuse durable subscriptions refuses them (InvalidDestinationException)",
    section=SEC,
    quick=True,
)
def topic_refuses_durable(ctx: Context) -> None:
    topic = ctx.name("t")
    session = ctx.connect(ctx.client_id(), no_durable_topics=topic).createSession(
        False, Session.AUTO_ACKNOWLEDGE
    )
    expect_raises(
        InvalidDestinationException,
        lambda: session.createDurableSubscriber(session.createTopic(topic), "s"),
        "durable subscription on a refusing topic",
    )


@scenario(
    "subs.expiry",
    category=CAT,
    rule="A durable subscription inactive for longer than its expiry is removed with its backlog",
    section=SEC,
)
def expiry(ctx: Context) -> None:
    cid, topic, sub = ctx.client_id(), ctx.name("t"), ctx.name("s")
    connection = ctx.connect(cid)
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(topic), sub, expiry_ms=1500).close()
    publish(ctx.connect(), topic, ["stale"])
    connection.close()
    admin = _admin(ctx)

    def gone() -> bool:
        admin.sweepExpired()  # where jmslike enforces expiry; RabbitMQ removes the queue itself
        return not [r for r in admin.subscriptions() if (r.clientId, r.name) == (cid, sub)]

    wait_until(gone, 20, "the expired subscription to be removed", interval_s=0.3)
    session = ctx.connect(cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    expect_raises(InvalidDestinationException, lambda: session.resumeDurableSubscriber(sub), "resume expired")


@scenario(
    "subs.inactive-selector",
    category=CAT,
    rule="A persistence-filtered subscription gets everything while attached, only qualifying messages "
    "published while away, each exactly once",
    section=SEC,
    quick=True,
)
def inactive_selector(ctx: Context) -> None:
    cid, topic, sub = ctx.client_id(), ctx.name("t"), ctx.name("s")
    session = ctx.connect(cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(
        session.createTopic(topic), sub, inactiveSelector=MODE_FILTER
    )
    publisher = ctx.connect()
    publish(publisher, topic, ["c-p"], mode=P)
    publish(publisher, topic, ["c-np"], mode=NP)
    assert Counter(receive_texts(subscriber)) == Counter(["c-p", "c-np"])
    subscriber.close()
    publish(publisher, topic, ["a-p"], mode=P)
    publish(publisher, topic, ["a-np"], mode=NP)
    resumed = session.resumeDurableSubscriber(sub)
    assert receive_texts(resumed) == ["a-p"]
    resumed.close(removeSubscription=True)


@scenario(
    "subs.inactive-not-stored",
    category=CAT,
    rule="While a persistence-filtered subscription has no subscriber, non-qualifying messages are not "
    "stored for it (raw probe of the broker)",
    section=SEC,
)
def inactive_not_stored(ctx: Context) -> None:
    cid, topic, sub = ctx.client_id(), ctx.name("t"), ctx.name("s")
    owner = ctx.connect(cid)
    session = owner.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(topic), sub, inactiveSelector=MODE_FILTER).close()
    owner.close()  # the probe needs the client ID
    publish(ctx.connect(), topic, ["np1", "np2"], mode=NP)
    publish(ctx.connect(), topic, ["p"], mode=P)
    broker_selector = selectors.parse(
        durable_selector(None, selectors.parse(MODE_FILTER).render()) or ""
    ).render()
    try:
        held = ctx.probe.durable_backlog(cid, topic, sub, selector=broker_selector)
    except ProbeUnavailable as exc:
        ctx.require(False, f"no raw probe: {exc}")
        return
    assert held == ["p"], f"the broker holds {held} for the subscription"


@dataclass
class Filtered:
    cid: str
    topic: str
    sub: str


@restart_scenario(
    "subs.inactive-selector-restart",
    category=CAT,
    rule="A persistence-filtered subscription and its qualifying backlog survive a broker restart; "
    "non-qualifying messages published while away never arrive",
    section=SEC,
)
def inactive_selector_restart(ctx: Context) -> Filtered:
    state = Filtered(ctx.client_id(), ctx.name("t"), ctx.name("s"))
    session = ctx.connect(state.cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(
        session.createTopic(state.topic), state.sub, inactiveSelector=MODE_FILTER
    ).close()
    publish(ctx.connect(), state.topic, ["p1"], mode=P)
    publish(ctx.connect(), state.topic, ["np1"], mode=NP)
    publish(ctx.connect(), state.topic, ["p2"], mode=P)
    return state


@inactive_selector_restart.verify
def _inactive_selector_restart(ctx: Context, state: Filtered) -> None:
    session = ctx.connect(state.cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    resumed = session.resumeDurableSubscriber(state.sub)
    assert receive_texts(resumed, 1500) == ["p1", "p2"]
    publish(ctx.connect(), state.topic, ["live-np"], mode=NP)
    assert receive_texts(resumed) == ["live-np"]
    resumed.close(removeSubscription=True)

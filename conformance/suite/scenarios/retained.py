"""Retained publications and request update (design/mq-pubsub.md; docs/retained.md), per broker.

Not JMS: the MQ-style promises jmslike adds on every broker. A retained send keeps the latest publication
per topic (durably when PERSISTENT); a subscription "on request only" gets nothing by itself; the owner's
``requestUpdate()`` delivers the retained publication of every matching topic that passes the selector,
marked with the property ``JMS_jmslike_Retained``, or raises NoRetainedMessageException.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

from jmslike import (
    Connection,
    DeliveryMode,
    IllegalStateException,
    JMSSecurityException,
    MessageConsumer,
    NoRetainedMessageException,
    NotYetInAioException,
    Session,
)
from jmslike.conformance.suite import Context, restart_scenario, scenario
from jmslike.conformance.suite.helpers import expect_raises, publish, receive_all, text_of
from jmslike.conformance.suite.probe import ProbeUnavailable
from jmslike.contract import RETAINED_STORE_PREFIX as STORE_PREFIX
from jmslike.retained import ON_REQUEST_PREFIX, RETAINED_PROPERTY

CAT = "retained"
SEC = "MQ request update (docs/retained.md)"
P, NP = DeliveryMode.PERSISTENT, DeliveryMode.NON_PERSISTENT
QUIET_MS = 500


def retain(
    connection: Connection,
    topic: str,
    text: str | None,
    mode: int = P,
    properties: dict[str, object] | None = None,
) -> None:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    try:
        message = session.createTextMessage(text)
        for key, value in (properties or {}).items():
            message.setObjectProperty(key, value)
        session.createProducer(session.createTopic(topic)).send(message, mode, 4, 0, retain=True)
    finally:
        session.close()


def on_request(connection: Connection, topic: str, selector: str | None = None) -> MessageConsumer:
    session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
    return session.createConsumer(session.createTopic(topic), selector, onRequestOnly=True)


def updates(consumer: MessageConsumer) -> dict[str, str]:
    """requestUpdate(); {topic: text} of what arrived, each marked retained, as many as it said."""
    count = consumer.requestUpdate()
    got = receive_all(consumer, QUIET_MS)
    assert len(got) == count, f"requestUpdate() said {count}, {len(got)} arrived"
    for message in got:
        assert message.getBooleanProperty(RETAINED_PROPERTY), "a retained publication is not marked retained"
    return {str(m.getJMSDestination().name): text_of(m) for m in got}  # type: ignore[union-attr]


def no_update(consumer: MessageConsumer, what: str) -> None:
    expect_raises(NoRetainedMessageException, consumer.requestUpdate, what)


@scenario(
    "retained.retain-replace-clear",
    category=CAT,
    rule="The latest retained publication per topic is kept; a newer one replaces it; an empty body clears it",
    section=SEC,
    quick=True,
)
def retain_replace_clear(ctx: Context) -> None:
    topic = f"{ctx.name('t')}/State/LatestScore"
    key = topic.replace("/", ".")
    publisher = ctx.connect()
    subscriber = on_request(ctx.connect(), topic)
    retain(publisher, topic, "1-0")
    retain(publisher, topic, "2-0")
    assert updates(subscriber) == {key: "2-0"}
    assert updates(subscriber) == {key: "2-0"}, "a request update must not consume the retained publication"
    retain(publisher, topic, "")
    no_update(subscriber, "request update after an empty-body retained publication")
    retain(publisher, topic, "3-0")
    assert updates(subscriber) == {key: "3-0"}
    try:
        held = ctx.probe.queue_bodies(STORE_PREFIX + key)
    except ProbeUnavailable as exc:
        ctx.note(f"raw probe skipped: {exc}")
        return
    assert len(held) == 1, f"the broker holds {len(held)} retained copies of the topic, not only the latest"


@scenario(
    "retained.wildcard-request-update",
    category=CAT,
    rule="Request update delivers the retained publication of every topic a wildcard subscription matches",
    section=SEC,
    quick=True,
)
def wildcard(ctx: Context) -> None:
    base = ctx.name("t")
    publisher = ctx.connect()
    for path in ["", "/A/Score", "/B/Score", "/A/Score/Detail"]:
        retain(publisher, base + path, path or "root")
    connection = ctx.connect()
    assert updates(on_request(connection, f"{base}/+/Score")) == {
        f"{base}.A.Score": "/A/Score",
        f"{base}.B.Score": "/B/Score",
    }
    assert sorted(updates(on_request(connection, f"{base}/#")).values()) == sorted(
        ["root", "/A/Score", "/B/Score", "/A/Score/Detail"]
    )


@scenario(
    "retained.selector-filters",
    category=CAT,
    rule="Request update delivers only retained publications that pass the subscription's selector",
    section=SEC,
)
def selector_filters(ctx: Context) -> None:
    base = ctx.name("t")
    publisher = ctx.connect()
    retain(publisher, f"{base}/one", "first", properties={"league": 1})
    retain(publisher, f"{base}/two", "second", properties={"league": 2})
    connection = ctx.connect()
    assert list(updates(on_request(connection, f"{base}/#", "league = 1")).values()) == ["first"]
    assert list(updates(on_request(connection, f"{base}/#", "league > 1")).values()) == ["second"]
    no_update(
        on_request(connection, f"{base}/#", "league = 9"), "request update with a selector no one passes"
    )


@scenario(
    "retained.no-retained-message",
    category=CAT,
    rule="Request update with no retained publication raises NoRetainedMessageException and delivers nothing",
    section=SEC,
    quick=True,
)
def no_retained(ctx: Context) -> None:
    subscriber = on_request(ctx.connect(), f"{ctx.name('t')}/#")
    no_update(subscriber, "request update on topics nothing was retained on")
    assert subscriber.receive(QUIET_MS) is None


@scenario(
    "retained.on-request-no-live-traffic",
    category=CAT,
    rule="A subscription on request only gets no live publications and builds nothing up (raw probe)",
    section=SEC,
)
def on_request_no_live(ctx: Context) -> None:
    topic = ctx.name("t")
    cid, sub = ctx.client_id(), ctx.name("s")
    owner = ctx.connect(cid)
    session = owner.createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(topic), sub, onRequestOnly=True).close()
    plain = on_request(owner, topic)
    publish(ctx.connect(), topic, ["live-1", "live-2"])
    retain(ctx.connect(), topic, "retained")
    back = session.createDurableSubscriber(session.createTopic(topic), sub, onRequestOnly=True)
    assert back.receive(QUIET_MS) is None, "the durable on-request-only subscription got live traffic"
    assert plain.receive(QUIET_MS) is None, "the on-request-only consumer got live traffic"
    assert updates(back) == {topic: "retained"}
    back.close()
    owner.close()
    try:
        held = ctx.probe.durable_backlog(cid, ON_REQUEST_PREFIX + topic, sub)
    except ProbeUnavailable as exc:
        ctx.note(f"raw probe skipped: {exc}")
        return
    assert held == [], f"the on-request-only subscription holds {held} on the broker"


@scenario(
    "retained.owner-only",
    category=CAT,
    rule="Only the subscription's owner gets its update; another client ID's same name is another subscription",
    section=SEC,
)
def owner_only(ctx: Context) -> None:
    topic, sub = ctx.name("t"), ctx.name("s")
    retain(ctx.connect(), topic, "v")
    mine = ctx.connect(ctx.client_id("a")).createSession(False, Session.AUTO_ACKNOWLEDGE)
    theirs = ctx.connect(ctx.client_id("b")).createSession(False, Session.AUTO_ACKNOWLEDGE)
    my_sub = mine.createDurableSubscriber(mine.createTopic(topic), sub, onRequestOnly=True)
    their_sub = theirs.createDurableSubscriber(theirs.createTopic(topic), sub, onRequestOnly=True)
    assert updates(their_sub) == {topic: "v"}
    assert my_sub.receive(QUIET_MS) is None, "another client's request update reached this subscription"
    # A handle of another client ID's subscription (jmslike never hands one out: forged) is refused.
    real = their_sub.spec
    their_sub.spec = dataclasses.replace(real, client_id="not-the-owner")
    expect_raises(JMSSecurityException, their_sub.requestUpdate, "request update by a non-owner")
    their_sub.spec = real
    my_sub.close()
    expect_raises(IllegalStateException, my_sub.requestUpdate, "request update on a closed subscriber")
    their_sub.close()
    mine.unsubscribe(sub)
    theirs.unsubscribe(sub)


@scenario(
    "retained.transacted-all-or-nothing",
    category=CAT,
    rule="In a transacted session the live publication and the retained copy commit or roll back together",
    section=SEC,
)
def transacted(ctx: Context) -> None:
    topic = ctx.name("t")
    connection = ctx.connect()
    live_session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    live = live_session.createConsumer(live_session.createTopic(topic))
    tx = connection.createSession(True, Session.SESSION_TRANSACTED)
    producer = tx.createProducer(tx.createTopic(topic))
    producer.send(tx.createTextMessage("rolled-back"), retain=True)
    tx.rollback()
    subscriber = on_request(ctx.connect(), topic)
    no_update(subscriber, "request update after a rolled-back retained send")
    producer.send(tx.createTextMessage("committed"), retain=True)
    tx.commit()
    assert updates(subscriber) == {topic: "committed"}
    assert [text_of(m) for m in receive_all(live, QUIET_MS)] == ["committed"]


@scenario(
    "retained.concurrent-publishers",
    category=CAT,
    rule="Concurrent retained publishers leave exactly one retained publication, one of theirs",
    section=SEC,
)
def concurrent(ctx: Context) -> None:
    topic = ctx.name("t")
    sent: list[str] = []
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            connection = ctx.connect()
            for i in range(8):
                retain(connection, topic, f"w{n}-{i}")
                sent.append(f"w{n}-{i}")
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    if errors and isinstance(errors[0], NotYetInAioException):
        raise errors[0]  # --api aio: the scenario cannot run there yet
    assert not errors, f"a publisher failed: {errors[0]!r}"
    result = updates(on_request(ctx.connect(), topic))
    assert len(result) == 1 and result[topic] in sent, result
    retain(ctx.connect(), topic, "final")
    assert updates(on_request(ctx.connect(), topic)) == {topic: "final"}


@dataclass
class RestartState:
    base: str
    cid: str
    sub: str


@restart_scenario(
    "retained.restart-keeps-persistent",
    category=CAT,
    rule="PERSISTENT retained publications survive a restart; NON_PERSISTENT ones (and what they replaced) do not",
    section=SEC,
    quick=True,
)
def restart_keeps(ctx: Context) -> RestartState:
    state = RestartState(ctx.name("t"), ctx.client_id(), ctx.name("s"))
    publisher = ctx.connect()
    retain(publisher, f"{state.base}/p", "persistent", P)
    retain(publisher, f"{state.base}/np", "non-persistent", NP)
    retain(publisher, f"{state.base}/replaced", "old", P)
    retain(publisher, f"{state.base}/replaced", "new-non-persistent", NP)
    retain(publisher, f"{state.base}/cleared", "gone", P)
    retain(publisher, f"{state.base}/cleared", "", P)
    tx = publisher.createSession(True, Session.SESSION_TRANSACTED)  # replaced within transactions
    producer = tx.createProducer(tx.createTopic(f"{state.base}/tx-replaced"))
    producer.send(tx.createTextMessage("tx-old"), P, 4, 0, retain=True)
    tx.commit()
    producer.send(tx.createTextMessage("tx-new"), NP, 4, 0, retain=True)
    tx.commit()
    assert len(updates(on_request(ctx.connect(), f"{state.base}/#"))) == 4
    return state


@restart_keeps.verify
def _restart_keeps(ctx: Context, state: RestartState) -> None:
    assert updates(on_request(ctx.connect(), f"{state.base}/#")) == {f"{state.base}.p": "persistent"}


@restart_scenario(
    "retained.on-request-durable-survives-restart",
    category=CAT,
    rule="A durable subscription on request only survives a restart and still gets its update",
    section=SEC,
)
def durable_survives(ctx: Context) -> RestartState:
    state = RestartState(ctx.name("t"), ctx.client_id(), ctx.name("s"))
    session = ctx.connect(state.cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(state.base), state.sub, onRequestOnly=True).close()
    retain(ctx.connect(), state.base, "kept", P)
    return state


@durable_survives.verify
def _durable_survives(ctx: Context, state: RestartState) -> None:
    session = ctx.connect(state.cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(
        session.createTopic(state.base), state.sub, onRequestOnly=True
    )
    assert updates(subscriber) == {state.base: "kept"}
    subscriber.close()
    session.unsubscribe(state.sub)  # it still existed: unknown names raise InvalidDestinationException

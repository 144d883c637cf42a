"""Message selectors (JMS 1.1 §3.8 [3.1 §3.8]): matching, header fields, syntax errors, durable filters."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from jmslike import DeliveryMode, InvalidSelectorException, JMSException, Session
from jmslike.conformance.suite import Context, restart_scenario, scenario
from jmslike.conformance.suite.helpers import (
    drain_texts,
    expect_raises,
    publish,
    receive_texts,
    send_texts,
)

CAT = "selectors"
SEC = "JMS 1.1 §3.8 [3.1 §3.8]"


@scenario(
    "sel.property-match",
    category=CAT,
    rule="A selector on properties delivers exactly the matching messages",
    section=SEC,
    quick=True,
)
def property_match(ctx: Context) -> None:
    topic = ctx.name("t")
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createConsumer(session.createTopic(topic), "color = 'red' AND size > 2")
    publisher = ctx.connect()
    publish(publisher, topic, ["red-3"], properties={"color": "red", "size": 3})
    publish(publisher, topic, ["red-1"], properties={"color": "red", "size": 1})
    publish(publisher, topic, ["blue-5"], properties={"color": "blue", "size": 5})
    publish(publisher, topic, ["none"])
    assert receive_texts(subscriber) == ["red-3"]


@scenario(
    "sel.header-fields",
    category=CAT,
    rule="Selectors see JMS header fields: JMSPriority, JMSType, JMSCorrelationID",
    section=SEC,
)
def header_fields(ctx: Context) -> None:
    topic = ctx.name("t")
    reader = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    consumer = reader.createConsumer(
        reader.createTopic(topic), "JMSPriority > 5 AND JMSType = 'order' AND JMSCorrelationID = 'c-1'"
    )
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    producer = session.createProducer(session.createTopic(topic))
    for text, priority, jms_type, corr in (
        ("a", 7, "order", "c-1"),
        ("b", 7, "other", "c-1"),
        ("c", 2, "order", "c-1"),
        ("d", 7, "order", "c-2"),
    ):
        message = session.createTextMessage(text)
        message.setJMSType(jms_type)
        message.setJMSCorrelationID(corr)
        producer.send(message, DeliveryMode.PERSISTENT, priority, 0)
    assert receive_texts(consumer) == ["a"]


@scenario(
    "sel.delivery-mode",
    category=CAT,
    rule="JMSDeliveryMode compares as 'PERSISTENT' / 'NON_PERSISTENT'",
    section=SEC,
)
def delivery_mode(ctx: Context) -> None:
    topic = ctx.name("t")
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createConsumer(session.createTopic(topic), "JMSDeliveryMode = 'NON_PERSISTENT'")
    publisher = ctx.connect()
    publish(publisher, topic, ["p"], mode=DeliveryMode.PERSISTENT)
    publish(publisher, topic, ["np"], mode=DeliveryMode.NON_PERSISTENT)
    assert receive_texts(subscriber) == ["np"]


@scenario(
    "sel.invalid-syntax",
    category=CAT,
    rule="An invalid selector is InvalidSelectorException when the consumer is created",
    section=SEC,
    quick=True,
)
def invalid(ctx: Context) -> None:
    session = ctx.connect(ctx.client_id()).createSession(False, Session.AUTO_ACKNOWLEDGE)
    topic = session.createTopic(ctx.name("t"))
    for text in ("color = ", "color === 'red'", "AND x", "x IN ()"):
        expect_raises(
            InvalidSelectorException, partial(session.createConsumer, topic, text), f"selector {text!r}"
        )
    expect_raises(
        InvalidSelectorException,
        lambda: session.createDurableSubscriber(topic, "s", "size >"),
        "durable selector",
    )


@scenario(
    "sel.queue-leaves-unmatched",
    category=CAT,
    rule="A selector on a queue leaves the non-matching messages for other consumers",
    section=SEC,
)
def queue_unmatched(ctx: Context) -> None:
    queue = ctx.name("q")
    connection = ctx.connect()
    send_texts(connection, queue, ["mine"], properties={"to": "me"})
    send_texts(connection, queue, ["yours"], properties={"to": "you"})
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    assert receive_texts(session.createConsumer(session.createQueue(queue), "to = 'me'")) == ["mine"]
    assert drain_texts(ctx.connect(), queue) == ["yours"]


@scenario(
    "sel.null-and-in",
    category=CAT,
    rule="IS NULL, IN, LIKE and BETWEEN select as SQL-92 says",
    section=SEC,
)
def null_and_in(ctx: Context) -> None:
    topic = ctx.name("t")
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    missing = session.createConsumer(session.createTopic(topic), "region IS NULL")
    listed = session.createConsumer(
        session.createTopic(topic), "region IN ('eu', 'us') AND code LIKE 'A%' AND n BETWEEN 1 AND 5"
    )
    publisher = ctx.connect()
    publish(publisher, topic, ["eu-A1-3"], properties={"region": "eu", "code": "A1", "n": 3})
    publish(publisher, topic, ["eu-B1-3"], properties={"region": "eu", "code": "B1", "n": 3})
    publish(publisher, topic, ["asia-A1-3"], properties={"region": "asia", "code": "A1", "n": 3})
    publish(publisher, topic, ["us-A2-9"], properties={"region": "us", "code": "A2", "n": 9})
    publish(publisher, topic, ["no-region"], properties={"code": "A1"})
    assert receive_texts(listed) == ["eu-A1-3"]
    assert receive_texts(missing) == ["no-region"]


@dataclass
class SelectorState:
    cid: str
    topic: str
    sub: str


@restart_scenario(
    "sel.durable-selector-across-restart",
    category=CAT,
    rule="A durable subscription keeps its selector across a restart (backlog and new messages)",
    section=f"{SEC}; JMS 1.1 §6.11.1",
)
def durable_selector(ctx: Context) -> SelectorState:
    state = SelectorState(ctx.client_id(), ctx.name("t"), ctx.name("s"))
    session = ctx.connect(state.cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    session.createDurableSubscriber(session.createTopic(state.topic), state.sub, "kind = 'keep'").close()
    publisher = ctx.connect()
    publish(publisher, state.topic, ["keep-1"], properties={"kind": "keep"})
    publish(publisher, state.topic, ["drop-1"], properties={"kind": "drop"})
    return state


@durable_selector.verify
def _durable_selector(ctx: Context, state: SelectorState) -> None:
    session = ctx.connect(state.cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(state.topic), state.sub, "kind = 'keep'")
    assert receive_texts(subscriber, 1000) == ["keep-1"]
    publisher = ctx.connect()
    publish(publisher, state.topic, ["drop-2"], properties={"kind": "drop"})
    publish(publisher, state.topic, ["keep-2"], properties={"kind": "keep"})
    assert receive_texts(subscriber) == ["keep-2"]
    subscriber.close()
    session.unsubscribe(state.sub)


def _filtered(ctx: Context, selector: str, messages: list[tuple[str, dict[str, object]]]) -> list[str]:
    """Publish ``messages`` (text, properties) to a fresh topic; return what ``selector`` lets through."""
    topic = ctx.name("t")
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    subscriber = session.createConsumer(session.createTopic(topic), selector)
    publisher = ctx.connect()
    for text, properties in messages:
        publish(publisher, topic, [text], properties=properties)
    return receive_texts(subscriber)


@scenario(
    "sel.like-escape",
    category=CAT,
    rule="LIKE with ESCAPE: the escaped '_' matches only itself, '%' any run of characters",
    section=SEC,
)
def like_escape(ctx: Context) -> None:
    got = _filtered(
        ctx,
        "code LIKE 'A\\_%' ESCAPE '\\'",
        [
            ("A_1", {"code": "A_1"}),
            ("AB1", {"code": "AB1"}),
            ("A_", {"code": "A_"}),
            ("xA_1", {"code": "xA_1"}),
        ],
    )
    assert got == ["A_1", "A_"], got


@scenario(
    "sel.arithmetic-between",
    category=CAT,
    rule="Arithmetic and BETWEEN over numeric properties (bounds inclusive)",
    section=SEC,
)
def arithmetic_between(ctx: Context) -> None:
    try:
        got = _filtered(ctx, "price * qty BETWEEN 10 AND 20", _PRICED)
    except JMSException as exc:
        raise AssertionError(f"publishing failed because of a subscriber's selector: {exc}") from exc
    assert got == ["5x2"], got


_PRICED: list[tuple[str, dict[str, object]]] = [
    ("5x2", {"price": 5, "qty": 2}),
    ("3x3", {"price": 3, "qty": 3}),
    ("7x3", {"price": 7, "qty": 3}),
    ("no-qty", {"price": 50}),
]


@scenario(
    "sel.quoted-user-string",
    category=CAT,
    rule="A selector built from a user string with quote_string matches exactly that string, quotes included",
    section=SEC,
)
def quoted_user_string(ctx: Context) -> None:
    from jmslike.selector import quote_string

    name = "O'Brien' OR '1'='1"
    got = _filtered(
        ctx,
        "owner = " + quote_string(name),
        [("exact", {"owner": name}), ("other", {"owner": "O'Brien"}), ("none", {})],
    )
    assert got == ["exact"], got


@scenario(
    "sel.three-valued-not",
    category=CAT,
    rule="NOT of UNKNOWN is UNKNOWN: a message without the property matches neither p = x nor NOT p = x",
    section=SEC,
)
def three_valued_not(ctx: Context) -> None:
    messages: list[tuple[str, dict[str, object]]] = [
        ("red", {"color": "red"}),
        ("blue", {"color": "blue"}),
        ("none", {}),
    ]
    assert _filtered(ctx, "NOT (color = 'red')", messages) == ["blue"]
    assert _filtered(ctx, "color IS NULL", messages) == ["none"]


@scenario(
    "sel.typed-numeric-compare",
    category=CAT,
    rule="An int property compares numerically with a decimal literal (10 > 9.5), not as a string",
    section=SEC,
)
def typed_numeric_compare(ctx: Context) -> None:
    got = _filtered(ctx, "n > 9.5", [("ten", {"n": 10}), ("nine", {"n": 9}), ("hundred", {"n": 100})])
    assert got == ["ten", "hundred"], got


@scenario(
    "sel.boolean-property",
    category=CAT,
    rule="A boolean property compares with TRUE / FALSE",
    section=SEC,
)
def boolean_property(ctx: Context) -> None:
    got = _filtered(
        ctx, "urgent = TRUE", [("yes", {"urgent": True}), ("no", {"urgent": False}), ("none", {})]
    )
    assert got == ["yes"], got

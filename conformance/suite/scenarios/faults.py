"""Fault injection: broker restarts under traffic (G/K), network faults through our TCP proxy (N) and a
killed client process (C), judged by the operation-log checker (I1-I10) or by direct assertions."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field

from jmslike import ConnectionLostException, JMSException, Message, MessageConsumer, Session
from jmslike.conformance.checker import OpLog, PendingOp, check
from jmslike.conformance.proxy import FaultProxy
from jmslike.conformance.suite import Context, restart_scenario, scenario
from jmslike.conformance.suite.helpers import (
    drain,
    publish,
    receive_texts,
    send_texts,
    text_of,
    wait_until,
)
from jmslike.conformance.suite.traffic import RECONNECT, Traffic, sent_at_least

CAT = "faults"
RELIABILITY = "JMS 1.1 §4.10 [3.1 §9.1]; invariants I1-I10"
FAST_RECONNECT: dict[str, object] = {**RECONNECT, "heartbeat_ms": 500, "connect_timeout_ms": 2000}


# -- broker restarts with producers and consumers running ------------------------------------------


@dataclass
class TrafficState:
    traffic: Traffic
    fault: list[PendingOp] = field(default_factory=list)
    sent_at_heal: int = 0


@restart_scenario(
    "faults.kill-with-traffic",
    category=CAT,
    rule="A producer and consumers (queue, durable subscription) running through the restart: nothing "
    "acknowledged lost, nothing unexpected, no unflagged duplicate, order kept, backlog delivered after",
    section=RELIABILITY,
    quick=True,
    timeout_s=90,
)
def kill_with_traffic(ctx: Context) -> TrafficState:
    state = TrafficState(Traffic(ctx, count=3000, interval_s=0.02, keep=True))
    traffic = state.traffic

    def before() -> None:
        state.fault.append(traffic.oplog.fault(f"{ctx.mode} restart"))

    def after() -> None:
        state.fault[0].ok()
        state.sent_at_heal = traffic.producer.sent

    ctx.around_restart(before, after)
    traffic.start()
    wait_until(lambda: traffic.producer.sent >= 20, 20, "traffic to flow before the restart")
    return state


@kill_with_traffic.verify
def _kill_with_traffic(ctx: Context, state: TrafficState) -> None:
    traffic = state.traffic
    wait_until(
        lambda: traffic.producer.sent >= state.sent_at_heal + 30, 45, "the producer to send after the restart"
    )
    traffic.producer.stop_event.set()
    traffic.finish(ctx)
    result = traffic.assert_clean(f"traffic through a {ctx.mode} restart", heal_bound_s=30.0)
    ctx.note(f"checked {result.stats['sends']} sends, {result.stats['receives']} receives (seed {ctx.seed})")


@scenario(
    "faults.repeated-restarts-with-traffic",
    category=CAT,
    rule="Repeated restarts with producers and consumers running keep invariants I1-I10",
    section=RELIABILITY,
    per_mode=True,
    timeout_s=150,
)
def repeated_restarts(ctx: Context) -> None:
    traffic = Traffic(ctx, count=3000, interval_s=0.02)
    traffic.start()
    for round_ in range(2):
        before = traffic.producer.sent
        wait_until(sent_at_least(traffic.producer, before + 20), 45, f"traffic before restart {round_ + 1}")
        fault = traffic.oplog.fault(f"{ctx.mode} restart {round_ + 1}")
        ctx.restart()
        fault.ok()
    healed = traffic.producer.sent
    wait_until(
        lambda: traffic.producer.sent >= healed + 30, 45, "the producer to send after the last restart"
    )
    traffic.producer.stop_event.set()
    traffic.finish(ctx)
    result = traffic.assert_clean(f"traffic through repeated {ctx.mode} restarts", heal_bound_s=30.0)
    ctx.note(f"checked {result.stats['sends']} sends, {result.stats['receives']} receives (seed {ctx.seed})")


# -- network faults through the proxy (N) ------------------------------------------------------------


@scenario(
    "faults.proxy-drop-with-traffic",
    category=CAT,
    faults=("N",),
    rule="Connections dropped twice under traffic (reconnect=true): invariants I1-I10 hold",
    section=RELIABILITY,
    quick=True,
    timeout_s=90,
)
def proxy_drop_traffic(ctx: Context) -> None:
    proxy = ctx.proxy()
    traffic = Traffic(ctx, count=3000, interval_s=0.02, via=proxy)
    traffic.start()
    for round_ in range(2):
        before = traffic.producer.sent
        wait_until(sent_at_least(traffic.producer, before + 25), 30, f"traffic before drop {round_ + 1}")
        fault = traffic.oplog.fault(f"proxy drop {round_ + 1}")
        proxy.drop()
        fault.ok()
    healed = traffic.producer.sent
    wait_until(lambda: traffic.producer.sent >= healed + 30, 45, "the producer to send after the last drop")
    traffic.producer.stop_event.set()
    traffic.finish(ctx)
    result = traffic.assert_clean("traffic through proxy drops", heal_bound_s=30.0)
    ctx.note(f"checked {result.stats['sends']} sends, {result.stats['receives']} receives (seed {ctx.seed})")


def _held_consumer(ctx: Context, queue: str, proxy: FaultProxy) -> tuple[MessageConsumer, Message]:
    """A CLIENT_ACKNOWLEDGE consumer through ``proxy`` holding the message "held" unacknowledged."""
    connection = ctx.connect(via=proxy, options=FAST_RECONNECT)
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    consumer = session.createConsumer(session.createQueue(queue))
    message = consumer.receive(5000)
    assert text_of(message) == "held"
    assert message is not None
    return consumer, message


def _comes_back_flagged(
    consumer: MessageConsumer, held: Message, extra: str | None, timeout_ms: int = 20_000
) -> None:
    """The same consumer (re-subscribed by the reconnect) gets ``held`` back, flagged, and ``extra``."""
    wanted = {"held"} | ({extra} if extra else set())
    got: dict[str, Message] = {}
    deadline = time.monotonic() + timeout_ms / 1000
    while wanted - set(got) and time.monotonic() < deadline:
        message = consumer.receive(500)
        if message is not None:
            got.setdefault(text_of(message), message)
    assert not wanted - set(got), f"after the fault, missing {sorted(wanted - set(got))} (got {sorted(got)})"
    back = got["held"]
    assert back.getJMSMessageID() == held.getJMSMessageID()
    assert back.getJMSRedelivered(), "the unacknowledged message came back without JMSRedelivered"
    back.acknowledge()


@scenario(
    "faults.unacked-back-after-reconnect",
    category=CAT,
    faults=("N",),
    rule="After a dropped connection and reconnect, an unacknowledged message comes back flagged redelivered",
    section="JMS 1.1 §3.4.7, §4.4.11",
)
def unacked_after_reconnect(ctx: Context) -> None:
    proxy, queue = ctx.proxy(), ctx.name("q")
    send_texts(ctx.connect(), queue, ["held"])
    consumer, held = _held_consumer(ctx, queue, proxy)
    proxy.drop()
    send_texts(ctx.connect(), queue, ["after-drop"])
    _comes_back_flagged(consumer, held, "after-drop")


@scenario(
    "faults.acknowledge-after-reconnect",
    category=CAT,
    faults=("N",),
    rule="A message delivered before a reconnect is not silently acknowledged after it: acknowledge() "
    "raises, or the message does not come back",
    section="JMS 1.1 §4.4.11 [3.1 §6.2.10]",
)
def acknowledge_after_reconnect(ctx: Context) -> None:
    proxy, queue = ctx.proxy(), ctx.name("q")
    send_texts(ctx.connect(), queue, ["held"])
    consumer, held = _held_consumer(ctx, queue, proxy)
    proxy.drop()
    assert proxy.wait_connections(1, 20), "the client did not reconnect through the proxy"
    try:
        held.acknowledge()
    except JMSException:
        return  # the application is told: the message will come back
    again = consumer.receive(3000)
    assert again is None or again.getJMSMessageID() != held.getJMSMessageID(), (
        "acknowledge() returned normally after the reconnect, yet the message was delivered again "
        f"(redelivered={again.getJMSRedelivered()}): an acknowledged message came back"
    )


@scenario(
    "faults.stall-detected-by-heartbeat",
    category=CAT,
    faults=("N",),
    rule="A stalled network path is detected by heart-beats; after it heals the client recovers and the "
    "unacknowledged message comes back flagged",
    section="STOMP 1.1 heart-beating; JMS 1.1 §4.10",
    timeout_s=90,
)
def stall(ctx: Context) -> None:
    proxy, queue = ctx.proxy(), ctx.name("q")
    send_texts(ctx.connect(), queue, ["held"])
    consumer, held = _held_consumer(ctx, queue, proxy)
    accepted = proxy.accepted
    proxy.stall()
    send_texts(ctx.connect(), queue, ["during-stall"])
    wait_until(lambda: proxy.accepted > accepted, 20, "the client to notice the stall and try to reconnect")
    proxy.resume()
    _comes_back_flagged(consumer, held, "during-stall", timeout_ms=30_000)


@scenario(
    "faults.half-open-broker-side",
    category=CAT,
    faults=("N",),
    rule="The broker side closed, the client side silently open: the client detects it and recovers",
    section="STOMP 1.1 heart-beating; JMS 1.1 §4.10",
    timeout_s=90,
)
def half_open_broker(ctx: Context) -> None:
    proxy, queue = ctx.proxy(), ctx.name("q")
    send_texts(ctx.connect(), queue, ["held"])
    consumer, held = _held_consumer(ctx, queue, proxy)
    proxy.half_open("broker")
    send_texts(ctx.connect(), queue, ["after"])
    _comes_back_flagged(consumer, held, "after", timeout_ms=30_000)


@scenario(
    "faults.half-open-client-side-durable",
    category=CAT,
    faults=("N",),
    rule="The client side closed, the broker side silently open: the client reconnects with the same "
    "client ID once the broker drops the stale half, and its durable subscription resumes",
    section="JMS 1.1 §4.3.2, §6.11.1; STOMP heart-beating",
    timeout_s=90,
)
def half_open_client(ctx: Context) -> None:
    proxy, topic, sub, cid = ctx.proxy(), ctx.name("t"), ctx.name("s"), ctx.client_id()
    connection = ctx.connect(cid, via=proxy, options=FAST_RECONNECT)
    session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
    subscriber = session.createDurableSubscriber(session.createTopic(topic), sub)
    publish(ctx.connect(), topic, ["held"])
    held = subscriber.receive(5000)
    assert text_of(held) == "held"
    proxy.half_open("client")
    publish(ctx.connect(), topic, ["after"])
    got: list[tuple[str, bool]] = []
    deadline = time.monotonic() + 30
    while len({t for t, _ in got}) < 2 and time.monotonic() < deadline:
        message = subscriber.receive(500)
        if message is not None:
            got.append((text_of(message), message.getJMSRedelivered()))
    assert {t for t, _ in got} == {"held", "after"}, f"after the half-open fault got {got}"
    assert ("held", True) in got, f"the held message came back without JMSRedelivered: {got}"


def _commit_cut(ctx: Context, stall_direction: str) -> tuple[OpLog, str]:
    """Send 3 messages in a transaction through the proxy, cut the connection during COMMIT."""
    proxy, queue = ctx.proxy(), ctx.name("q")
    oplog = OpLog(max_ops=100)
    connection = ctx.connect(via=proxy, heartbeat_ms=0)
    tx = connection.createSession(True, Session.SESSION_TRANSACTED)
    producer = tx.createProducer(tx.createQueue(queue))
    for seq in range(3):
        message = tx.createTextMessage(f"tx-{seq}")
        op = oplog.invoke(
            "send", "producer", destination=f"queue://{queue}", seq=seq, mode=2, priority=4, transaction="tx1"
        )
        producer.send(message)
        op.ok(message_ids=(message.getJMSMessageID() or "",))
    proxy.stall(stall_direction)  # type: ignore[arg-type]
    before = proxy.forwarded("to_broker")
    commit = oplog.invoke("commit", "producer", transaction="tx1")
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            tx.commit()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    if stall_direction == "to_client":
        assert proxy.wait_forwarded("to_broker", before, 5), "COMMIT never reached the broker"
    else:
        assert not proxy.wait_forwarded("to_broker", before, 0.3)
    proxy.drop()
    thread.join(15)
    assert outcome, "commit() still blocked after the connection was cut"
    error = outcome[0]
    if error is None:
        commit.ok()
    elif isinstance(error, ConnectionLostException):
        commit.unknown(error)
    elif isinstance(error, JMSException):
        commit.fail(error)
    else:
        raise error
    connection.close()
    for drained in drain(ctx.connect(), queue, 600):
        oplog.record(
            "receive",
            "drain",
            endpoint=f"queue://{queue}",
            message_ids=(drained.getJMSMessageID() or "",),
            redelivered=drained.getJMSRedelivered(),
        )
    return oplog, queue


@scenario(
    "faults.commit-in-doubt-all-or-nothing",
    category=CAT,
    faults=("N",),
    rule="A commit whose answer is lost (COMMIT reached the broker) is all or nothing (I8); the client "
    "is told the outcome is unknown",
    section="JMS 1.1 §4.4.7 [3.1 §6.2.7]; invariant I8",
)
def commit_in_doubt(ctx: Context) -> None:
    oplog, _ = _commit_cut(ctx, "to_client")
    result = check(oplog)
    assert result.ok, result.summary()
    delivered = sum(r.kind == "receive" for r in oplog.operations())
    ctx.note(f"{delivered} of 3 messages of the in-doubt transaction were applied")


@scenario(
    "faults.commit-cut-before-broker-applies-nothing",
    category=CAT,
    faults=("N",),
    rule="A commit cut off before it reaches the broker applies nothing, and commit() raises",
    section="JMS 1.1 §4.4.7 [3.1 §6.2.7]; invariant I8",
)
def commit_cut(ctx: Context) -> None:
    oplog, _ = _commit_cut(ctx, "both")
    commits = [o for o in oplog.operations() if o.kind == "commit"]
    assert commits[0].status != "ok", "commit() returned normally although COMMIT never reached the broker"
    assert not [o for o in oplog.operations() if o.kind == "receive"], (
        "messages of an uncommitted transaction appeared"
    )
    result = check(oplog)
    assert result.ok, result.summary()


# -- client process killed (C) ---------------------------------------------------------------------

_CLIENT = r"""
import os, sys
from jmslike import ConnectionFactory, Session
factory = ConnectionFactory(os.environ["JMSLIKE_CONFORMANCE_URL"])
connection = factory.createConnection(os.environ["JMSLIKE_CONFORMANCE_USER"], os.environ["JMSLIKE_CONFORMANCE_PASSWORD"])
connection.start()
session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
consumer = session.createConsumer(session.createQueue(sys.argv[1]))
first = consumer.receive(10000)
first.acknowledge()
held = [consumer.receive(10000) for _ in range(2)]
print("HELD " + " ".join([first.getText()] + [m.getText() for m in held]), flush=True)
consumer.receive(600000)
"""


@scenario(
    "faults.client-killed-client-ack",
    category=CAT,
    faults=("C",),
    rule="A client killed mid-consume (CLIENT_ACKNOWLEDGE): what it acknowledged never comes back, what it "
    "did not comes back flagged redelivered",
    section="JMS 1.1 §4.4.11, §3.4.7",
    quick=True,
)
def client_killed(ctx: Context) -> None:
    queue = ctx.name("q")
    send_texts(ctx.connect(), queue, ["acked", "held-1", "held-2", "untouched"])
    child = ctx.spawn([sys.executable, "-c", _CLIENT, queue], env=ctx.child_env())
    assert child.stdout is not None
    line = child.stdout.readline().strip()
    if not line.startswith("HELD"):
        child.kill()
        _, err = child.communicate(timeout=5)
        raise AssertionError(f"the client process did not report its messages: {line!r} {err[-500:]}")
    assert line == "HELD acked held-1 held-2", line
    child.kill()
    child.wait(10)
    got = drain(ctx.connect(), queue, 1000)
    texts = [text_of(m) for m in got]
    assert "acked" not in texts, "an acknowledged message came back after the client died"
    assert sorted(texts) == ["held-1", "held-2", "untouched"], f"after the client died the queue held {texts}"
    flags = {text_of(m): m.getJMSRedelivered() for m in got}
    assert flags["held-1"] and flags["held-2"], f"messages the dead client held came back unflagged: {flags}"
    # "untouched" may be flagged: it was prefetched by the dead client, which JMS allows to count.


@scenario(
    "faults.client-killed-durable-keeps-backlog",
    category=CAT,
    faults=("C",),
    rule="A client killed while its durable subscriber is active: the subscription and its backlog remain",
    section="JMS 1.1 §6.11.1, §4.10",
)
def client_killed_durable(ctx: Context) -> None:
    topic, sub, cid = ctx.name("t"), ctx.name("s"), ctx.client_id()
    script = r"""
import os, sys
from jmslike import ConnectionFactory, Session
connection = ConnectionFactory(os.environ["JMSLIKE_CONFORMANCE_URL"]).createConnection(
    os.environ["JMSLIKE_CONFORMANCE_USER"], os.environ["JMSLIKE_CONFORMANCE_PASSWORD"])
connection.setClientID(sys.argv[1])
connection.start()
session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
subscriber = session.createDurableSubscriber(session.createTopic(sys.argv[2]), sys.argv[3])
print("READY", flush=True)
message = subscriber.receive(20000)
print("GOT " + message.getText(), flush=True)
subscriber.receive(600000)
"""
    child = ctx.spawn([sys.executable, "-c", script, cid, topic, sub], env=ctx.child_env(heartbeat_ms=1000))
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "READY"
    publish(ctx.connect(), topic, ["held", "backlog"])
    assert child.stdout.readline().strip() == "GOT held"
    child.kill()
    child.wait(10)

    def reattach() -> list[str]:
        try:
            session = ctx.connect(cid).createSession(False, Session.AUTO_ACKNOWLEDGE)
        except JMSException:
            return []  # the broker has not noticed the dead client yet: its client ID is still taken
        subscriber = session.createDurableSubscriber(session.createTopic(topic), sub)
        texts.extend(receive_texts(subscriber, 1000))
        subscriber.close()
        session.unsubscribe(sub)
        return texts

    texts: list[str] = []
    wait_until(lambda: bool(reattach()), 30, "the durable subscription to be reachable again")
    assert texts == ["held", "backlog"], f"after the client died the subscription held {texts}"

"""Transacted sessions (JMS 1.1 §4.4.7 [3.1 §6.2.7]): atomic commit, rollback that redelivers,
close that rolls back, and what survives a restart."""

from __future__ import annotations

from dataclasses import dataclass, field

from jmslike import (
    Connection,
    ConnectionLostException,
    IllegalStateException,
    JMSException,
    Session,
    TransactionRolledBackException,
)
from jmslike.conformance.suite import Context, restart_scenario, scenario
from jmslike.conformance.suite.helpers import (
    drain_texts,
    expect_raises,
    receive_n,
    send_texts,
    text_of,
)

CAT = "transactions"
SEC = "JMS 1.1 §4.4.7 [3.1 §6.2.7]"


@scenario(
    "tx.commit-sends",
    category=CAT,
    rule="Sends in a transaction appear only on commit, all of them",
    section=SEC,
    quick=True,
)
def commit_sends(ctx: Context) -> None:
    queue = ctx.name("q")
    tx = ctx.connect().createSession(True, Session.SESSION_TRANSACTED)
    producer = tx.createProducer(tx.createQueue(queue))
    producer.send(tx.createTextMessage("1"))
    producer.send(tx.createTextMessage("2"))
    assert drain_texts(ctx.connect(), queue) == [], "uncommitted sends must be invisible"
    tx.commit()
    assert drain_texts(ctx.connect(), queue) == ["1", "2"]


@scenario(
    "tx.rollback-discards-sends",
    category=CAT,
    rule="rollback destroys the messages produced in the transaction",
    section=SEC,
)
def rollback_sends(ctx: Context) -> None:
    queue = ctx.name("q")
    tx = ctx.connect().createSession(True, Session.SESSION_TRANSACTED)
    producer = tx.createProducer(tx.createQueue(queue))
    producer.send(tx.createTextMessage("gone"))
    tx.rollback()
    producer.send(tx.createTextMessage("kept"))
    tx.commit()
    assert drain_texts(ctx.connect(), queue) == ["kept"]


@scenario(
    "tx.commit-acknowledges-receives",
    category=CAT,
    rule="commit acknowledges every message consumed in the transaction",
    section=SEC,
)
def commit_receives(ctx: Context) -> None:
    queue = ctx.name("q")
    send_texts(ctx.connect(), queue, ["a", "b", "c"])
    tx = ctx.connect().createSession(True, Session.SESSION_TRANSACTED)
    receive_n(tx.createConsumer(tx.createQueue(queue)), 2)
    tx.commit()
    tx.close()
    assert drain_texts(ctx.connect(), queue) == ["c"]


@scenario(
    "tx.rollback-redelivers-flagged",
    category=CAT,
    rule="rollback redelivers the consumed messages, in order, flagged JMSRedelivered",
    section=SEC,
    quick=True,
)
def rollback_redelivers(ctx: Context) -> None:
    queue = ctx.name("q")
    send_texts(ctx.connect(), queue, ["a", "b"])
    tx = ctx.connect().createSession(True, Session.SESSION_TRANSACTED)
    consumer = tx.createConsumer(tx.createQueue(queue))
    assert [text_of(m) for m in receive_n(consumer, 2)] == ["a", "b"]
    tx.rollback()
    again = receive_n(consumer, 2)
    assert [text_of(m) for m in again] == ["a", "b"]
    assert all(m.getJMSRedelivered() for m in again), "redelivered messages must be flagged"
    tx.commit()
    tx.close()
    assert drain_texts(ctx.connect(), queue) == []


@scenario(
    "tx.consume-produce-atomic",
    category=CAT,
    rule="Consuming and producing in one transaction commit together",
    section=SEC,
)
def consume_produce(ctx: Context) -> None:
    source, target = ctx.name("in"), ctx.name("out")
    send_texts(ctx.connect(), source, ["job"])
    tx = ctx.connect().createSession(True, Session.SESSION_TRANSACTED)
    job = tx.createConsumer(tx.createQueue(source)).receive(5000)
    tx.createProducer(tx.createQueue(target)).send(tx.createTextMessage("result of " + text_of(job)))
    tx.commit()
    tx.close()
    assert drain_texts(ctx.connect(), source) == []
    assert drain_texts(ctx.connect(), target) == ["result of job"]


@scenario(
    "tx.close-rolls-back",
    category=CAT,
    rule="Closing a transacted session rolls back its open transaction",
    section=SEC,
)
def close_rolls_back(ctx: Context) -> None:
    source, target = ctx.name("in"), ctx.name("out")
    send_texts(ctx.connect(), source, ["in"])
    tx = ctx.connect().createSession(True, Session.SESSION_TRANSACTED)
    assert text_of(tx.createConsumer(tx.createQueue(source)).receive(5000)) == "in"
    tx.createProducer(tx.createQueue(target)).send(tx.createTextMessage("never"))
    tx.close()
    assert drain_texts(ctx.connect(), source) == ["in"]
    assert drain_texts(ctx.connect(), target) == []


@scenario(
    "tx.commit-non-transacted-illegal",
    category=CAT,
    rule="commit()/rollback() on a non-transacted session are IllegalStateException",
    section=SEC,
)
def commit_illegal(ctx: Context) -> None:
    session = ctx.connect().createSession(False, Session.AUTO_ACKNOWLEDGE)
    expect_raises(IllegalStateException, session.commit, "commit() on a non-transacted session")
    expect_raises(IllegalStateException, session.rollback, "rollback() on a non-transacted session")


@dataclass
class TxState:
    source: str
    target: str
    session: Session | None = field(default=None, repr=False)
    connection: Connection | None = field(default=None, repr=False)


@restart_scenario(
    "tx.uncommitted-undone-across-restart",
    category=CAT,
    rule="Uncommitted sends and receives are undone by a restart: sends vanish, receives come back",
    section=f"{SEC}; JMS 1.1 §4.10",
    quick=True,
)
def uncommitted(ctx: Context) -> TxState:
    state = TxState(ctx.name("in"), ctx.name("out"))
    send_texts(ctx.connect(), state.source, ["input"])
    tx = ctx.connect(keep=True).createSession(True, Session.SESSION_TRANSACTED)
    assert text_of(tx.createConsumer(tx.createQueue(state.source)).receive(5000)) == "input"
    tx.createProducer(tx.createQueue(state.target)).send(tx.createTextMessage("uncommitted"))
    return state


@uncommitted.verify
def _uncommitted(ctx: Context, state: TxState) -> None:
    fresh = ctx.connect()
    assert drain_texts(fresh, state.source, 1000) == ["input"], "the consumed input must come back"
    assert drain_texts(fresh, state.target, 600) == [], "the uncommitted send must vanish"


@restart_scenario(
    "tx.committed-survives-restart",
    category=CAT,
    rule="PERSISTENT messages of a committed transaction survive a restart",
    section=f"{SEC}; JMS 1.1 §4.10",
)
def committed(ctx: Context) -> TxState:
    state = TxState(ctx.name("in"), ctx.name("out"))
    tx = ctx.connect().createSession(True, Session.SESSION_TRANSACTED)
    producer = tx.createProducer(tx.createQueue(state.target))
    for text in ("c1", "c2", "c3"):
        producer.send(tx.createTextMessage(text))
    tx.commit()
    return state


@committed.verify
def _committed(ctx: Context, state: TxState) -> None:
    texts = drain_texts(ctx.connect(), state.target, 1000)
    assert texts == ["c1", "c2", "c3"], f"a committed transaction lost messages in the restart: got {texts}"


@restart_scenario(
    "tx.commit-after-failover-rolls-back",
    category=CAT,
    rule="A transaction open when the connection was lost cannot commit: TransactionRolledBackException "
    "(or a lost-connection error), and nothing of it is applied",
    section=SEC,
)
def commit_after_failover(ctx: Context) -> TxState:
    state = TxState(ctx.name("in"), ctx.name("out"))
    send_texts(ctx.connect(), state.source, ["input"])
    connection = ctx.connect(keep=True, reconnect=True, reconnect_attempts=60, heartbeat_ms=1000)
    tx = connection.createSession(True, Session.SESSION_TRANSACTED)
    assert text_of(tx.createConsumer(tx.createQueue(state.source)).receive(5000)) == "input"
    tx.createProducer(tx.createQueue(state.target)).send(tx.createTextMessage("in-flight"))
    state.session, state.connection = tx, connection
    return state


@commit_after_failover.verify
def _commit_after_failover(ctx: Context, state: TxState) -> None:
    session = state.session
    assert session is not None
    expect_raises(
        (TransactionRolledBackException, ConnectionLostException),
        session.commit,
        "commit of a transaction interrupted by the restart",
    )
    assert state.connection is not None
    state.connection.close()  # its re-subscribed consumer holds the rolled-back input until it closes
    fresh = ctx.connect()
    assert drain_texts(fresh, state.target, 600) == [], (
        "nothing of the interrupted transaction may be applied"
    )
    assert drain_texts(fresh, state.source, 1000) == ["input"], "the consumed input must come back"


@scenario(
    "tx.empty-commit-harmless",
    category=CAT,
    rule="commit/rollback of an empty transaction succeed",
    section=SEC,
)
def empty_commit(ctx: Context) -> None:
    tx = ctx.connect().createSession(True, Session.SESSION_TRANSACTED)
    try:
        tx.commit()
        tx.rollback()
        tx.commit()
    except JMSException as exc:
        raise AssertionError(f"empty commit/rollback raised {exc!r}") from exc

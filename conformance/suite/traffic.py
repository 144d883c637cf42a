"""Logged traffic for fault-injection scenarios: producers and consumers on their own threads, every
operation recorded in a :class:`~jmslike.conformance.checker.OpLog` for the invariant checker.

A producer sends numbered texts (a seeded mix of PERSISTENT and NON_PERSISTENT) to a queue and a topic;
consumers (CLIENT_ACKNOWLEDGE, one per endpoint: the queue, a durable subscription) receive, log and
acknowledge each message. With ``soak=True`` (the SIGKILL soak) there is also an asynchronous producer
(CompletionListener) and a second queue and durable subscription read by transacted consumers, which
commit every message. Connections are opened on the caller's thread (so a restart scenario's setup
owns them) with ``reconnect=true``; the threads only use them. Waiting is on events with deadlines.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from jmslike import (
    ConnectionLostException,
    DeliveryMode,
    JMSException,
    Message,
    MessageConsumer,
    NotYetInAioException,
    Session,
    TransactionRolledBackException,
)
from jmslike.conformance.checker import CheckResult, InvariantViolation, OpLog, PendingOp, check
from jmslike.conformance.proxy import FaultProxy
from jmslike.conformance.suite.context import Context
from jmslike.conformance.suite.helpers import QUIET_MS

log = logging.getLogger(__name__)

RECONNECT: dict[str, object] = {
    "reconnect": True,
    "reconnect_attempts": 80,
    "reconnect_delay_ms": 100,
    "reconnect_max_delay_ms": 1000,
    "heartbeat_ms": 1000,
    "receipt_timeout_ms": 20000,
}


@dataclass(frozen=True)
class Endpoint:
    """Where a consumer reads: ``queue://Q`` or ``durable://CID/NAME`` on ``topic://T``."""

    id: str
    destination: str
    client_id: str | None = None
    subscription: str | None = None

    @property
    def is_queue(self) -> bool:
        return self.id.startswith("queue://")


class Producer(threading.Thread):
    def __init__(
        self,
        ctx: Context,
        oplog: OpLog,
        destinations: list[str],
        count: int,
        *,
        interval_s: float,
        non_persistent_ratio: float,
        rng: random.Random,
        via: FaultProxy | None = None,
        keep: bool = False,
        name: str = "producer",
        asynchronous: bool = False,
    ) -> None:
        super().__init__(name=f"traffic-{name}", daemon=True)
        self.asynchronous = asynchronous
        self._lock = threading.Lock()
        self.oplog = oplog
        self.destinations = destinations
        self.count = count
        self.interval_s = interval_s
        self.modes = [
            DeliveryMode.NON_PERSISTENT if rng.random() < non_persistent_ratio else DeliveryMode.PERSISTENT
            for _ in range(count)
        ]
        self.process = name
        self.connection = ctx.connect(via=via, keep=keep, options=RECONNECT)
        self.session = self.connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        self.producer = self.session.createProducer(None)
        self.stop_event = threading.Event()
        self.sent = 0
        self.errors: list[str] = []

    def run(self) -> None:
        pause = threading.Event()
        for seq in range(self.count):
            if self.stop_event.is_set():
                return
            target = self.destinations[seq % len(self.destinations)]
            kind, _, name = target.partition("://")
            destination = (
                self.session.createQueue(name) if kind == "queue" else self.session.createTopic(name)
            )
            message = self.session.createTextMessage(f"{self.process}:{seq}")
            mode = self.modes[seq]
            op = self.oplog.invoke("send", self.process, destination=target, seq=seq, mode=mode, priority=4)
            listener = _Completion(self, op) if self.asynchronous else None
            try:
                if listener is None:
                    self.producer.send(destination, message, mode, 4, 0)
                else:
                    self.producer.send(destination, message, mode, 4, 0, completionListener=listener)
            except NotYetInAioException:  # --api aio: the scenario cannot run there yet
                raise
            except (ConnectionLostException, TimeoutError) as exc:
                op.unknown(exc, message_ids=(message.getJMSMessageID() or "",))
            except JMSException as exc:
                op.unknown(exc, message_ids=(message.getJMSMessageID() or "",))
                self.errors.append(str(exc))
            else:
                if listener is None:
                    self.confirmed(op, message)
            pause.wait(self.interval_s)

    def confirmed(self, op: PendingOp, message: Message) -> None:
        op.ok(message_ids=(message.getJMSMessageID() or "",))
        with self._lock:  # the completion thread and this one
            self.sent += 1


class _Completion:
    """The CompletionListener of one asynchronous send: its outcome completes the logged operation. A send
    that fails asynchronously is in doubt (the broker may have stored it before the error or loss)."""

    def __init__(self, producer: Producer, op: PendingOp) -> None:
        self._producer = producer
        self._op = op

    def onCompletion(self, message: Message) -> None:
        self._producer.confirmed(self._op, message)

    def onException(self, message: Message, exception: JMSException) -> None:
        self._op.unknown(exception, message_ids=(message.getJMSMessageID() or "",))


class Consumer(threading.Thread):
    def __init__(
        self,
        ctx: Context,
        oplog: OpLog,
        endpoint: Endpoint,
        *,
        via: FaultProxy | None = None,
        keep: bool = False,
        name: str = "consumer",
        transacted: bool = False,
    ) -> None:
        super().__init__(name=f"traffic-{name}", daemon=True)
        self.oplog = oplog
        self.endpoint = endpoint
        self.process = name
        self.transacted = transacted
        self._transactions = 0
        self.connection = ctx.connect(endpoint.client_id, via=via, keep=keep, options=RECONNECT)
        self.session = (
            self.connection.createSession(True, Session.SESSION_TRANSACTED)
            if transacted
            else self.connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
        )
        self.consumer: MessageConsumer = self._subscribe()
        self.stop_event = threading.Event()
        self.last_receive = time.monotonic()
        self.received = 0

    def _subscribe(self) -> MessageConsumer:
        _kind, _, name = self.endpoint.destination.partition("://")
        if self.endpoint.is_queue:
            return self.session.createConsumer(self.session.createQueue(name))
        assert self.endpoint.subscription is not None
        op = self.oplog.invoke(
            "subscribe",
            self.process,
            endpoint=self.endpoint.id,
            destination=self.endpoint.destination,
            durable=True,
        )
        subscriber = self.session.createDurableSubscriber(
            self.session.createTopic(name), self.endpoint.subscription
        )
        op.ok()
        return subscriber

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                message = self.consumer.receive(200)
            except JMSException as exc:
                log.debug("%s: receive failed: %s", self.process, exc)
                if self.stop_event.wait(0.2):
                    return
                continue
            if message is None:
                continue
            message_id = message.getJMSMessageID() or ""
            transaction = None
            if self.transacted:
                self._transactions += 1
                transaction = f"{self.process}-tx{self._transactions}"
            self.oplog.record(
                "receive",
                self.process,
                endpoint=self.endpoint.id,
                destination=self.endpoint.destination,
                message_ids=(message_id,),
                redelivered=message.getJMSRedelivered(),
                transaction=transaction,
            )
            self.received += 1
            self.last_receive = time.monotonic()
            if transaction is not None:
                self._commit(transaction)
                continue
            op = self.oplog.invoke("ack", self.process, endpoint=self.endpoint.id, message_ids=(message_id,))
            try:
                message.acknowledge()
            except JMSException as exc:
                op.unknown(exc)
            else:
                op.ok()

    def _commit(self, transaction: str) -> None:
        """Commit the one message received in ``transaction``: rolled back means it comes back (not
        acknowledged), any other failure leaves the outcome in doubt (JMS: the commit may have happened)."""
        op = self.oplog.invoke("commit", self.process, transaction=transaction)
        try:
            self.session.commit()
        except TransactionRolledBackException as exc:
            op.fail(exc)
        except JMSException as exc:
            op.unknown(exc)
        else:
            op.ok()

    def stop(self) -> None:
        self.stop_event.set()
        self.join(10)
        try:
            self.connection.close()
        except JMSException:
            log.debug("closing consumer connection failed", exc_info=True)


def sent_at_least(source: Producer | Traffic, count: int) -> Callable[[], bool]:
    """A predicate for ``wait_until``: the producer (or all of a traffic's) confirmed ``count`` sends."""
    return lambda: source.sent >= count


class Traffic:
    """One producer over a queue and a topic, consumers on the queue and a durable subscription."""

    def __init__(
        self,
        ctx: Context,
        *,
        count: int = 150,
        interval_s: float = 0.02,
        non_persistent_ratio: float = 0.2,
        via: FaultProxy | None = None,
        keep: bool = False,
        max_ops: int = 20_000,
        soak: bool = False,
    ) -> None:
        self.seed = ctx.seed
        rng = random.Random(f"{ctx.seed}:{ctx.scenario_id}:{ctx.kind}:{ctx.mode}")
        self.oplog = OpLog(max_ops=max_ops)
        self.queue = ctx.name("q")
        self.topic = ctx.name("t")
        cid = ctx.client_id("dur")
        sub = ctx.name("sub")
        self.endpoints = [
            Endpoint(f"queue://{self.queue}", f"queue://{self.queue}"),
            Endpoint(f"durable://{cid}/{sub}", f"topic://{self.topic}", cid, sub),
        ]
        transacted = [False, False]
        if soak:  # a second queue, a second durable subscription: read in transactions
            tx_queue, tx_cid, tx_sub = ctx.name("txq"), ctx.client_id("txdur"), ctx.name("txsub")
            self.endpoints += [
                Endpoint(f"queue://{tx_queue}", f"queue://{tx_queue}"),
                Endpoint(f"durable://{tx_cid}/{tx_sub}", f"topic://{self.topic}", tx_cid, tx_sub),
            ]
            transacted += [True, True]
        self.consumers = [
            Consumer(ctx, self.oplog, e, via=via, keep=keep, name=f"consumer-{i}", transacted=tx)
            for i, (e, tx) in enumerate(zip(self.endpoints, transacted, strict=True))
        ]
        destinations = list(dict.fromkeys(e.destination for e in self.endpoints))
        self.producers = [
            Producer(
                ctx,
                self.oplog,
                destinations,
                count,
                interval_s=interval_s,
                non_persistent_ratio=non_persistent_ratio,
                rng=rng,
                via=via,
                keep=keep,
                name=name,
                asynchronous=name == "async-producer",
            )
            for name in (["producer", "async-producer"] if soak else ["producer"])
        ]
        self.producer = self.producers[0]

    def start(self) -> None:
        for consumer in self.consumers:
            consumer.start()
        for producer in self.producers:
            producer.start()

    @property
    def sent(self) -> int:
        """Sends confirmed by every producer so far."""
        return sum(p.sent for p in self.producers)

    def stop_producers(self) -> None:
        for producer in self.producers:
            producer.stop_event.set()

    def finish(self, ctx: Context, timeout_s: float = 45.0, quiet_s: float = 1.5) -> None:
        """Wait for the producer, then for the consumers to go quiet; stop them; drain what is left with
        fresh connections (logged too)."""
        deadline = time.monotonic() + timeout_s
        for producer in self.producers:
            producer.join(max(0.0, deadline - time.monotonic()))
        pause = threading.Event()
        while time.monotonic() < deadline:
            if all(time.monotonic() - c.last_receive >= quiet_s for c in self.consumers):
                break
            pause.wait(0.1)
        self.stop_producers()
        for consumer in self.consumers:
            consumer.stop()
        for endpoint in self.endpoints:
            self._drain(ctx, endpoint)

    def _drain(self, ctx: Context, endpoint: Endpoint) -> None:
        connection = ctx.connect(endpoint.client_id)
        session = connection.createSession(False, Session.CLIENT_ACKNOWLEDGE)
        name = endpoint.destination.partition("://")[2]
        if endpoint.is_queue:
            consumer = session.createConsumer(session.createQueue(name))
        else:
            assert endpoint.subscription is not None
            consumer = session.createDurableSubscriber(session.createTopic(name), endpoint.subscription)
        while (message := consumer.receive(QUIET_MS)) is not None:
            message_id = message.getJMSMessageID() or ""
            self.oplog.record(
                "receive",
                "drain",
                endpoint=endpoint.id,
                destination=endpoint.destination,
                message_ids=(message_id,),
                redelivered=message.getJMSRedelivered(),
            )
            op = self.oplog.invoke("ack", "drain", endpoint=endpoint.id, message_ids=(message_id,))
            message.acknowledge()
            op.ok()
        if not endpoint.is_queue:
            consumer.close()
            assert endpoint.subscription is not None
            session.unsubscribe(endpoint.subscription)
        connection.close()

    def check(self, **options: float | bool) -> CheckResult:
        """The invariant check of this run; a run that confirmed (almost) nothing fails: it proves nothing."""
        options.setdefault("require_confirmed", True)
        return check(self.oplog, **options)  # type: ignore[arg-type]

    def assert_clean(
        self, what: str, result: CheckResult | None = None, **options: float | bool
    ) -> CheckResult:
        """Raise InvariantViolation unless the check (``result``, or a fresh one with ``options``) passed."""
        result = result if result is not None else self.check(**options)
        sent = self.sent
        assert sent > 0, f"{what}: the producer sent nothing (seed {self.seed})"
        if not result.ok:
            raise InvariantViolation(
                f"{what}: {result.summary()} (seed {self.seed} replays this traffic)", result.behaviours()
            )
        return result

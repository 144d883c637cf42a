"""Does RabbitMQ lose confirmed PERSISTENT messages after a SIGKILL? An experiment anyone can re-run.

    python -m jmslike.conformance.rabbitmq_kill [--messages 200] [--consume 50] [--delays 0,0.1,1,3]
        [--clients raw,jmslike] [--acks none,client-individual,auto] [--queue-types classic,quorum]

The project once blamed RabbitMQ 3.10 for losing confirmed messages after a SIGKILL, and later found a
jmslike race producing the same symptom (docs/conformance.md). This settles it by putting a raw STOMP client
(stompest: no jmslike code) next to jmslike on the same broker, one trial per combination of:

- client: ``raw``, ``jmslike`` or ``amqp`` (an AMQP 0-9-1 control with publisher confirms, through pika when it
  is installed) — who sends and who consumes;
- ack: ``none`` (no consumer), ``client-individual`` (the first ``--consume`` messages received and each
  acknowledged, waiting for its receipt; jmslike: CLIENT_ACKNOWLEDGE) or ``auto`` (``ack:auto``; jmslike:
  AUTO_ACKNOWLEDGE);
- delay: seconds from the last confirm or acknowledgement to the SIGKILL (the experiment's variable, so a
  plain sleep);
- queue type: ``classic`` or ``quorum`` (declared through the management API before the trial).

Each trial declares a fresh queue, waits ``--queue-age`` seconds, sends ``--messages`` PERSISTENT messages,
each confirmed (STOMP: its receipt, which RabbitMQ sends after the publisher confirm; AMQP: the confirm),
consumes as the ack mode says, records what the node counts in the queue (``rabbitmqctl list_queues``; a
quorum queue's counts lag and may read 0), waits the delay, SIGKILLs the broker, restarts it, and drains the
queue with a raw client. A confirmed message that was not acknowledged and is missing is **lost**; an
acknowledged one that is back is **returned** (flagged or not). The table goes to stdout (Markdown); the exit
status is 1 when any trial lost a message. Results and the conclusion: docs/conformance.md.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jmslike import ConnectionFactory, DeliveryMode, Session, TextMessage
from jmslike.adapters.rabbitmq_management import RabbitMQManagement
from jmslike.conformance.brokers import BrokerHandle, launch
from jmslike.conformance.brokers.rabbitmq import RabbitMQBroker
from jmslike.conformance.suite.probe import raw_stomp_client

QUIET_S = 2.0
RECEIPT_TIMEOUT_S = 10.0
#: How long a queue may take to come back after the restart (a quorum queue recovers its Raft log first).
RECOVERY_S = 60.0


@dataclass(frozen=True)
class Trial:
    client: str
    ack: str
    delay_s: float
    queue_type: str


@dataclass
class Outcome:
    trial: Trial
    confirmed: int = 0
    acknowledged: int = 0
    before_kill: str = ""
    drained: int = 0
    lost: list[str] = field(default_factory=list)
    returned_flagged: int = 0
    returned_unflagged: int = 0
    duplicated: int = 0
    error: str = ""


def bodies(count: int) -> list[str]:
    return [f"m-{i:05d}" for i in range(count)]


# -- the raw client (stompest) ------------------------------------------------------------------------------


def _await_receipt(client: Any, receipt: str) -> None:
    deadline = time.monotonic() + RECEIPT_TIMEOUT_S
    while time.monotonic() < deadline:
        if client.canRead(deadline - time.monotonic()):
            frame = client.receiveFrame()
            if frame.command == "RECEIPT" and frame.headers.get("receipt-id") == receipt:
                return
            if frame.command == "ERROR":
                raise RuntimeError(f"broker ERROR: {frame.headers.get('message')}")
    raise TimeoutError(f"no receipt {receipt} within {RECEIPT_TIMEOUT_S}s")


def raw_send(broker: BrokerHandle, queue: str, texts: Sequence[str], queue_type: str) -> int:
    client = raw_stomp_client(broker)
    try:
        for text in texts:
            receipt = uuid.uuid4().hex
            client.send(
                f"/amq/queue/{queue}", text.encode(), headers={"persistent": "true", "receipt": receipt}
            )
            _await_receipt(client, receipt)
        return len(texts)
    finally:
        client.disconnect()


def raw_consume(broker: BrokerHandle, queue: str, ack: str, count: int, queue_type: str) -> list[str]:
    """Receive ``count`` messages with ``ack`` mode; with client-individual each ACK waits for its receipt."""
    client = raw_stomp_client(broker)
    taken: list[str] = []
    try:
        headers = {"ack": ack, "prefetch-count": str(count), "id": "exp"}
        token = client.subscribe(f"/amq/queue/{queue}", headers=headers)
        while len(taken) < count:
            if not client.canRead(RECEIPT_TIMEOUT_S):
                raise TimeoutError(f"got {len(taken)} of {count} messages")
            frame = client.receiveFrame()
            if frame.command != "MESSAGE":
                continue
            taken.append(frame.body.decode())
            if ack == "client-individual":
                receipt = uuid.uuid4().hex
                client.ack(frame, receipt=receipt)
                _await_receipt(client, receipt)
        # With ack:auto RabbitMQ ignores the prefetch and hands out everything at once: whatever reached this
        # socket before the UNSUBSCRIBE was consumed too, so read it all up to the UNSUBSCRIBE's receipt.
        client.unsubscribe(token, receipt="unsubscribed")
        while client.canRead(RECEIPT_TIMEOUT_S):
            frame = client.receiveFrame()
            if frame.command == "RECEIPT" and frame.headers.get("receipt-id") == "unsubscribed":
                break
            if frame.command == "MESSAGE" and ack == "auto":  # unacknowledged ones go back to the queue
                taken.append(frame.body.decode())
        return taken
    finally:
        client.disconnect()


def raw_drain(broker: BrokerHandle, queue: str) -> list[tuple[str, bool]]:
    """Everything the queue holds, with each message's redelivered flag (acknowledged on delivery)."""
    client = raw_stomp_client(broker)
    found: list[tuple[str, bool]] = []
    try:
        client.subscribe(f"/amq/queue/{queue}", headers={"ack": "auto", "id": "drain"})
        while client.canRead(QUIET_S):
            frame = client.receiveFrame()
            if frame.command == "MESSAGE":
                found.append((frame.body.decode(), frame.headers.get("redelivered") == "true"))
        return found
    finally:
        client.disconnect()


# -- the AMQP 0-9-1 control (pika, publisher confirms; optional) ---------------------------------------------


def _amqp_channel(broker: BrokerHandle) -> Any:
    import pika  # the control only; pip install pika

    port = getattr(broker, "amqp_port", None)
    credentials = pika.PlainCredentials(broker.user, broker.password)
    connection = pika.BlockingConnection(
        pika.ConnectionParameters(broker.host, port, credentials=credentials)
    )
    return connection, connection.channel()


def amqp_send(broker: BrokerHandle, queue: str, texts: Sequence[str], queue_type: str) -> int:
    """basic_publish on a confirm channel returns once the broker confirmed the message."""
    import pika

    connection, channel = _amqp_channel(broker)
    try:
        channel.confirm_delivery()
        for text in texts:
            channel.basic_publish(
                "", queue, text.encode(), pika.BasicProperties(delivery_mode=2), mandatory=True
            )
        return len(texts)
    finally:
        connection.close()


def amqp_consume(broker: BrokerHandle, queue: str, ack: str, count: int, queue_type: str) -> list[str]:
    """basic_get: with ``auto`` the broker counts the message acknowledged on delivery; with
    ``client-individual`` each is acknowledged by basic_ack (AMQP 0-9-1 has no ack confirmation)."""
    connection, channel = _amqp_channel(broker)
    taken: list[str] = []
    try:
        deadline = time.monotonic() + RECEIPT_TIMEOUT_S
        while len(taken) < count and time.monotonic() < deadline:
            method, _, body = channel.basic_get(queue, auto_ack=ack == "auto")
            if method is None:
                connection.sleep(0.05)
                continue
            taken.append(body.decode())
            if ack == "client-individual":
                channel.basic_ack(method.delivery_tag)
        return taken
    finally:
        connection.close()


# -- jmslike -----------------------------------------------------------------------------------------------


def _jmslike_connection(broker: BrokerHandle, queue_type: str) -> Any:
    """A started connection that declares queues as ``queue_type`` (RabbitMQ refuses another type)."""
    url = f"{broker.url}?management_url={broker.management_url}&rabbitmq_queue_type={queue_type}"
    connection = ConnectionFactory(url).createConnection(broker.user, broker.password)
    connection.start()
    return connection


def jmslike_send(broker: BrokerHandle, queue: str, texts: Sequence[str], queue_type: str) -> int:
    connection = _jmslike_connection(broker, queue_type)
    try:
        session = connection.createSession(False, Session.AUTO_ACKNOWLEDGE)
        producer = session.createProducer(session.createQueue(queue))
        for text in texts:
            producer.send(session.createTextMessage(text), DeliveryMode.PERSISTENT, 4, 0)
        return len(texts)
    finally:
        connection.close()


def jmslike_consume(broker: BrokerHandle, queue: str, ack: str, count: int, queue_type: str) -> list[str]:
    mode = Session.CLIENT_ACKNOWLEDGE if ack == "client-individual" else Session.AUTO_ACKNOWLEDGE
    connection = _jmslike_connection(broker, queue_type)
    try:
        session = connection.createSession(False, mode)
        consumer = session.createConsumer(session.createQueue(queue))
        taken: list[str] = []
        while len(taken) < count:
            message = consumer.receive(int(RECEIPT_TIMEOUT_S * 1000))
            if message is None:
                raise TimeoutError(f"got {len(taken)} of {count} messages")
            assert isinstance(message, TextMessage)
            taken.append(message.getText() or "")
            if mode == Session.CLIENT_ACKNOWLEDGE:
                message.acknowledge()
        consumer.close()
        return taken
    finally:
        connection.close()


# -- a trial -----------------------------------------------------------------------------------------------


CLIENTS = {
    "raw": (raw_send, raw_consume),
    "amqp": (amqp_send, amqp_consume),
    "jmslike": (jmslike_send, jmslike_consume),
}


def queue_contents(broker: BrokerHandle, queue: str) -> str | None:
    """``ready + unacked`` as the running node counts them now (rabbitmqctl), None while the queue is not
    there or not running."""
    if not isinstance(broker, RabbitMQBroker):
        return None
    try:
        listing = broker.ctl(
            "list_queues",
            "-q",
            "--no-table-headers",
            "name",
            "state",
            "messages_ready",
            "messages_unacknowledged",
        )
    except RuntimeError:
        return None
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[0] == queue and fields[1] == "running":
            return f"{fields[2]} ready + {fields[3]} unacked"
    return None


def run_trial(
    broker: BrokerHandle,
    management: RabbitMQManagement,
    trial: Trial,
    messages: int,
    consume: int,
    age_s: float,
) -> Outcome:
    outcome = Outcome(trial)
    queue = f"kill-exp-{uuid.uuid4().hex[:10]}"
    arguments = {"x-queue-type": trial.queue_type}
    management.declare_queue("/", queue, arguments)
    # A quorum queue declared a moment before a SIGKILL is gone after it, with every confirmed message (seen
    # on 3.10.8: declared 0 s before the sends, lost; 10 s before, kept): the age is set apart from the delay.
    time.sleep(age_s)
    texts = bodies(messages)
    send, take = CLIENTS[trial.client]
    try:
        outcome.confirmed = send(broker, queue, texts, trial.queue_type)
        acked = take(broker, queue, trial.ack, consume, trial.queue_type) if trial.ack != "none" else []
    except Exception as error:  # reported in the table; the trial goes on to the next
        outcome.error = f"{type(error).__name__}: {error}"
        return outcome
    outcome.acknowledged = len(acked)
    outcome.before_kill = queue_contents(broker, queue) or "?"
    time.sleep(trial.delay_s)  # the variable under test: time from the last confirm/ack to the kill
    broker.restart("kill")
    deadline = time.monotonic() + RECOVERY_S
    while queue_contents(broker, queue) is None:  # not back yet: a drain now would find nothing
        if time.monotonic() > deadline:
            outcome.error = f"the queue was not back {RECOVERY_S:g}s after the restart"
            return outcome
        time.sleep(0.5)
    drained = raw_drain(broker, queue)
    outcome.drained = len(drained)
    seen = [text for text, _ in drained]
    acked_set = set(acked)
    outcome.lost = sorted(set(texts) - acked_set - set(seen))
    outcome.duplicated = len(seen) - len(set(seen))
    for text, flagged in drained:
        if text in acked_set:
            if flagged:
                outcome.returned_flagged += 1
            else:
                outcome.returned_unflagged += 1
    management.delete_queue("/", queue)
    return outcome


def table(outcomes: Sequence[Outcome]) -> str:
    lines = [
        "| client | ack | delay s | queue | confirmed | acked | queue before kill | drained | lost | "
        "acked back (flagged / unflagged) | duplicates | error |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        t = o.trial
        lost = f"**{len(o.lost)}**" if o.lost else "0"
        lines.append(
            f"| {t.client} | {t.ack} | {t.delay_s:g} | {t.queue_type} | {o.confirmed} | {o.acknowledged} | "
            f"{o.before_kill} | {o.drained} | {lost} | {o.returned_flagged} / {o.returned_unflagged} | "
            f"{o.duplicated} | {o.error} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jmslike.conformance.rabbitmq_kill",
        description="SIGKILL a RabbitMQ after confirmed sends, raw STOMP next to jmslike; exit 1 on any loss.",
    )
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--consume", type=int, default=50, help="messages consumed before the kill")
    parser.add_argument("--delays", default="0,1", help="seconds from the last confirm/ack to the kill")
    parser.add_argument("--clients", default="raw,jmslike", help="raw, jmslike, amqp (needs pika)")
    parser.add_argument("--acks", default="none,client-individual,auto")
    parser.add_argument("--queue-types", default="classic,quorum")
    parser.add_argument(
        "--queue-age",
        type=float,
        default=5.0,
        help="seconds from declaring a trial's queue to its first send",
    )
    args = parser.parse_args(argv)
    trials = [
        Trial(client, ack, float(delay), queue_type)
        for queue_type, delay, ack, client in itertools.product(
            args.queue_types.split(","), args.delays.split(","), args.acks.split(","), args.clients.split(",")
        )
    ]
    print(f"{len(trials)} trials, {args.messages} messages each, {args.consume} consumed", flush=True)
    outcomes: list[Outcome] = []
    with launch("rabbitmq") as broker:
        if broker.management_url is None or not isinstance(broker, RabbitMQBroker):
            print("needs the process launcher's RabbitMQ (management API and rabbitmqctl)", file=sys.stderr)
            return 2
        management = RabbitMQManagement(broker.management_url, broker.user, broker.password)
        print(f"broker: RabbitMQ at {broker.url}", flush=True)
        for trial in trials:
            outcome = run_trial(broker, management, trial, args.messages, args.consume, args.queue_age)
            outcomes.append(outcome)
            print(table([outcome]).splitlines()[-1], flush=True)
    print()
    print(table(outcomes))
    lost = sum(len(o.lost) for o in outcomes)
    errors = sum(1 for o in outcomes if o.error)
    print(f"\n{lost} lost, {errors} trials with errors, {len(outcomes)} trials")
    return 1 if lost or errors else 0


if __name__ == "__main__":
    sys.exit(main())

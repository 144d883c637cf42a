"""JMS 2.0 delivery delay on real brokers: never before its time, delivered after it, kept across a
broker restart (graceful and SIGKILL) when PERSISTENT; refused where the broker cannot hold it back."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from expectations import expected

from jmslike import (
    Connection,
    ConnectionFactory,
    DeliveryMode,
    Session,
    UnsupportedFeatureException,
    UnsupportedFeatureRuntimeException,
)
from jmslike.conformance.brokers import launch
from jmslike.conformance.suite.helpers import text_of
from jmslike.conformance.suite.restarts import restart

DELAY_MS = 1500
RECEIVE_MS = 15_000


def _now_ms() -> int:
    return int(time.time() * 1000)


def test_a_delayed_message_arrives_after_its_delivery_time_and_not_before(
    broker: Any, connect: Callable[..., Connection], unique_name: str
) -> None:
    connection = connect()
    session = connection.createSession()
    queue = session.createQueue(unique_name)
    producer = session.createProducer(queue)
    consumer = session.createConsumer(queue)
    with expected("delivery-delay", broker.kind):
        producer.setDeliveryDelay(DELAY_MS)
        assert producer.getDeliveryDelay() == DELAY_MS
        before = _now_ms()
        sent = session.createTextMessage("later")
        producer.send(sent)
        assert sent.getJMSDeliveryTime() == sent.getJMSTimestamp() + DELAY_MS  # stamped by the send
        producer.setDeliveryDelay(0)
        producer.send(session.createTextMessage("now"))
        first = consumer.receive(RECEIVE_MS)
        assert text_of(first) == "now"  # the undelayed one overtakes the delayed one
        delayed = consumer.receive(RECEIVE_MS)
        arrived = _now_ms()
        assert text_of(delayed) == "later"
        assert delayed is not None
        # The sender's JMSDeliveryTime arrives unchanged (a broker may restamp JMSTimestamp: Artemis does).
        assert delayed.getJMSDeliveryTime() == sent.getJMSDeliveryTime()
        assert delayed.getJMSDeliveryTime() >= before + DELAY_MS
        assert arrived >= delayed.getJMSDeliveryTime() - 50  # not before its time (50 ms of clock rounding)
        assert first is not None and first.getJMSDeliveryTime() == first.getJMSTimestamp()


def test_delivery_delay_through_the_simplified_api(
    broker: Any, factory: ConnectionFactory, unique_name: str
) -> None:
    with factory.createContext(broker.user, broker.password) as context:
        queue = context.createQueue(unique_name)
        consumer = context.createConsumer(queue)
        producer = context.createProducer().setDeliveryDelay(DELAY_MS)
        refused: UnsupportedFeatureRuntimeException | None = None
        try:
            producer.send(queue, "delayed")
        except UnsupportedFeatureRuntimeException as exc:
            refused = exc
        with expected("delivery-delay", broker.kind):
            if refused is not None:  # the table decides whether a refusal is right here
                assert isinstance(refused.getCause(), UnsupportedFeatureException)
                raise refused.getCause()  # type: ignore[misc]
            assert consumer.receiveNoWait() is None
            assert consumer.receiveBody(str, RECEIVE_MS) == "delayed"


@pytest.mark.restart
@pytest.mark.parametrize("mode", ["graceful", "kill"])
def test_a_persistent_delayed_message_survives_a_broker_restart(
    broker: Any, connect: Callable[..., Connection], unique_name: str, mode: str
) -> None:
    connection = connect()
    session = connection.createSession()
    producer = session.createProducer(session.createQueue(unique_name))
    with expected("delivery-delay", broker.kind):
        producer.setDeliveryDelay(DELAY_MS)
        producer.send(session.createTextMessage("kept"), DeliveryMode.PERSISTENT, 4, 0)
        sent_at = _now_ms()
        connection.close()
        restart(broker, mode)
        after = connect()
        receiving = after.createSession(False, Session.AUTO_ACKNOWLEDGE)
        got = receiving.createConsumer(receiving.createQueue(unique_name)).receive(RECEIVE_MS)
        assert text_of(got) == "kept"
        assert _now_ms() >= sent_at + DELAY_MS - 50


def test_activemq_without_its_scheduler_is_detected_and_refused(broker_kind: str, unique_name: str) -> None:
    """A broker that would deliver a delayed message at once is refused, before anything is sent."""
    if broker_kind != "activemq":
        pytest.skip("only ActiveMQ Classic has a scheduler that can be switched off")
    with launch("activemq", broker_attributes={"schedulerSupport": "false"}) as plain:
        connection = ConnectionFactory(str(plain.url)).createConnection(plain.user, plain.password)
        try:
            connection.start()
            session = connection.createSession()
            queue = session.createQueue(unique_name)
            producer = session.createProducer(queue)
            producer.setDeliveryDelay(DELAY_MS)
            with pytest.raises(UnsupportedFeatureException, match="schedulerSupport"):
                producer.send(session.createTextMessage("must not go"))
            assert session.createConsumer(queue).receive(1000) is None  # nothing was sent
        finally:
            connection.close()

"""Where a broker cannot keep a JMS promise: the one table of per-broker expectations for these tests.

A behaviour is written once; ``with expected(feature, broker_kind):`` around it turns the table entry
into the outcome:

- unsupported: the body must raise UnsupportedFeatureException (jmslike refuses honestly);
- deviation: the body's assertions must fail (shown as xfail with the reason); if they pass, the test
  fails, so the table cannot go stale;
- no entry: the body must simply pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from jmslike import UnsupportedFeatureException


@dataclass(frozen=True)
class Expectation:
    kind: str  # "unsupported" | "deviation"
    reason: str


EXPECTATIONS: dict[tuple[str, str], Expectation] = {
    ("queue-selectors", "rabbitmq"): Expectation(
        "unsupported",
        "RabbitMQ has no selectors; filtering a queue client-side would consume other consumers' messages",
    ),
    ("browsing", "rabbitmq"): Expectation("unsupported", "RabbitMQ's STOMP has no queue browsing"),
    ("browsing", "artemis"): Expectation("unsupported", "Artemis's STOMP has no queue browser"),
    ("temporary-local-names", "rabbitmq"): Expectation(
        "deviation",
        "a RabbitMQ temporary queue's name is global, so another connection may address it by name",
    ),
    ("temporary-local-names", "artemis"): Expectation(
        "deviation",
        "an Artemis temporary queue is an address with a global name, so another connection may address it "
        "by name",
    ),
    ("redelivered-after-close", "artemis"): Expectation(
        "deviation",
        "Artemis 2.21 flags a message redelivered only after a connection failure: one handed back by closing "
        "its consumer or session comes back with redelivered:false (raw STOMP control: UNSUBSCRIBE three "
        "times, redelivered:false each time; a dropped connection, redelivered:true)",
    ),
    ("inactive-selector-storage", "rabbitmq"): Expectation(
        "deviation",
        "RabbitMQ cannot filter on the broker: messages that fail an inactiveSelector are stored while the "
        "subscriber is away and discarded by jmslike when it reconnects (never delivered)",
    ),
    ("admin-pending-count", "activemq"): Expectation(
        "deviation",
        "ActiveMQ Classic as packaged here has no management interface Python can reach (no Jolokia, JMX "
        "off): a subscription's pending count is unknown (None), never guessed",
    ),
    ("usable-after-authorization-error", "rabbitmq"): Expectation(
        "deviation",
        "RabbitMQ answers a STOMP frame it does not permit (access_refused) by closing the whole STOMP "
        "connection; the refused call raises JMSSecurityException, later calls ConnectionLostException",
    ),
    ("shared-subscriptions", "activemq"): Expectation(
        "unsupported",
        "ActiveMQ Classic 5.17 has no shared subscriptions over STOMP (virtual topics would need publishers "
        "to send to other names): jmslike refuses",
    ),
    ("queue-computing-selector", "activemq"): Expectation(
        "unsupported",
        "ActiveMQ Classic cannot compute on STOMP's string properties (a queue selector with arithmetic "
        "silently matches nothing), and a client-side filter would consume other consumers' messages",
    ),
    ("queue-computing-selector", "artemis"): Expectation(
        "unsupported",
        "Artemis 2.21's core filter cannot compute on STOMP's string properties (a topic subscriber with "
        "'price * qty BETWEEN 10 AND 20' got nothing), and a client-side filter would consume others' messages",
    ),
    ("queue-typed-selector", "artemis"): Expectation(
        "unsupported",
        "Artemis 2.21 keeps STOMP's properties as strings and its filter does not convert them ('weight > 2' "
        "and 'n = 2' matched nothing), and a client-side filter would consume others' messages",
    ),
    ("queue-typed-selector", "rabbitmq"): Expectation(
        "unsupported",
        "RabbitMQ has no selectors; filtering a queue client-side would consume others' messages",
    ),
    ("queue-computing-selector", "rabbitmq"): Expectation(
        "unsupported",
        "RabbitMQ has no selectors; filtering a queue client-side would consume others' messages",
    ),
    ("delivery-delay", "rabbitmq"): Expectation(
        "unsupported",
        "RabbitMQ has no scheduled delivery without the delayed-message plugin; jmslike refuses rather than "
        "deliver early",
    ),
    ("send-to-deleted-temporary", "artemis"): Expectation(
        "deviation",
        "Artemis auto-creates an address on SEND, so a message sent by name to a deleted temporary queue is "
        "accepted into a new queue of that name (docs/artemis.md, temporary queue lifetime)",
    ),
    ("send-to-deleted-temporary", "rabbitmq"): Expectation(
        "deviation",
        "RabbitMQ drops a message sent to a deleted temporary queue without an error (unroutable publish)",
    ),
}


@contextmanager
def expected(feature: str, broker_kind: str) -> Iterator[None]:
    outcome = EXPECTATIONS.get((feature, broker_kind))
    if outcome is None:
        yield
        return
    if outcome.kind == "unsupported":
        with pytest.raises(UnsupportedFeatureException):
            yield
        return
    try:
        yield
    except (AssertionError, pytest.fail.Exception):  # a failed assert, or pytest.raises' "DID NOT RAISE"
        pytest.xfail(f"known deviation on {broker_kind}: {outcome.reason}")
    pytest.fail(f"{feature} now passes on {broker_kind}, but the table lists a deviation: {outcome.reason}")

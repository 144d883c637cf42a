"""JMS 2.0's unchecked exceptions: each checked JMSException maps to its counterpart, cause linked."""

from __future__ import annotations

import pytest

import jmslike
from jmslike.exceptions import (
    ConnectionLostException,
    IllegalStateException,
    IllegalStateRuntimeException,
    InvalidDestinationException,
    InvalidDestinationRuntimeException,
    JMSException,
    JMSRuntimeException,
    JMSTimeoutException,
    MessageFormatException,
    MessageFormatRuntimeException,
    NumberFormatException,
    TransactionRolledBackException,
    TransactionRolledBackRuntimeException,
    UnsupportedFeatureException,
    UnsupportedFeatureRuntimeException,
    runtime_exception,
)


@pytest.mark.parametrize(
    ("checked", "unchecked"),
    [
        (IllegalStateException("x"), IllegalStateRuntimeException),
        (InvalidDestinationException("x"), InvalidDestinationRuntimeException),
        (MessageFormatException("x"), MessageFormatRuntimeException),
        (NumberFormatException("x"), MessageFormatRuntimeException),  # the nearest JMS ancestor wins
        (TransactionRolledBackException("x"), TransactionRolledBackRuntimeException),
        (JMSTimeoutException("x"), JMSRuntimeException),
        (JMSException("x"), JMSRuntimeException),
    ],
)
def test_each_checked_exception_maps_to_its_counterpart(checked: JMSException, unchecked: type) -> None:
    wrapped = runtime_exception(checked)
    assert type(wrapped) is unchecked
    assert wrapped.getCause() is checked and wrapped.__cause__ is checked
    assert str(wrapped) == str(checked)


def test_the_trees_are_apart_as_in_java() -> None:
    """Code that catches JMSException around JMS 1.1 calls must not start catching the unchecked ones."""
    assert not issubclass(JMSRuntimeException, JMSException)
    assert not issubclass(JMSException, JMSRuntimeException)
    assert issubclass(JMSRuntimeException, RuntimeError)


def test_error_code_and_our_extras_carry_over() -> None:
    wrapped = runtime_exception(JMSException("refused", errorCode="E42"))
    assert wrapped.getErrorCode() == "E42"
    unsupported = runtime_exception(UnsupportedFeatureException("RabbitMQ", "selectors", "no filter"))
    assert isinstance(unsupported, UnsupportedFeatureRuntimeException)
    assert (unsupported.broker, unsupported.feature) == ("RabbitMQ", "selectors")
    lost = runtime_exception(ConnectionLostException("gone"))
    assert getattr(lost, "retriable", False) is True


def test_every_runtime_exception_is_exported() -> None:
    names = [n for n in jmslike.__all__ if n.endswith("RuntimeException")]
    assert len(names) == 13
    for name in names:
        assert issubclass(getattr(jmslike, name), JMSRuntimeException)

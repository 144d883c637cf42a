"""The failover rule (jmslike.failover.open_first): which host is used, which errors move on to the next."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from jmslike.exceptions import ConnectionLostException, JMSSecurityException, JMSTimeoutException
from jmslike.failover import open_first

HOSTS = [("a", 1), ("b", 2), ("c", 3)]


def opener(outcomes: Mapping[str, BaseException], tried: list[str]) -> Callable[[tuple[str, int]], str]:
    def open_host(host: tuple[str, int]) -> str:
        tried.append(host[0])
        error = outcomes.get(host[0])
        if error is not None:
            raise error
        return f"wire to {host[0]}"

    return open_host


def test_the_first_host_that_answers_wins() -> None:
    tried: list[str] = []
    outcomes = {"a": ConnectionLostException("refused"), "b": JMSTimeoutException("silent")}
    assert open_first(HOSTS, opener(outcomes, tried), "no broker") == "wire to c"
    assert tried == ["a", "b", "c"]


def test_a_refusal_is_the_answer_and_stops_the_search() -> None:
    tried: list[str] = []
    with pytest.raises(JMSSecurityException, match="bad password"):
        open_first(HOSTS, opener({"a": JMSSecurityException("bad password")}, tried), "no broker")
    assert tried == ["a"]


def test_one_host_raises_its_own_error_and_several_name_every_reason() -> None:
    with pytest.raises(JMSTimeoutException, match="silent"):
        open_first(HOSTS[:1], opener({"a": JMSTimeoutException("silent")}, []), "no broker")
    down = {name: ConnectionLostException(f"{name} is down") for name in "abc"}
    with pytest.raises(ConnectionLostException, match="no broker: a is down; b is down; c is down"):
        open_first(HOSTS, opener(down, []), "no broker")

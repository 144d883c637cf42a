"""check_connection_listener (jmslike/connection_listener.py): what setConnectionListener refuses, in pure code."""

from __future__ import annotations

import pytest

from jmslike.connection_listener import AsyncConnectionListener, ConnectionListener, check_connection_listener
from jmslike.exceptions import ConnectionLostException, JMSException


class Plain(ConnectionListener):
    def onConnectionRestored(self, brokerURL: str) -> None:
        pass


class Duck:
    """Not a subclass, but with both methods: accepted, as a MessageListener with onMessage() is."""

    def onConnectionInterrupted(self, error: ConnectionLostException) -> None:
        pass

    def onConnectionRestored(self, brokerURL: str) -> None:
        pass


@pytest.mark.parametrize("coroutines", [False, True])
def test_plain_listeners_and_none_are_accepted_by_both_apis(coroutines: bool) -> None:
    for listener in (None, Plain(), ConnectionListener(), Duck()):
        check_connection_listener(listener, coroutines=coroutines)


def test_coroutine_methods_only_where_they_are_awaited() -> None:
    check_connection_listener(AsyncConnectionListener(), coroutines=True)
    with pytest.raises(JMSException, match=r"onConnectionInterrupted is a coroutine function.*jmslike.aio"):
        check_connection_listener(AsyncConnectionListener(), coroutines=False)


@pytest.mark.parametrize("coroutines", [False, True])
def test_a_listener_without_the_methods_is_refused_saying_what_to_subclass(coroutines: bool) -> None:
    with pytest.raises(
        JMSException, match=r"needs onConnectionInterrupted\(\); subclass jmslike.ConnectionListener"
    ):
        check_connection_listener(lambda error: None, coroutines=coroutines)

    class Half:
        def onConnectionInterrupted(self, error: ConnectionLostException) -> None:
            pass

    with pytest.raises(JMSException, match=r"needs onConnectionRestored\(\)"):
        check_connection_listener(Half(), coroutines=coroutines)

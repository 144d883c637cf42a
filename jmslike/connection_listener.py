"""What a reconnecting connection tells the application about its broker: a jmslike extra to JMS.

With ``reconnect=true`` a connection hides the loss of its broker: sends and acknowledgements wait for the new
connection, consumers are subscribed again, and the ExceptionListener hears of it only when the attempts are
used up. An application that reports its health, pauses its own work or counts outages wants to know at once.
Java clients have this outside JMS: Qpid JMS's ``JmsConnectionListener`` (``onConnectionInterrupted`` /
``onConnectionRestored``) and ActiveMQ's ``TransportListener`` (``transportInterrupted`` /
``transportResumed``). jmslike takes Qpid JMS's names.

``Connection.setConnectionListener(listener)`` (both APIs) sets one listener. The threaded API calls it on the
thread that runs the ExceptionListener, in the order things happened, one call at a time. ``jmslike.aio`` calls
it in tasks of their own, each awaited to its end before the next begins (ordered among themselves, not against
ExceptionListener tasks); a plain, not coroutine, method there runs on the event loop and must not block. An
interruption comes before the restoration that ends it; a listener set while a reconnect is under way hears only
its end (or nothing, if it gives up). A connection without ``reconnect`` tells it nothing: its loss is final, and the ExceptionListener hears
of it.
"""

from __future__ import annotations

import inspect

from jmslike.exceptions import ConnectionLostException, JMSException

_METHODS = ("onConnectionInterrupted", "onConnectionRestored")


class ConnectionListener:
    """Subclass and override what you need; the methods here do nothing. A method that raises is logged and
    changes nothing for the connection."""

    def onConnectionInterrupted(self, error: ConnectionLostException) -> None:
        """The connection lost its broker and is reconnecting; ``error`` says how it was lost. Calls made from
        now on wait for the reconnect, up to the receipt timeout (``receipt_timeout_ms``)."""

    def onConnectionRestored(self, brokerURL: str) -> None:
        """The connection is back, connected to ``brokerURL`` (scheme, host and port of the broker of the list
        it reached; never credentials) and its consumers subscribed again."""


class AsyncConnectionListener:
    """:class:`ConnectionListener` for ``jmslike.aio`` (exported there as ``ConnectionListener``): the same calls,
    as coroutines, each awaited before the next begins. A plain :class:`ConnectionListener` is accepted too."""

    async def onConnectionInterrupted(self, error: ConnectionLostException) -> None:
        """As :meth:`ConnectionListener.onConnectionInterrupted`."""

    async def onConnectionRestored(self, brokerURL: str) -> None:
        """As :meth:`ConnectionListener.onConnectionRestored`."""


def check_connection_listener(listener: object, *, coroutines: bool) -> None:
    """Refuse, when it is set, a listener that could not be called at the loss: one without both methods, or (in
    the threaded API, ``coroutines=False``) one whose methods are coroutines, which nothing there would await."""
    if listener is None:
        return
    for method in _METHODS:
        call = getattr(listener, method, None)
        if not callable(call):
            raise JMSException(
                f"a ConnectionListener needs {method}(); subclass jmslike.ConnectionListener "
                f"(jmslike.aio.ConnectionListener in the asyncio API), got {listener!r}"
            )
        if not coroutines and inspect.iscoroutinefunction(call):
            raise JMSException(
                f"{type(listener).__name__}.{method} is a coroutine function, which the threaded API cannot await: "
                "give it plain methods (jmslike.ConnectionListener), or use it with a jmslike.aio connection"
            )

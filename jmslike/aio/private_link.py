"""The private threaded connection a ``jmslike.aio`` connection keeps for jmslike's own blocking store work.

Retained publications keep their copies in store queues that jmslike browses, selects from and consumes in
private STOMP transactions (:mod:`jmslike.retained`). Those steps are blocking round trips with a subscription
routed to a waiting sink; rather than write them twice, ``jmslike.aio`` runs the threaded code, in a worker
thread, on a private connection to the same broker with the same credentials and no client ID. One is opened
on first use and kept (a connect per retained send would cost more than the send), replaced once it is lost,
and closed with its owner. It never carries the application's own traffic: a retained send in a transacted
session goes on the application's wire, in its transaction.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from jmslike.exceptions import ConnectionLostException, IllegalStateException, JMSException

if TYPE_CHECKING:
    from jmslike.connection import Connection as ThreadedConnection

log = logging.getLogger(__name__)
T = TypeVar("T")


class PrivateLink:
    """Opened lazily by ``opener``; every method runs in a worker thread (``Connection.in_worker``)."""

    def __init__(self, opener: Callable[[], ThreadedConnection]) -> None:
        self._opener = opener
        self._lock = threading.Lock()  # opening and closing; the work itself may run concurrently
        self._connection: ThreadedConnection | None = None
        self._closed = False

    @property
    def opened(self) -> bool:
        """A private connection is open (closing the owner has one to close)."""
        return self._connection is not None

    def run(self, work: Callable[[ThreadedConnection], T]) -> T:
        """``work`` on the private connection; one lost meanwhile is dropped, so the next call opens anew."""
        connection = self._current()
        try:
            return work(connection)
        except ConnectionLostException:
            self._drop(connection)
            raise

    def close(self) -> None:
        """Close the private connection, if any; later calls are refused."""
        with self._lock:
            self._closed = True
            connection, self._connection = self._connection, None
        if connection is not None:
            _close_quietly(connection)

    def _current(self) -> ThreadedConnection:
        with self._lock:
            if self._closed:
                raise IllegalStateException("the connection is closed")
            connection = self._connection
            if connection is not None and (connection.closed or connection.failure is not None):
                self._connection = None
                _close_quietly(connection)
                connection = None
            if connection is None:
                connection = self._opener()
                connection.start()
                self._connection = connection
            return connection

    def _drop(self, connection: ThreadedConnection) -> None:
        with self._lock:
            if self._connection is connection:
                self._connection = None
        _close_quietly(connection)


def _close_quietly(connection: ThreadedConnection) -> None:
    try:
        connection.close()
    except JMSException as exc:
        log.debug("closing a private connection failed: %s", exc)

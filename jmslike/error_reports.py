"""How many asynchronous error reports may wait for a slow ExceptionListener: one rule for both APIs.

A broker flooding ERROR frames, or a listener that blocks, must not make a connection's memory grow without
bound: at most :data:`MAX_QUEUED_EVENTS` reports are queued or running; beyond that further ones are counted
and logged (the first, then every thousandth), not queued. The loss of the connection is always delivered,
since it is the one report an application cannot do without.
"""

from __future__ import annotations

import logging

from jmslike.exceptions import ConnectionLostException, JMSException

log = logging.getLogger("jmslike.connection")

#: Asynchronous error reports that may wait for a slow ExceptionListener before further ones are dropped.
MAX_QUEUED_EVENTS = 1000


class ReportBacklog:
    """The count of reports queued or running for one connection's ExceptionListener. Not thread-safe: the
    threaded connection calls it under its lock, jmslike.aio on its event loop."""

    __slots__ = ("_dropped", "_queued")

    def __init__(self) -> None:
        self._queued = 0
        self._dropped = 0

    @property
    def queued(self) -> int:
        return self._queued

    @property
    def dropped(self) -> int:
        return self._dropped

    def admit(self, error: JMSException) -> bool:
        """Whether ``error`` may be queued for the listener (then :meth:`done` must follow once it ran). A report
        refused is counted; :meth:`log_dropped` says so, outside the caller's lock."""
        if self._queued >= MAX_QUEUED_EVENTS and not isinstance(error, ConnectionLostException):
            self._dropped += 1
            return False
        self._queued += 1
        return True

    def log_dropped(self, dropped: int, error: JMSException) -> None:
        """Log the ``dropped``-th refused report (the first, then every thousandth)."""
        if dropped == 1 or dropped % 1000 == 0:
            log.warning(
                "ExceptionListener is %d reports behind; %d asynchronous error(s) not delivered, latest: %s",
                MAX_QUEUED_EVENTS,
                dropped,
                error,
            )

    def done(self) -> None:
        """A report admitted earlier has run (or will never run)."""
        self._queued -= 1

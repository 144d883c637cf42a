"""Restarting a broker for a test or a scenario, with RabbitMQ 3.10's fresh-queue hazard kept out.

RabbitMQ 3.10.8 can drop a queue declared just before a SIGKILL, together with the confirmed messages in it:
the declaration's Mnesia commit record is on disk but its "committed" decision record is not yet, so recovery
presumes the declaration aborted (docs/conformance.md; raw STOMP control
``python -m jmslike.conformance.rabbitmq_fresh_queue``: the queue was gone in 18 of 110 transacted and 2 of 80
plain trials, and in 0 of 25 when one more durable declaration had completed before the kill). No client can
prevent that, and the integration tests and the conformance suite are about jmslike across a crash, so before
a SIGKILL of RabbitMQ this makes one more durable declaration through the management API and waits for its
answer, which flushes the earlier decision; it is deleted after the restart. A message that is still missing
fails as before. The hazard itself is measured by the experiment above, not by the suite.
"""

from __future__ import annotations

import logging
import time
import urllib.error
import uuid

from jmslike.adapters.rabbitmq_management import ManagementUnavailable, RabbitMQManagement
from jmslike.conformance.brokers import BrokerHandle, RestartMode

log = logging.getLogger(__name__)

#: How long the barrier's deletion is retried after the restart, while the management API does not answer yet.
BARRIER_DELETE_S = 15.0
#: The management client's timeout for the barrier, per socket operation (urllib's): no new attempt starts
#: later than this before the budget ends.
BARRIER_CALL_TIMEOUT_S = 5.0

FLUSH_NOTE = (
    "before each SIGKILL of RabbitMQ one durable queue declaration is completed through the management API, so "
    "that a queue declared just before the kill is not lost with its messages by RabbitMQ 3.10 (docs/conformance.md)"
)


def flushes(broker: BrokerHandle, mode: str) -> bool:
    """Whether :func:`restart` makes the flushing declaration for this broker and mode."""
    return mode == "kill" and broker.kind == "rabbitmq" and broker.management_url is not None


def restart(broker: BrokerHandle, mode: RestartMode) -> None:
    """``broker.restart(mode)``; on RabbitMQ's SIGKILL, after a completed durable declaration (see above)."""
    if not flushes(broker, mode):
        broker.restart(mode)
        return
    assert broker.management_url is not None
    management = RabbitMQManagement(
        broker.management_url, broker.user, broker.password, timeout_s=BARRIER_CALL_TIMEOUT_S
    )
    barrier = f"jmslike-barrier-{uuid.uuid4().hex[:8]}"
    try:
        management.declare_queue("/", barrier, {})
    except Exception as exc:  # the kill itself must still happen: a raw one, said so
        log.warning(
            "%s: no flushing declaration before the SIGKILL (%s); killing without it", broker.kind, exc
        )
        broker.restart(mode)
        # Unreachable may mean timed out, and the broker may have made the queue all the same.
        if isinstance(exc, ManagementUnavailable):
            _delete_barrier(management, broker.kind, barrier, patient=False)
        return
    broker.restart(mode)
    _delete_barrier(management, broker.kind, barrier)


def _delete_barrier(management: RabbitMQManagement, kind: str, barrier: str, *, patient: bool = True) -> None:
    """Delete the barrier queue (gone with the kill already, or never made: nothing to do, the API answers 404).
    A management API not answering yet, or answering HTTP 5xx, is asked again for a while when ``patient`` (not
    when it already failed before the kill: every kill would wait for it); any other refusal, or one that lasts,
    is logged, not raised: the barrier holds no message, and the test goes on."""
    deadline = time.monotonic() + (BARRIER_DELETE_S if patient else 0.0)
    while True:
        try:
            management.delete_queue("/", barrier)
            return
        except Exception as exc:
            if not _transient(exc) or time.monotonic() + BARRIER_CALL_TIMEOUT_S > deadline:
                log.warning("%s: the barrier queue %s is left over (%s)", kind, barrier, exc)
                return
        time.sleep(0.2)


def _transient(exc: Exception) -> bool:
    """A management API failure worth asking again: unreachable, or a server error (HTTP 5xx)."""
    cause = exc.__cause__
    return isinstance(exc, ManagementUnavailable) or (
        isinstance(cause, urllib.error.HTTPError) and cause.code >= 500
    )

"""Retained publications, subscriptions on request only and request update in ``jmslike.aio``.

The rules and the store are :mod:`jmslike.retained`'s (docs/retained.md): the same checks, the same copy, the
same choice of what a request update delivers, so either API reads what the other stored.

- A retained send's two SENDs (the live publication and its copy) go on the application's own wire: in the
  session's transaction when it is transacted, else in a private STOMP transaction (BEGIN, both SENDs,
  COMMIT), so the broker applies both or neither, in send order with the session's other sends, and the
  broker's noLocal (per connection on ActiveMQ, by connection headers on Artemis) sees the sender. The pair
  runs to its end even when the caller is cancelled: a cancel never leaves the live message in a transaction
  without its copy.
- Where jmslike keeps only the latest copy (ActiveMQ), the older copies are consumed once the new one is
  committed (the threaded API does that inside its private transaction; readers take the last copy either
  way). That, and the reads of a request update, are blocking store work -- browses and selecting
  subscriptions with a waiting sink -- which runs the threaded code in a worker thread on the connection's
  private threaded connection (:mod:`jmslike.aio.private_link`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from jmslike import retained
from jmslike.contract import AsyncPendingReceipt, OutgoingMessage
from jmslike.exceptions import ConnectionLostException, JMSException

if TYPE_CHECKING:
    from jmslike.aio.connection import Connection
    from jmslike.aio.consumer import MessageConsumer
    from jmslike.aio.session import Session

log = logging.getLogger(__name__)


async def publish(
    session: Session, outgoing: OutgoingMessage, sent: Callable[[], None] | None = None
) -> None:
    """Publish ``outgoing`` live and store it as its topic's retained publication, atomically; then ``sent``
    (its CompletionListener's turn), also when the caller was cancelled while the pair went out."""
    connection = session.connection
    publication = retained.plan_publication(connection.adapter, connection.connection_id, outgoing)
    if session.transacted:  # the pair runs to its end, and a commit waits for both SENDs

        async def pair(transaction: str) -> None:
            await _in_transaction(session, publication, transaction)
            if sent is not None:
                sent()

        await session.in_transaction(pair)
        return

    async def atomically() -> None:
        await _atomically(connection, publication)
        if sent is not None:
            sent()

    await asyncio.shield(asyncio.ensure_future(atomically()))  # a cancelled caller does not split the pair


async def _in_transaction(session: Session, publication: retained.Publication, transaction: str) -> None:
    connection = session.connection
    adapter = connection.adapter
    wire = await connection.use_wire()
    try:
        for frame in publication.frames(adapter, transaction):
            if adapter.transactional_send_receipts:
                await wire.request(frame)
            else:
                session.defer_receipt(await wire.submit(frame, None))  # commit() waits for these
    except JMSException as exc:
        session.mark_rollback_only(retained.half_sent(exc))
        raise
    if adapter.capabilities.retained == "jmslike":
        session.after_commit(lambda: _remove_older(connection, publication))  # the new copy first


async def _atomically(connection: Connection, publication: retained.Publication) -> None:
    """Both SENDs in a private STOMP transaction on the application's wire (jmslike.retained's
    ``_send_atomically``, whose messages these are), then the older copies go."""
    adapter = connection.adapter
    wire = await connection.use_wire()
    transaction = retained.private_transaction_id(connection.connection_id)
    await wire.request(adapter.transaction_frame("BEGIN", transaction))
    waiting: list[AsyncPendingReceipt] = []
    try:
        for frame in publication.frames(adapter, transaction):
            if adapter.transactional_send_receipts:
                await wire.request(frame)
            else:
                waiting.append(await wire.submit(frame, None))  # answered only after COMMIT
    except ConnectionLostException:
        raise  # an uncommitted transaction dies with its connection: nothing was published
    except JMSException:
        try:
            await wire.request(adapter.transaction_frame("ABORT", transaction))
        except JMSException:
            log.debug("ABORT of a failed retained send failed", exc_info=True)
        finally:
            wire.discard(waiting)  # never answered once aborted (Wire.discard)
        raise
    try:
        await wire.request(adapter.transaction_frame("COMMIT", transaction))
    except ConnectionLostException as exc:
        raise ConnectionLostException(retained.COMMIT_LOST) from exc
    loop = asyncio.get_running_loop()
    deadline = loop.time() + connection.config.receipt_timeout_ms / 1000
    for item in waiting:
        retained.check_confirmed(await item.answered(max(0.0, deadline - loop.time())), item.error)
    if adapter.capabilities.retained == "jmslike":
        await _remove_older(connection, publication)


async def _remove_older(connection: Connection, publication: retained.Publication) -> None:
    """The new copy is committed: consume the older ones. A failure is only logged: an older copy is never
    delivered instead of the newer (readers take the last), and the next retained send removes it."""
    store, topic = publication.store, publication.topic
    try:
        await connection.on_private(lambda private: retained.remove_older(private, store, topic))
    except Exception as exc:  # the publication itself succeeded: never raise out of it
        log.warning("could not remove older retained copies of %s: %s", topic.name, exc)


async def request_update(consumer: MessageConsumer, correlation_id: str | None = None) -> int:
    """Deliver to ``consumer`` the current retained publication of every topic it matches (the threaded
    API's :func:`jmslike.retained.request_update`)."""
    consumer.check_open()
    connection = consumer.session.connection
    topic = retained.check_update_request(
        connection.adapter,
        consumer.getDestination(),
        consumer.spec.client_id,
        connection.getClientID(),
        correlation_id,
    )
    bodies = await connection.on_private(lambda private: retained.read_bodies(private, topic))
    consumer.check_open()
    chosen = retained.choose_updates(
        connection.adapter,
        consumer.spec,
        consumer.selector,
        consumer.getMessageSelector(),
        topic,
        bodies,
        connection.connection_id,
        correlation_id,
    )
    for incoming in chosen:
        consumer.enqueue(incoming)
    return len(chosen)

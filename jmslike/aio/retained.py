"""Retained publications, subscriptions on request only and request update in ``jmslike.aio``.

The rules and the store are :mod:`jmslike.retained`'s (docs/retained.md): the same checks, the same copy, the
same choice of what a request update delivers, so either API reads what the other stored. What differs is
where the blocking store work runs:

- a retained send in a transacted session goes on the application's wire in its transaction, as in the
  threaded API (where jmslike keeps only the latest copy, the older ones are consumed once it committed);
- outside a transaction the live publication and its copy are sent in a private STOMP transaction on the
  connection's private threaded connection (:mod:`jmslike.aio.private_link`), in a worker thread, once the
  session's earlier unwaited sends are confirmed, so the broker has them first (send order);
- a request update reads the stores there too, then hands the chosen copies to the consumer on the loop.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from jmslike import retained
from jmslike.contract import OutgoingMessage
from jmslike.exceptions import JMSException

if TYPE_CHECKING:
    from jmslike.aio.consumer import MessageConsumer
    from jmslike.aio.session import Session

log = logging.getLogger(__name__)


async def publish(session: Session, outgoing: OutgoingMessage) -> None:
    """Publish ``outgoing`` live and store it as its topic's retained publication, atomically."""
    connection = session.connection
    adapter = connection.adapter
    publication = retained.plan_publication(adapter, connection.connection_id, outgoing)
    transaction = await session.transaction_for_send()
    if transaction is not None:
        wire = await connection.use_wire()
        for frame in publication.frames(adapter, transaction):
            if adapter.transactional_send_receipts:
                await wire.request(frame)
            else:
                session.defer_receipt(await wire.submit(frame, None))  # commit() waits for these
        if adapter.capabilities.retained == "jmslike":
            store, topic = publication.store, publication.topic

            async def remove_older() -> None:  # the new copy is committed: the older ones go
                try:
                    await connection.on_private(lambda private: retained.remove_older(private, store, topic))
                except JMSException as exc:  # never delivered instead of the new one (readers take the last)
                    log.warning("could not remove older retained copies of %s: %s", topic.name, exc)

            session.after_commit(remove_older)
        return
    if not await session.settle_sends():
        raise JMSException(
            "this session's earlier asynchronous sends are still unconfirmed after the receipt timeout, so the "
            "retained publication was not sent (it would overtake them); send it again"
        )
    await connection.on_private(lambda private: retained.publish_atomically(private, publication))


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
        topic,
        bodies,
        connection.connection_id,
        correlation_id,
    )
    for incoming in chosen:
        consumer.enqueue(incoming)
    return len(chosen)

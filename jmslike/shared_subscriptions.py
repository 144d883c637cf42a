"""JMS 2.0 shared subscriptions (§8.3.2 non-durable, §8.3.4 durable): creation and the rules around them.

A shared subscription is identified by its name and the client ID, which may be unset. Any number of
consumers, in any connections and processes, attach to it; each message goes to one of them. The broker's
adapter maps it onto one queue all consumers share (``capabilities.shared_subscriptions``); where no such
mapping keeps JMS's rules (ActiveMQ Classic over STOMP), jmslike refuses with UnsupportedFeatureException
rather than give every consumer every message.

The rules jmslike enforces here or through the adapter:

- a shared durable and an unshared durable subscription may not have the same name and client ID
  (JMSException); shared non-durable subscriptions have a namespace of their own;
- creating one with another topic or selector than the existing one replaces it only when it has no
  consumer anywhere; otherwise JMSException (the adapter checks on the broker, not from stale statistics);
- a shared non-durable subscription exists while it has a consumer; a shared durable one until
  ``unsubscribe(name)``, which works without a client ID too, and refuses while consumers are attached.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from jmslike.consumer import MessageConsumer
from jmslike.destinations import Topic
from jmslike.subscription_plans import plan_shared

if TYPE_CHECKING:
    from jmslike.session import Session


def create(
    session: Session, topic: Topic, name: str, messageSelector: str | None, durable: bool
) -> MessageConsumer:
    """``createSharedConsumer`` / ``createSharedDurableConsumer``: a consumer on the shared subscription
    (name, client ID or none), created on the broker if it does not exist."""
    connection = session.connection
    spec, parsed = plan_shared(
        connection.adapter,
        connection.config,
        sub_id=connection.next_sub_id(),
        client_id=connection.getClientID(),
        topic=topic,
        name=name,
        selector=messageSelector,
        durable=durable,
    )
    return session.attach(MessageConsumer(session, spec, parsed))

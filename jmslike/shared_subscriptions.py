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
from jmslike.contract import SubscriptionSpec
from jmslike.destinations import TemporaryTopic, Topic
from jmslike.exceptions import InvalidDestinationException, UnsupportedFeatureException
from jmslike.subscriptions import topic_refused

if TYPE_CHECKING:
    from jmslike.session import Session

FEATURE = "shared subscriptions (JMS 2.0 createSharedConsumer / createSharedDurableConsumer)"


def create(
    session: Session, topic: Topic, name: str, messageSelector: str | None, durable: bool
) -> MessageConsumer:
    """``createSharedConsumer`` / ``createSharedDurableConsumer``: a consumer on the shared subscription
    (name, client ID or none), created on the broker if it does not exist."""
    connection = session.connection
    adapter = connection.adapter
    if not adapter.capabilities.shared_subscriptions:
        raise UnsupportedFeatureException(
            adapter.display_name,
            FEATURE,
            "the broker has no subscription queue consumers can share over STOMP; jmslike refuses rather "
            "than give each consumer every message (a queue gives competing consumers)",
        )
    if not isinstance(topic, Topic) or isinstance(topic, TemporaryTopic):
        raise InvalidDestinationException(
            f"a shared subscription needs a (non-temporary) Topic, got {topic!r}"
        )
    if durable and topic_refused(topic.name, connection.config.no_durable_topics):
        raise InvalidDestinationException(
            f"topic {topic.name!r} does not allow durable subscriptions (no_durable_topics in the connection "
            "URL); use createSharedConsumer or another topic"
        )
    parsed = session.parse_selector(messageSelector, topic)
    spec = SubscriptionSpec(
        sub_id=connection.next_sub_id(),
        destination=topic,
        selector=parsed.render() if parsed is not None else None,
        client_id=connection.getClientID(),
        prefetch=connection.config.prefetch,
        shared_name=name,
        shared_durable=durable,
    )
    return session.attach(MessageConsumer(session, spec, parsed))

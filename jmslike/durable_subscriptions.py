"""Durable subscription management on the application side: create with the MQ extras, resume by name,
close keeping or removing, persistence filtering, client-enforced expiry, per-topic policy.

``Session`` and ``TopicSubscriber`` delegate here (their own edits stay small). The rules:

- **Records.** Every durable subscription jmslike creates is recorded where the broker keeps it
  (:func:`jmslike.catalogue.registry_for`): on create, and on close (last activity). ``unsubscribe``
  removes the record.
- **Resume** reads the record and re-creates the subscriber with the recorded topic, selector, noLocal,
  inactive selector and *original* expiry. No record: ``InvalidDestinationException``.
- **Expiry.** RabbitMQ removes an unused subscription queue itself (``x-expires``). Elsewhere jmslike
  enforces it: a resume or create finding the subscription inactive for longer than its expiry deletes it
  first (resume then fails with ``InvalidDestinationException``); ``jmslike.admin.Admin.sweepExpired``
  deletes every expired one. Between expiry and the next sweep the broker keeps storing messages for it.
- **Persistence filter** (``inactiveSelector``): see :mod:`jmslike.subscriptions`. The companion
  subscription's messages are delivered through the durable subscriber; order is kept within each of the
  two streams (qualifying / not qualifying), not across them.
- **Policy.** ``?no_durable_topics=a,b,prices.*`` makes creating a durable subscription on those topics
  an ``InvalidDestinationException`` (JMS's exception for "this topic cannot be used here").
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from jmslike import selector as selectors
from jmslike.catalogue import optional_registry, registry_for
from jmslike.consumer import MessageConsumer, TopicSubscriber, selector_value
from jmslike.contract import IncomingMessage, SubscriptionRegistry, SubscriptionSpec
from jmslike.destinations import Topic
from jmslike.exceptions import IllegalStateException, InvalidDestinationException, JMSException
from jmslike.subscriptions import (
    DurableDefinition,
    check_expiry,
    companion_accepts,
    durable_selector,
    expired,
    topic_refused,
)

if TYPE_CHECKING:
    from jmslike.session import Session

log = logging.getLogger(__name__)


class CompanionConsumer(MessageConsumer):
    """The non-durable half of a persistence-filtered subscription: delivers, through its owner, the
    messages the durable subscription does not keep (inactive selector not TRUE)."""

    def __init__(
        self,
        session: Session,
        spec: SubscriptionSpec,
        selector: selectors.Selector | None,
        owner: TopicSubscriber,
    ) -> None:
        super().__init__(session, spec, selector)
        self._owner = owner
        inactive = owner.definition.inactive_selector if owner.definition is not None else None
        assert inactive is not None
        self._inactive = selectors.parse(inactive)

    def enqueue(self, incoming: IncomingMessage) -> None:
        from jmslike.delivery import Pending

        self._session.enqueue_for(self._owner, Pending(incoming))

    def accepts(self, incoming: IncomingMessage) -> bool:
        if not super().accepts(incoming):
            return False
        return companion_accepts(self._inactive, lambda name: selector_value(incoming, name))


def create(
    session: Session,
    topic: Topic,
    name: str,
    messageSelector: str | None,
    noLocal: bool,
    inactiveSelector: str | None,
    expiry_ms: int,
    resuming: bool = False,
    on_request_only: bool = False,
) -> TopicSubscriber:
    """``Session.createDurableSubscriber`` with the MQ extras (checks already done by the session)."""
    connection = session.connection
    client_id = connection.getClientID()
    assert client_id is not None
    expiry_ms = check_expiry(expiry_ms)
    if topic_refused(topic.name, connection.config.no_durable_topics):
        raise InvalidDestinationException(
            f"topic {topic.name!r} does not allow durable subscriptions (no_durable_topics in the connection "
            "URL); use a non-durable subscriber (createConsumer) or another topic"
        )
    if on_request_only and inactiveSelector is not None:
        raise JMSException(
            "a subscription on request only receives no live traffic, so an inactiveSelector has nothing to "
            "filter: give one or the other"
        )
    parsed = session.parse_selector(messageSelector, topic)
    inactive = session.parse_selector(inactiveSelector, topic)
    definition = DurableDefinition(
        client_id=client_id,
        name=name,
        topic=topic.name,
        selector=parsed.text if parsed is not None else None,
        no_local=bool(noLocal),
        inactive_selector=inactive.text if inactive is not None else None,
        expiry_ms=expiry_ms,
        on_request_only=on_request_only,
    )
    registry = optional_registry(connection)
    if registry is not None:
        _expire_if_due(session, registry, client_id, name, resuming)
    elif expiry_ms:
        registry_for(connection)  # raises UnsupportedFeatureException saying why
    combined_text = durable_selector(
        parsed.render() if parsed is not None else None, inactive.render() if inactive is not None else None
    )
    combined = session.parse_selector(combined_text, topic)
    spec = SubscriptionSpec(
        sub_id=connection.next_sub_id(),
        destination=topic,
        selector=combined.render() if combined is not None else None,
        no_local=bool(noLocal),
        durable_name=name,
        client_id=client_id,
        prefetch=connection.config.prefetch,
        expiry_ms=expiry_ms,
        definition=definition.to_json(),
    )
    if on_request_only:
        from jmslike.retained import OnRequestSubscriber

        subscriber: TopicSubscriber = OnRequestSubscriber(session, spec, combined)
    else:
        subscriber = TopicSubscriber(session, spec, combined)
    subscriber.definition = definition
    session.attach(subscriber)
    try:
        if inactive is not None:
            _attach_companion(session, subscriber, parsed)
        if registry is not None:
            registry.attached(definition)
    except BaseException:
        subscriber.close()
        raise
    return subscriber


def _attach_companion(session: Session, owner: TopicSubscriber, parsed: selectors.Selector | None) -> None:
    connection = session.connection
    spec = SubscriptionSpec(
        sub_id=connection.next_sub_id(),
        destination=owner.spec.destination,
        selector=parsed.render() if parsed is not None else None,
        no_local=owner.spec.no_local,
        client_id=owner.spec.client_id,
        prefetch=connection.config.prefetch,
    )
    companion = CompanionConsumer(session, spec, parsed, owner)
    connection.register_consumer(companion)
    try:
        connection.adapter.subscribe(connection.wire_for_use(), spec)
    except BaseException:
        connection.unregister_consumer(companion)
        raise
    owner.companion = companion


def _expire_if_due(
    session: Session, registry: SubscriptionRegistry, client_id: str, name: str, resuming: bool
) -> None:
    """Where jmslike enforces expiry: delete the subscription if it has been inactive too long."""
    if registry.broker_expiry:
        return
    expiry_ms, last = registry.expiry_state(client_id, name)
    if not expired(expiry_ms, last, int(time.time() * 1000)):
        return
    log.info("durable subscription %r of %r expired; deleting it", name, client_id)
    connection = session.connection
    try:
        connection.adapter.delete_durable(connection.wire_for_use(), client_id, name)
    except InvalidDestinationException:
        log.debug("expired subscription %r was already gone on the broker", name)
    registry.removed(client_id, name)
    if resuming:
        raise InvalidDestinationException(
            f"durable subscription {name!r} of client {client_id!r} expired: inactive for more than "
            f"{expiry_ms} ms; it was deleted with its backlog"
        )


def resume(session: Session, name: str) -> TopicSubscriber:
    """``Session.resumeDurableSubscriber``: attach to an existing subscription by name alone."""
    connection = session.connection
    client_id = connection.getClientID()
    assert client_id is not None
    definition = registry_for(connection).lookup(client_id, name)
    if definition is None:
        raise InvalidDestinationException(
            f"no durable subscription {name!r} exists for client ID {client_id!r} (or it was created outside "
            "jmslike): create it with createDurableSubscriber(topic, name, ...)"
        )
    return create(
        session,
        Topic(definition.topic),
        name,
        definition.selector,
        definition.no_local,
        definition.inactive_selector,
        definition.expiry_ms,
        resuming=True,
        on_request_only=definition.on_request_only,
    )


def close(subscriber: TopicSubscriber, remove: bool) -> None:
    """``TopicSubscriber.close(removeSubscription=...)``."""
    session = subscriber.session
    name = subscriber.spec.durable_name
    if remove:
        if name is None:
            raise IllegalStateException("removeSubscription=True needs a durable subscriber")
        current = session.current_delivery
        if current is not None and current[0] is subscriber:
            raise IllegalStateException(
                f"close(removeSubscription=True) of {name!r} from its own MessageListener: the message being "
                "delivered keeps the subscription attached until the listener returns; close() here and call "
                "session.unsubscribe(name) afterwards, or close from another thread"
            )
        if any(s.holds_unacked(name) for s in session.connection.sessions()):
            raise IllegalStateException(
                f"a message of durable subscription {name!r} is unacknowledged or in an open transaction; "
                "acknowledge, commit or roll back before close(removeSubscription=True)"
            )
    MessageConsumer.close(subscriber)
    if name is None:
        return
    if remove:
        session.unsubscribe(name)
        return
    definition = subscriber.definition
    registry = optional_registry(session.connection)
    if definition is not None and registry is not None and session.connection.wire.is_open:
        try:
            registry.detached(definition)
        except JMSException as exc:
            log.warning("could not record that durable subscription %r was closed: %s", name, exc)


def detach_companion(subscriber: TopicSubscriber) -> None:
    companion = subscriber.companion
    if companion is not None:
        subscriber.companion = None
        companion.end_now()

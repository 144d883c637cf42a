"""Durable subscription management on the application side: create with the MQ extras, resume by name,
close keeping or removing, persistence filtering, client-enforced expiry, per-topic policy.

``Session`` delegates here, and ``TopicSubscriber`` (a consumer of a durable subscription, or of a topic on
request only) lives here. The rules:

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
from jmslike.catalogue import RegistryOwner, optional_registry, registry_for
from jmslike.consumer import MessageConsumer, selector_value
from jmslike.contract import Adapter, IncomingMessage, SubscriptionRegistry, SubscriptionSpec, Wire
from jmslike.delivery import Pending
from jmslike.destinations import Topic
from jmslike.exceptions import IllegalStateException, InvalidDestinationException, JMSException
from jmslike.retained import OnRequestTopic, park
from jmslike.subscription_plans import (
    DurablePlan,
    companion_spec,
    no_shared_one,
    plan_durable,
    refuse_remove_on_close,
    refuse_unsubscribe_without_client_id,
)
from jmslike.subscriptions import DurableDefinition, companion_accepts, expired

if TYPE_CHECKING:
    from jmslike.session import Session

log = logging.getLogger(__name__)


class TopicSubscriber(MessageConsumer):
    """``javax.jms.TopicSubscriber`` (durable subscriptions are created as these)."""

    # Durable subscriptions: jmslike's record, and the companion of a persistence-filtered one; set and
    # read by this module's functions, which attach and close them.
    companion: MessageConsumer | None = None

    def close(self, removeSubscription: bool = False) -> None:
        """Close; a durable subscription is kept, or deleted with its backlog if ``removeSubscription``."""
        if self.closed:
            if removeSubscription:
                raise IllegalStateException("the subscriber is already closed; use session.unsubscribe(name)")
            return
        close(self, removeSubscription)

    def detach(self) -> None:
        super().detach()
        detach_companion(self)

    def accepts(self, incoming: IncomingMessage) -> bool:
        companion = self.companion
        if companion is not None and incoming.sub_id == companion.spec.sub_id:
            return companion.accepts(incoming)
        return super().accepts(incoming)

    def getTopic(self) -> Topic:
        self.check_open()
        destination = self.spec.destination
        assert isinstance(destination, Topic)
        return destination

    def getNoLocal(self) -> bool:
        self.check_open()
        return self.spec.no_local

    @property
    def subscriptionName(self) -> str | None:
        return self.spec.durable_name


class OnRequestSubscriber(OnRequestTopic, TopicSubscriber):
    """A subscriber "on request only": bound on the broker to a parking topic nothing is published to,
    it receives only what :meth:`requestUpdate` hands it. ``getTopic()`` is the topic it asked for."""

    def __init__(self, session: Session, spec: SubscriptionSpec, selector: selectors.Selector | None) -> None:
        self._requested, parked = park(session.connection.adapter, spec)
        super().__init__(session, parked, selector)


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
    plan = plan_durable(
        connection.adapter,
        connection.config,
        sub_id=connection.next_sub_id(),
        client_id=client_id,
        topic=topic,
        name=name,
        selector=messageSelector,
        no_local=noLocal,
        inactive_selector=inactiveSelector,
        expiry_ms=expiry_ms,
        on_request_only=on_request_only,
    )
    registry = optional_registry(connection)
    if registry is not None:
        expire_if_due(connection.adapter, connection.wire_for_use(), registry, client_id, name, resuming)
    elif plan.definition.expiry_ms:
        registry_for(connection)  # raises UnsupportedFeatureException saying why
    if on_request_only:
        subscriber: TopicSubscriber = OnRequestSubscriber(session, plan.spec, plan.selector)
    else:
        subscriber = TopicSubscriber(session, plan.spec, plan.selector)
    subscriber.definition = plan.definition
    session.attach(subscriber)
    try:
        if plan.inactive is not None:
            _attach_companion(session, subscriber, plan)
        if registry is not None:
            registry.attached(plan.definition)
    except BaseException:
        subscriber.close()
        raise
    return subscriber


def _attach_companion(session: Session, owner: TopicSubscriber, plan: DurablePlan) -> None:
    connection = session.connection
    spec = companion_spec(plan, connection.next_sub_id(), connection.config.prefetch)
    companion = CompanionConsumer(session, spec, plan.application_selector, owner)
    connection.register_consumer(companion)
    try:
        connection.adapter.subscribe(connection.wire_for_use(), spec)
    except BaseException:
        connection.unregister_consumer(companion)
        raise
    owner.companion = companion


def expire_if_due(
    adapter: Adapter, wire: Wire, registry: SubscriptionRegistry, client_id: str, name: str, resuming: bool
) -> None:
    """Where jmslike enforces expiry: delete the subscription if it has been inactive too long (blocking:
    ``jmslike.aio`` calls it in a worker thread)."""
    if registry.broker_expiry:
        return
    expiry_ms, last = registry.expiry_state(client_id, name)
    if not expired(expiry_ms, last, int(time.time() * 1000)):
        return
    log.info("durable subscription %r of %r expired; deleting it", name, client_id)
    try:
        adapter.delete_durable(wire, client_id, name)
    except InvalidDestinationException:
        log.debug("expired subscription %r was already gone on the broker", name)
    registry.removed(client_id, name)
    if resuming:
        raise InvalidDestinationException(
            f"durable subscription {name!r} of client {client_id!r} expired: inactive for more than "
            f"{expiry_ms} ms; it was deleted with its backlog"
        )


def recorded(registry: SubscriptionRegistry, client_id: str, name: str) -> DurableDefinition:
    """What ``resumeDurableSubscriber`` re-creates: the record of (client ID, name), or
    InvalidDestinationException (blocking: ``jmslike.aio`` calls it in a worker thread)."""
    definition = registry.lookup(client_id, name)
    if definition is None:
        raise InvalidDestinationException(
            f"no durable subscription {name!r} exists for client ID {client_id!r} (or it was created outside "
            "jmslike): create it with createDurableSubscriber(topic, name, ...)"
        )
    return definition


def unsubscribe(
    owner: RegistryOwner,
    wire: Wire,
    client_id: str | None,
    name: str,
    *,
    unshared_refusal: JMSException | None,
    shared_refusal: JMSException | None,
) -> None:
    """``Session.unsubscribe``'s work on the broker, for both APIs (blocking: ``jmslike.aio`` runs it in a worker
    thread). The refusals come from the API's own state (:func:`~jmslike.subscription_plans.unsubscribe_refusal`):
    the unshared one applies first; the shared one only where no unshared subscription of that name exists."""
    adapter = owner.adapter
    if client_id is None:  # JMS 2.0: only a shared durable one can be meant
        refuse_unsubscribe_without_client_id(adapter, name)
        try:
            _unsubscribe_shared(adapter, wire, None, name, shared_refusal)
        except InvalidDestinationException as exc:
            raise no_shared_one(exc) from exc
        return
    if unshared_refusal is not None:
        raise unshared_refusal
    try:
        adapter.delete_durable(wire, client_id, name)
    except InvalidDestinationException:
        if not adapter.capabilities.shared_subscriptions:
            raise
        _unsubscribe_shared(adapter, wire, client_id, name, shared_refusal)  # a shared durable one, or none
        return
    registry = optional_registry(owner)
    if registry is not None:
        registry.removed(client_id, name)


def _unsubscribe_shared(
    adapter: Adapter, wire: Wire, client_id: str | None, name: str, refusal: JMSException | None
) -> None:
    if refusal is not None:
        raise refusal
    adapter.delete_shared_durable(wire, client_id, name)


def resume(session: Session, name: str) -> TopicSubscriber:
    """``Session.resumeDurableSubscriber``: attach to an existing subscription by name alone."""
    connection = session.connection
    client_id = connection.getClientID()
    assert client_id is not None
    definition = recorded(registry_for(connection), client_id, name)
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
        current = session.current_delivery
        refuse_remove_on_close(
            name,
            own_listener=current is not None and current[0] is subscriber,
            holds_unacked=name is not None
            and any(s.holds_unacked(name) for s in session.connection.sessions()),
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

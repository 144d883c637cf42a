"""``jmslike.aio``'s Session: the JMS factory methods -- producers, consumers, durable and shared
subscriptions, browsers, temporary destinations, unsubscribe -- on top of the session engine
(jmslike.aio.session_engine), which owns delivery, acknowledgement, transactions and listeners, and
hands sends to jmslike.aio.sending.
"""

from __future__ import annotations

from functools import partial

from jmslike import durable_subscriptions
from jmslike.aio.consumer import CompanionConsumer, MessageConsumer, OnRequestConsumer, QueueBrowser
from jmslike.aio.producer import MessageProducer
from jmslike.aio.session_engine import SessionEngine
from jmslike.catalogue import optional_registry, registry_for
from jmslike.consumer import parse_selector
from jmslike.contract import SubscriptionRegistry, SubscriptionSpec
from jmslike.destinations import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.exceptions import (
    InvalidDestinationException,
    UnsupportedFeatureException,
)
from jmslike.message_factory import MessageFactoryMethods
from jmslike.serializers import SerializerRegistry
from jmslike.session_mode import SessionModes
from jmslike.subscription_plans import (
    DurablePlan,
    check_durable,
    check_subscription_name,
    companion_spec,
    open_durable_names,
    open_shared_durable_names,
    plan_durable,
    plan_shared,
    unsubscribe_refusal,
)


class Session(SessionEngine, SessionModes, MessageFactoryMethods):
    """``javax.jms.Session`` on the event loop: ``await connection.createSession(...)``; ``async with`` closes."""

    @property
    def serializer_registry(self) -> SerializerRegistry:
        return self._connection.serializers

    def getTransacted(self) -> bool:
        self.check_open()
        return self.transacted

    def getAcknowledgeMode(self) -> int:
        self.check_open()
        return self._mode

    def createProducer(self, destination: Destination | None = None) -> MessageProducer:
        """A MessageProducer for ``destination``, or one that names it per send (None)."""
        self.check_open()
        if destination is not None:
            self._check_destination(destination)
        producer = MessageProducer(self, destination)
        self._producers.append(producer)
        return producer

    async def createConsumer(
        self,
        destination: Destination,
        messageSelector: str | None = None,
        noLocal: bool = False,
        onRequestOnly: bool = False,
    ) -> MessageConsumer:
        """A consumer of a queue or topic; the broker subscription exists when this returns.
        ``onRequestOnly=True`` (topics): no live traffic, only what ``requestUpdate()`` delivers."""
        self.check_open()
        self._check_destination(destination)
        self._connection.temporaries.check_consumable(destination)
        parsed = parse_selector(self._connection.adapter, messageSelector, destination)
        spec = SubscriptionSpec(
            sub_id=self._connection.next_sub_id(),
            destination=destination,
            selector=parsed.render() if parsed is not None else None,
            no_local=bool(noLocal) and isinstance(destination, Topic),
            client_id=self._connection.getClientID(),
            prefetch=self._connection.config.prefetch,
        )
        if onRequestOnly:
            return await self._attach(OnRequestConsumer(self, spec, parsed))
        return await self._attach(MessageConsumer(self, spec, parsed))

    async def createDurableSubscriber(
        self,
        topic: Topic,
        name: str,
        messageSelector: str | None = None,
        noLocal: bool = False,
        onRequestOnly: bool = False,
        *,
        inactiveSelector: str | None = None,
        expiry_ms: int = 0,
    ) -> MessageConsumer:
        """A consumer of the durable subscription ``name`` of this client ID on ``topic``, created on the broker
        if it does not exist (changed topic or selector: replaced, as JMS says). MQ extras, as in the threaded
        API: ``onRequestOnly=True`` gets no live traffic and builds nothing up, the owner asks for the topic's
        retained publications with ``requestUpdate()`` (docs/retained.md); ``inactiveSelector`` keeps only
        matching messages while no subscriber is attached, ``expiry_ms`` removes the subscription after that
        long without one (docs/subscriptions.md)."""
        self.check_open()
        client_id, name = self._check_durable(topic, name)
        return await self._durable(
            topic,
            client_id,
            name,
            messageSelector,
            noLocal,
            inactiveSelector,
            expiry_ms,
            resuming=False,
            on_request_only=bool(onRequestOnly),
        )

    async def createDurableConsumer(
        self, topic: Topic, name: str, messageSelector: str | None = None, noLocal: bool = False
    ) -> MessageConsumer:
        """JMS 2.0's name for ``createDurableSubscriber`` (an unshared durable subscription)."""
        return await self.createDurableSubscriber(topic, name, messageSelector, noLocal)

    async def resumeDurableSubscriber(self, name: str) -> MessageConsumer:
        """Attach to this client ID's existing durable subscription ``name`` without restating its topic or
        selector; an unknown name is ``InvalidDestinationException``."""
        self.check_open()
        client_id, name = self._check_durable(None, name)
        connection = self._connection
        definition = await connection.in_worker(
            lambda: durable_subscriptions.recorded(registry_for(connection), client_id, name)
        )
        return await self._durable(
            Topic(definition.topic),
            client_id,
            name,
            definition.selector,
            definition.no_local,
            definition.inactive_selector,
            definition.expiry_ms,
            resuming=True,
            on_request_only=definition.on_request_only,
        )

    async def _durable(
        self,
        topic: Topic,
        client_id: str,
        name: str,
        selector: str | None,
        no_local: bool,
        inactive_selector: str | None,
        expiry_ms: int,
        *,
        resuming: bool,
        on_request_only: bool = False,
    ) -> MessageConsumer:
        """Plan as the threaded API does (:mod:`jmslike.subscription_plans`); expiry and the subscription
        record are blocking round trips, run in a worker thread."""
        connection = self._connection
        plan = plan_durable(
            connection.adapter,
            connection.config,
            sub_id=connection.next_sub_id(),
            client_id=client_id,
            topic=topic,
            name=name,
            selector=selector,
            no_local=no_local,
            inactive_selector=inactive_selector,
            expiry_ms=expiry_ms,
            on_request_only=on_request_only,
        )
        wire = await connection.blocking_wire_for_use()

        def registry_ready() -> SubscriptionRegistry | None:
            registry = optional_registry(connection)
            if registry is not None:
                durable_subscriptions.expire_if_due(
                    connection.adapter, wire, registry, client_id, name, resuming
                )
            elif plan.definition.expiry_ms:
                registry_for(connection)  # raises UnsupportedFeatureException saying why
            return registry

        registry = await connection.in_worker(registry_ready)
        kind = OnRequestConsumer if on_request_only else MessageConsumer
        consumer = kind(self, plan.spec, plan.selector, plan.definition)
        await self._attach(consumer)
        try:
            if plan.inactive is not None:
                await self._attach_companion(consumer, plan)
            if registry is not None:
                await connection.in_worker(registry.attached, plan.definition)
        except BaseException:
            await consumer.close()
            raise
        return consumer

    async def _attach_companion(self, owner: MessageConsumer, plan: DurablePlan) -> None:
        """A persistence-filtered subscription's non-durable companion (jmslike.subscriptions): subscribed
        like the threaded API's, delivering through ``owner``; it is no consumer of this session's own."""
        connection = self._connection
        assert plan.inactive is not None
        spec = companion_spec(plan, connection.next_sub_id(), connection.config.prefetch)
        companion = CompanionConsumer(self, spec, plan.application_selector, owner, plan.inactive)
        # The wire first: registered while a reconnect is under way, the companion would be subscribed by the
        # reconnect and again here. From registering to the SUBSCRIBE nothing awaits (as _attach).
        wire = await connection.blocking_wire_for_use()
        connection.register_consumer(companion)
        try:
            await connection.in_worker(connection.adapter.subscribe, wire, spec)
        except BaseException:
            connection.unregister_consumer(companion)
            raise
        owner.companion = companion

    def _check_durable(self, topic: Topic | None, name: str) -> tuple[str, str]:
        """The threaded API's checks (subscription_plans): the client ID and the checked name."""
        connection = self._connection
        return check_durable(
            connection.adapter,
            topic,
            connection.getClientID(),
            name,
            open_names=open_durable_names(connection.consumers()),
            still_attached=lambda checked: any(s.still_attached(checked) for s in connection.sessions()),
        )

    async def createSharedConsumer(
        self, topic: Topic, sharedSubscriptionName: str, messageSelector: str | None = None
    ) -> MessageConsumer:
        """JMS 2.0 shared non-durable subscription (name, client ID or none): its consumers, in any
        connections, share the messages; it exists while it has a consumer."""
        return await self._shared(topic, sharedSubscriptionName, messageSelector, durable=False)

    async def createSharedDurableConsumer(
        self, topic: Topic, name: str, messageSelector: str | None = None
    ) -> MessageConsumer:
        """JMS 2.0 shared durable subscription (name, client ID or none): kept until ``unsubscribe(name)``,
        its consumers share the messages."""
        return await self._shared(topic, name, messageSelector, durable=True)

    async def _shared(
        self, topic: Topic, name: str, messageSelector: str | None, *, durable: bool
    ) -> MessageConsumer:
        self.check_open()
        connection = self._connection
        spec, parsed = plan_shared(
            connection.adapter,
            connection.config,
            sub_id=connection.next_sub_id(),
            client_id=connection.getClientID(),
            topic=topic,
            name=check_subscription_name(name),
            selector=messageSelector,
            durable=durable,
        )
        return await self._attach(MessageConsumer(self, spec, parsed))

    async def unsubscribe(self, name: str) -> None:
        """Delete the durable subscription ``name`` of this client ID, with its backlog, for good; a shared
        durable one (JMS 2.0) is found by name and client ID, which may then be unset."""
        self.check_open()
        name = check_subscription_name(name)
        connection = self._connection
        wire = await connection.blocking_wire_for_use()  # first: what is open is judged after a reconnect
        self.check_open()
        consumers = connection.consumers()
        holds_unacked = any(session.holds_unacked(name) for session in connection.sessions())
        await connection.in_worker(
            partial(
                durable_subscriptions.unsubscribe,
                connection,
                wire,
                connection.getClientID(),
                name,
                unshared_refusal=unsubscribe_refusal(
                    name,
                    "durable subscription",
                    active=name in open_durable_names(consumers),
                    holds_unacked=holds_unacked,
                ),
                shared_refusal=unsubscribe_refusal(
                    name,
                    "shared durable subscription",
                    active=name in open_shared_durable_names(consumers),
                    holds_unacked=holds_unacked,
                ),
            )
        )

    def createBrowser(self, queue: Queue, messageSelector: str | None = None) -> QueueBrowser:
        """A QueueBrowser on ``queue``: ``async for message in browser`` looks at its messages without consuming
        them (where the broker can browse); nothing is asked of the broker until it is enumerated."""
        self.check_open()
        adapter = self._connection.adapter
        if not adapter.capabilities.browsing:
            raise UnsupportedFeatureException(adapter.display_name, "queue browsing")
        if not isinstance(queue, Queue):
            raise InvalidDestinationException(f"only a Queue can be browsed, got {queue!r}")
        return QueueBrowser(self, queue, parse_selector(adapter, messageSelector, queue))

    async def createTemporaryQueue(self) -> TemporaryQueue:
        """A queue that lives as long as this connection; only this connection may consume from it."""
        return await self._new_temporary(TemporaryQueue)  # type: ignore[return-value]

    async def createTemporaryTopic(self) -> TemporaryTopic:
        """A topic that lives as long as this connection; only this connection may subscribe to it."""
        return await self._new_temporary(TemporaryTopic)  # type: ignore[return-value]

    async def _new_temporary(self, kind: type[TemporaryQueue] | type[TemporaryTopic]) -> Destination:
        self.check_open()
        connection = self._connection
        if not connection.adapter.capabilities.temporary_destinations:
            raise UnsupportedFeatureException(connection.adapter.display_name, "temporary destinations")
        destination = connection.temporaries.new(kind)
        await connection.in_worker(
            connection.adapter.create_temporary, await connection.blocking_wire_for_use(), destination
        )
        return destination

    def _check_destination(self, destination: object) -> None:
        _check_destination(destination)
        assert isinstance(destination, Destination)
        self._connection.temporaries.check_use(destination, self._connection.adapter)

    async def __aenter__(self) -> Session:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<aio.Session ack_mode={self._mode} {'closed' if self._closed else 'open'}>"


def _check_destination(destination: object) -> None:
    if not isinstance(destination, Destination):
        raise InvalidDestinationException(
            f"expected a Queue or Topic (session.createQueue/createTopic), got {destination!r}"
        )

"""``Session``: the JMS factory methods -- producers, consumers, durable and shared subscriptions, browsers,
temporary destinations, unsubscribe -- on top of the delivery engine (jmslike.session_engine), which owns
delivery, acknowledgement, transactions and the listener thread.
"""

from __future__ import annotations

from jmslike import durable_subscriptions, retained, shared_subscriptions
from jmslike import selector as selectors
from jmslike.constants import AcknowledgeMode
from jmslike.consumer import MessageConsumer, QueueBrowser, parse_selector
from jmslike.contract import SubscriptionSpec
from jmslike.destinations import Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.domain_methods import SessionDomainMethods
from jmslike.durable_subscriptions import OnRequestSubscriber, TopicSubscriber
from jmslike.exceptions import (
    InvalidDestinationException,
    UnsupportedFeatureException,
)
from jmslike.message_factory import MessageFactoryMethods
from jmslike.producer import MessageProducer
from jmslike.serializers import SerializerRegistry
from jmslike.session_engine import SessionEngine
from jmslike.session_mode import SessionModes
from jmslike.subscription_plans import (
    check_durable,
    check_subscription_name,
    unsubscribe_refusal,
)


class Session(SessionEngine, SessionModes, MessageFactoryMethods, SessionDomainMethods):
    """``javax.jms.Session``. Not thread-safe for the application (as in JMS), safe against our threads."""

    def getTransacted(self) -> bool:
        """Whether the session is transacted."""
        self.check_open()
        return self._ack_mode == AcknowledgeMode.SESSION_TRANSACTED

    def getAcknowledgeMode(self) -> int:
        """The session mode: AUTO, CLIENT, DUPS_OK, INDIVIDUAL_ACKNOWLEDGE or SESSION_TRANSACTED."""
        self.check_open()
        return self._ack_mode

    def createTemporaryQueue(self) -> TemporaryQueue:
        """A queue that lives as long as this connection; only this connection may consume from it."""
        self.check_open()
        self._require("temporary_destinations", "temporary queues")
        return self._new_temporary(TemporaryQueue)  # type: ignore[return-value]

    def createTemporaryTopic(self) -> TemporaryTopic:
        """A topic that lives as long as this connection; only this connection may subscribe to it."""
        self.check_open()
        self._require("temporary_destinations", "temporary topics")
        return self._new_temporary(TemporaryTopic)  # type: ignore[return-value]

    def _new_temporary(self, kind: type[TemporaryQueue] | type[TemporaryTopic]) -> Destination:
        destination = self._connection.new_temporary(kind)
        self._connection.adapter.create_temporary(self._connection.wire_for_use(), destination)
        return destination

    @property
    def serializer_registry(self) -> SerializerRegistry:
        return self._connection.serializers

    def _require(self, capability: str, feature: str) -> None:
        if not getattr(self._connection.adapter.capabilities, capability):
            raise UnsupportedFeatureException(self._connection.adapter.display_name, feature)

    def createProducer(self, destination: Destination | None = None) -> MessageProducer:
        """A MessageProducer for ``destination``, or an unidentified one (None) that names it per send."""
        self.check_open()
        if destination is not None:
            self._check_destination(destination)
        producer = MessageProducer(self, destination)
        self._producers.append(producer)
        return producer

    def createConsumer(
        self,
        destination: Destination,
        messageSelector: str | None = None,
        noLocal: bool = False,
        onRequestOnly: bool = False,
    ) -> MessageConsumer:
        """``onRequestOnly=True`` (topics): no live traffic, only what ``requestUpdate()`` delivers."""
        self.check_open()
        self._check_destination(destination)
        self._connection.temporaries.check_consumable(destination)
        parsed = self.parse_selector(messageSelector, destination)
        spec = SubscriptionSpec(
            sub_id=self._connection.next_sub_id(),
            destination=destination,
            selector=parsed.render() if parsed is not None else None,
            no_local=bool(noLocal) and isinstance(destination, Topic),
            client_id=self._connection.getClientID(),
            prefetch=self._connection.config.prefetch,
        )
        if onRequestOnly:
            return self.attach(OnRequestSubscriber(self, spec, parsed))
        return self.attach(MessageConsumer(self, spec, parsed))

    def createDurableSubscriber(
        self,
        topic: Topic,
        name: str,
        messageSelector: str | None = None,
        noLocal: bool = False,
        onRequestOnly: bool = False,
        *,
        inactiveSelector: str | None = None,
        expiry_ms: int = 0,
    ) -> TopicSubscriber:
        """JMS's, plus MQ extras: ``onRequestOnly=True`` gets no live traffic and builds nothing up, the owner
        asks for the topic's retained publications with ``requestUpdate()`` (docs/retained.md);
        ``inactiveSelector`` keeps only matching messages while no subscriber is attached; ``expiry_ms``
        removes the subscription after that long inactive (docs/subscriptions.md)."""
        self.check_open()
        self._check_durable(topic, name)
        return durable_subscriptions.create(
            self,
            topic,
            check_subscription_name(name),
            messageSelector,
            noLocal,
            inactiveSelector,
            expiry_ms,
            on_request_only=bool(onRequestOnly),
        )

    def createDurableConsumer(
        self, topic: Topic, name: str, messageSelector: str | None = None, noLocal: bool = False
    ) -> TopicSubscriber:
        """JMS 2.0's name for ``createDurableSubscriber`` (an unshared durable subscription)."""
        return self.createDurableSubscriber(topic, name, messageSelector, noLocal)

    def createSharedConsumer(
        self, topic: Topic, sharedSubscriptionName: str, messageSelector: str | None = None
    ) -> MessageConsumer:
        """JMS 2.0 shared non-durable subscription (name, client ID or none): its consumers, in any
        connections, share the messages; it exists while it has a consumer (jmslike.shared_subscriptions)."""
        self.check_open()
        name = check_subscription_name(sharedSubscriptionName)
        return shared_subscriptions.create(self, topic, name, messageSelector, durable=False)

    def createSharedDurableConsumer(
        self, topic: Topic, name: str, messageSelector: str | None = None
    ) -> MessageConsumer:
        """JMS 2.0 shared durable subscription (name, client ID or none): kept until ``unsubscribe(name)``,
        its consumers share the messages (jmslike.shared_subscriptions)."""
        self.check_open()
        name = check_subscription_name(name)
        return shared_subscriptions.create(self, topic, name, messageSelector, durable=True)

    def resumeDurableSubscriber(self, name: str) -> TopicSubscriber:
        """Attach to this client ID's existing durable subscription ``name`` without restating its topic or
        selector; an unknown name is ``InvalidDestinationException``."""
        self.check_open()
        name = check_subscription_name(name)
        self._check_durable(None, name)
        return durable_subscriptions.resume(self, name)

    def _check_durable(self, topic: Topic | None, name: str) -> None:
        connection = self._connection
        check_durable(
            connection.adapter,
            topic,
            connection.getClientID(),
            name,
            open_names=connection.active_durable_names(),
            still_attached=lambda checked: any(s.still_attached(checked) for s in connection.sessions()),
        )

    def createBrowser(self, queue: Queue, messageSelector: str | None = None) -> QueueBrowser:
        """A QueueBrowser on ``queue``: looks at its messages without consuming them (where the broker can browse)."""
        self.check_open()
        self._require("browsing", "queue browsing")
        if not isinstance(queue, Queue):
            raise InvalidDestinationException(f"only a Queue can be browsed, got {queue!r}")
        return QueueBrowser(self, queue, self.parse_selector(messageSelector, queue))

    def unsubscribe(self, name: str) -> None:
        """Delete the durable subscription ``name`` of this client ID, with its backlog, for good; a shared
        durable one (JMS 2.0) is found by name and client ID, which may then be unset."""
        self.check_open()
        name = check_subscription_name(name)
        connection = self._connection
        sessions = connection.sessions()
        holds_unacked = any(session.holds_unacked(name) for session in sessions)
        durable_subscriptions.unsubscribe(
            connection,
            connection.wire_for_use(),
            connection.getClientID(),
            name,
            unshared_refusal=unsubscribe_refusal(
                name,
                "durable subscription",
                active=name in connection.active_durable_names(),
                holds_unacked=holds_unacked,
            ),
            shared_refusal=unsubscribe_refusal(
                name,
                "shared durable subscription",
                active=name in connection.active_shared_durable_names(),
                holds_unacked=holds_unacked,
            ),
        )

    def _check_destination(self, destination: object) -> None:
        if not isinstance(destination, Destination):
            raise InvalidDestinationException(
                f"expected a Queue or Topic (session.createQueue/createTopic), got {destination!r}"
            )
        if isinstance(destination, TemporaryQueue | TemporaryTopic):
            self._require("temporary_destinations", "temporary destinations")
            self._connection.check_temporary_use(destination)

    def parse_selector(self, text: str | None, destination: Destination) -> selectors.Selector | None:
        """Parse a selector, refusing it where the broker cannot apply it honestly (consumer.parse_selector)."""
        return parse_selector(self._connection.adapter, text, destination)

    def request_update(self, consumer: MessageConsumer, correlation_id: str | None) -> int:
        """``consumer.requestUpdate()``: the retained publications are the session's to read and deliver
        (jmslike.retained), so the consumer module need not know them."""
        return retained.request_update(consumer, correlation_id)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Session ack_mode={self._ack_mode} {'closed' if self._closed else 'open'}>"

"""What a durable or shared subscription is before an API attaches it: the checks JMS makes, its
``SubscriptionSpec`` and its record.

The threaded API (:mod:`jmslike.durable_subscriptions`, :mod:`jmslike.shared_subscriptions`) and
``jmslike.aio`` both build their subscriptions here, so a name, a topic, a selector or a policy is refused
the same way, with the same message, whichever API the application uses. Nothing here does I/O: the
callers attach the spec, and talk to the subscription registry, in their own way (a worker thread in
``jmslike.aio``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from jmslike.config import ConnectionConfig
from jmslike.consumer import ConsumerBase, parse_selector
from jmslike.contract import Adapter, SubscriptionSpec
from jmslike.destinations import TemporaryTopic, Topic
from jmslike.exceptions import (
    IllegalStateException,
    InvalidDestinationException,
    JMSException,
    UnsupportedFeatureException,
)
from jmslike.selector import Selector
from jmslike.subscriptions import DurableDefinition, check_expiry, durable_selector, topic_refused

#: The feature named when a broker has no shared subscriptions.
SHARED_FEATURE = "shared subscriptions (JMS 2.0 createSharedConsumer / createSharedDurableConsumer)"


def check_subscription_name(name: Any) -> str:
    """A subscription name: a non-empty string without control characters (it becomes a broker name)."""
    if not isinstance(name, str) or not name.strip():
        raise JMSException(f"a durable subscription name must be a non-empty string, got {name!r}")
    if any(ord(ch) < 32 or ch == "\x7f" for ch in name):
        raise JMSException(f"durable subscription name {name!r} contains control characters")
    return name


def check_durable_topic(topic: object) -> None:
    """A durable subscription lives on a real topic; a temporary one ends with its connection."""
    if not isinstance(topic, Topic) or isinstance(topic, TemporaryTopic):
        raise InvalidDestinationException(
            f"a durable subscription needs a (non-temporary) Topic, got {topic!r}"
        )


def require_client_id(client_id: str | None, action: str) -> str:
    """An unshared durable subscription is identified by client ID and name: no client ID, no subscription."""
    if client_id is None:
        raise IllegalStateException(
            f"cannot {action} without a client ID: call connection.setClientID(...) right after "
            "createConnection (a durable subscription is identified by client ID and name)"
        )
    return client_id


def check_durable(
    adapter: Adapter,
    topic: object | None,
    client_id: str | None,
    name: object,
    *,
    open_names: set[str],
    still_attached: Callable[[str], bool],
) -> tuple[str, str]:
    """Every check of creating (``topic`` given) or resuming an unshared durable subscription: the client ID
    and the checked name. ``open_names``: the connection's open durable subscribers; ``still_attached(name)``:
    whether a closed subscriber of ``name`` waits for its messages to be settled."""
    if not adapter.capabilities.durable_subscriptions:
        raise UnsupportedFeatureException(adapter.display_name, "durable subscriptions")
    if topic is not None:
        check_durable_topic(topic)
    client_id = require_client_id(client_id, "create a durable subscription")
    checked = check_subscription_name(name)
    refuse_durable_in_use(
        checked, client_id, active=checked in open_names, still_attached=still_attached(checked)
    )
    return client_id, checked


def open_durable_names(consumers: Iterable[ConsumerBase]) -> set[str]:
    """The unshared durable subscriptions that have an open consumer among ``consumers``."""
    return {c.spec.durable_name for c in consumers if c.spec.durable_name is not None and not c.closed}


def open_shared_durable_names(consumers: Iterable[ConsumerBase]) -> set[str]:
    """The shared durable subscriptions that have an open consumer among ``consumers``."""
    return {
        c.spec.shared_name
        for c in consumers
        if c.spec.shared_durable and c.spec.shared_name is not None and not c.closed
    }


def of_durable_subscription(spec: SubscriptionSpec, name: str) -> bool:
    """Whether ``spec`` belongs to the durable subscription ``name``, unshared or shared."""
    return spec.durable_name == name or (spec.shared_durable and spec.shared_name == name)


def refuse_durable_in_use(name: str, client_id: str, *, active: bool, still_attached: bool) -> None:
    """JMS: an unshared durable subscription has one consumer at a time. ``active``: this connection has an
    open consumer on it; ``still_attached``: a closed one whose messages are not settled keeps it attached."""
    if active:
        raise JMSException(
            f"durable subscription {name!r} of client {client_id!r} already has an active consumer; "
            "close it first (a durable subscription has one consumer at a time)"
        )
    if still_attached:
        raise IllegalStateException(
            f"the closed subscriber of durable subscription {name!r} still has unacknowledged messages, "
            "so its subscription stays attached: acknowledge, recover, commit or roll back first"
        )


def unsubscribe_refusal(
    name: str, what: str, *, active: bool, holds_unacked: bool
) -> IllegalStateException | None:
    """JMS: unsubscribe is an error while the subscription has an open consumer here, or a message of it is
    unacknowledged or in an open transaction (the broker checks other connections). The error, or None."""
    if active:
        return IllegalStateException(f"{what} {name!r} has an open consumer; close it before unsubscribe")
    if holds_unacked:
        return IllegalStateException(
            f"a message of {what} {name!r} is unacknowledged or in an open transaction; acknowledge, "
            "commit or roll back before unsubscribe"
        )
    return None


def refuse_remove_on_close(name: str | None, *, own_listener: bool, holds_unacked: bool) -> str:
    """``close(removeSubscription=True)``: only a durable subscriber, not from its own listener (the message
    being delivered keeps the subscription attached), and nothing of it unsettled. The subscription's name."""
    if name is None:
        raise IllegalStateException("removeSubscription=True needs a durable subscriber")
    if own_listener:
        raise IllegalStateException(
            f"close(removeSubscription=True) of {name!r} from its own MessageListener: the message being "
            "delivered keeps the subscription attached until the listener returns; close() here and call "
            "session.unsubscribe(name) afterwards, or close from another thread"
        )
    if holds_unacked:
        raise IllegalStateException(
            f"a message of durable subscription {name!r} is unacknowledged or in an open transaction; "
            "acknowledge, commit or roll back before close(removeSubscription=True)"
        )
    return name


def refuse_unsubscribe_without_client_id(adapter: Adapter, name: str) -> None:
    """JMS 2.0: without a client ID only a shared durable subscription can be meant."""
    if not adapter.capabilities.shared_subscriptions:
        raise InvalidDestinationException(
            f"no durable subscription {name!r} exists without a client ID ({adapter.display_name} has no "
            "shared ones, the only kind without); an unshared durable subscription is found by its "
            "client ID: call connection.setClientID(...) first"
        )


def no_shared_one(exc: InvalidDestinationException) -> InvalidDestinationException:
    """The error of an unsubscribe without a client ID that found no shared durable subscription."""
    return InvalidDestinationException(
        f"{exc}; an unshared durable subscription is found by its client ID: call "
        "connection.setClientID(...) first"
    )


@dataclass(frozen=True)
class DurablePlan:
    """An unshared durable subscription ready to attach."""

    spec: SubscriptionSpec
    definition: DurableDefinition
    #: What the broker subscription selects: the application's selector and the inactive one, combined.
    selector: Selector | None
    #: The application's own selector, for a persistence-filtered subscription's companion.
    application_selector: Selector | None
    #: The inactive selector (persistence filter), or None.
    inactive: Selector | None


def plan_durable(
    adapter: Adapter,
    config: ConnectionConfig,
    *,
    sub_id: str,
    client_id: str,
    topic: Topic,
    name: str,
    selector: str | None,
    no_local: bool,
    inactive_selector: str | None = None,
    expiry_ms: object = 0,
    on_request_only: bool = False,
) -> DurablePlan:
    """The spec and record of ``createDurableSubscriber`` (name, topic and client ID already checked)."""
    expiry = check_expiry(expiry_ms)
    if topic_refused(topic.name, config.no_durable_topics):
        raise InvalidDestinationException(
            f"topic {topic.name!r} does not allow durable subscriptions (no_durable_topics in the connection "
            "URL); use a non-durable subscriber (createConsumer) or another topic"
        )
    if on_request_only and inactive_selector is not None:
        raise JMSException(
            "a subscription on request only receives no live traffic, so an inactiveSelector has nothing to "
            "filter: give one or the other"
        )
    parsed = parse_selector(adapter, selector, topic)
    inactive = parse_selector(adapter, inactive_selector, topic)
    definition = DurableDefinition(
        client_id=client_id,
        name=name,
        topic=topic.name,
        selector=parsed.text if parsed is not None else None,
        no_local=bool(no_local),
        inactive_selector=inactive.text if inactive is not None else None,
        expiry_ms=expiry,
        on_request_only=on_request_only,
    )
    combined_text = durable_selector(
        parsed.render() if parsed is not None else None, inactive.render() if inactive is not None else None
    )
    combined = parse_selector(adapter, combined_text, topic)
    spec = SubscriptionSpec(
        sub_id=sub_id,
        destination=topic,
        selector=combined.render() if combined is not None else None,
        no_local=bool(no_local),
        durable_name=name,
        client_id=client_id,
        prefetch=config.prefetch,
        expiry_ms=expiry,
        definition=definition.to_json(),
    )
    return DurablePlan(spec, definition, combined, parsed, inactive)


def plan_shared(
    adapter: Adapter,
    config: ConnectionConfig,
    *,
    sub_id: str,
    client_id: str | None,
    topic: object,
    name: str,
    selector: str | None,
    durable: bool,
) -> tuple[SubscriptionSpec, Selector | None]:
    """The spec of ``createSharedConsumer`` / ``createSharedDurableConsumer`` and its parsed selector."""
    if not adapter.capabilities.shared_subscriptions:
        raise UnsupportedFeatureException(
            adapter.display_name,
            SHARED_FEATURE,
            "the broker has no subscription queue consumers can share over STOMP; jmslike refuses rather "
            "than give each consumer every message (a queue gives competing consumers)",
        )
    if not isinstance(topic, Topic) or isinstance(topic, TemporaryTopic):
        raise InvalidDestinationException(
            f"a shared subscription needs a (non-temporary) Topic, got {topic!r}"
        )
    if durable and topic_refused(topic.name, config.no_durable_topics):
        raise InvalidDestinationException(
            f"topic {topic.name!r} does not allow durable subscriptions (no_durable_topics in the connection "
            "URL); use createSharedConsumer or another topic"
        )
    parsed = parse_selector(adapter, selector, topic)
    spec = SubscriptionSpec(
        sub_id=sub_id,
        destination=topic,
        selector=parsed.render() if parsed is not None else None,
        client_id=client_id,
        prefetch=config.prefetch,
        shared_name=name,
        shared_durable=durable,
    )
    return spec, parsed


def companion_spec(plan: DurablePlan, sub_id: str, prefetch: int) -> SubscriptionSpec:
    """The non-durable companion of a persistence-filtered subscription (jmslike.subscriptions): the topic with
    the application's own selector, delivering through its owner what the durable subscription does not keep."""
    application = plan.application_selector
    return SubscriptionSpec(
        sub_id=sub_id,
        destination=plan.spec.destination,
        selector=application.render() if application is not None else None,
        no_local=plan.spec.no_local,
        client_id=plan.spec.client_id,
        prefetch=prefetch,
    )

"""Durable subscription definitions and their administration records: pure data and pure rules.

This module owns what jmslike remembers about a durable subscription beyond what JMS makes the
application restate (topic, selector, noLocal), so that it can be *resumed by name*
(``Session.resumeDurableSubscriber``), *listed and deleted* from another process (:mod:`jmslike.admin`),
*expired* after a period of inactivity, and *persistence-filtered* (an ``inactiveSelector``). Where that
record lives is the broker's business (RabbitMQ: arguments of the subscription's own queue; ActiveMQ: a
catalogue queue, :mod:`jmslike.catalogue`); this module only says what it holds and how it is encoded.

Persistence-filtered subscriptions (``inactiveSelector`` I, subscription selector S):

- the durable subscription itself selects ``(S) AND (I)``: only messages that qualify while the
  subscriber is away are ever stored for it (on brokers that filter, see :func:`durable_selector`);
- while the subscriber is attached, a second, non-durable *companion* subscription on the same topic
  selects S on the broker and keeps, on the client, only messages for which I is **not TRUE** (FALSE or
  UNKNOWN): :func:`companion_accepts`. Evaluating "not TRUE" client-side keeps SQL's three-valued logic
  exact: ``NOT (I)`` is UNKNOWN when I is, so a broker-side ``(S) AND NOT (I)`` would drop a message for
  which I is UNKNOWN (a missing property) on both sides.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field

from jmslike import selector as selectors
from jmslike.exceptions import JMSException

DEFINITION_VERSION = 1


@dataclass(frozen=True)
class DurableDefinition:
    """What a durable subscription *is*: enough to resume it by name and to expire it."""

    client_id: str
    name: str
    topic: str
    selector: str | None = None  # the application's selector S (not combined with inactive_selector)
    no_local: bool = False
    inactive_selector: str | None = None
    expiry_ms: int = 0  # 0 = never expires
    created_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    on_request_only: bool = False  # no live traffic, retained publications on request (docs/retained.md)

    def to_json(self) -> str:
        data = asdict(self)
        data["v"] = DEFINITION_VERSION
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> DurableDefinition:
        try:
            data = json.loads(text)
            return cls(
                client_id=str(data["client_id"]),
                name=str(data["name"]),
                topic=str(data["topic"]),
                selector=data.get("selector"),
                no_local=bool(data.get("no_local", False)),
                inactive_selector=data.get("inactive_selector"),
                expiry_ms=int(data.get("expiry_ms", 0)),
                on_request_only=bool(data.get("on_request_only", False)),
                created_ms=int(data.get("created_ms", 0)),
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise JMSException(f"unreadable durable subscription record: {exc}") from exc

    def same_subscription(self, other: DurableDefinition) -> bool:
        """Same topic, selectors, noLocal and on-request-only: re-creating with these keeps the backlog."""
        return (self.topic, self.selector, self.no_local, self.inactive_selector, self.on_request_only) == (
            other.topic,
            other.selector,
            other.no_local,
            other.inactive_selector,
            other.on_request_only,
        )


@dataclass(frozen=True)
class SubscriptionInfo:
    """One row of ``Admin.subscriptions()``. ``None`` means the broker cannot tell (see docs)."""

    clientId: str
    name: str
    topic: str
    selector: str | None
    durable: bool
    active: bool | None
    pending: int | None
    lastActive: float | None  # seconds since the epoch; None = unknown or never
    inactiveSelector: str | None = None
    expiryMs: int = 0
    noLocal: bool = False


def subscription_info(
    definition: DurableDefinition, *, active: bool | None, pending: int | None, last_active: float | None
) -> SubscriptionInfo:
    """The admin row of a subscription jmslike has a record of; the broker supplies what it can tell."""
    return SubscriptionInfo(
        clientId=definition.client_id,
        name=definition.name,
        topic=definition.topic,
        selector=definition.selector,
        durable=True,
        active=active,
        pending=pending,
        lastActive=last_active,
        inactiveSelector=definition.inactive_selector,
        expiryMs=definition.expiry_ms,
        noLocal=definition.no_local,
    )


def durable_selector(selector: str | None, inactive_selector: str | None) -> str | None:
    """The selector the durable subscription itself uses: ``(S) AND (I)`` (or whichever is given)."""
    parts = [s for s in (selector, inactive_selector) if s is not None and s.strip()]
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return "(" + parts[0] + ") AND (" + parts[1] + ")"


def companion_accepts(inactive: selectors.Selector, lookup: selectors.Lookup) -> bool:
    """The companion subscription delivers exactly the messages the durable one does not keep: those
    for which the inactive selector is not TRUE (FALSE or UNKNOWN)."""
    return not inactive.matches(lookup)


def expired(expiry_ms: int, last_active_ms: int | None, now_ms: int) -> bool:
    """An inactive subscription with an expiry is gone once it has been inactive that long."""
    if expiry_ms <= 0 or last_active_ms is None:
        return False
    return now_ms - last_active_ms >= expiry_ms


def check_expiry(expiry_ms: object) -> int:
    if isinstance(expiry_ms, bool) or not isinstance(expiry_ms, int) or expiry_ms < 0:
        raise JMSException(
            f"expiry_ms must be a whole number of milliseconds >= 0 (0 = never), got {expiry_ms!r}"
        )
    return expiry_ms


def topic_refused(topic: str, patterns: tuple[str, ...]) -> bool:
    """Per-topic policy: ``patterns`` are topic names, or prefixes ending in ``*`` (``prices.*``)."""
    for pattern in patterns:
        if pattern.endswith("*") and topic.startswith(pattern[:-1]):
            return True
        if topic == pattern:
            return True
    return False

"""Subscription administration from any process: list durable subscriptions, delete one, sweep expired.

``Admin(url, user, password)`` works through the same adapters as the JMS API and the broker's record of
subscriptions (:func:`jmslike.catalogue.registry_for`): RabbitMQ's management API, or jmslike's catalogue
queue on ActiveMQ Classic. What each can see is in docs/subscriptions.md.

Deleting a subscription whose owner (its client ID) is connected is refused with
``IllegalStateException``, on every broker, as JMS refuses ``unsubscribe`` while the subscription is in
use: the live subscriber is not touched. Otherwise ``deleteSubscription`` claims the client ID for the
duration of the delete (so the owner cannot attach meanwhile: it would get ``InvalidClientIDException``
and can retry) and unsubscribes with it.
"""

from __future__ import annotations

import logging
import time

from jmslike.catalogue import registry_for
from jmslike.connection import Connection, ConnectionFactory
from jmslike.contract import SubscriptionRegistry
from jmslike.exceptions import IllegalStateException, InvalidClientIDException
from jmslike.subscriptions import SubscriptionInfo, expired

log = logging.getLogger(__name__)


class Admin:
    """``Admin(url, user, password)``: a connection used for administration only."""

    def __init__(self, url: str, user: str | None = None, password: str | None = None) -> None:
        self._factory = ConnectionFactory(url)
        self._user = user
        self._password = password
        self._connection: Connection = self._factory.createConnection(user, password)
        self._registry: SubscriptionRegistry = registry_for(self._connection)

    def __repr__(self) -> str:
        return f"Admin({self._factory.config.describe()!r})"

    def subscriptions(self) -> list[SubscriptionInfo]:
        """Every durable subscription jmslike knows of on this broker, sorted by (client ID, name)."""
        return self._registry.list()

    def deleteSubscription(self, clientId: str, name: str) -> None:
        """Delete (client ID, name) with its backlog. Unknown: ``InvalidDestinationException``; owner
        connected: ``IllegalStateException``."""
        try:
            owner = self._factory.createConnection(self._user, self._password)
        except BaseException:
            raise
        try:
            try:
                owner.setClientID(clientId)
            except InvalidClientIDException as exc:
                raise IllegalStateException(
                    f"client {clientId!r} is connected, so its durable subscription {name!r} may be in use; "
                    "the application must close it (close(removeSubscription=True) or unsubscribe), or "
                    "disconnect first"
                ) from exc
            session = owner.createSession(False, 1)
            session.unsubscribe(name)
        finally:
            owner.close()

    def sweepExpired(self) -> list[SubscriptionInfo]:
        """Delete the inactive subscriptions whose expiry has passed (where jmslike enforces expiry;
        RabbitMQ does it itself). Returns those deleted; one whose owner is connected is skipped."""
        if self._registry.broker_expiry:
            return []
        now_ms = int(time.time() * 1000)
        deleted = []
        for info in self._registry.list():
            last = info.lastActive
            if info.active or not info.expiryMs or last is None:
                continue
            if expired(info.expiryMs, int(last * 1000), now_ms):
                try:
                    self.deleteSubscription(info.clientId, info.name)
                except IllegalStateException:
                    log.info("expired subscription %r of %r is in use again; kept", info.name, info.clientId)
                    continue
                deleted.append(info)
        return deleted

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

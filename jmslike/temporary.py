"""A connection's temporary destinations, in every API: their names, and who may use them.

JMS: a temporary queue or topic lives as long as the connection that created it, and only that connection
may consume from it. jmslike names its own ``jmslike-tmp-<hex>``; on brokers where such a name means "this
connection's" (ActiveMQ), another connection must reach it through JMSReplyTo, which carries the broker's own
name, never through jmslike's.
"""

from __future__ import annotations

import uuid

from jmslike.contract import Adapter
from jmslike.destinations import TEMPORARY_PREFIX, Destination, TemporaryQueue, TemporaryTopic
from jmslike.exceptions import InvalidDestinationException


class TemporaryDestinations:
    """The temporary destinations one connection created."""

    def __init__(self) -> None:
        self._created: set[Destination] = set()

    def new(self, kind: type[TemporaryQueue] | type[TemporaryTopic]) -> Destination:
        destination = kind(f"{TEMPORARY_PREFIX}{uuid.uuid4().hex}")
        self._created.add(destination)
        return destination

    def owns(self, destination: Destination) -> bool:
        return destination in self._created

    def check_use(self, destination: Destination, adapter: Adapter) -> None:
        """A temporary destination made by another connection reaches us through JMSReplyTo, in the broker's
        own form; our local name for it would, on ActiveMQ, silently create a new one of ours instead."""
        if (
            adapter.temporary_names_are_local
            and isinstance(destination, TemporaryQueue | TemporaryTopic)
            and destination.name.startswith(TEMPORARY_PREFIX)
            and not self.owns(destination)
        ):
            raise InvalidDestinationException(
                f"{destination} belongs to another connection; pass temporary destinations to other "
                "connections through JMSReplyTo, which carries the broker's name for them"
            )

    def check_consumable(self, destination: Destination) -> None:
        """Only the creating connection may consume from a temporary destination (JMS 1.1 §4.4.3)."""
        if isinstance(destination, TemporaryQueue | TemporaryTopic) and not self.owns(destination):
            raise InvalidDestinationException(
                f"{destination} was created by another connection; only its own connection may consume from it"
            )

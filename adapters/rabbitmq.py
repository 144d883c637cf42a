"""RabbitMQ over its STOMP plugin: the dialect, and the JMS promises jmslike keeps for it.

Facts this adapter relies on (rabbitmq_stomp 3.10 source, confirmed on a real broker by the tests):

- STOMP has one AMQP channel per connection, so any channel error (a passive declare of a missing queue,
  an exclusive queue held by another connection) closes the whole STOMP connection, and the SUBSCRIBE's
  RECEIPT can arrive before that ERROR. jmslike never provokes one on a connection the application uses,
  except on purpose on a fresh one (the client-ID claim), and confirms success with a second round trip.
- There is no client ID. jmslike claims one with an exclusive, auto-delete lock queue named after it:
  a second live connection claiming the same ID gets RESOURCE_LOCKED -> InvalidClientIDException. As
  durable subscriptions are keyed by client ID, that also keeps them to one connection; within one
  connection jmslike refuses a second consumer itself.
- Durable subscriptions are queues named ``jmslike.durable.<client ID>.<name>.<definition hash>``
  (``x-queue-name``), bound to the topic. A changed topic, selector or noLocal gives another name; the
  old queue, found and deleted through the management API, goes with its backlog (change = delete +
  create). ``unsubscribe`` deletes through the management API, which also tells an unknown name.
- No selectors and no noLocal on the broker: for topic subscriptions jmslike filters client-side
  (non-matching messages never belong to the subscription, so they are acknowledged and dropped); on
  queues it refuses with UnsupportedFeatureException (filtering would consume others' messages).
- ``persistent:false`` on SEND would also declare the queue non-durable (PRECONDITION_FAILED against an
  existing durable queue), so non-persistent sends carry no ``persistent`` header at all.
- Expiry is the relative ``expiration`` header; jmslike also carries the absolute ``expires``.
- Cancelling a consumer does not give its unacknowledged messages back (AMQP keeps them on the channel
  until it closes), so jmslike NACKs them, which on RabbitMQ requeues them flagged redelivered.
- Receipts for SENDs inside a transaction are held until COMMIT.
- Retained publications: one durable queue per topic, ``jmslike.retained.<topic>``, declared with
  ``x-max-length: 1`` on SEND (the default overflow, drop-head, keeps the newest); read with the management
  API's GET with requeue, because STOMP has no browse (docs/retained.md).
- Shared subscriptions (JMS 2.0) are queues all their consumers subscribe to, in any connection:
  ``jmslike.shared.<client ID>.<name>.<definition hash>`` (non-durable: ``durable:false``, ``auto-delete``, so
  RabbitMQ deletes it when its last consumer goes) and ``jmslike.shared-durable....`` (durable). A changed
  topic or selector replaces the old queue only if the broker deletes it ``if-unused`` (the management
  API's statistics of consumers lag by seconds; the queue's own check does not): otherwise JMSException.
- Temporary queues are exclusive queues of the connection, sent to as ``/amq/queue/`` (which does not
  declare, as a SEND to ``/queue/`` would, and fails on another connection's exclusive queue).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Mapping

from jmslike.adapters.stomp_core import Version
from jmslike.config import ConnectionConfig, parse_count
from jmslike.contract import (
    RETAINED_STORE_PREFIX,
    AdapterOption,
    Browse,
    Capabilities,
    Frame,
    IncomingMessage,
    OutgoingMessage,
    SubscriptionSpec,
    Wire,
)
from jmslike.destinations import TEMPORARY_PREFIX, Destination, Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.exceptions import (
    IllegalStateException,
    InvalidClientIDException,
    InvalidDestinationException,
    JMSException,
)
from jmslike.subscriptions import DurableDefinition
from jmslike.topics import from_broker, is_wildcard, matches, to_broker

from .dialect import ORIGIN_HEADER, STANDARD_HEADERS, StompDialect
from .rabbitmq_admin import EXPIRES_ARGUMENT, RabbitMQRegistry, queue_arguments
from .rabbitmq_management import RabbitMQManagement

DURABLE_PREFIX = "jmslike.durable."
SHARED_PREFIX = "jmslike.shared."
SHARED_DURABLE_PREFIX = "jmslike.shared-durable."
NO_CLIENT_ID = "~none"  # queue_part never yields it: "~" is always followed by four hex digits there
LOCK_PREFIX = "jmslike.client-id."
QUEUE_TYPE_ARGUMENT = "x-queue-type"
_SAFE = re.compile(r"[^A-Za-z0-9_-]")


RETAINED_PEEK_COUNT = 8  # a store queue holds one copy; more only for an instant under concurrency
RETAINED_PEEK_BACKOFF_S = (0.01, 0.02, 0.04, 0.08, 0.16)


def is_retained_store(destination: Destination) -> bool:
    return type(destination) is Queue and destination.name.startswith(RETAINED_STORE_PREFIX)


def queue_part(text: str) -> str:
    """Encode a client ID or subscription name as one dot-free, unambiguous part of a queue name."""
    encoded = _SAFE.sub(lambda m: f"~{ord(m.group()):04x}", text)
    if len(encoded) > 80:
        return "h" + hashlib.sha256(text.encode()).hexdigest()[:32]
    return encoded


def durable_prefix(client_id: str, name: str) -> str:
    return f"{DURABLE_PREFIX}{queue_part(client_id)}.{queue_part(name)}."


def durable_queue_name(spec: SubscriptionSpec) -> str:
    """Queue of a durable subscription: identity plus a hash of its definition (topic, selector, noLocal)."""
    assert spec.client_id is not None and spec.durable_name is not None
    parts: list[object] = [spec.destination.name, spec.selector or "", spec.no_local]
    if spec.expiry_ms:  # x-expires is fixed at declare: another expiry needs another queue
        parts.append(spec.expiry_ms)
    definition = json.dumps(parts)
    digest = hashlib.sha256(definition.encode()).hexdigest()[:12]
    return durable_prefix(spec.client_id, spec.durable_name) + digest


def shared_prefix(client_id: str | None, name: str, durable: bool) -> str:
    kind = SHARED_DURABLE_PREFIX if durable else SHARED_PREFIX
    owner = NO_CLIENT_ID if client_id is None else queue_part(client_id)
    return f"{kind}{owner}.{queue_part(name)}."


def shared_queue_name(spec: SubscriptionSpec) -> str:
    """Queue of a shared subscription: identity (name, client ID or none) plus a hash of topic and selector."""
    assert spec.shared_name is not None
    definition = json.dumps([spec.destination.name, spec.selector or ""])
    digest = hashlib.sha256(definition.encode()).hexdigest()[:12]
    return shared_prefix(spec.client_id, spec.shared_name, spec.shared_durable) + digest


#: URL options: declare queues with x-max-priority=N (0 = off) and with x-queue-type (classic or quorum).
MAX_PRIORITY_OPTION = "rabbitmq_max_priority"
QUEUE_TYPE_OPTION = "rabbitmq_queue_type"


def _queue_type(value: str) -> str:
    if value not in ("classic", "quorum"):
        raise ValueError(f"expected classic or quorum, got {value!r}")
    return value


class RabbitMQAdapter(StompDialect):
    name = "rabbitmq"
    display_name = "RabbitMQ"
    stomp_version: Version = "1.2"
    default_vhost = "/"
    transactional_send_receipts = False
    temporary_names_are_local = False
    capabilities = Capabilities(
        durable_subscriptions=True,
        selectors="client",
        no_local=False,
        browsing=False,
        transactions=True,
        temporary_destinations=True,
        priorities=False,
        expiry=True,
        map_messages=False,
        client_id_enforced=True,
        single_durable_consumer=True,
        broker_redelivery_flag=True,
        admin=True,
        # Each topic's store is a durable queue with x-max-length=1: the broker drops the older copy
        # (drop-head) in its own arrival order, so concurrent publishers need no coordination.
        retained="broker",
        shared_subscriptions=True,
        # RabbitMQ 3.10 resets a connection that stops reading (held 30 s, with or without heart-beats; raw
        # control: python -m jmslike.conformance.held_reader): no TCP hold here.
        byte_bound=False,
        verified_with="3.10.8",
    )
    url_options: Mapping[str, AdapterOption] = {
        MAX_PRIORITY_OPTION: AdapterOption(
            parse_count,
            0,
            "RabbitMQ only: declare queues with x-max-priority=N so priorities order delivery (0 = off)",
        ),
        QUEUE_TYPE_OPTION: AdapterOption(
            _queue_type,
            "",
            "RabbitMQ only: declare queues with x-queue-type (quorum or classic), as queues made by others are",
        ),
    }
    reserved_headers = STANDARD_HEADERS | {
        "expiration",
        "durable",
        "auto-delete",
        "exclusive",
        "x-queue-name",
        "prefetch-count",
        "x-max-priority",
        QUEUE_TYPE_ARGUMENT,
        "ack",
        ORIGIN_HEADER,
    }

    def __init__(self) -> None:
        self._management: RabbitMQManagement | None = None
        self._vhost = "/"
        # With ?rabbitmq_max_priority=N, queues jmslike declares (SEND and SUBSCRIBE to /queue/, durable
        # subscription queues) get x-max-priority, so RabbitMQ orders by priority. Off by default: a queue's
        # arguments are fixed by whoever declares it first, so every client of those queues must agree.
        self._max_priority = 0
        # With ?rabbitmq_queue_type=quorum, queues jmslike declares get x-queue-type: a SEND or SUBSCRIBE to
        # /queue/ re-declares the queue, and RabbitMQ refuses a declaration whose type differs from an
        # existing queue's (PRECONDITION_FAILED "inequivalent arg 'x-queue-type'", closing the connection).
        self._queue_type = ""

    # -- connection -----------------------------------------------------------------------------------

    def connect_headers(self, config: ConnectionConfig, client_id: str | None) -> dict[str, str]:
        # RabbitMQ has no client-id header; the claim happens in on_connected.
        host, _ = config.hosts[0]
        url = config.management_url or f"http://{host}:15672"
        self._management = RabbitMQManagement(url, config.credentials.user, config.credentials.password)
        self._vhost = config.vhost or "/"
        max_priority = config.option(MAX_PRIORITY_OPTION)
        self._max_priority = max_priority if isinstance(max_priority, int) else 0
        self._queue_type = str(config.option(QUEUE_TYPE_OPTION))
        return {}

    def on_connected(self, wire: Wire, connected: Mapping[str, str], client_id: str | None) -> None:
        if client_id is None:
            return
        lock = f"/queue/{LOCK_PREFIX}{queue_part(client_id)}"
        try:
            wire.request(
                Frame(
                    "SUBSCRIBE",
                    {
                        "id": "jmslike-client-id",
                        "destination": lock,
                        "exclusive": "true",
                        "auto-delete": "true",
                        "durable": "false",
                        "ack": "client-individual",
                    },
                )
            )
            # RabbitMQ may send the SUBSCRIBE's RECEIPT before the RESOURCE_LOCKED error that closes the
            # connection; a second round trip settles which it was.
            wire.request(Frame("BEGIN", {"transaction": "jmslike-client-id-check"}))
            wire.request(Frame("ABORT", {"transaction": "jmslike-client-id-check"}))
        except JMSException as exc:
            raise InvalidClientIDException(
                f"client ID {client_id!r} is in use by another live connection (RabbitMQ holds its exclusive "
                f"lock queue {lock[len('/queue/') :]!r})"
            ) from exc

    def subscription_registry(self) -> RabbitMQRegistry:
        return RabbitMQRegistry(self.management(), self._vhost, durable_prefix)

    def management(self) -> RabbitMQManagement:
        if self._management is None:
            raise JMSException("the RabbitMQ adapter is not connected")
        return self._management

    # -- destinations ---------------------------------------------------------------------------------

    def destination_name(self, destination: Destination) -> str:
        if isinstance(destination, TemporaryQueue):
            return f"/amq/queue/{destination.name}"
        if isinstance(destination, TemporaryTopic):
            return f"/topic/{destination.name}"
        if isinstance(destination, Queue):
            return f"/queue/{destination.name}"
        if isinstance(destination, Topic):
            return f"/topic/{to_broker(destination.name, self.topic_syntax)}"
        raise InvalidDestinationException(f"RabbitMQ cannot address {destination}")

    def parse_destination(self, name: str) -> Destination | None:
        for prefix in ("/amq/queue/", "/queue/"):
            if name.startswith(prefix):
                queue = name[len(prefix) :]
                return TemporaryQueue(queue) if queue.startswith(TEMPORARY_PREFIX) else Queue(queue)
        if name.startswith("/topic/"):
            topic = name[len("/topic/") :]
            return TemporaryTopic(topic) if topic.startswith(TEMPORARY_PREFIX) else Topic(topic)
        return None

    def create_temporary(self, wire: Wire, destination: Destination) -> None:
        """Declare the exclusive queue now, so messages sent before a consumer exists are kept."""
        if isinstance(destination, TemporaryQueue):
            spec = SubscriptionSpec(sub_id=f"declare-{destination.name}", destination=destination, prefetch=1)
            wire.request(Frame("SUBSCRIBE", self.subscribe_headers(spec)))
            wire.request(Frame("UNSUBSCRIBE", {"id": spec.sub_id}))

    # -- subscriptions --------------------------------------------------------------------------------

    def subscribe_headers(self, spec: SubscriptionSpec) -> dict[str, str]:
        headers = super().subscribe_headers(spec)
        headers.pop("selector", None)  # filtered client-side
        headers["prefetch-count"] = str(max(1, spec.prefetch))
        if isinstance(spec.destination, TemporaryQueue):
            headers["destination"] = f"/queue/{spec.destination.name}"
            headers.update({"exclusive": "true", "auto-delete": "false", "durable": "false"})
        if spec.durable_name is not None:
            headers.update(
                {"durable": "true", "auto-delete": "false", "x-queue-name": durable_queue_name(spec)}
            )
        if spec.shared_name is not None:
            durable = "true" if spec.shared_durable else "false"
            headers.update(
                {"durable": durable, "auto-delete": "false" if spec.shared_durable else "true"}
                | {"x-queue-name": shared_queue_name(spec)}
            )
        if spec.durable_name is not None and spec.expiry_ms:
            headers[EXPIRES_ARGUMENT] = str(spec.expiry_ms)
        if self._max_priority and (spec.durable_name is not None or type(spec.destination) is Queue):
            headers["x-max-priority"] = str(self._max_priority)
        if self._queue_type and type(spec.destination) is Queue:
            headers[QUEUE_TYPE_ARGUMENT] = self._queue_type
        return headers

    def subscribe(self, wire: Wire, spec: SubscriptionSpec) -> None:
        if spec.shared_name is not None:
            self._replace_shared(spec)
        if spec.durable_name is not None and spec.client_id is not None:
            self._refuse_name_clash(spec.client_id, spec.durable_name, shared_exists=True)
            # Change = delete + create: a subscription of this identity with another definition goes.
            current = durable_queue_name(spec)
            management = self.management()
            for queue in management.queue_names(
                self._vhost, durable_prefix(spec.client_id, spec.durable_name)
            ):
                if queue != current:
                    management.delete_queue(self._vhost, queue)
            if spec.definition is not None:
                # The queue carries jmslike's record of the subscription (see rabbitmq_admin).
                arguments = queue_arguments(DurableDefinition.from_json(spec.definition))
                if self._max_priority:
                    arguments["x-max-priority"] = self._max_priority
                management.declare_queue(self._vhost, current, arguments)
        super().subscribe(wire, spec)

    def _replace_shared(self, spec: SubscriptionSpec) -> None:
        """Another definition (topic, selector) of this shared subscription goes if nobody consumes it."""
        assert spec.shared_name is not None
        if spec.shared_durable and spec.client_id is not None:
            self._refuse_name_clash(spec.client_id, spec.shared_name, shared_exists=False)
        current = shared_queue_name(spec)
        management = self.management()
        prefix = shared_prefix(spec.client_id, spec.shared_name, spec.shared_durable)
        for queue in management.queue_names(self._vhost, prefix):
            if queue != current and not management.delete_queue(self._vhost, queue, if_unused=True):
                kind = "shared durable" if spec.shared_durable else "shared"
                raise JMSException(
                    f"{kind} subscription {spec.shared_name!r} exists with another topic or selector and has "
                    "active consumers; close them (and unsubscribe a durable one) before changing it"
                )

    def _refuse_name_clash(self, client_id: str, name: str, *, shared_exists: bool) -> None:
        """JMS 2.0 §8.3.4: a shared durable and an unshared durable subscription may not share a name and
        client ID. ``shared_exists``: check for a shared one (creating an unshared), else the reverse."""
        prefix = shared_prefix(client_id, name, True) if shared_exists else durable_prefix(client_id, name)
        if self.management().queue_names(self._vhost, prefix):
            existing, wanted = ("a shared", "an unshared") if shared_exists else ("an unshared", "a shared")
            raise JMSException(
                f"{existing} durable subscription {name!r} of client ID {client_id!r} exists, so {wanted} one "
                "cannot have that name (JMS 2.0 §8.3.4); unsubscribe it first or pick another name"
            )

    def delete_shared_durable(self, wire: Wire, client_id: str | None, name: str) -> None:
        management = self.management()
        queues = management.queue_names(self._vhost, shared_prefix(client_id, name, True))
        if not queues:
            if client_id is None:
                raise InvalidDestinationException(
                    f"no shared durable subscription {name!r} exists without a client ID"
                )
            raise InvalidDestinationException(
                f"no durable subscription {name!r} exists for client ID {client_id!r}"
            )
        for queue in queues:
            if not management.delete_queue(self._vhost, queue, if_unused=True):
                raise IllegalStateException(
                    f"shared durable subscription {name!r} has active consumers (in this or another "
                    "connection); close them before unsubscribe"
                )

    def delete_durable(self, wire: Wire, client_id: str, name: str) -> None:
        management = self.management()
        queues = management.queue_names(self._vhost, durable_prefix(client_id, name))
        if not queues:
            raise InvalidDestinationException(
                f"no durable subscription {name!r} exists for client ID {client_id!r}"
            )
        for queue in queues:
            management.delete_queue(self._vhost, queue)

    def detach(self, wire: Wire, spec: SubscriptionSpec, held: Callable[[], list[IncomingMessage]]) -> None:
        """Give held messages back, then cancel. A plain NACK would requeue each message straight back to
        this still-open subscription, and after UNSUBSCRIBE the plugin refuses any ACK/NACK for it
        ("Subscription not found"), leaving them stuck until the connection closes. NACKs inside a STOMP
        transaction are resolved when they arrive but applied at COMMIT, after the cancel: then they
        requeue (flagged redelivered) to other consumers."""
        transaction = f"jmslike-release-{spec.sub_id}"
        # BEGIN's receipt is also a barrier: deliveries the broker sent before answering it have arrived
        # by then, so they are collected too. Any still in flight when UNSUBSCRIBE lands stay with the
        # connection until it closes (the plugin refuses NACK after UNSUBSCRIBE): a documented deviation.
        wire.request(Frame("BEGIN", {"transaction": transaction}))
        try:
            for incoming in held():
                wire.post(Frame("NACK", {"id": incoming.ack_id, "transaction": transaction}))
            super().detach(wire, spec, held)
        finally:
            wire.request(Frame("COMMIT", {"transaction": transaction}))

    # -- messages -------------------------------------------------------------------------------------

    def fixed_send_headers(self, message: OutgoingMessage) -> dict[str, str]:
        headers = super().fixed_send_headers(message)
        if headers.get("persistent") == "false":
            del headers["persistent"]  # "false" would re-declare the queue non-durable
        if message.time_to_live:
            headers["expiration"] = str(message.time_to_live)
        if message.origin:
            headers[ORIGIN_HEADER] = message.origin
        if is_retained_store(message.destination):
            # SEND declares the queue: always with the same arguments (another set would be refused with
            # PRECONDITION_FAILED, closing the connection), so no x-max-priority here.
            headers["x-max-length"] = "1"
        elif type(message.destination) is Queue:  # SEND declares the queue too, with the same arguments
            if self._max_priority:
                headers["x-max-priority"] = str(self._max_priority)
            if self._queue_type:
                headers[QUEUE_TYPE_ARGUMENT] = self._queue_type
        return headers

    # -- retained publications ------------------------------------------------------------------------

    def read_retained(self, wire: Wire, store: Queue, browse: Browse) -> list[bytes]:
        """RabbitMQ's STOMP cannot browse, nor resolve a wildcard over queue names: list the store queues
        through the management API, match their topics against the subscription's pattern here, and read
        each one's copy with a management GET that requeues it (nothing is consumed)."""
        management = self.management()
        pattern = from_broker(store.name[len(RETAINED_STORE_PREFIX) :], self.topic_syntax)
        if not is_wildcard(pattern):  # one topic: its queue, without listing them all
            return self._peek(management, store.name)
        bodies: list[bytes] = []
        for queue in management.queue_names(self._vhost, RETAINED_STORE_PREFIX):
            if matches(pattern, from_broker(queue[len(RETAINED_STORE_PREFIX) :], self.topic_syntax)):
                bodies.extend(self._peek(management, queue))
        return bodies

    def _peek(self, management: RabbitMQManagement, queue: str) -> list[bytes]:
        """A GET holds the copy until it requeues it, so a concurrent reader finds the queue empty for
        those milliseconds: an empty answer is asked again a few times (a queue whose copy expired or was
        lost in a restart stays empty and costs the whole back-off, RETAINED_PEEK_BACKOFF_S)."""
        pause = threading.Event()
        for delay in (*RETAINED_PEEK_BACKOFF_S, None):
            found = management.peek_messages(self._vhost, queue, RETAINED_PEEK_COUNT)
            if found is None:  # no such queue: nothing was ever retained on that topic
                return []
            if found or delay is None:
                return found
            pause.wait(delay)
        return []

    def error_for(self, message: str, frame: Frame | None) -> type[JMSException]:
        if re.search(r"not_found|NOT_FOUND", message):
            return InvalidDestinationException
        return super().error_for(message, frame)

"""ActiveMQ Artemis's management address: the request and reply messages, the queue calls jmslike makes
through it, the names of the queues it keeps there, and the short-lived STOMP connection that carries them.

A module of its own because three build on it: the dialect (:mod:`adapters.artemis`: durable and shared
subscription queues, the client-ID lock), jmslike's records of durable subscriptions
(:mod:`adapters.artemis_admin`) and the retained-publication stores (:mod:`adapters.artemis_retained`). Kept in
the dialect's module, it made those two import the dialect, which uses them: an import cycle.

Facts it relies on, read in ``apache/activemq-artemis`` and ``docs/user-manual/management.adoc``: a message to
``activemq.management`` with ``_AMQ_ResourceName`` / ``_AMQ_OperationName`` and a JSON array body read as a
*text* body (``ManagementHelper.retrieveOperationParameters``), so the SEND must not carry ``content-length``;
the reply goes to ``reply-to`` with ``_AMQ_OperationSucceeded`` and a JSON array body
(``ManagementServiceImpl.handleMessage``). It runs on a short-lived STOMP connection of its own: replies to the
application's connection would be dropped as messages for an unknown subscription.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import re
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Final, Protocol

from jmslike.adapters.stomp_core import Version
from jmslike.config import ConnectionConfig
from jmslike.contract import Frame
from jmslike.exceptions import (
    ConnectionLostException,
    IllegalStateException,
    InvalidDestinationException,
    InvalidSelectorException,
    JMSException,
    JMSSecurityException,
    JMSTimeoutException,
    ResourceAllocationException,
)
from jmslike.failover import open_first

from .transport import StompWire

log = logging.getLogger(__name__)

# The STOMP version of Artemis's connections: the adapter's (ArtemisAdapter.stomp_version) and this module's.
STOMP_VERSION: Final[Version] = "1.2"

# Routing types and the STOMP headers that carry them (SEND / SUBSCRIBE); queue configurations name them too.
ANYCAST: Final = "ANYCAST"
MULTICAST: Final = "MULTICAST"
DESTINATION_TYPE_HEADER: Final = "destination-type"
SUBSCRIPTION_TYPE_HEADER: Final = "subscription-type"

MANAGEMENT_ADDRESS: Final = "activemq.management"
RESOURCE_HEADER: Final = "_AMQ_ResourceName"
OPERATION_HEADER: Final = "_AMQ_OperationName"
SUCCEEDED_HEADER: Final = "_AMQ_OperationSucceeded"
BROKER_RESOURCE: Final = "broker"
QUEUE_RESOURCE_PREFIX: Final = "queue."
REPLY_ADDRESS_PREFIX: Final = "jmslike.management.reply."
REPLY_SUBSCRIPTION_ID: Final = "jmslike-management"
CLIENT_ID_LOCK_PREFIX: Final = "jmslike.clientid."

_HAS_CONSUMERS = re.compile(r"has consumers", re.I)
_NO_SUCH_QUEUE = re.compile(r"does not exist|Cannot find resource", re.I)
_NO_OPERATION = re.compile(r"no operation", re.I)
_ALREADY_EXISTS = re.compile(r"already exists", re.I)

# Artemis's error texts -> JMS exceptions: of management replies (management_failure) and of ERROR
# frames on the application's connection (ArtemisAdapter.error_for).
ERROR_RULES: tuple[tuple[re.Pattern[str], type[JMSException]], ...] = (
    (
        re.compile(
            r"does not have permission|Unable to validate user|Security Error|not authori[sz]ed", re.I
        ),
        JMSSecurityException,
    ),
    (re.compile(r"client-id of the connection is not set", re.I), IllegalStateException),
    (re.compile(r"Cannot delete queue.*has consumers", re.I), IllegalStateException),
    (
        re.compile(
            r"Not allowed to specify \w+ semantics|Expected Routing Type|Can not create queue with routing type",
            re.I,
        ),
        InvalidDestinationException,
    ),
    (re.compile(r"Invalid filter", re.I), InvalidSelectorException),
    (
        re.compile(
            r"Destination does not exist|Queue .* does not exist|Address Does Not Exist|Cannot find resource",
            re.I,
        ),
        InvalidDestinationException,
    ),
    (re.compile(r"is full|Message header too big", re.I), ResourceAllocationException),
)


# -- the queues jmslike keeps through it --------------------------------------------------------------


def durable_queue_name(client_id: str, name: str) -> str:
    """The queue Artemis keeps a durable subscription in (``StompSession.addSubscription``)."""
    return f"{client_id}.{name}"


def shared_queue_name(client_id: str | None, name: str, durable: bool) -> str:
    """The queue of a JMS 2.0 shared subscription (name, client ID or none), apart from the unshared
    ``<client-id>.<name>`` so the two kinds can be told apart (and refused to share a name)."""
    kind = "shared-durable" if durable else "shared"
    owner = "~none" if client_id is None else client_id
    return f"jmslike.{kind}.{owner}.{name}"


def client_id_lock_queue(client_id: str) -> str:
    """The queue whose single consumer holds ``client_id`` for one live connection."""
    return CLIENT_ID_LOCK_PREFIX + client_id


# -- management messages (pure) -----------------------------------------------------------------------


def queue_configuration(
    name: str,
    address: str,
    routing: str,
    *,
    durable: bool,
    filter_string: str | None = None,
    max_consumers: int | None = None,
    last_value_key: str | None = None,
) -> str:
    """A QueueConfiguration as JSON (``QueueConfiguration.fromJSON`` keys) for ``createQueue``; with
    ``last_value_key``, a last-value queue keeping the newest message per value of that property."""
    config: dict[str, object] = {
        "name": name,
        "address": address,
        "routing-type": routing,
        "durable": durable,
        "auto-create-address": True,
        "purge-on-no-consumers": False,
    }
    if filter_string:
        config["filter-string"] = filter_string
    if max_consumers is not None:
        config["max-consumers"] = max_consumers
    if last_value_key is not None:
        config["last-value"] = True
        config["last-value-key"] = last_value_key
    return json.dumps(config, separators=(",", ":"), sort_keys=True)


def management_request(
    resource: str, operation: str, params: Iterable[object], *, reply_to: str, correlation_id: str
) -> Frame:
    """The SEND frame that invokes ``operation`` on ``resource`` (e.g. ``broker``, ``queue.NAME``).

    It must travel without ``content-length``: Artemis reads the parameters as a text body."""
    body = json.dumps(list(params), separators=(",", ":"))
    headers = {
        "destination": MANAGEMENT_ADDRESS,
        "reply-to": reply_to,
        "correlation-id": correlation_id,
        RESOURCE_HEADER: resource,
        OPERATION_HEADER: operation,
    }
    return Frame("SEND", headers, body.encode("utf-8"))


@dataclass(frozen=True)
class ManagementReply:
    """A management reply: ``value`` is the operation's result (None for void), or the error text."""

    succeeded: bool
    value: object
    text: str
    correlation_id: str | None = None


def parse_management_reply(frame: Frame) -> ManagementReply:
    """Decode a reply (``ManagementHelper.storeResult``: a JSON array of one element, or no body). Never raises."""
    text = frame.body.decode("utf-8", "replace").strip().strip("\x00")
    succeeded = frame.headers.get(SUCCEEDED_HEADER, "").lower() == "true"
    value: object = None
    if text:
        try:
            decoded = json.loads(text)
        except ValueError:
            value = text
        else:
            value = decoded[0] if isinstance(decoded, list) and len(decoded) == 1 else decoded
    return ManagementReply(succeeded, value, text, frame.headers.get("correlation-id"))


def management_failure(reply: ManagementReply, what: str) -> JMSException:
    """The exception for a failed management call, with the broker's text."""
    detail = reply.value if isinstance(reply.value, str) else reply.text
    text = f"ActiveMQ Artemis refused {what}: {detail}"
    if _NO_SUCH_QUEUE.search(detail):
        return InvalidDestinationException(text)
    if _HAS_CONSUMERS.search(detail):
        return IllegalStateException(text)
    for pattern, error_class in ERROR_RULES:
        if pattern.search(detail):
            return error_class(text)
    return JMSException(text)


@dataclass(frozen=True)
class QueueInfo:
    """What jmslike needs to know about a subscription queue."""

    name: str
    address: str
    filter_string: str | None
    max_consumers: int
    consumer_count: int


class ManagementSession(Protocol):
    """One open channel to the management address."""

    def invoke(self, resource: str, operation: str, *params: object) -> ManagementReply: ...

    def send(self, headers: Mapping[str, str]) -> None:
        """Send one body-less message and wait for its receipt (jmslike's records, adapters.artemis_admin)."""


ManagementFactory = Callable[[], AbstractContextManager[ManagementSession]]


def _expect(reply: ManagementReply, what: str) -> object:
    if not reply.succeeded:
        raise management_failure(reply, what)
    return reply.value


def _as_int(value: object, default: int) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    try:
        return int(str(value))
    except ValueError:
        return default


def normal_filter(text: str | None) -> str | None:
    """A queue filter as jmslike compares them: blank is none (Artemis reports either for no filter)."""
    if text is None:
        return None
    stripped = text.strip()
    return stripped or None


def lookup_queue(session: ManagementSession, name: str) -> QueueInfo | None:
    """The queue ``name``, or None if it does not exist (QueueControl getters invoked as operations)."""
    resource = QUEUE_RESOURCE_PREFIX + name
    reply = session.invoke(resource, "getAddress")
    if not reply.succeeded:
        error = management_failure(reply, f"getAddress on {resource}")
        if isinstance(error, InvalidDestinationException):
            return None
        raise error
    address = str(reply.value)
    filter_value = _expect(session.invoke(resource, "getFilter"), f"getFilter on {resource}")
    max_consumers = _expect(session.invoke(resource, "getMaxConsumers"), f"getMaxConsumers on {resource}")
    consumers = _expect(session.invoke(resource, "getConsumerCount"), f"getConsumerCount on {resource}")
    return QueueInfo(
        name=name,
        address=address,
        filter_string=normal_filter(filter_value if isinstance(filter_value, str) else None),
        max_consumers=_as_int(max_consumers, -1),
        consumer_count=_as_int(consumers, 0),
    )


def create_queue(session: ManagementSession, configuration: str, *, ignore_if_exists: bool) -> None:
    """``createQueue(json, ignoreIfExists)``, falling back to ``createQueue(json)`` on brokers without it."""
    reply = session.invoke(BROKER_RESOURCE, "createQueue", configuration, ignore_if_exists)
    if reply.succeeded:
        return
    if _NO_OPERATION.search(reply.text):
        reply = session.invoke(BROKER_RESOURCE, "createQueue", configuration)
        if reply.succeeded or (ignore_if_exists and _ALREADY_EXISTS.search(reply.text)):
            return
    raise management_failure(reply, "createQueue")


def destroy_queue(session: ManagementSession, name: str) -> None:
    """``destroyQueue(name)``: refused while the queue has consumers."""
    _expect(session.invoke(BROKER_RESOURCE, "destroyQueue", name), f"destroyQueue {name}")


# -- the management connection --------------------------------------------------------------------


class _ReplySink:
    """Receiver-thread events of the management connection, handed to the waiting caller."""

    def __init__(self) -> None:
        self.items: queue.SimpleQueue[Frame | JMSException] = queue.SimpleQueue()

    def on_message(self, frame: Frame) -> None:
        self.items.put(frame)

    def on_error(self, error: JMSException) -> None:
        self.items.put(error)

    def on_lost(self, error: ConnectionLostException) -> None:
        self.items.put(error)


class _ManagementWire(StompWire):
    """A StompWire whose SEND frames go without ``content-length`` (management bodies must be core text)."""

    def _prepare(self, frame: Frame) -> Frame:
        if frame.command == "SEND":
            if b"\x00" in frame.body:
                raise JMSException("a management request body cannot contain NUL characters")
            return dataclasses.replace(frame, content_length=False)
        return frame


class ManagementClient:
    """A short-lived STOMP connection to the management address (a context manager).

    It carries no client ID (it must not take the application's) and subscribes to a reply address of its
    own; ``invoke`` sends one request and waits for the reply with the same correlation ID.
    """

    def __init__(
        self,
        config: ConnectionConfig,
        hosts: Iterable[tuple[str, int]],
        error_for: Callable[[str, Frame | None], type[JMSException]],
    ) -> None:
        self._config = config
        self._hosts = tuple(hosts)
        self._error_for = error_for
        self._sink = _ReplySink()
        self._wire: StompWire | None = None
        self._reply_to = REPLY_ADDRESS_PREFIX + uuid.uuid4().hex

    def __enter__(self) -> ManagementClient:
        self._wire = open_first(self._hosts, self._open_host, "cannot open the Artemis management connection")
        try:
            self._wire.request(
                Frame(
                    "SUBSCRIBE",
                    {
                        "id": REPLY_SUBSCRIPTION_ID,
                        "destination": self._reply_to,
                        SUBSCRIPTION_TYPE_HEADER: MULTICAST,
                        "ack": "auto",
                    },
                )
            )
        except BaseException:
            self._wire.close(timeout_s=0.5)
            raise
        return self

    def _open_host(self, host: tuple[str, int]) -> StompWire:
        wire = _ManagementWire(self._config, host, STOMP_VERSION, self._sink, self._error_for)
        try:
            wire.open({})
        except BaseException:
            wire.close(timeout_s=0.5)
            raise
        return wire

    def __exit__(self, *exc: object) -> None:
        if self._wire is not None:
            self._wire.close(timeout_s=2.0)
            self._wire = None

    def send(self, headers: Mapping[str, str]) -> None:
        if self._wire is None:
            raise IllegalStateException("the management connection is not open")
        self._wire.request(Frame("SEND", dict(headers)))

    def invoke(self, resource: str, operation: str, *params: object) -> ManagementReply:
        if self._wire is None:
            raise IllegalStateException("the management connection is not open")
        correlation_id = uuid.uuid4().hex
        frame = management_request(
            resource, operation, params, reply_to=self._reply_to, correlation_id=correlation_id
        )
        try:
            self._wire.request(frame)
        except JMSSecurityException as exc:
            raise JMSSecurityException(
                f"{exc}: jmslike needs the 'manage' permission on {MANAGEMENT_ADDRESS} on Artemis for durable "
                "subscriptions and client IDs (see docs/artemis.md)"
            ) from exc
        timeout_s = self._config.receipt_timeout_ms / 1000
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise JMSTimeoutException(
                    f"no reply from the Artemis management address to {operation} on {resource} within "
                    f"{timeout_s:.1f}s"
                )
            try:
                item = self._sink.items.get(timeout=remaining)
            except queue.Empty:
                continue
            if isinstance(item, JMSException):
                raise item
            if item.headers.get("subscription") != REPLY_SUBSCRIPTION_ID:
                continue  # a late delivery of an earlier peek
            reply = parse_management_reply(item)
            if reply.correlation_id in (None, correlation_id):
                return reply
            log.debug("stale management reply %s dropped", reply.correlation_id)

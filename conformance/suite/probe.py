"""Raw broker probes: look at broker state without jmslike, so jmslike never confirms itself.

A scenario asks "is this durable subscription really gone?" or "what does this queue hold?" through a
:class:`BrokerProbe`. Each broker kind answers in its own way: ActiveMQ through a raw STOMP client
(stompest: durable re-attach, queue browse), RabbitMQ through its HTTP management API, Artemis through a
raw STOMP client speaking to its management address and reading queues by their fully qualified name. A
probe that
cannot answer on a broker raises :class:`ProbeUnavailable`; scenarios then rely on the JMS API alone.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import urllib.parse
import urllib.request
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jmslike.conformance.brokers import BrokerHandle

log = logging.getLogger(__name__)


def raw_stomp_client(
    broker: BrokerHandle, version: str = "1.2", client_id: str | None = None, port: int | None = None
) -> Any:
    """A connected stompest client on ``broker``'s STOMP port (or ``port`` on the same host: a fault proxy in
    front of it) with its account: no jmslike code between the caller and the broker. STOMP 1.2 sends
    ``host:/`` (RabbitMQ's virtual host; others ignore it)."""
    from stompest.config import StompConfig
    from stompest.sync import Stomp

    config = StompConfig(
        f"tcp://{broker.host}:{port or broker.port}",
        login=broker.user,
        passcode=broker.password,
        version=version,
    )
    client = Stomp(config)
    headers = {"client-id": client_id} if client_id else {}
    if version == "1.2":
        client.connect(headers=headers, host="/", connectTimeout=10, connectedTimeout=10)
    else:
        client.connect(headers=headers, versions=[version], connectTimeout=10)
    return client


class ProbeUnavailable(Exception):
    """This broker has no independent way to answer the question."""


class BrokerProbe:
    """The questions scenarios may ask; the base class answers none of them."""

    def __init__(self, broker: BrokerHandle) -> None:
        self.broker = broker

    def durable_backlog(
        self, client_id: str, topic: str, name: str, wait_s: float = 1.0, selector: str | None = None
    ) -> list[str]:
        """Bodies retained for durable subscription (client_id, name) on ``topic``; the probe removes
        the subscription afterwards (it may have re-created it by looking). ``selector``: the
        subscription's selector as the broker has it (ActiveMQ replaces a subscription attached with
        another selector, so the probe must give the same one)."""
        raise ProbeUnavailable(f"no durable-subscription probe for {self.broker.kind}")

    def queue_bodies(self, queue: str, wait_s: float = 1.0) -> list[str]:
        """Bodies of the messages a queue holds, without consuming them."""
        raise ProbeUnavailable(f"no queue probe for {self.broker.kind}")


class ActiveMQProbe(BrokerProbe):
    """Raw STOMP 1.1 through stompest (ActiveMQ's own STOMP headers, no jmslike code)."""

    def _client(self, client_id: str | None) -> Any:
        return raw_stomp_client(self.broker, "1.1", client_id)

    def durable_backlog(
        self, client_id: str, topic: str, name: str, wait_s: float = 1.0, selector: str | None = None
    ) -> list[str]:
        from stompest.protocol import StompFrame, StompSpec

        client = self._client(client_id)
        try:
            headers = {"id": "probe", "ack": "client-individual", "activemq.subscriptionName": name}
            if selector is not None:  # the subscription's own: another selector would replace it
                headers["selector"] = selector
            token = client.subscribe(f"/topic/{topic}", headers)
            bodies: list[str] = []
            while client.canRead(wait_s):
                frame = client.receiveFrame()
                if frame.command == StompSpec.MESSAGE:
                    bodies.append(frame.body.decode("utf-8", "replace"))
            client.unsubscribe(token)
            client.sendFrame(
                StompFrame(
                    StompSpec.UNSUBSCRIBE,
                    {"id": "probe", "activemq.subscriptionName": name, "receipt": "probe-delete"},
                )
            )
            if client.canRead(wait_s):
                client.receiveFrame()
            return bodies
        finally:
            client.disconnect()

    def queue_bodies(self, queue: str, wait_s: float = 1.0) -> list[str]:
        from stompest.protocol import StompSpec

        client = self._client(None)
        try:
            client.subscribe(f"/queue/{queue}", {"id": "browse", "ack": "auto", "browser": "true"})
            bodies: list[str] = []
            while client.canRead(wait_s):
                frame = client.receiveFrame()
                if frame.command != StompSpec.MESSAGE:
                    continue
                if frame.headers.get("browser") == "end":
                    break
                bodies.append(frame.body.decode("utf-8", "replace"))
            return bodies
        finally:
            client.disconnect()


class RabbitMQProbe(BrokerProbe):
    """RabbitMQ's HTTP management API (the launcher enables the plugin). A durable subscription is a
    queue whose name contains the subscription name (the suite's names are unique)."""

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        base = self.broker.management_url
        if base is None:
            raise ProbeUnavailable("RabbitMQ management API is not enabled on this broker")
        request = urllib.request.Request(
            base + path,
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"content-type": "application/json"},
        )
        token = base64.b64encode(f"{self.broker.user}:{self.broker.password}".encode()).decode()
        request.add_header("authorization", f"Basic {token}")
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def _get(self, vhost: str, queue: str) -> list[str]:
        path = f"/api/queues/{urllib.parse.quote(vhost, safe='')}/{urllib.parse.quote(queue, safe='')}/get"
        messages = self._call(
            "POST",
            path,
            {"count": 1000, "ackmode": "ack_requeue_true", "encoding": "auto", "truncate": 100000},
        )
        return [str(m.get("payload", "")) for m in messages or []]

    def durable_backlog(
        self, client_id: str, topic: str, name: str, wait_s: float = 1.0, selector: str | None = None
    ) -> list[str]:
        bodies: list[str] = []
        for queue in self._call("GET", "/api/queues") or []:
            if name in queue.get("name", ""):
                vhost = queue.get("vhost", "/")
                bodies += self._get(vhost, queue["name"])
                quoted = f"{urllib.parse.quote(vhost, safe='')}/{urllib.parse.quote(queue['name'], safe='')}"
                self._call("DELETE", f"/api/queues/{quoted}")
        return bodies

    def queue_bodies(self, queue: str, wait_s: float = 1.0) -> list[str]:
        return self._get("/", queue)


class ArtemisProbe(BrokerProbe):
    """Raw STOMP 1.2 through stompest: a management request (``getMessageCount`` / ``destroyQueue``) says
    whether a queue exists or removes it; a consumer on ``address::queue`` that never acknowledges reads the
    bodies, which go back to the queue when it leaves (flagged redelivered, as any look by consuming)."""

    def _client(self) -> Any:
        return raw_stomp_client(self.broker)

    @staticmethod
    def _next(client: Any, command: str, within_s: float = 10.0) -> Any:
        deadline = time.monotonic() + within_s
        while client.canRead(max(0.0, deadline - time.monotonic())):
            frame = client.receiveFrame()
            if frame.command == command:
                return frame
            if frame.command == "ERROR":
                raise AssertionError(f"Artemis answered the probe with {frame}")
        raise AssertionError(f"no {command} from Artemis within {within_s} s")

    def manage(self, client: Any, resource: str, operation: str, *params: object) -> tuple[bool, bytes]:
        """One Artemis management call over ``client`` (a raw stompest connection): (succeeded, reply body)."""
        from stompest.protocol import StompFrame, StompSpec

        reply_to = f"probe.reply.{uuid.uuid4().hex}"
        client.subscribe(
            reply_to, {"id": reply_to, "ack": "auto", "subscription-type": "MULTICAST", "receipt": reply_to}
        )
        self._next(client, StompSpec.RECEIPT)
        headers = {
            "destination": "activemq.management",
            "reply-to": reply_to,
            "_AMQ_ResourceName": resource,
            "_AMQ_OperationName": operation,
        }
        # The parameters are a text body: no content-length (stompest adds none).
        body = json.dumps(list(params)).encode()
        client.sendFrame(StompFrame(StompSpec.SEND, headers, body, version=StompSpec.VERSION_1_2))
        reply = self._next(client, StompSpec.MESSAGE)
        return reply.headers.get("_AMQ_OperationSucceeded", "").lower() == "true", reply.body

    def delivery_stuck(self, queue: str) -> bool:
        """Whether Artemis 2.21's stuck delivery (docs/artemis.md, deviations) holds ``queue``'s only message:
        the queue counts one message, delivering, that no consumer holds (``listDeliveringMessagesAsJSON`` is
        empty). A message merely on its way to a live consumer is listed under that consumer, so it does not
        match; nor does a queue that does not exist."""
        client = self._client()
        try:
            values: dict[str, object] = {}
            for operation in ("getMessageCount", "getDeliveringCount", "listDeliveringMessagesAsJSON"):
                succeeded, body = self.manage(client, f"queue.{queue}", operation)
                if not succeeded:
                    return False
                value = json.loads(body)
                values[operation] = value[0] if isinstance(value, list) and len(value) == 1 else value
        finally:
            client.disconnect()
        held_by_consumers = json.loads(str(values["listDeliveringMessagesAsJSON"]))
        return (
            int(str(values["getMessageCount"])) == 1
            and int(str(values["getDeliveringCount"])) == 1
            and not held_by_consumers
        )

    def _read(self, client: Any, address: str, queue: str, routing: str, wait_s: float) -> list[bytes]:
        client.subscribe(
            f"{address}::{queue}", {"id": "probe", "ack": "client-individual", "subscription-type": routing}
        )
        bodies = []
        while client.canRead(wait_s):
            frame = client.receiveFrame()
            if frame.command == "MESSAGE" and frame.headers.get("subscription") == "probe":
                bodies.append(frame.body or self._envelope(frame.headers))
        return bodies

    @staticmethod
    def _envelope(headers: dict[str, str]) -> bytes:
        """A retained-publication copy keeps its envelope in properties ``jmslike_env_0``... (count in
        ``jmslike_env_n``; see adapters/artemis_retained.py), because Artemis's management reads no bodies."""
        count = int(headers.get("jmslike_env_n", "0"))
        return "".join(headers[f"jmslike_env_{n}"] for n in range(count)).encode()

    def backlog(self, client_id: str, topic: str, name: str, wait_s: float = 1.0) -> list[bytes] | None:
        """What the durable subscription (client ID, name) holds, or None where it does not exist; left
        in place."""
        queue = f"{client_id}.{name}"
        client = self._client()
        try:
            exists, detail = self.manage(client, f"queue.{queue}", "getMessageCount")
            if not exists:
                assert b"does not exist" in detail or b"Cannot find resource" in detail, detail
                return None
            return self._read(client, topic, queue, "MULTICAST", wait_s)
        finally:
            client.disconnect()  # unacknowledged: the messages go back to the subscription

    def durable_backlog(
        self, client_id: str, topic: str, name: str, wait_s: float = 1.0, selector: str | None = None
    ) -> list[str]:
        bodies = self.backlog(client_id, topic, name, wait_s)
        if bodies is None:
            return []
        client = self._client()
        try:
            removed, detail = self.manage(client, "broker", "destroyQueue", f"{client_id}.{name}")
            assert removed, detail
        finally:
            client.disconnect()
        return [body.decode("utf-8", "replace") for body in bodies]

    def queue_bodies(self, queue: str, wait_s: float = 1.0) -> list[str]:
        client = self._client()
        try:
            return [
                body.decode("utf-8", "replace")
                for body in self._read(client, queue, queue, "ANYCAST", wait_s)
            ]
        finally:
            client.disconnect()


def probe_for(broker: BrokerHandle) -> BrokerProbe:
    """The probe for ``broker``'s kind (a base probe that answers nothing for unknown kinds)."""
    if broker.kind == "activemq":
        return ActiveMQProbe(broker)
    if broker.kind == "rabbitmq":
        return RabbitMQProbe(broker)
    if broker.kind == "artemis":
        return ArtemisProbe(broker)
    return BrokerProbe(broker)

"""A minimal client of RabbitMQ's management HTTP API (plugin ``rabbitmq_management``).

RabbitMQ's STOMP cannot list queues or ask whether one exists without killing the connection (a passive
declare of a missing queue is a channel error, and STOMP has one channel). Durable subscriptions need
both: to refuse ``unsubscribe`` of an unknown name and to delete the old queue when a subscription's
topic or selector changes. So the RabbitMQ adapter asks this API, with the connection's credentials.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from jmslike.exceptions import JMSException, JMSSecurityException


class ManagementUnavailable(JMSException):
    """The management API could not be reached; the message says where it was looked for."""


class RabbitMQManagement:
    def __init__(
        self, base_url: str, user: str | None, password: str | None, timeout_s: float = 10.0
    ) -> None:
        self._base = base_url.rstrip("/")
        self._auth = "Basic " + base64.b64encode(f"{user or 'guest'}:{password or 'guest'}".encode()).decode()
        self._timeout = timeout_s

    def __repr__(self) -> str:
        return f"RabbitMQManagement({self._base!r})"

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        headers = {"Authorization": self._auth}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        request = urllib.request.Request(self._base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                data = response.read()
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise JMSSecurityException(
                    f"RabbitMQ management API at {self._base} refused the credentials (HTTP {exc.code}); the "
                    "user needs the 'management' tag"
                ) from exc
            if exc.code == 404:
                return None
            raise JMSException(f"RabbitMQ management API {method} {path} failed: HTTP {exc.code}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ManagementUnavailable(
                f"RabbitMQ management API not reachable at {self._base} ({exc}); durable subscriptions and "
                "request update (retained publications) on RabbitMQ need the rabbitmq_management plugin: "
                "enable it, or set ?management_url=... in the URL"
            ) from exc
        return json.loads(data) if data else None

    def queue_names(self, vhost: str, prefix: str) -> list[str]:
        """Names of the queues of ``vhost`` that start with ``prefix``."""
        queues = self._call("GET", f"/api/queues/{_quote(vhost)}?columns=name") or []
        return sorted(q["name"] for q in queues if str(q.get("name", "")).startswith(prefix))

    def queue(self, vhost: str, name: str) -> dict[str, Any] | None:
        result = self._call("GET", f"/api/queues/{_quote(vhost)}/{_quote(name)}")
        return result if isinstance(result, dict) else None

    def peek_messages(self, vhost: str, name: str, count: int) -> list[bytes] | None:
        """The bodies of up to ``count`` messages at the head of a queue, in order, left in the queue
        (``ack_requeue_true``: got and requeued by the broker); None when there is no such queue."""
        result = self._call(
            "POST",
            f"/api/queues/{_quote(vhost)}/{_quote(name)}/get",
            {"count": count, "ackmode": "ack_requeue_true", "encoding": "base64"},
        )
        if not isinstance(result, list):
            return None
        bodies = []
        for item in result:
            payload = str(item.get("payload", ""))
            if item.get("payload_encoding") == "base64":
                bodies.append(base64.b64decode(payload))
            else:
                bodies.append(payload.encode())
        return bodies

    def queues(self, vhost: str, prefix: str) -> list[dict[str, Any]]:
        """Full records (arguments, consumers, messages, idle_since) of the queues starting with ``prefix``."""
        queues = self._call("GET", f"/api/queues/{_quote(vhost)}") or []
        return [q for q in queues if isinstance(q, dict) and str(q.get("name", "")).startswith(prefix)]

    def declare_queue(self, vhost: str, name: str, arguments: dict[str, Any]) -> None:
        """Declare a durable queue with ``arguments`` (a no-op if it exists: arguments are not changed)."""
        body = {"durable": True, "auto_delete": False, "arguments": arguments}
        self._call("PUT", f"/api/queues/{_quote(vhost)}/{_quote(name)}", body)

    def delete_queue(self, vhost: str, name: str, *, if_unused: bool = False) -> bool:
        """Delete a queue; with ``if_unused`` only if it has no consumer, judged by the queue itself (the
        statistics' consumer count lags): False when it was in use."""
        if not if_unused:
            self._call("DELETE", f"/api/queues/{_quote(vhost)}/{_quote(name)}")
            return True
        try:
            self._call("DELETE", f"/api/queues/{_quote(vhost)}/{_quote(name)}?if-unused=true")
        except JMSException as exc:
            if isinstance(exc.__cause__, urllib.error.HTTPError) and exc.__cause__.code == 400:
                return False  # {"error":"bad_request","reason":"queue '...' in vhost '/' in use"}
            raise
        return True


def _quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")

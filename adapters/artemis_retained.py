"""ActiveMQ Artemis: retained publications in last-value queues, read through the management address.

A topic's retained copy lives in the queue ``jmslike.retained.<topic>`` (:func:`jmslike.retained.store_queue`),
created through the management address before the first copy is sent to it, as a durable ANYCAST
*last-value queue*: every copy carries the same ``jmslike_retained`` value (``last-value-key``), so Artemis
keeps only the newest. STOMP cannot declare one.

Artemis's STOMP has no browser, and a consumer is no reader: on a non-destructive queue a copy in delivery
cannot be replaced, and a newer copy was seen to be swapped in only at a later read (2.21). So a copy
carries the envelope (:class:`jmslike.retained.Envelope`) in its *properties*, in parts short enough for
``QueueControl.listMessagesAsJSON`` (which leaves bodies out and cuts property values at 256 characters),
and a request update lists the store's messages: nothing is delivered, nothing consumed. The parts count
against Artemis's limit on a message's headers (``Message header too big``, a ResourceAllocationException):
retained payloads of more than some tens of KiB are refused there. A wildcard subscription lists the store
queues through ``listQueues`` and matches their topics here, as on RabbitMQ.
"""

from __future__ import annotations

import json
from typing import Final

from jmslike.contract import RETAINED_STORE_PREFIX
from jmslike.exceptions import ResourceAllocationException
from jmslike.topics import TopicSyntax, from_broker, is_wildcard, matches

from .artemis_admin import join_value, list_messages, list_queue_rows, split_value
from .artemis_management import ANYCAST, ManagementSession, create_queue, queue_configuration

#: The property whose value every copy shares: the last-value key of a store queue.
RETAINED_KEY_PROPERTY: Final = "jmslike_retained"
#: The envelope's parts: ``jmslike_env_n`` (count), ``jmslike_env_0``...
ENVELOPE_PREFIX: Final = "jmslike_env_"
#: The largest envelope sent as properties: one with an 80 KB body (about 108 KB) was stored and read back
#: on 2.21; one of 587 KB was refused (AMQ339011), closing the connection.
MAX_ENVELOPE_BYTES: Final = 128 * 1024


def store_configuration(name: str) -> str:
    """The QueueConfiguration of a store queue: durable, last-value."""
    return queue_configuration(name, name, ANYCAST, durable=True, last_value_key=RETAINED_KEY_PROPERTY)


def ensure_store(session: ManagementSession, name: str) -> None:
    create_queue(session, store_configuration(name), ignore_if_exists=True)


def is_store(name: str) -> bool:
    return name.startswith(RETAINED_STORE_PREFIX)


def store_names(session: ManagementSession) -> list[str]:
    """Every store queue on the broker."""
    query = json.dumps({"field": "name", "operation": "CONTAINS", "value": RETAINED_STORE_PREFIX})
    return sorted(
        name for row in list_queue_rows(session, query) if is_store(name := str(row.get("name", "")))
    )


def copy_properties(envelope: bytes) -> dict[str, str]:
    """The properties of a copy: the last-value key, and the envelope (JSON text) in readable parts.
    ResourceAllocationException, before anything is sent, when it is more than Artemis takes as headers."""
    if len(envelope) > MAX_ENVELOPE_BYTES:
        raise ResourceAllocationException(
            f"a retained publication's copy would be {len(envelope)} bytes of message properties on Artemis "
            f"(the body travels base64-encoded), more than the {MAX_ENVELOPE_BYTES} jmslike sends (Artemis "
            "refused 587 KB and closed the connection): retain a smaller message, about 80 KB of body at most"
        )
    return {RETAINED_KEY_PROPERTY: "latest", **split_value(ENVELOPE_PREFIX, envelope.decode("utf-8"))}


def peek_store(session: ManagementSession, name: str) -> list[bytes]:
    """The envelopes in the store ``name`` (none when it does not exist), oldest first."""
    rows = list_messages(session, name, "") or []
    envelopes = [
        join_value(ENVELOPE_PREFIX, row) for row in sorted(rows, key=lambda r: int(r.get("messageID", 0)))
    ]
    return [text.encode("utf-8") for text in envelopes if text is not None]


def read_retained(session: ManagementSession, store: str, syntax: TopicSyntax) -> list[bytes]:
    """The copies of every store ``store`` names (a broker wildcard when the subscription has one)."""
    pattern = from_broker(store[len(RETAINED_STORE_PREFIX) :], syntax)
    if not is_wildcard(pattern):
        return peek_store(session, store)
    bodies: list[bytes] = []
    for name in store_names(session):
        if matches(pattern, from_broker(name[len(RETAINED_STORE_PREFIX) :], syntax)):
            bodies.extend(peek_store(session, name))
    return bodies

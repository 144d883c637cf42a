"""The row a JMS message becomes in Spark: the schema, the conversion, and the de-duplication key.

One place owns the mapping so that the staged files, the Spark schema and the documentation agree.
Staged files carry one more column than Spark sees, ``_dedupeKey``: jmslike's own producer-set message
ID when the message has one (stable across redeliveries on every broker), otherwise a SHA-256 of the
message's content (brokers' STOMP ids change on redelivery on RabbitMQ and Artemis). The key decides
what a redelivery is; see README.md "De-duplication".
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from jmslike import BytesMessage, MapMessage, Message, ObjectMessage, StreamMessage, TextMessage

SPARK_SCHEMA = (
    "messageId STRING, destination STRING, timestamp TIMESTAMP, deliveryMode INT, priority INT, "
    "redelivered BOOLEAN, correlationId STRING, type STRING, expiration BIGINT, "
    "properties MAP<STRING, STRING>, body BINARY, text STRING"
)
COLUMNS = (
    "messageId",
    "destination",
    "timestamp",
    "deliveryMode",
    "priority",
    "redelivered",
    "correlationId",
    "type",
    "expiration",
    "properties",
    "body",
    "text",
)
KEY_COLUMN = "_dedupeKey"

# jmslike's producers stamp "ID:" + 32 hex digits (a random prefix per producer and a counter), the same on
# every delivery of the message.
_JMSLIKE_ID = re.compile(r"ID:[0-9a-f]{32}")


def arrow_schema(with_key: bool = True) -> Any:
    import pyarrow as pa

    fields = [
        pa.field("messageId", pa.string()),
        pa.field("destination", pa.string()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("deliveryMode", pa.int32()),
        pa.field("priority", pa.int32()),
        pa.field("redelivered", pa.bool_()),
        pa.field("correlationId", pa.string()),
        pa.field("type", pa.string()),
        pa.field("expiration", pa.int64()),
        pa.field("properties", pa.map_(pa.string(), pa.string())),
        pa.field("body", pa.binary()),
        pa.field("text", pa.string()),
    ]
    if with_key:
        fields.append(pa.field(KEY_COLUMN, pa.string()))
    return pa.schema(fields)


def _property_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    return str(value)


def _body(message: Message) -> tuple[bytes | None, str | None]:
    """(body bytes, text): text messages also give their UTF-8 bytes; structured bodies become JSON."""
    if isinstance(message, TextMessage):
        text = message.getText()
        return (text.encode("utf-8") if text is not None else None), text
    if isinstance(message, BytesMessage):
        return message.getBody(bytes), None
    if isinstance(message, MapMessage | StreamMessage | ObjectMessage):
        body = message.getBody(object)
        return json.dumps(body, default=_property_text, sort_keys=True).encode("utf-8"), None
    return None, None


def dedupe_key(message_id: str | None, row: dict[str, Any]) -> str:
    """jmslike's stable ID, or a content hash for messages from other producers."""
    if message_id is not None and _JMSLIKE_ID.fullmatch(message_id):
        return message_id
    digest = hashlib.sha256()
    for name in (
        "destination",
        "timestamp",
        "deliveryMode",
        "priority",
        "correlationId",
        "type",
        "expiration",
    ):
        digest.update(repr(row[name]).encode("utf-8"))
        digest.update(b"\0")
    for key, value in sorted(row["properties"]):
        if key.startswith("JMSX"):  # provider-set per delivery (JMSXDeliveryCount): not the message's content
            continue
        digest.update(key.encode("utf-8") + b"=" + value.encode("utf-8") + b"\0")
    digest.update(row["body"] or b"")
    return "sha256:" + digest.hexdigest()


def message_row(message: Message) -> dict[str, Any]:
    """The staged row of ``message`` (Spark columns plus the de-duplication key)."""
    body, text = _body(message)
    properties = sorted(
        (name, _property_text(message.getObjectProperty(name))) for name in message.getPropertyNames()
    )
    timestamp = message.getJMSTimestamp()
    destination = message.getJMSDestination()
    message_id = message.getJMSMessageID()
    row: dict[str, Any] = {
        "messageId": message_id,
        "destination": str(destination) if destination is not None else None,
        "timestamp": timestamp * 1000 if timestamp else None,
        "deliveryMode": message.getJMSDeliveryMode(),
        "priority": message.getJMSPriority(),
        "redelivered": message.getJMSRedelivered(),
        "correlationId": message.getJMSCorrelationID(),
        "type": message.getJMSType(),
        "expiration": message.getJMSExpiration(),
        "properties": properties,
        "body": body,
        "text": text,
    }
    row[KEY_COLUMN] = dedupe_key(message_id, row)
    return row


def rows_to_table(rows: list[dict[str, Any]]) -> Any:
    """A pyarrow Table of staged rows, in the staged-file schema."""
    import pyarrow as pa

    schema = arrow_schema()
    arrays = [pa.array([r[f.name] for r in rows], type=f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)

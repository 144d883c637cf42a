"""The writer's work in an executor task: rows in, JMS messages out, through jmslike's public API.

A row needs ``body`` (binary) or ``text`` (string); ``properties`` (map<string,string>),
``priority`` (0-9), ``deliveryMode`` (PERSISTENT / NON_PERSISTENT or 2 / 1), ``correlationId`` and
``type`` are optional per row, with the writer's options as defaults (PERSISTENT, priority 4). The
columns the ``jms`` source produces but a producer cannot set (messageId, destination, timestamp,
redelivered, expiration) are ignored, so a stream can be piped from one destination to another.

Each task sends in broker transactions of ``transactionSize`` messages: a commit returns only once the
broker has the messages (on RabbitMQ after its publisher confirms). A task Spark retries sends its rows
again, so the writer is at-least-once; every message carries its own jmslike message ID.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from typing import Any

from jmslike import ConnectionFactory, Session
from jmslike.spark_sink.options import OptionError, SinkOptions, parse_delivery_mode

log = logging.getLogger(__name__)

WRITABLE = {"body", "text", "properties", "priority", "deliveryMode", "correlationId", "type"}
IGNORED = {"messageId", "destination", "timestamp", "redelivered", "expiration"}


def check_columns(schema: Any) -> None:
    """Fail at ``save()`` / ``start()`` for a frame the writer cannot publish, naming the column."""
    names = list(schema.fieldNames())
    unknown = [n for n in names if n not in WRITABLE and n not in IGNORED]
    if unknown:
        raise OptionError(
            f"the jms writer does not know the column(s) {', '.join(unknown)}; it publishes "
            f"{', '.join(sorted(WRITABLE))} (body or text required); select or rename columns first"
        )
    if "body" not in names and "text" not in names:
        raise OptionError("the jms writer needs a 'body' (binary) or 'text' (string) column")


def _field(row: Any, name: str) -> Any:
    try:
        return row[name]
    except (KeyError, ValueError, IndexError):
        return None


def publish_rows(options: SinkOptions, rows: Iterator[Any]) -> int:
    """Send every row of this task; returns how many messages were sent."""
    connection = ConnectionFactory(options.url).createConnection(options.user, options.password)
    sent = 0
    try:
        if options.client_id:
            connection.setClientID(f"{options.client_id}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        session = connection.createSession(True, Session.SESSION_TRANSACTED)
        destination = (
            session.createTopic(options.destination)
            if options.destination_kind == "topic"
            else session.createQueue(options.destination)
        )
        producer = session.createProducer(destination)
        pending = 0
        for row in rows:
            text, body = _field(row, "text"), _field(row, "body")
            if text is not None:
                message: Any = session.createTextMessage(str(text))
            elif body is not None:
                message = session.createBytesMessage()
                message.writeBytes(bytes(body))
            else:
                raise OptionError("a row has neither 'body' nor 'text': nothing to publish")
            for key, value in dict(_field(row, "properties") or {}).items():
                if value is not None:
                    message.setStringProperty(str(key), str(value))
            correlation, jms_type = _field(row, "correlationId"), _field(row, "type")
            if correlation is not None:
                message.setJMSCorrelationID(str(correlation))
            if jms_type is not None:
                message.setJMSType(str(jms_type))
            mode = _field(row, "deliveryMode")
            priority = _field(row, "priority")
            producer.send(
                message,
                options.delivery_mode if mode is None else parse_delivery_mode(mode, "column 'deliveryMode'"),
                options.priority if priority is None else int(priority),
                options.time_to_live,
            )
            sent += 1
            pending += 1
            if pending >= options.transaction_size:
                session.commit()
                pending = 0
        if pending:
            session.commit()
    finally:
        connection.close()
    log.info("jms writer task sent %d message(s)", sent)
    return sent

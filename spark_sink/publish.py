"""The writer's work in an executor task: rows in, JMS messages out, through jmslike's public API.

A row needs ``body`` (binary) or ``text`` (string); ``properties`` (map<string,string>),
``priority`` (0-9), ``deliveryMode`` (PERSISTENT / NON_PERSISTENT or 2 / 1), ``correlationId`` and
``type`` are optional per row, with the writer's options as defaults (PERSISTENT, priority 4). The
columns the ``jms`` source produces but a producer cannot set (messageId, destination, timestamp,
redelivered, expiration) are ignored, so a stream can be piped from one destination to another.

Each task sends in broker transactions of ``transactionSize`` messages: a commit returns only once the
broker has the messages (on RabbitMQ after its publisher confirms). A task Spark retries sends its rows
again, so the writer is at-least-once; every message carries its own jmslike message ID. With the
``deduplicate`` option (Artemis) each message also carries a duplicate ID that is the same in every attempt,
and the broker drops repeats: exactly once (spark_sink/README.md, "Writer").
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from collections.abc import Iterator
from typing import Any

from jmslike import ConnectionFactory, JMSException, Session
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


#: Artemis drops a message whose value of this property it has seen before on the address (its duplicate ID
#: cache, 20,000 IDs per address by default, persisted): the JMS way to ask for duplicate detection.
DUPLICATE_ID_PROPERTY = "_AMQ_DUPL_ID"
#: What Artemis says when a COMMIT holds a duplicate (seen on 2.21: "AMQ339013 Error committing ...
#: (Duplicate message detected - message will not be routed ..."); it rolls the transaction back and closes
#: the STOMP connection.
DUPLICATE_REFUSAL = "Duplicate message detected"


def publish_rows(options: SinkOptions, rows: Iterator[Any], row_ids: str | None = None) -> int:
    """Send every row of this task; returns how many messages this attempt published.

    Rows go out in transactions of ``transactionSize`` messages. Without ``row_ids`` a retried task publishes
    its rows again (at-least-once). With ``row_ids`` (the ``deduplicate`` option: a prefix naming this task
    alike in every attempt, source.py) each message carries ``_AMQ_DUPL_ID`` = ``<row_ids>:<digest of what
    the row publishes>:<how many identical rows came before it in this task>``, which does not depend on the
    order rows arrive in. Artemis refuses a transaction holding an ID it has seen (and closes the connection):
    the task then sends that transaction's rows again one per transaction on a new connection, so each row is
    published unless an earlier attempt published it (:class:`_Publisher`)."""
    publisher = _Publisher(options)
    names = _RowNames(row_ids) if row_ids is not None else None
    sent = skipped = 0
    batch: list[tuple[Any, str | None]] = []
    try:
        for row in rows:
            batch.append((row, names.name(row) if names is not None else None))
            if len(batch) >= options.transaction_size:
                done = publisher.publish(batch)
                sent, skipped, batch = sent + done, skipped + len(batch) - done, []
        if batch:
            done = publisher.publish(batch)
            sent, skipped = sent + done, skipped + len(batch) - done
    finally:
        publisher.close()
    if skipped:
        log.info("jms writer task: %d message(s) were published by an earlier attempt and skipped", skipped)
    log.info("jms writer task sent %d message(s)", sent)
    return sent


class _RowNames:
    """Duplicate IDs for one task's rows: equal for the same rows in every attempt, whatever their order.

    Identical rows are told apart by how many came before (the k-th copy in one attempt is the k-th in the
    next); a row Spark moves to another partition in a later attempt gets another name, so it may be
    published twice, never lost."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._seen: dict[bytes, int] = {}

    def name(self, row: Any) -> str:
        digest = hashlib.sha256(_canonical(row)).digest()[:16]
        copy = self._seen.get(digest, 0)
        self._seen[digest] = copy + 1
        return f"{self._prefix}:{digest.hex()}:{copy}"


def _canonical(row: Any) -> bytes:
    """What a row publishes, as bytes that are equal exactly when two rows publish the same message."""
    fields = [_field(row, name) for name in sorted(WRITABLE)]
    fields = [
        dict(sorted((str(k), v) for k, v in value.items())) if isinstance(value, dict) else value
        for value in fields
    ]
    return repr(
        [bytes(value) if isinstance(value, bytearray | memoryview) else value for value in fields]
    ).encode()


class _Publisher:
    """One task's connection, transacted session and producer; reopened after Artemis closes the connection
    on a duplicate."""

    def __init__(self, options: SinkOptions) -> None:
        self._options = options
        self._connection: Any = None
        self._session: Any = None
        self._producer: Any = None

    def _open(self) -> None:
        options = self._options
        connection = ConnectionFactory(options.url).createConnection(options.user, options.password)
        try:
            if options.client_id:
                connection.setClientID(f"{options.client_id}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
            session = connection.createSession(True, Session.SESSION_TRANSACTED)
            destination = (
                session.createTopic(options.destination)
                if options.destination_kind == "topic"
                else session.createQueue(options.destination)
            )
            self._producer = session.createProducer(destination)
        except BaseException:
            connection.close()
            raise
        self._connection, self._session = connection, session

    def close(self) -> None:
        if self._connection is not None:
            connection, self._connection = self._connection, None
            connection.close()

    def publish(self, batch: list[tuple[Any, str | None]]) -> int:
        """Publish ``batch`` (rows and their duplicate IDs) in one transaction; how many were published.

        When Artemis refuses the COMMIT for a duplicate, some rows were published by an earlier attempt but
        perhaps not all (its transactions may have been cut differently), so each row is sent again in a
        transaction of its own: refused means it is there already."""
        if self._commit(batch):
            return len(batch)
        if len(batch) == 1:
            return 0
        return sum(1 for one in batch if self._commit([one]))

    def _commit(self, batch: list[tuple[Any, str | None]]) -> bool:
        """True if committed; False if the broker refused it as holding a duplicate."""
        if self._connection is None:
            self._open()
        options = self._options
        for row, duplicate_id in batch:
            message = self._message(row)
            if duplicate_id is not None:
                message.setStringProperty(DUPLICATE_ID_PROPERTY, duplicate_id)
            mode = _field(row, "deliveryMode")
            priority = _field(row, "priority")
            self._producer.send(
                message,
                options.delivery_mode if mode is None else parse_delivery_mode(mode, "column 'deliveryMode'"),
                options.priority if priority is None else int(priority),
                options.time_to_live,
            )
        try:
            self._session.commit()
        except JMSException as exc:
            if batch[0][1] is None or DUPLICATE_REFUSAL not in str(exc):
                raise
            self.close()  # Artemis closes the connection after refusing the COMMIT
            return False
        return True

    def _message(self, row: Any) -> Any:
        session = self._session
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
        return message

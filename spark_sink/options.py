"""Options of the ``jms`` Spark format: parsed and checked once, before anything connects.

Spark hands a Python data source its options as a case-insensitive string map. This module turns them
into frozen dataclasses (``SourceOptions``, ``SinkOptions``) and rejects unknown, missing or malformed
options with a message that names the option, so a typo fails at ``load()`` / ``save()`` instead of
silently doing something else. Pure code (no Spark, no broker): unit-tested.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from jmslike import DeliveryMode

# The options a user may pass to the source, lower-cased (Spark's option map is case-insensitive).
SOURCE_OPTIONS: dict[str, str] = {
    "url": "jmslike broker URL, e.g. activemq://host:61613 (required)",
    "topic": "topic to read through durable subscriptions (give topic or queue)",
    "queue": "queue to read (give topic or queue)",
    "clientid": "JMS client ID of the driver's connection (required for topic)",
    "subscriptionname": "durable subscription name (required for topic)",
    "messageselector": "JMS message selector applied to every lane",
    "user": "broker user",
    "password": "broker password (never logged)",
    "staginglocation": "directory where batches are staged durably; shared storage on a cluster (required)",
    "maxmessagespertrigger": "at most this many messages per micro-batch",
    "laneselectors": "JSON list of selectors, one durable subscription per lane (topic only)",
    "lanes": "number of competing consumers on the queue (queue only)",
    "stagingchunkmessages": "messages per staged file (default 5000, at most half the URL's prefetch)",
    "partitionmessages": "about this many messages per Spark partition (default 20000)",
    "receivetimeoutms": "a batch ends when no message arrives for this long (default 500)",
    "maxtriggerdelayms": "a batch ends after receiving for this long (default 5000)",
    "dedupewindow": "message IDs remembered to drop redeliveries (default 200000)",
    "brokerretryms": "how long the driver keeps reconnecting to a lost broker (default 120000)",
    "locktimeoutms": "how long to wait for another driver to release the staging location (default 120000)",
    "maxreadms": "batch reads (spark.read): a read ends after draining for this long (default 600000)",
}

SINK_OPTIONS: dict[str, str] = {
    "url": "jmslike broker URL (required)",
    "topic": "topic to publish to (give topic or queue)",
    "queue": "queue to send to (give topic or queue)",
    "user": "broker user",
    "password": "broker password (never logged)",
    "clientid": "JMS client ID of each writer connection (optional; suffixed per task)",
    "deliverymode": "PERSISTENT (default) or NON_PERSISTENT, when a row has no deliveryMode",
    "priority": "0-9, default 4, when a row has no priority",
    "timetolive": "milliseconds, 0 = never expires (default)",
    "transactionsize": "messages per broker transaction in each task (default 500)",
    "deduplicate": "true: exactly once through the broker's duplicate detection (ActiveMQ Artemis only)",
}


# Options Spark itself puts into the map it hands a Python data source.
SPARK_OWN = frozenset({"path", "checkpointlocation"})


class OptionError(ValueError):
    """A missing, unknown or malformed option; the message names it and says what to do."""


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


DISPLAY_NAMES = {
    name.lower(): name
    for name in [
        "url",
        "topic",
        "queue",
        "clientId",
        "subscriptionName",
        "messageSelector",
        "user",
        "password",
        "stagingLocation",
        "maxMessagesPerTrigger",
        "laneSelectors",
        "lanes",
        "stagingChunkMessages",
        "receiveTimeoutMs",
        "maxTriggerDelayMs",
        "dedupeWindow",
        "brokerRetryMs",
        "lockTimeoutMs",
        "deliveryMode",
        "priority",
        "timeToLive",
        "transactionSize",
    ]
}


def _check_known(given: Mapping[str, str], known: Mapping[str, str], what: str) -> None:
    """Spark lower-cases option names before Python sees them, so messages show the lower-case name and
    suggest the documented spelling."""
    unknown = sorted(k for k in given if k not in known and k not in SPARK_OWN)
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, list(known), n=1)
        hint = f" (did you mean {DISPLAY_NAMES.get(close[0], close[0])!r}?)" if close else ""
        hints.append(f"{name!r}{hint}")
    raise OptionError(
        f"unknown option(s) for the jms {what}: {', '.join(hints)}; known options: "
        f"{', '.join(DISPLAY_NAMES.get(k, k) for k in sorted(known))}"
    )


def _required(given: Mapping[str, str], name: str, display: str, why: str = "") -> str:
    value = given.get(name, "").strip()
    if not value:
        raise OptionError(f"option {display!r} is required{why}")
    return value


def _int(given: Mapping[str, str], name: str, display: str, default: int | None, minimum: int) -> int | None:
    raw = given.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"option {display!r} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise OptionError(f"option {display!r} must be at least {minimum}, got {value}")
    return value


def _int_default(given: Mapping[str, str], name: str, display: str, default: int, minimum: int) -> int:
    value = _int(given, name, display, default, minimum)
    assert value is not None
    return value


@dataclass(frozen=True)
class SourceOptions:
    """The checked options of a ``jms`` stream source."""

    url: str
    destination_kind: str  # "topic" | "queue"
    destination: str
    staging_location: str
    client_id: str | None = None
    subscription_name: str | None = None
    message_selector: str | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    max_messages_per_trigger: int | None = None
    lane_selectors: tuple[str | None, ...] = (None,)
    staging_chunk_messages: int = 5000
    partition_messages: int = 20_000
    receive_timeout_ms: int = 500
    max_trigger_delay_ms: int = 5000
    dedupe_window: int = 200_000
    broker_retry_ms: int = 120_000
    lock_timeout_ms: int = 120_000
    max_read_ms: int = 600_000

    @property
    def lanes(self) -> int:
        return len(self.lane_selectors)

    def lane_selector(self, lane: int) -> str | None:
        """The selector of ``lane``: the common messageSelector AND the lane's own one."""
        own = self.lane_selectors[lane]
        if self.message_selector and own:
            return f"({self.message_selector}) AND ({own})"
        return self.message_selector or own

    def lane_subscription(self, lane: int) -> str:
        """The durable subscription name of ``lane`` (the plain name when there is one lane)."""
        assert self.subscription_name is not None
        return self.subscription_name if self.lanes == 1 else f"{self.subscription_name}-lane{lane}"


def _endpoint(given: Mapping[str, str]) -> tuple[str, str, str]:
    """The options every source and writer needs: ``url`` and exactly one of ``topic`` / ``queue``;
    returns (url, "topic" or "queue", destination name)."""
    url = _required(given, "url", "url", " (the broker, e.g. activemq://host:61613)")
    topic, queue = given.get("topic", "").strip(), given.get("queue", "").strip()
    if bool(topic) == bool(queue):
        raise OptionError("give exactly one of the options 'topic' or 'queue'")
    return url, "topic" if topic else "queue", topic or queue


def parse_source_options(options: Mapping[str, str]) -> SourceOptions:
    given = _lower(options)
    _check_known(given, SOURCE_OPTIONS, "source")
    url, kind, destination = _endpoint(given)
    staging = _required(
        given,
        "staginglocation",
        "stagingLocation",
        " (a directory where batches are staged durably; on a cluster, shared storage every executor reads)",
    )
    if staging.startswith("file://"):
        staging = staging[len("file://") :]
    if "://" in staging:
        raise OptionError(
            f"option 'stagingLocation' must be a local or mounted (e.g. NFS) directory path, got {staging!r}"
        )
    client_id = given.get("clientid", "").strip() or None
    subscription = given.get("subscriptionname", "").strip() or None
    lane_selectors: tuple[str | None, ...] = (None,)
    if kind == "topic":
        if client_id is None:
            raise OptionError("option 'clientId' is required with 'topic' (a durable subscription needs it)")
        if subscription is None:
            raise OptionError("option 'subscriptionName' is required with 'topic' (the durable subscription)")
        if "lanes" in given:
            raise OptionError(
                "option 'lanes' is for queues; for a topic give 'laneSelectors' (one durable subscription "
                "per selector)"
            )
        raw = given.get("laneselectors")
        if raw:
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
            if (
                not isinstance(parsed, list)
                or not parsed
                or not all(isinstance(s, str) and s for s in parsed)
            ):
                raise OptionError(
                    "option 'laneSelectors' must be a JSON list of non-empty selector strings, e.g. "
                    "[\"region = 'EU'\", \"region <> 'EU'\"]"
                )
            lane_selectors = tuple(parsed)
    else:
        if "laneselectors" in given:
            raise OptionError("option 'laneSelectors' is for topics; for a queue give 'lanes' (consumers)")
        if subscription is not None:
            raise OptionError("option 'subscriptionName' is for topics (durable subscriptions), not queues")
        lane_selectors = (None,) * _int_default(given, "lanes", "lanes", 1, 1)
    return SourceOptions(
        url=url,
        destination_kind=kind,
        destination=destination,
        staging_location=staging,
        client_id=client_id,
        subscription_name=subscription,
        message_selector=given.get("messageselector", "").strip() or None,
        user=given.get("user") or None,
        password=given.get("password") or None,
        max_messages_per_trigger=_int(given, "maxmessagespertrigger", "maxMessagesPerTrigger", None, 1),
        lane_selectors=lane_selectors,
        staging_chunk_messages=_int_default(given, "stagingchunkmessages", "stagingChunkMessages", 5000, 1),
        partition_messages=_int_default(given, "partitionmessages", "partitionMessages", 20_000, 1),
        receive_timeout_ms=_int_default(given, "receivetimeoutms", "receiveTimeoutMs", 500, 1),
        max_trigger_delay_ms=_int_default(given, "maxtriggerdelayms", "maxTriggerDelayMs", 5000, 1),
        dedupe_window=_int_default(given, "dedupewindow", "dedupeWindow", 200_000, 0),
        broker_retry_ms=_int_default(given, "brokerretryms", "brokerRetryMs", 120_000, 0),
        lock_timeout_ms=_int_default(given, "locktimeoutms", "lockTimeoutMs", 120_000, 0),
        max_read_ms=_int_default(given, "maxreadms", "maxReadMs", 600_000, 1),
    )


@dataclass(frozen=True)
class SinkOptions:
    """The checked options of the ``jms`` writer."""

    url: str
    destination_kind: str
    destination: str
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    client_id: str | None = None
    delivery_mode: int = DeliveryMode.PERSISTENT
    priority: int = 4
    time_to_live: int = 0
    transaction_size: int = 500
    #: Each message carries an ID the broker drops repeats of (Artemis ``_AMQ_DUPL_ID``): retried tasks
    #: publish nothing twice (publish.py).
    deduplicate: bool = False


def parse_delivery_mode(raw: object, where: str) -> int:
    """PERSISTENT / NON_PERSISTENT by name or JMS value (2 / 1)."""
    text = str(raw).strip().upper()
    if text in ("PERSISTENT", "2"):
        return DeliveryMode.PERSISTENT
    if text in ("NON_PERSISTENT", "1"):
        return DeliveryMode.NON_PERSISTENT
    raise OptionError(f"{where} must be PERSISTENT or NON_PERSISTENT (or 2 / 1), got {raw!r}")


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    given = _lower(options)
    _check_known(given, SINK_OPTIONS, "writer")
    url, kind, destination = _endpoint(given)
    priority = _int_default(given, "priority", "priority", 4, 0)
    if priority > 9:
        raise OptionError(f"option 'priority' must be 0-9, got {priority}")
    mode = given.get("deliverymode")
    return SinkOptions(
        url=url,
        destination_kind=kind,
        destination=destination,
        user=given.get("user") or None,
        password=given.get("password") or None,
        client_id=given.get("clientid", "").strip() or None,
        delivery_mode=parse_delivery_mode(mode, "option 'deliveryMode'") if mode else DeliveryMode.PERSISTENT,
        priority=priority,
        time_to_live=_int_default(given, "timetolive", "timeToLive", 0, 0),
        transaction_size=_int_default(given, "transactionsize", "transactionSize", 500, 1),
        deduplicate=_deduplicate(given, url),
    )


def _deduplicate(given: Mapping[str, str], url: str) -> bool:
    raw = given.get("deduplicate", "false").strip().lower()
    if raw not in ("true", "false"):
        raise OptionError(f"option 'deduplicate' must be true or false, got {given['deduplicate']!r}")
    if raw == "true" and not url.lower().startswith("artemis://"):
        raise OptionError(
            "option 'deduplicate' needs ActiveMQ Artemis (an artemis:// URL): it relies on the broker dropping "
            "messages whose _AMQ_DUPL_ID it has seen; ActiveMQ Classic and RabbitMQ have no such detection, so "
            "their writer is at-least-once (dedupe on the consuming side by a key of your own)"
        )
    return raw == "true"

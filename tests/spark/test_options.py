"""Pure checks of the ``jms`` options and of chunk grouping (no broker, no Spark session)."""

from __future__ import annotations

import pytest

from jmslike.spark_sink.options import OptionError, parse_sink_options, parse_source_options

BASE = {"url": "activemq://h:61613", "stagingLocation": "/tmp/staging"}


def test_topic_needs_client_id_and_subscription_name() -> None:
    with pytest.raises(OptionError, match="clientId"):
        parse_source_options({**BASE, "topic": "t"})
    with pytest.raises(OptionError, match="subscriptionName"):
        parse_source_options({**BASE, "topic": "t", "clientId": "c"})
    options = parse_source_options({**BASE, "topic": "t", "clientId": "c", "subscriptionName": "s"})
    assert options.lanes == 1 and options.lane_subscription(0) == "s"


def test_lanes_combine_the_selectors_and_name_the_subscriptions() -> None:
    options = parse_source_options(
        {
            **BASE,
            "topic": "t",
            "clientid": "c",  # Spark hands the names over in lower case
            "subscriptionname": "s",
            "messageSelector": "kind = 'order'",
            "laneSelectors": '["shard = 1", "shard = 2"]',
        }
    )
    assert options.lanes == 2
    assert options.lane_subscription(1) == "s-lane1"
    assert options.lane_selector(0) == "(kind = 'order') AND (shard = 1)"
    with pytest.raises(OptionError, match="laneSelectors"):
        parse_source_options(
            {**BASE, "topic": "t", "clientId": "c", "subscriptionName": "s", "laneSelectors": "x"}
        )
    with pytest.raises(OptionError, match="'lanes' is for queues"):
        parse_source_options({**BASE, "topic": "t", "clientId": "c", "subscriptionName": "s", "lanes": "2"})
    assert parse_source_options({**BASE, "queue": "q", "lanes": "3"}).lanes == 3


def test_bad_values_name_the_option() -> None:
    with pytest.raises(OptionError, match="exactly one of the options 'topic' or 'queue'"):
        parse_source_options({**BASE, "topic": "t", "queue": "q"})
    with pytest.raises(OptionError, match="'maxMessagesPerTrigger' must be an integer"):
        parse_source_options({**BASE, "queue": "q", "maxMessagesPerTrigger": "many"})
    with pytest.raises(OptionError, match="stagingLocation"):
        parse_source_options({**BASE, "queue": "q", "stagingLocation": "s3://bucket/x"})
    with pytest.raises(OptionError, match="did you mean 'receiveTimeoutMs'"):
        parse_source_options({**BASE, "queue": "q", "receivetimeout": "5"})
    assert "secret" not in repr(parse_source_options({**BASE, "queue": "q", "password": "secret"}))


def test_sink_options() -> None:
    options = parse_sink_options({"url": "activemq://h:1", "topic": "t", "deliveryMode": "non_persistent"})
    assert options.delivery_mode == 1 and options.priority == 4
    with pytest.raises(OptionError, match="priority"):
        parse_sink_options({"url": "activemq://h:1", "topic": "t", "priority": "12"})
    with pytest.raises(OptionError, match="unknown option"):
        parse_sink_options({"url": "activemq://h:1", "topic": "t", "persistent": "yes"})
    assert (
        parse_sink_options({"url": "activemq://h:1", "queue": "q", "checkpointLocation": "/c"}).destination
        == "q"
    )


def test_deduplicate_needs_artemis() -> None:
    assert parse_sink_options({"url": "artemis://h:1", "queue": "q", "deduplicate": "TRUE"}).deduplicate
    assert not parse_sink_options({"url": "artemis://h:1", "queue": "q"}).deduplicate
    for url in ("activemq://h:1", "rabbitmq://h:1"):
        with pytest.raises(OptionError, match="needs ActiveMQ Artemis"):
            parse_sink_options({"url": url, "queue": "q", "deduplicate": "true"})
    with pytest.raises(OptionError, match="true or false"):
        parse_sink_options({"url": "artemis://h:1", "queue": "q", "deduplicate": "yes"})

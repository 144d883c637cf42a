"""Artemis retained-publication stores (adapters/artemis_retained.py): pure mapping, on canned replies."""

from __future__ import annotations

import json

import pytest

from jmslike.adapters.artemis_admin import join_value
from jmslike.adapters.artemis_management import ManagementReply
from jmslike.adapters.artemis_retained import (
    ENVELOPE_PREFIX,
    MAX_ENVELOPE_BYTES,
    RETAINED_KEY_PROPERTY,
    copy_properties,
    peek_store,
    read_retained,
    store_configuration,
)
from jmslike.exceptions import ResourceAllocationException
from jmslike.topics import TopicSyntax


def test_a_store_is_a_durable_last_value_queue_keyed_by_one_property() -> None:
    config = json.loads(store_configuration("jmslike.retained.a.b"))
    assert config["last-value"] is True and config["last-value-key"] == RETAINED_KEY_PROPERTY
    assert config["durable"] is True and config["routing-type"] == "ANYCAST"
    assert "non-destructive" not in config  # a copy in delivery could not be replaced


def test_an_envelope_survives_the_management_attribute_limit() -> None:
    envelope = json.dumps({"body": "x" * 5000}).encode()
    properties = copy_properties(envelope)
    assert properties[RETAINED_KEY_PROPERTY] == "latest"
    assert all(len(v) <= 256 for v in properties.values())
    assert join_value(ENVELOPE_PREFIX, properties) == envelope.decode()


def test_a_copy_too_large_for_artemis_is_refused_before_sending() -> None:
    with pytest.raises(ResourceAllocationException, match="80 KB"):
        copy_properties(b"x" * (MAX_ENVELOPE_BYTES + 1))


class Broker:
    """Canned management replies: store name -> listed messages (properties)."""

    def __init__(self, stores: dict[str, list[dict[str, object]]]) -> None:
        self.stores = stores

    def invoke(self, resource: str, operation: str, *params: object) -> ManagementReply:
        if operation == "listQueues":
            rows = [{"name": name} for name in self.stores]
            text = json.dumps({"data": rows, "count": len(rows)})
            return ManagementReply(True, text, json.dumps([text]))
        name = resource.removeprefix("queue.")
        if name not in self.stores:
            return ManagementReply(False, f"AMQ229017: Queue {name} does not exist", "")
        text = json.dumps(self.stores[name])
        return ManagementReply(True, text, json.dumps([text]))

    def send(self, headers: object) -> None:
        raise AssertionError("reading sends nothing")


def _copy(message_id: int, envelope: str) -> dict[str, object]:
    return {"messageID": message_id, **copy_properties(envelope.encode())}


def test_reading_takes_copies_in_arrival_order_and_a_missing_store_is_empty() -> None:
    broker = Broker({"jmslike.retained.a.b": [_copy(9, "newer"), _copy(3, "older")]})
    assert peek_store(broker, "jmslike.retained.a.b") == [b"older", b"newer"]
    assert peek_store(broker, "jmslike.retained.nothing") == []


def test_a_wildcard_reads_every_matching_store() -> None:
    broker = Broker(
        {
            "jmslike.retained.sport.football": [_copy(1, "f")],
            "jmslike.retained.sport.tennis": [_copy(2, "t")],
            "jmslike.retained.news.world": [_copy(3, "n")],
        }
    )
    got = read_retained(broker, "jmslike.retained.sport.*", TopicSyntax(separator=".", single="*", multi="#"))
    assert sorted(got) == [b"f", b"t"]

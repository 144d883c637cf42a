"""Artemis subscription listing (adapters/artemis_admin.py): the management mapping, on canned replies."""

from __future__ import annotations

import json

import pytest

from jmslike.adapters.artemis_admin import (
    PAGE_SIZE,
    PART_PROPERTY_PREFIX,
    entry_of,
    info_of,
    list_subscriptions,
    merged_row,
    parse_queue_list,
    record_headers,
)
from jmslike.adapters.artemis_management import ManagementReply
from jmslike.catalogue import Entry, key_of
from jmslike.exceptions import JMSException
from jmslike.subscriptions import DurableDefinition


def queue(name: str, **fields: object) -> dict[str, object]:
    row: dict[str, object] = {
        "name": name,
        "address": "orders",
        "routingType": "MULTICAST",
        "durable": "true",
        "temporary": "false",
        "filter": "",
        "consumerCount": "0",
        "messageCount": "7",
    }
    row.update(fields)
    return row


def test_a_durable_subscription_queue_maps_to_a_row() -> None:
    row = info_of(queue("billing.orders-sub", filter="region = 'EU'", consumerCount="1"))
    assert row is not None
    assert (row.clientId, row.name, row.topic, row.selector, row.durable, row.active, row.pending) == (
        "billing",
        "orders-sub",
        "orders",
        "region = 'EU'",
        True,
        True,
        7,
    )
    assert row.lastActive is None  # Artemis does not report it


@pytest.mark.parametrize(
    "row",
    [
        queue("billing.sub", durable="false"),  # non-durable subscription
        queue("billing.sub", temporary="true"),
        queue("billing.sub", routingType="ANYCAST"),  # a queue, not a topic subscription
        queue("jmslike.clientid.billing"),  # jmslike's client-ID lock
        queue("no-dot-here"),
        queue(".sub"),
        queue("billing."),
    ],
)
def test_other_queues_are_not_subscriptions(row: dict[str, object]) -> None:
    assert info_of(row) is None


def test_a_dotted_name_splits_at_the_first_dot() -> None:
    row = info_of(queue("billing.eu.orders"))
    assert row is not None and (row.clientId, row.name) == ("billing", "eu.orders")


def test_parse_queue_list() -> None:
    assert parse_queue_list(json.dumps({"data": [queue("a.b")], "count": 1})) == [queue("a.b")]
    for bad in ("not json", json.dumps({"count": 0}), json.dumps([1])):
        with pytest.raises(JMSException):
            parse_queue_list(bad)


class Pages:
    def __init__(self, pages: list[list[dict[str, object]]]) -> None:
        self.pages = pages
        self.calls: list[tuple[object, ...]] = []

    def invoke(self, resource: str, operation: str, *params: object) -> ManagementReply:
        self.calls.append((resource, operation, *params))
        page = int(str(params[1]))
        rows = self.pages[page - 1] if page <= len(self.pages) else []
        text = json.dumps({"data": rows, "count": sum(map(len, self.pages))})
        return ManagementReply(True, text, json.dumps([text]))


def test_list_reads_every_page_and_sorts() -> None:
    first = [queue(f"c{n:04d}.s") for n in range(PAGE_SIZE)]
    session = Pages([first, [queue("a.s"), queue("x", durable="false")]])
    rows = list_subscriptions(session)
    assert len(rows) == PAGE_SIZE + 1 and rows[0].clientId == "a"
    assert [c[1] for c in session.calls] == ["listQueues", "listQueues"]
    assert session.calls[0][0] == "broker" and '"MULTICAST"' in str(session.calls[0][2])


def test_list_failure_is_a_jms_exception() -> None:
    class Refusing:
        def invoke(self, resource: str, operation: str, *params: object) -> ManagementReply:
            return ManagementReply(False, "AMQ229000: no permission", "")

    with pytest.raises(JMSException, match="listQueues"):
        list_subscriptions(Refusing())


# -- jmslike's records ----------------------------------------------------------------------------------


def test_a_long_record_survives_the_management_attribute_limit() -> None:
    """listMessagesAsJSON cuts every property value at 256 characters: a record is written in parts."""
    definition = DurableDefinition(
        client_id="c" * 120, name="n" * 120, topic="orders", selector="region = 'EU' AND " * 20 + "x = 1"
    )
    entry = Entry(definition, "detached", 1234, 1)
    headers = record_headers(key_of(definition.client_id, definition.name), entry)
    parts = [v for k, v in headers.items() if k.startswith(PART_PROPERTY_PREFIX) and not k.endswith("n")]
    assert len(parts) > 1 and all(len(p) <= 256 for p in parts)
    listed: dict[str, object] = {**headers, "messageID": 42}
    read = entry_of(listed)
    assert read is not None and (read.definition, read.state, read.at_ms) == (definition, "detached", 1234)


def test_a_damaged_record_is_skipped() -> None:
    headers = record_headers("k", Entry(DurableDefinition("c", "n", "t"), "attached", 1, 1))
    del headers[f"{PART_PROPERTY_PREFIX}0"]
    assert entry_of(headers) is None
    assert entry_of({"jmslike_sub_key": "k"}) is None


def test_listing_merges_the_queue_with_its_record() -> None:
    definition = DurableDefinition(
        "billing.eu", "orders", "orders", selector="a = 1", inactive_selector="b = 2"
    )
    records = {"k": Entry(definition, "detached", 5000, 1)}
    # A dotted client ID is told apart by the record; the queue's filter is (S) AND (I) in core syntax.
    row = merged_row(queue("billing.eu.orders", filter="(a = 1) AND (b = 2)", messageCount="3"), records)
    assert row is not None
    assert (row.clientId, row.name, row.selector, row.inactiveSelector, row.pending, row.lastActive) == (
        "billing.eu",
        "orders",
        "a = 1",
        "b = 2",
        3,
        5.0,
    )
    live = merged_row(queue("billing.eu.orders", consumerCount="1"), records)
    assert live is not None and live.active is True and live.lastActive is None
    foreign = merged_row(queue("java.sub"), records)  # a Java client's subscription: the queue alone
    assert foreign is not None and (foreign.clientId, foreign.name) == ("java", "sub")


def test_shared_subscription_queues_are_not_listed_as_unshared() -> None:
    assert info_of(queue("jmslike.shared-durable.c.s")) is None

"""Artemis subscription listing (adapters/artemis_admin.py): the management mapping, on canned replies."""

from __future__ import annotations

import json

import pytest

from jmslike.adapters.artemis import ManagementReply
from jmslike.adapters.artemis_admin import PAGE_SIZE, info_of, list_subscriptions, parse_queue_list
from jmslike.exceptions import JMSException


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

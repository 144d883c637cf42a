"""Pure parts of subscription management: records, selector combination, the companion's three-valued
rule, expiry arithmetic, the topic policy, catalogue entries, RabbitMQ's queue records, the CLI table."""

from __future__ import annotations

import itertools

import pytest

from jmslike import selector as selectors
from jmslike.adapters.rabbitmq import durable_queue_name
from jmslike.adapters.rabbitmq_admin import DEFINITION_ARGUMENT, info_of, queue_arguments
from jmslike.admin_cli import format_table
from jmslike.catalogue import Entry, key_of, newest
from jmslike.cli import main
from jmslike.config import ConfigurationError, parse_url
from jmslike.contract import SubscriptionSpec
from jmslike.destinations import Topic
from jmslike.exceptions import JMSException
from jmslike.subscriptions import (
    DurableDefinition,
    SubscriptionInfo,
    check_expiry,
    companion_accepts,
    durable_selector,
    expired,
    topic_refused,
)

DEFINITION = DurableDefinition(
    "c1", "s1", "orders", "region = 'EU'", True, "JMSDeliveryMode = 'PERSISTENT'", 5000, 7
)


def test_definition_round_trips_through_json() -> None:
    assert DurableDefinition.from_json(DEFINITION.to_json()) == DEFINITION


def test_unreadable_definition_is_a_jms_exception() -> None:
    with pytest.raises(JMSException, match="unreadable"):
        DurableDefinition.from_json('{"client_id": "x"}')


def test_durable_selector_combines_both() -> None:
    assert durable_selector(None, None) is None
    assert durable_selector("a = 1", None) == "a = 1"
    assert durable_selector(None, "b = 2") == "b = 2"
    combined = durable_selector("a = 1 OR c = 3", "b = 2")
    assert combined == "(a = 1 OR c = 3) AND (b = 2)"
    parsed = selectors.parse(combined)
    assert parsed.matches({"a": 1, "b": 2}.get) and not parsed.matches({"c": 3}.get)


VALUES: list[object | None] = [None, "gold", "silver", 1]


@pytest.mark.parametrize(
    "inactive",
    [
        "tier = 'gold'",
        "tier <> 'gold'",
        "NOT (tier = 'gold')",
        "tier IS NULL",
        "tier IN ('gold')",
        "level > 2",
    ],
)
@pytest.mark.parametrize("tier,level", list(itertools.product(VALUES, [None, 1, 3, "x"])))
def test_durable_and_companion_are_disjoint_and_cover_everything(
    inactive: str, tier: object, level: object
) -> None:
    """For every message the subscription selects, exactly one of the two halves delivers it, also when
    the inactive selector is UNKNOWN (missing or mistyped properties)."""
    values = {"kind": "order", "tier": tier, "level": level}
    lookup = values.get
    durable = selectors.parse(durable_selector("kind = 'order'", inactive) or "")
    subscription = selectors.parse("kind = 'order'")
    companion = subscription.matches(lookup) and companion_accepts(selectors.parse(inactive), lookup)
    assert durable.matches(lookup) != companion
    naive = selectors.parse(f"(kind = 'order') AND NOT ({inactive})").matches(lookup)
    if selectors.parse(inactive).matches(lookup) is False and not naive:
        # the UNKNOWN case a broker-side NOT would lose: the companion takes it
        assert companion


def test_expiry_rules() -> None:
    assert not expired(0, 0, 10**12)  # no expiry
    assert not expired(1000, None, 10**12)  # never seen inactive
    assert not expired(1000, 5000, 5999)
    assert expired(1000, 5000, 6000)
    assert check_expiry(0) == 0 and check_expiry(10) == 10
    for bad in (-1, 1.5, True, "10"):
        with pytest.raises(JMSException, match="expiry_ms"):
            check_expiry(bad)


def test_topic_policy_patterns() -> None:
    patterns = ("quotes", "prices.*")
    assert topic_refused("quotes", patterns)
    assert topic_refused("prices.eur", patterns)
    assert not topic_refused("quotes.eu", patterns)
    assert not topic_refused("pricesx", patterns)


def test_no_durable_topics_url_key() -> None:
    config = parse_url("activemq://h:1?no_durable_topics=a,%20b.*%20,")
    assert config.no_durable_topics == ("a", "b.*")
    assert parse_url("rabbitmq://h:1").no_durable_topics == ()
    with pytest.raises(ConfigurationError):
        parse_url("activemq://h:1?no_durable_topic=a")


def test_catalogue_entries_pick_the_newest_and_keys_separate_identities() -> None:
    old = Entry(DEFINITION, "attached", 100, 1, "r1")
    new = Entry(DEFINITION, "detached", 200, 2, "r2")
    assert newest([new, old]) == new and newest([]) is None
    assert Entry.from_json(new.to_json(), "r2") == new
    assert Entry.from_json(Entry(None, "removed", 1, 3).to_json(), "").definition is None
    assert key_of("a", "bc") != key_of("ab", "c")  # no ambiguity from concatenation
    assert all(ch in "0123456789abcdef" for ch in key_of("x'; DROP", "y"))  # safe inside a selector


def test_rabbitmq_queue_record() -> None:
    arguments = queue_arguments(DEFINITION)
    assert arguments["x-expires"] == 5000
    assert "x-expires" not in queue_arguments(DurableDefinition("c", "n", "t"))
    queue = {
        "name": "q",
        "arguments": arguments,
        "consumers": 0,
        "messages": 4,
        "idle_since": "2026-11-21T12:36:37.725+00:00",
    }
    row = info_of(queue)
    assert row is not None
    assert (row.clientId, row.name, row.topic, row.selector, row.active, row.pending) == (
        "c1",
        "s1",
        "orders",
        "region = 'EU'",
        False,
        4,
    )
    assert row.lastActive == pytest.approx(1795264597.725)
    assert info_of({**queue, "consumers": 1}).lastActive is None  # type: ignore[union-attr]
    assert info_of({**queue, "consumers": None}).active is None  # type: ignore[union-attr]  # no stats yet
    assert info_of({"name": "q", "arguments": {}}) is None  # not a jmslike record
    assert info_of({"name": "q", "arguments": {DEFINITION_ARGUMENT: "garbage"}}) is None


def test_rabbitmq_queue_name_unchanged_without_expiry() -> None:
    """Existing subscriptions keep their queues: the expiry joins the name's hash only when set."""
    spec = SubscriptionSpec("1", Topic("t"), durable_name="n", client_id="c")
    assert durable_queue_name(spec) == durable_queue_name(
        SubscriptionSpec("2", Topic("t"), durable_name="n", client_id="c")
    )
    expiring = SubscriptionSpec("3", Topic("t"), durable_name="n", client_id="c", expiry_ms=10)
    assert durable_queue_name(expiring) != durable_queue_name(spec)


def test_cli_table_marks_unknown_values() -> None:
    rows = [
        SubscriptionInfo("c1", "s1", "orders", None, True, False, None, 0.0),
        SubscriptionInfo("c2", "s2", "prices", "a = 1", True, True, 3, None),
    ]
    lines = format_table(rows).splitlines()
    assert lines[0].split() == [
        "client",
        "ID",
        "name",
        "topic",
        "selector",
        "durable",
        "active",
        "pending",
        "last",
        "active",
    ]
    assert lines[1].split() == ["c1", "s1", "orders", "yes", "no", "?", "1970-01-01", "00:00:00Z"]
    assert lines[2].split() == ["c2", "s2", "prices", "a", "=", "1", "yes", "yes", "3", "now"]


def test_cli_subscriptions_needs_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["subscriptions", "list"])
    assert "--url" in capsys.readouterr().err

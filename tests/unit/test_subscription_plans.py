"""The subscription plans both APIs build on (jmslike/subscription_plans.py): specs, records and refusals,
with no broker (the real adapters only answer what their brokers can do)."""

from __future__ import annotations

import pytest

from jmslike.config import parse_url
from jmslike.contract import SubscriptionSpec
from jmslike.destinations import Queue, TemporaryTopic, Topic
from jmslike.exceptions import (
    IllegalStateException,
    InvalidDestinationException,
    JMSException,
    UnsupportedFeatureException,
)
from jmslike.registry import load_adapter
from jmslike.subscription_plans import (
    check_durable_topic,
    check_subscription_name,
    companion_spec,
    of_durable_subscription,
    plan_durable,
    plan_shared,
    refuse_durable_in_use,
    require_client_id,
    unsubscribe_refusal,
)
from jmslike.subscriptions import DurableDefinition

ARTEMIS = load_adapter("artemis")
ACTIVEMQ = load_adapter("activemq")


def test_a_durable_plan_combines_the_selectors_and_records_the_application_s_own() -> None:
    config = parse_url("artemis://localhost:61613?prefetch=7")
    plan = plan_durable(
        ARTEMIS,
        config,
        sub_id="s-1",
        client_id="c",
        topic=Topic("orders"),
        name="kept",
        selector="region = 'EU'",
        no_local=True,
        inactive_selector="JMSPriority > 4",
        expiry_ms=5000,
    )
    assert plan.definition == DurableDefinition(
        client_id="c",
        name="kept",
        topic="orders",
        selector="region = 'EU'",
        no_local=True,
        inactive_selector="JMSPriority > 4",
        expiry_ms=5000,
        created_ms=plan.definition.created_ms,  # the clock's, when the plan was made
    )
    assert plan.application_selector is not None and plan.application_selector.text == "region = 'EU'"
    assert plan.selector is not None and plan.spec.selector == plan.selector.render()
    assert "AND" in plan.spec.selector
    assert (plan.spec.durable_name, plan.spec.client_id, plan.spec.prefetch) == ("kept", "c", 7)
    assert plan.spec.definition == plan.definition.to_json()


def test_a_durable_plan_refuses_a_topic_the_url_reserves_and_bad_extras() -> None:
    config = parse_url("artemis://localhost:61613?no_durable_topics=prices.*")
    common = {"sub_id": "s", "client_id": "c", "name": "n", "selector": None, "no_local": False}
    with pytest.raises(InvalidDestinationException, match="does not allow durable subscriptions"):
        plan_durable(ARTEMIS, config, topic=Topic("prices.eu"), **common)  # type: ignore[arg-type]
    with pytest.raises(JMSException, match="give one or the other"):
        plan_durable(
            ARTEMIS,
            config,
            topic=Topic("t"),
            inactive_selector="a = 1",
            on_request_only=True,
            **common,  # type: ignore[arg-type]
        )
    with pytest.raises(JMSException):
        plan_durable(ARTEMIS, config, topic=Topic("t"), expiry_ms=-1, **common)  # type: ignore[arg-type]


def test_a_shared_plan_needs_a_broker_with_shared_subscriptions_and_a_real_topic() -> None:
    with pytest.raises(UnsupportedFeatureException, match="shared subscriptions"):
        plan_shared(
            ACTIVEMQ,
            parse_url("activemq://localhost:61613"),
            sub_id="s",
            client_id=None,
            topic=Topic("t"),
            name="n",
            selector=None,
            durable=False,
        )
    config = parse_url("artemis://localhost:61613")
    for bad in (Queue("q"), TemporaryTopic("tt")):
        with pytest.raises(InvalidDestinationException, match="non-temporary"):
            plan_shared(
                ARTEMIS, config, sub_id="s", client_id=None, topic=bad, name="n", selector=None, durable=True
            )
    spec, parsed = plan_shared(
        ARTEMIS,
        config,
        sub_id="s",
        client_id=None,
        topic=Topic("t"),
        name="n",
        selector="a = 'x'",
        durable=True,
    )
    assert (spec.shared_name, spec.shared_durable, spec.client_id) == ("n", True, None)
    assert parsed is not None and spec.selector == parsed.render()


@pytest.mark.parametrize("bad", ["", "  ", None, 3, "tab\there"])
def test_a_subscription_name_is_a_non_empty_string_without_control_characters(bad: object) -> None:
    with pytest.raises(JMSException):
        check_subscription_name(bad)
    assert check_subscription_name("orders.eu") == "orders.eu"


def test_the_refusals_say_what_to_do() -> None:
    with pytest.raises(InvalidDestinationException, match="non-temporary"):
        check_durable_topic(Queue("q"))
    with pytest.raises(IllegalStateException, match="setClientID"):
        require_client_id(None, "unsubscribe")
    with pytest.raises(JMSException, match="close it first"):
        refuse_durable_in_use("n", "c", active=True, still_attached=False)
    with pytest.raises(IllegalStateException, match="acknowledge, recover, commit or roll back"):
        refuse_durable_in_use("n", "c", active=False, still_attached=True)
    refuse_durable_in_use("n", "c", active=False, still_attached=False)
    assert unsubscribe_refusal("n", "durable subscription", active=False, holds_unacked=False) is None
    open_one = unsubscribe_refusal("n", "durable subscription", active=True, holds_unacked=True)
    assert isinstance(open_one, IllegalStateException) and "open consumer" in str(open_one)
    unsettled = unsubscribe_refusal("n", "shared durable subscription", active=False, holds_unacked=True)
    assert isinstance(unsettled, IllegalStateException) and "unacknowledged" in str(unsettled)


def test_a_spec_belongs_to_a_durable_subscription_by_its_durable_or_shared_durable_name() -> None:
    topic = Topic("t")
    assert of_durable_subscription(SubscriptionSpec("1", topic, durable_name="n"), "n")
    assert of_durable_subscription(SubscriptionSpec("2", topic, shared_name="n", shared_durable=True), "n")
    assert not of_durable_subscription(SubscriptionSpec("3", topic, shared_name="n"), "n")
    assert not of_durable_subscription(SubscriptionSpec("4", topic, durable_name="m"), "n")


def test_the_companion_selects_the_application_s_own_selector_on_the_same_topic() -> None:
    plan = plan_durable(
        ARTEMIS,
        parse_url("artemis://localhost:61613"),
        sub_id="s-1",
        client_id="c",
        topic=Topic("orders"),
        name="kept",
        selector="region = 'EU'",
        no_local=True,
        inactive_selector="JMSPriority > 4",
    )
    spec = companion_spec(plan, "s-2", 9)
    assert (spec.sub_id, spec.destination, spec.no_local, spec.client_id, spec.prefetch) == (
        "s-2",
        Topic("orders"),
        True,
        "c",
        9,
    )
    assert plan.application_selector is not None and spec.selector == plan.application_selector.render()
    assert spec.durable_name is None and not spec.shared_name, "a non-durable subscription of its own"

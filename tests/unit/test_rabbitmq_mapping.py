"""The RabbitMQ dialect as pure functions: queue naming, declaration headers, what is never sent."""

from __future__ import annotations

import pytest

from jmslike.adapters.rabbitmq import RabbitMQAdapter, durable_prefix, durable_queue_name, queue_part
from jmslike.config import ConfigurationError, parse_url
from jmslike.constants import DeliveryMode
from jmslike.contract import OutgoingMessage, SubscriptionSpec
from jmslike.destinations import Queue, TemporaryQueue, Topic


def adapter(url: str = "rabbitmq://h:61613") -> RabbitMQAdapter:
    result = RabbitMQAdapter()
    result.connect_headers(parse_url(url), None)
    return result


def outgoing(**overrides: object) -> OutgoingMessage:
    fields: dict[str, object] = dict(
        destination=Queue("q"),
        message_id="ID:1",
        timestamp=1,
        delivery_mode=DeliveryMode.NON_PERSISTENT,
        priority=4,
        expiration=0,
        time_to_live=0,
        correlation_id=None,
        reply_to=None,
        jms_type=None,
        type_tag="text",
        body=b"x",
        property_headers={},
        origin="conn-1",
    )
    fields.update(overrides)
    return OutgoingMessage(**fields)  # type: ignore[arg-type]


def test_queue_parts_are_unambiguous() -> None:
    # "a.b" + "c" and "a" + "b.c" must not share a prefix, or one client could delete another's subscription.
    assert durable_prefix("a.b", "c") != durable_prefix("a", "b.c")
    assert "." not in queue_part("a.b") and len(queue_part("x" * 500)) <= 80


def test_durable_queue_name_changes_with_the_definition() -> None:
    base = SubscriptionSpec(sub_id="s", destination=Topic("t"), durable_name="n", client_id="c")
    other_selector = SubscriptionSpec(
        sub_id="s", destination=Topic("t"), durable_name="n", client_id="c", selector="a = 1"
    )
    assert durable_queue_name(base) != durable_queue_name(other_selector)
    assert durable_queue_name(base).startswith(durable_prefix("c", "n"))


def test_non_persistent_send_never_says_persistent_false() -> None:
    # persistent:false would also re-declare the queue non-durable (PRECONDITION_FAILED on a durable one).
    headers = adapter().send_frame(outgoing(), None).headers
    assert "persistent" not in headers
    assert headers["jmslike-origin"] == "conn-1"


def test_expiry_is_relative_on_the_wire_and_absolute_for_jms() -> None:
    headers = adapter().send_frame(outgoing(time_to_live=5000, expiration=12345), None).headers
    assert headers["expiration"] == "5000" and headers["expires"] == "12345"


def test_temporary_queues_are_sent_to_without_declaring() -> None:
    headers = adapter().send_frame(outgoing(destination=TemporaryQueue("jmslike-tmp-1")), None).headers
    assert headers["destination"] == "/amq/queue/jmslike-tmp-1"


def test_max_priority_is_opt_in_and_declared_consistently() -> None:
    plain = adapter()
    assert "x-max-priority" not in plain.send_frame(outgoing(), None).headers
    prioritized = adapter("rabbitmq://h:61613?rabbitmq_max_priority=9")
    assert prioritized.send_frame(outgoing(), None).headers["x-max-priority"] == "9"
    queue_sub = prioritized.subscribe_headers(SubscriptionSpec(sub_id="s", destination=Queue("q")))
    topic_sub = prioritized.subscribe_headers(SubscriptionSpec(sub_id="s", destination=Topic("t")))
    assert queue_sub["x-max-priority"] == "9" and "x-max-priority" not in topic_sub
    assert "selector" not in prioritized.subscribe_headers(
        SubscriptionSpec(sub_id="s", destination=Topic("t"), selector="a = 1")
    )


def test_queue_type_is_opt_in_and_declared_by_send_and_subscribe_to_queues() -> None:
    assert "x-queue-type" not in adapter().send_frame(outgoing(), None).headers
    quorum = adapter("rabbitmq://h:61613?rabbitmq_queue_type=quorum")
    assert quorum.send_frame(outgoing(), None).headers["x-queue-type"] == "quorum"
    queue_sub = quorum.subscribe_headers(SubscriptionSpec(sub_id="s", destination=Queue("q")))
    topic_sub = quorum.subscribe_headers(SubscriptionSpec(sub_id="s", destination=Topic("t")))
    assert queue_sub["x-queue-type"] == "quorum" and "x-queue-type" not in topic_sub
    temporary = quorum.send_frame(outgoing(destination=TemporaryQueue("jmslike-tmp-1")), None).headers
    assert "x-queue-type" not in temporary  # exclusive queues cannot be quorum queues
    with pytest.raises(ConfigurationError, match="classic or quorum"):
        parse_url("rabbitmq://h:61613?rabbitmq_queue_type=stream")


def test_broker_specific_url_keys_are_refused_elsewhere() -> None:
    with pytest.raises(ConfigurationError, match="rabbitmq:// URLs only"):
        parse_url("activemq://h:1?rabbitmq_max_priority=9")


def test_shared_subscriptions_have_their_own_queue_names_and_headers() -> None:
    from jmslike.adapters.rabbitmq import RabbitMQAdapter, shared_queue_name

    def spec(client_id: str | None, durable: bool, selector: str | None = None) -> SubscriptionSpec:
        return SubscriptionSpec(
            sub_id="s",
            destination=Topic("prices"),
            client_id=client_id,
            selector=selector,
            shared_name="all",
            shared_durable=durable,
        )

    assert shared_queue_name(spec(None, False)).startswith("jmslike.shared.~none.all.")
    assert shared_queue_name(spec("~none", True)).startswith("jmslike.shared-durable.~007enone.all.")
    assert shared_queue_name(spec(None, True)) != shared_queue_name(spec(None, True, "n = 1"))
    headers = RabbitMQAdapter().subscribe_headers(spec("c", False))
    assert (headers["durable"], headers["auto-delete"]) == ("false", "true")
    assert headers["x-queue-name"] == shared_queue_name(spec("c", False))
    durable_headers = RabbitMQAdapter().subscribe_headers(spec("c", True))
    assert (durable_headers["durable"], durable_headers["auto-delete"]) == ("true", "false")


def test_a_producers_sends_share_one_header_template_and_encode_as_without_it() -> None:
    from jmslike.adapters.stomp_writer import encode_frame

    rabbit = adapter("rabbitmq://h:61613?rabbitmq_queue_type=quorum")
    first = rabbit.send_frame(outgoing(message_id="ID:1", timestamp=1, property_headers={"k": "v:1"}), "tx-1")
    second = rabbit.send_frame(outgoing(message_id="ID:2", timestamp=2), None)
    assert first.template is not None and first.template is second.template
    fixed = dict(first.template.headers)
    assert fixed["destination"] == "/queue/q" and fixed["x-queue-type"] == "quorum"
    for frame, varying in ((first, {"k": "v:1", "jmslike-id": "ID:1", "transaction": "tx-1"}), (second, {})):
        assert list(frame.headers.items())[: len(fixed)] == list(fixed.items())
        assert varying.items() <= frame.headers.items()
        for _ in range(2):  # the second time from the template's encoded text
            assert encode_frame("SEND", frame.headers, frame.body, "1.2", frame.template) == encode_frame(
                "SEND", frame.headers, frame.body, "1.2"
            )
    other = rabbit.send_frame(outgoing(priority=7), None)
    assert other.template is not first.template and other.headers["priority"] == "7"


def test_a_property_named_like_a_fixed_header_loses_to_it_and_the_frame_has_no_template() -> None:
    # x-max-length is not a reserved name on RabbitMQ, so the property keeps its name; the header wins, as it
    # always has, and that frame is encoded in full.
    store = Queue("jmslike.retained.t")
    frame = adapter().send_frame(outgoing(destination=store, property_headers={"x-max-length": "9"}), None)
    assert frame.headers["x-max-length"] == "1" and frame.template is None
    assert adapter().send_frame(outgoing(destination=store), None).template is not None


def test_a_fixed_header_stomp_cannot_carry_is_encoded_per_frame_without_a_template() -> None:
    # Destination names cannot hold CR or NUL, but an adapter's own fixed header might.
    class Odd(RabbitMQAdapter):
        def fixed_send_headers(self, message: OutgoingMessage) -> dict[str, str]:
            return {**super().fixed_send_headers(message), "odd": "a\rb"}

    odd = Odd()
    odd.connect_headers(parse_url("rabbitmq://h:61613"), None)
    frame = odd.send_frame(outgoing(), None)
    assert frame.template is None
    assert frame.headers["odd"] != "a\rb" and frame.headers["jmslike-encoded"] == "odd"


def test_sends_with_other_producer_settings_get_their_own_fixed_headers() -> None:
    rabbit = adapter()
    assert "expiration" not in rabbit.send_frame(outgoing(time_to_live=0), None).headers
    assert rabbit.send_frame(outgoing(time_to_live=5), None).headers["expiration"] == "5"
    assert "jmslike-origin" not in rabbit.send_frame(outgoing(origin=""), None).headers
    assert rabbit.send_frame(outgoing(origin="o1"), None).headers["jmslike-origin"] == "o1"
    assert rabbit.send_frame(outgoing(destination=Topic("t")), None).headers["destination"] == "/topic/t"


def test_a_send_carries_the_same_headers_as_before_the_template() -> None:
    rabbit = adapter("rabbitmq://h:61613?rabbitmq_max_priority=9")
    expected = {
        "destination": "/queue/q",
        "persistent": "true",
        "priority": "4",
        "jmslike-type": "text",
        "expiration": "5000",
        "jmslike-origin": "conn-1",
        "x-max-priority": "9",
        "color": "red",
        "timestamp": "1",
        "expires": "6001",
        "jmslike-id": "ID:1",
        "correlation-id": "c",
        "transaction": "tx-1",
    }
    for _ in range(2):  # the second from the template
        frame = rabbit.send_frame(
            outgoing(
                delivery_mode=DeliveryMode.PERSISTENT,
                time_to_live=5000,
                expiration=6001,
                correlation_id="c",
                property_headers={"color": "red"},
            ),
            "tx-1",
        )
        assert dict(frame.headers) == expected


def test_an_adapter_overriding_the_old_send_headers_hook_is_refused_when_defined() -> None:
    with pytest.raises(TypeError, match="fixed_send_headers"):

        class Old(RabbitMQAdapter):
            def send_headers(self, message: OutgoingMessage) -> dict[str, str]:
                return {}

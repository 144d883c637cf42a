"""Deliveries for the unit tests of delivery rules, without a broker: only what the rules read is set."""

from __future__ import annotations

from jmslike.contract import IncomingMessage
from jmslike.delivery import Pending


def pending(sub_id: str = "s", ack_id: str = "a", body: bytes = b"", local: bool = False) -> Pending:
    incoming = IncomingMessage(
        sub_id=sub_id,
        ack_id=ack_id,
        broker_message_id=None,
        message_id=None,
        destination=None,
        timestamp=0,
        delivery_mode=2,
        priority=4,
        expiration=0,
        correlation_id=None,
        reply_to=None,
        jms_type=None,
        redelivered=False,
        type_tag=None,
        body=body,
        headers={},
        property_headers={},
        local=local,
    )
    return Pending(incoming)

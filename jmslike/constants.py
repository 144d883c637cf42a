"""JMS constants: delivery modes, acknowledgement modes, message defaults (JMS's own values)."""

from __future__ import annotations


class DeliveryMode:
    """``javax.jms.DeliveryMode``: the values are JMS's, so code comparing ints keeps working."""

    NON_PERSISTENT = 1
    PERSISTENT = 2

    @staticmethod
    def name(mode: int) -> str:
        """The name a selector compares ``JMSDeliveryMode`` against (``'PERSISTENT'``...)."""
        return "PERSISTENT" if mode == DeliveryMode.PERSISTENT else "NON_PERSISTENT"


class AcknowledgeMode:
    """Session acknowledgement modes; ``INDIVIDUAL_ACKNOWLEDGE`` has ActiveMQ's value."""

    SESSION_TRANSACTED = 0
    AUTO_ACKNOWLEDGE = 1
    CLIENT_ACKNOWLEDGE = 2
    DUPS_OK_ACKNOWLEDGE = 3
    INDIVIDUAL_ACKNOWLEDGE = 4

    ALL = (0, 1, 2, 3, 4)


# ``javax.jms.Message`` defaults.
DEFAULT_DELIVERY_MODE = DeliveryMode.PERSISTENT
DEFAULT_PRIORITY = 4
DEFAULT_TIME_TO_LIVE = 0

"""jmslike: JMS semantics for Python over STOMP (filled in as the API lands)."""

from __future__ import annotations

from jmslike.constants import DeliveryMode
from jmslike.destinations import Queue, TemporaryQueue, TemporaryTopic, Topic
from jmslike.exceptions import *  # noqa: F403
from jmslike.exceptions import __all__ as _exception_names

__all__ = ["DeliveryMode", "Queue", "TemporaryQueue", "TemporaryTopic", "Topic", *_exception_names]

"""The bundled scenarios, one module per category; importing this package registers them all."""

from __future__ import annotations

from jmslike.conformance.suite.scenarios import (  # noqa: F401  (registration by import)
    acknowledge,
    client_id,
    delivery,
    durable,
    faults,
    jms2,
    order,
    retained,
    selectors,
    subscriptions,
    transactions,
)

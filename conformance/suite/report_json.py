"""results.json: the machine-readable result set (schema ``jmslike-conformance/1``).

Top level: ``schema``; ``run`` (started_at, wall_time_s, seed, modes, quick, api, filters, counts per
outcome, notes, broker_versions); ``brokers`` (kind, launcher, status, server, url, reason); ``results``
(one record per scenario, broker and mode -- mode null for scenarios without a restart -- with id,
category, rule, section, strength, outcome, detail, note, expected, duration_s, faults).
"""

from __future__ import annotations

import json

from jmslike.conformance.suite.model import RunReport


def render(report: RunReport) -> str:
    return json.dumps(report.to_json(), indent=2, sort_keys=False) + "\n"

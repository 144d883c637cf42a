"""The conformance suite's vocabulary: categories, strengths, outcomes, and the result records.

Owns the plain data every other suite module shares (registry, runner, report writers), so the report
writers can be tested on hand-made results without importing scenarios or brokers. Nothing here talks to
a broker.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Literal, get_args

Strength = Literal["MUST", "MAY"]
Outcome = Literal["pass", "deviation", "unsupported", "fail", "skipped"]
ScenarioKind = Literal["plain", "restart", "per-mode"]
Fault = Literal["G", "K", "N", "C"]
Mode = Literal["graceful", "kill"]

OUTCOMES: Final[tuple[Outcome, ...]] = get_args(Outcome)
MODES: Final[tuple[Mode, ...]] = get_args(Mode)
MODE_FAULT: Final[dict[str, Fault]] = {"graceful": "G", "kill": "K"}

#: The eight categories of shared/design/jms-semantics.md, plus two reserved for later issues.
CATEGORIES: Final[dict[str, str]] = {
    "durable": "Durable lifecycle and identity",
    "delivery": "Delivery mode x durability x restart",
    "acknowledge": "Acknowledgement and redelivery",
    "transactions": "Transactions",
    "order": "Order, priority, expiry",
    "client-id": "Client ID and error cases",
    "selectors": "Selectors",
    "faults": "Fault injection",
    "retained": "Retained messages",
    "subscriptions": "Subscriptions (MQ-style)",
    "jms2": "JMS 2.0: simplified API, delivery delay, shared subscriptions, domain interfaces",
}

SCHEMA: Final = "jmslike-conformance/1"


@dataclass(frozen=True)
class ScenarioInfo:
    """What a scenario declares about itself (everything but its code)."""

    id: str
    category: str
    rule: str
    section: str
    strength: Strength
    kind: ScenarioKind
    faults: tuple[Fault, ...] = ()
    quick: bool = False
    timeout_s: float = 60.0
    doc: str = ""

    @property
    def per_mode(self) -> bool:
        """Restart and per-mode scenarios run once per restart mode; plain ones once per broker."""
        return self.kind != "plain"


@dataclass(frozen=True)
class ScenarioResult:
    """One record of results.json: one scenario on one broker in one mode (None: no restart)."""

    id: str
    category: str
    rule: str
    section: str
    strength: Strength
    broker: str
    mode: str | None
    outcome: Outcome
    detail: str = ""
    note: str = ""
    expected: str = "pass"
    duration_s: float = 0.0
    faults: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["faults"] = list(self.faults)
        data["duration_s"] = round(self.duration_s, 3)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ScenarioResult:
        values = dict(data)
        values["faults"] = tuple(values.get("faults", ()))
        return cls(**values)

    @property
    def column(self) -> tuple[str, str | None]:
        return (self.broker, self.mode)


@dataclass
class BrokerInfo:
    """One broker of the run: how it was launched, what it says it is, or why it was skipped."""

    kind: str
    launcher: str
    status: Literal["ran", "skipped", "failed"] = "ran"
    server: str = ""
    url: str = ""
    reason: str = ""
    #: How the launcher ran it beyond its name (docker: the image and network), "" when nothing more to say.
    launcher_detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def launched(self) -> str:
        """The launcher as reports show it, e.g. ``docker (image jmslike/activemq:..., host network)``."""
        return f"{self.launcher} ({self.launcher_detail})" if self.launcher_detail else self.launcher


@dataclass
class RunReport:
    """Everything the report writers need: results plus run metadata."""

    results: list[ScenarioResult]
    brokers: list[BrokerInfo]
    modes: tuple[str, ...]
    seed: int
    started_at: str
    wall_time_s: float
    quick: bool = False
    filters: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: The jmslike API the scenarios drove: "threaded", or "aio" / "aio-uvloop" (jmslike.aio through the blocking
    #: bridge, on asyncio's event loop / on uvloop's).
    api: str = "threaded"

    def api_note(self) -> str:
        """How the reports name the API, after the run's other facts; "" for the threaded one."""
        return {"aio": "through jmslike.aio", "aio-uvloop": "through jmslike.aio on uvloop"}.get(self.api, "")

    def counts(self) -> dict[str, int]:
        counter = Counter(r.outcome for r in self.results)
        return {outcome: counter.get(outcome, 0) for outcome in OUTCOMES}

    def failed(self) -> bool:
        return any(r.outcome == "fail" for r in self.results)

    def columns(self) -> list[tuple[str, str | None]]:
        """(broker, mode) columns in run order; mode None is the no-restart column of a broker."""
        columns: list[tuple[str, str | None]] = []
        for broker in self.brokers:
            columns.append((broker.kind, None))
            columns.extend((broker.kind, mode) for mode in self.modes)
        return columns

    def scenario_rows(self) -> list[ScenarioResult]:
        """One representative result per scenario id, in first-seen order (for row labels)."""
        seen: dict[str, ScenarioResult] = {}
        for result in self.results:
            seen.setdefault(result.id, result)
        return sorted(seen.values(), key=lambda r: (list(CATEGORIES).index(r.category), r.id))

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "run": {
                "started_at": self.started_at,
                "wall_time_s": round(self.wall_time_s, 3),
                "seed": self.seed,
                "modes": list(self.modes),
                "quick": self.quick,
                "api": self.api,
                "filters": self.filters,
                "counts": self.counts(),
                "notes": list(self.notes),
                "broker_versions": {b.kind: b.server for b in self.brokers if b.server},
            },
            "brokers": [b.to_json() for b in self.brokers],
            "results": [r.to_json() for r in self.results],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunReport:
        run = data["run"]
        return cls(
            results=[ScenarioResult.from_json(r) for r in data["results"]],
            brokers=[BrokerInfo(**b) for b in data["brokers"]],
            modes=tuple(run["modes"]),
            seed=run["seed"],
            started_at=run["started_at"],
            wall_time_s=run["wall_time_s"],
            quick=run.get("quick", False),
            filters=run.get("filters", {}),
            notes=run.get("notes", []),
            api=run.get("api", "threaded"),
        )

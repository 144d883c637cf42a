"""The scenario registry: the decorators scenario authors use, and the lookup the runner uses.

A scenario is written once, against the public jmslike API, as functions over a
:class:`~jmslike.conformance.suite.context.Context`:

* ``@scenario(...)`` -- a plain function ``run(ctx)``; runs once per broker (no restart);
  ``per_mode=True`` makes it run alone once per restart mode, free to call ``ctx.restart()`` itself;
* ``@restart_scenario(...)`` -- ``setup(ctx) -> state``, then ``@<name>.verify`` ``verify(ctx, state)``;
  the runner calls every setup, restarts the broker ONCE per (broker, mode), then calls every verify.

Registration happens at import time of ``jmslike.conformance.suite.scenarios``; ids are unique.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from jmslike.conformance.suite.model import CATEGORIES, Fault, ScenarioInfo, Strength

if TYPE_CHECKING:
    from jmslike.conformance.suite.context import Context

S = TypeVar("S")
RunFn = Callable[["Context"], None]
RunFnT = TypeVar("RunFnT", bound=RunFn)


@dataclass
class PlainScenario:
    info: ScenarioInfo
    run: RunFn


class RestartScenario(Generic[S]):
    """A scenario split around the shared restart: ``setup`` returns the state ``verify`` checks."""

    def __init__(self, info: ScenarioInfo, setup: Callable[[Context], S]) -> None:
        self.info = info
        self.setup = setup
        self._verify: Callable[[Context, S], None] | None = None

    def verify(self, fn: Callable[[Context, S], None]) -> Callable[[Context, S], None]:
        """Decorator: the function checking ``state`` after the broker came back."""
        self._verify = fn
        return fn

    def run_verify(self, ctx: Context, state: S) -> None:
        if self._verify is None:
            raise RuntimeError(f"restart scenario {self.info.id} has no @{self.info.id}.verify function")
        self._verify(ctx, state)


Scenario = PlainScenario | RestartScenario[Any]

_REGISTRY: dict[str, Scenario] = {}


def _info(
    id: str,
    *,
    category: str,
    rule: str,
    section: str,
    strength: Strength,
    kind: str,
    faults: Iterable[Fault],
    quick: bool,
    timeout_s: float,
    doc: str | None,
) -> ScenarioInfo:
    if category not in CATEGORIES:
        raise ValueError(f"scenario {id}: unknown category {category!r}; known: {', '.join(CATEGORIES)}")
    if id in _REGISTRY:
        raise ValueError(f"scenario id {id!r} is registered twice")
    if strength not in ("MUST", "MAY"):
        raise ValueError(f"scenario {id}: strength must be MUST or MAY, got {strength!r}")
    return ScenarioInfo(
        id=id,
        category=category,
        rule=rule,
        section=section,
        strength=strength,
        kind=kind,  # type: ignore[arg-type]
        faults=tuple(faults),
        quick=quick,
        timeout_s=timeout_s,
        doc=(doc or "").strip(),
    )


def scenario(
    id: str,
    *,
    category: str,
    rule: str,
    section: str,
    strength: Strength = "MUST",
    faults: Iterable[Fault] = (),
    per_mode: bool = False,
    quick: bool = False,
    timeout_s: float = 60.0,
) -> Callable[[RunFnT], RunFnT]:
    """Register ``run(ctx)`` as a scenario (see the module docstring)."""

    def register(fn: RunFnT) -> RunFnT:
        info = _info(
            id,
            category=category,
            rule=rule,
            section=section,
            strength=strength,
            kind="per-mode" if per_mode else "plain",
            faults=faults,
            quick=quick,
            timeout_s=timeout_s,
            doc=fn.__doc__,
        )
        _REGISTRY[id] = PlainScenario(info, fn)
        return fn

    return register


def restart_scenario(
    id: str,
    *,
    category: str,
    rule: str,
    section: str,
    strength: Strength = "MUST",
    faults: Iterable[Fault] = (),
    quick: bool = False,
    timeout_s: float = 60.0,
) -> Callable[[Callable[[Context], S]], RestartScenario[S]]:
    """Register ``setup(ctx) -> state``; decorate the checker with ``@<returned>.verify``."""

    def register(fn: Callable[[Context], S]) -> RestartScenario[S]:
        info = _info(
            id,
            category=category,
            rule=rule,
            section=section,
            strength=strength,
            kind="restart",
            faults=faults,
            quick=quick,
            timeout_s=timeout_s,
            doc=fn.__doc__,
        )
        registered: RestartScenario[S] = RestartScenario(info, fn)
        _REGISTRY[id] = registered
        return registered

    return register


def load_all() -> list[Scenario]:
    """Import the bundled scenarios (idempotent) and return every registered scenario."""
    import jmslike.conformance.suite.scenarios  # noqa: F401  (registers on import)

    return list(_REGISTRY.values())


def select(
    scenarios: Iterable[Scenario],
    *,
    only: Iterable[str] = (),
    categories: Iterable[str] = (),
    quick: bool = False,
) -> list[Scenario]:
    """Filter by id patterns (fnmatch, or a plain substring), categories and the quick subset."""
    patterns = [p for p in only if p]
    wanted = set(categories)
    unknown = wanted - set(CATEGORIES)
    if unknown:
        raise ValueError(f"unknown categories {sorted(unknown)}; known: {', '.join(CATEGORIES)}")
    chosen: list[Scenario] = []
    for item in scenarios:
        info = item.info
        if wanted and info.category not in wanted:
            continue
        if patterns and not any(fnmatch.fnmatch(info.id, p) or p in info.id for p in patterns):
            continue
        if quick and not info.quick:
            continue
        chosen.append(item)
    return chosen


def with_timeout(info: ScenarioInfo, timeout_s: float | None) -> ScenarioInfo:
    """``info`` with the per-scenario timeout capped by a CLI-wide limit."""
    if timeout_s is None:
        return info
    return replace(info, timeout_s=min(info.timeout_s, timeout_s))

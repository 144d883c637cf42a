"""Finding the adapter for a URL scheme, through the ``jmslike.adapters`` entry-point group.

Entry points (not an import table) so a third party can ship a broker adapter as its own distribution;
ours register themselves the same way in pyproject.toml.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib.metadata import entry_points

from jmslike.contract import Adapter, AdapterOption
from jmslike.exceptions import ConfigurationError

GROUP = "jmslike.adapters"


@cache
def adapter_names() -> tuple[str, ...]:
    return tuple(sorted(ep.name for ep in entry_points(group=GROUP)))


def load_adapter(scheme: str) -> Adapter:
    """Return a fresh adapter for ``scheme``, or raise a ConfigurationError listing what exists."""
    for ep in entry_points(group=GROUP):
        if ep.name == scheme:
            factory = ep.load()
            adapter: Adapter = factory()
            return adapter
    raise ConfigurationError(
        f"no jmslike adapter for scheme {scheme!r}; installed adapters: {', '.join(adapter_names()) or 'none'}"
    )


@cache
def adapter_url_options() -> Mapping[str, Mapping[str, AdapterOption]]:
    """Scheme -> the URL options its adapter declares (``url_options`` on the adapter's class)."""
    declared: dict[str, Mapping[str, AdapterOption]] = {}
    for ep in entry_points(group=GROUP):
        options = getattr(ep.load(), "url_options", {})
        declared[ep.name] = dict(options)
    return declared

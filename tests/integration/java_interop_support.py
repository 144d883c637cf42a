"""What the Java interop test modules share: the JmsPeer helper module, loaded from ``tests/interop``, and the
reading of a Java message description.

``tests/interop`` is not a package on ``sys.path`` (its Java source and helper sit outside the test folders
pytest collects), so the helper is loaded from its file once and registered under one name.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import jmslike.conformance.plugin as jmslike_plugin
from jmslike.conformance.brokers import BrokerHandle

INTEROP_DIR = Path(__file__).resolve().parents[1] / "interop"
_MODULE_NAME = "jmslike_tests_java_peer"


def _load_java_peer() -> ModuleType:
    if _MODULE_NAME in sys.modules:
        return sys.modules[_MODULE_NAME]
    spec = importlib.util.spec_from_file_location(_MODULE_NAME, INTEROP_DIR / "java_peer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[_MODULE_NAME] = module
    spec.loader.exec_module(module)
    return module


java_peer = _load_java_peer()


def props(described: dict[str, Any]) -> dict[str, tuple[str, object]]:
    """A Java description's properties as ``{name: (java class, value)}``."""
    return {name: (p["type"], p["value"]) for name, p in described["properties"].items()}


def use_private_broker(handle: BrokerHandle, request: pytest.FixtureRequest) -> BrokerHandle:
    """What an interop module's ``broker`` override returns: its private broker (with the extra port for the
    Java client), started again if a test stopped it, whose log tail the plugin attaches to failure reports
    as for its own brokers (a private helper there today, hence the getattr: losing it must not break tests)."""
    if not handle.is_running():
        handle.start()
    remember = getattr(jmslike_plugin, "_remember", None)
    if remember is not None and isinstance(request.node, pytest.Item):
        remember(request.node, handle)
    return handle

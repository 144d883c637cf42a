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

"""The import graph of the product has no cycles, and the API never names an adapter (issue #20).

Runtime imports count wherever they are written (module level or inside a function): a function-level import
that dodges a cycle still is one, and the layering it hides is what a newcomer trips over. Imports under
``if TYPE_CHECKING:`` are types only and do not count. ``jmslike`` (the API) reaches adapters only through
the registry's entry points, never by module name.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("jmslike", "adapters", "spark_sink")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}


def _source_name(module: str) -> str:
    """Installed, every folder is under ``jmslike`` (pyproject's package-dir): ``jmslike.adapters.x`` is the
    source tree's ``adapters.x``, and likewise for ``spark_sink``."""
    for folder in PACKAGES[1:]:
        if module == f"jmslike.{folder}" or module.startswith(f"jmslike.{folder}."):
            return module.removeprefix("jmslike.")
    return module


def _runtime_imports(name: str, path: Path, known: set[str], source: str | None = None) -> set[str]:
    """The known modules ``name`` imports when it runs (TYPE_CHECKING blocks left out); ``source`` stands in
    for the file's text."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(_source_name(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _source_name(node.module or "")
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = _source_name(f"{base}.{alias.name}")
                found.add(submodule if submodule in known else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8") if source is None else source))
    return {module for module in found if module in known and module != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _runtime_imports(name, path, known) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles = _cycles(graph)
    described = [" <-> ".join(cycle) for cycle in cycles]
    assert not cycles, "import cycles (runtime imports, function-level ones included):\n" + "\n".join(
        described
    )


def test_the_api_never_imports_an_adapter_by_name() -> None:
    graph = _graph()
    named = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.startswith("jmslike")
        for target in targets
        if target.startswith("adapters")
    )
    assert not named, "the API imports adapters by name (use the registry):\n" + "\n".join(named)


def test_the_cycle_finder_finds_a_function_level_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_installed_names_map_to_the_source_tree() -> None:
    assert _source_name("jmslike.adapters.async_wire") == "adapters.async_wire"
    assert _source_name("jmslike.aio") == "jmslike.aio"
    assert "adapters.dialect" in _graph()["adapters.activemq"]
    source = "from jmslike import adapters\nimport jmslike.adapters.async_wire\n"
    probe = ROOT / "jmslike" / "probe.py"
    assert _runtime_imports("jmslike.probe", probe, set(_modules()), source) == {
        "adapters",
        "adapters.async_wire",
    }

"""No production code reaches into another class's private state (architecture.md, issue #20).

A ``x._name`` access is allowed where ``x`` is ``self``/``cls``/``super()``, or where the class the code is in
defines ``_name`` itself (its classmethods building an instance, ``__eq__`` reading ``other``). Everything else is
a reach into another class: give that class a public method instead. The check reads the source (``ast``); it
cannot see through ``getattr`` with a string, which review catches.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = ("jmslike", "adapters", "spark_sink", "conformance", "benchmarks")


def _own_names(cls: ast.ClassDef) -> set[str]:
    """What the class defines: its methods and class attributes, and every ``self._x`` it assigns."""
    names: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):  # __slots__ entries
            names.add(node.value)
    return names


def _reaches(tree: ast.AST) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, own: set[str]) -> None:
        if isinstance(node, ast.ClassDef):
            own = own | _own_names(node)
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            value = node.value
            ours = isinstance(value, ast.Name) and value.id in ("self", "cls")
            via_super = isinstance(value, ast.Call) and ast.unparse(value.func) == "super"
            if not (ours or via_super or node.attr in own):
                found.append((node.lineno, ast.unparse(node)))
        for child in ast.iter_child_nodes(node):
            visit(child, own)

    visit(tree, set())
    return found


def test_no_production_code_reaches_into_another_class() -> None:
    reaches = [
        f"{path.relative_to(ROOT)}:{line}: {text}"
        for package in PRODUCTION
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, text in _reaches(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not reaches, "private state of another class:\n" + "\n".join(reaches)


def test_the_check_sees_a_reach() -> None:
    tree = ast.parse("class A:\n    def f(self, b):\n        return b._secret\n")
    assert _reaches(tree) == [(3, "b._secret")]
    own = ast.parse(
        "class A:\n    def __init__(self):\n        self._x = 1\n    def eq(self, o):\n        return o._x\n"
    )
    assert _reaches(own) == []

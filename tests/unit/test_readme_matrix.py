"""The README's capability matrix is exactly what the adapters declare (regenerate it if this fails)."""

from __future__ import annotations

from pathlib import Path

from jmslike.matrix import BEGIN, END, render

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_matrix_matches_the_declarations() -> None:
    text = README.read_text(encoding="utf-8")
    block = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()
    assert block == render(), "README matrix is stale: run python -m jmslike.matrix --write README.md"


def test_matrix_has_a_column_per_adapter_and_a_row_per_capability() -> None:
    lines = render().splitlines()
    assert "ActiveMQ Classic" in lines[0] and "RabbitMQ" in lines[0] and "Artemis" in lines[0]
    assert any(line.startswith("| Message selectors") and "client" in line for line in lines)

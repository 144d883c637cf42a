"""docs/api.md is exactly what the code's signatures and docstrings say (regenerate it if this fails)."""

from __future__ import annotations

from pathlib import Path

import jmslike
from jmslike.apidoc import render

API_MD = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def test_api_reference_matches_the_code() -> None:
    assert API_MD.read_text(encoding="utf-8") == render(), (
        "docs/api.md is stale: run python -m jmslike.apidoc --write docs/api.md"
    )


def test_every_public_name_and_jms_method_is_in_the_reference() -> None:
    text = render()
    for name in jmslike.__all__:
        assert f"`{name}`" in text
    assert (
        "- `createSession(transacted=None, acknowledgeMode=None) -> Session`" in text
        or "createSession(" in text
    )
    assert "acquire_send_slot" not in text  # internals between modules are not API

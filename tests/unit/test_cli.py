"""The jmslike command dispatches to the modules that own the work (no broker needed for these)."""

from __future__ import annotations

import pytest

from jmslike.cli import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("jmslike ")


def test_matrix_prints_the_generated_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix"]) == 0
    assert "| capability |" in capsys.readouterr().out


def test_unknown_command_is_an_error_with_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'frobnicate'" in err and "conformance" in err


def test_no_arguments_prints_usage_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: jmslike" in capsys.readouterr().out


def test_conformance_list_needs_no_broker(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--list"]) == 0
    assert "durable" in capsys.readouterr().out


def test_subcommand_help_names_the_jmslike_command(capsys: pytest.CaptureFixture[str]) -> None:
    for command, prog in (("conformance", "jmslike conformance"), ("broker", "jmslike broker")):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert f"usage: {prog}" in capsys.readouterr().out


def test_soak_is_a_conformance_subcommand_that_refuses_no_kills(
    capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    with pytest.raises(SystemExit):
        main(["conformance", "soak", "--help"])
    out = capsys.readouterr().out
    assert "usage: jmslike conformance soak" in out and "--kills" in out
    assert main(["conformance", "soak", "--kills", "0", "--report", str(tmp_path)]) == 2
    assert "--kills must be at least 1" in capsys.readouterr().err


def test_soak_scenario_runs_in_kill_mode_outside_the_main_job() -> None:
    from jmslike.conformance.suite.registry import load_all
    from jmslike.conformance.suite.soak import SOAK_ID, soak_scenario

    soak = soak_scenario(5)
    assert soak.info.id == SOAK_ID and soak.info.per_mode and soak.info.timeout_s >= 5 * 20
    assert SOAK_ID not in {s.info.id for s in load_all()}

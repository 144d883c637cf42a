"""What the raw STOMP controls for Artemis share: their command line and their run.

A control runs ``--trials`` trials against an Artemis the process launcher (or docker) starts; unless
``--no-restart``, when a trial missed a message the broker is then restarted gracefully and each such trial's
queue read again, to tell a message stuck in the broker from one lost for good. Used by
``artemis_stuck_delivery`` and ``artemis_dropped_delivery``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import TypeVar

from jmslike.conformance.brokers import BrokerHandle, launch
from jmslike.conformance.suite.probe import ArtemisProbe

Outcome = TypeVar("Outcome")


def control_arguments(
    prog: str, description: str, trials: int, argv: Sequence[str] | None
) -> argparse.Namespace:
    """The controls' command line: ``--trials``, ``--no-restart``, ``--launcher``."""
    parser = argparse.ArgumentParser(prog=f"python -m jmslike.conformance.{prog}", description=description)
    parser.add_argument("--trials", type=int, default=trials)
    parser.add_argument(
        "--no-restart",
        action="store_true",
        help="do not restart the broker at the end to see whether stuck messages come back",
    )
    parser.add_argument("--launcher", default="process", help="process or docker")
    return parser.parse_args(argv)


def run_trials(
    args: argparse.Namespace,
    trial: Callable[[BrokerHandle, ArtemisProbe], Outcome],
    missed: Callable[[Outcome], bool],
    read_back: Callable[[ArtemisProbe, Outcome], None],
) -> list[Outcome]:
    """Run the trials on one Artemis; then, unless ``--no-restart``, restart it once and ``read_back`` each
    trial that ``missed`` a message."""
    outcomes: list[Outcome] = []
    with launch("artemis", args.launcher) as broker:
        probe = ArtemisProbe(broker)
        for _ in range(args.trials):
            outcomes.append(trial(broker, probe))
        missing = [outcome for outcome in outcomes if missed(outcome)]
        if missing and not args.no_restart:
            broker.restart("graceful")
            for outcome in missing:
                read_back(probe, outcome)
    return outcomes

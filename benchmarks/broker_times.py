"""Start and restart times of each broker, as the launchers see them.

For every broker kind: start a fresh broker (time until it answers a STOMP CONNECT), restart it
gracefully, restart it after SIGKILL, then close it; repeat for several rounds and print the median
(and min/max) of each. Usage::

    python benchmarks/broker_times.py [--kinds activemq,rabbitmq] [--rounds 3] [--launcher process]
                                      [--no-management]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

from jmslike.conformance.brokers import BrokerHandle, check_kind, create

PHASES = ("start", "graceful restart", "kill restart", "graceful stop")


def _timed(action: Callable[..., object], *args: object) -> float:
    t0 = time.monotonic()
    action(*args)
    return time.monotonic() - t0


def measure(kind: str, launcher: str, rounds: int, options: dict[str, object]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {phase: [] for phase in PHASES}
    for round_no in range(1, rounds + 1):
        broker: BrokerHandle = create(check_kind(kind), launcher, **options)
        try:
            times["start"].append(_timed(broker.start))
            times["graceful restart"].append(_timed(broker.restart, "graceful"))
            times["kill restart"].append(_timed(broker.restart, "kill"))
            times["graceful stop"].append(_timed(broker.stop))
        finally:
            broker.close()
        last = {phase: values[-1] for phase, values in times.items()}
        print(
            f"  {kind} round {round_no}: " + ", ".join(f"{p} {t:.2f}s" for p, t in last.items()), flush=True
        )
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kinds", default="activemq,rabbitmq")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--launcher", default="process")
    parser.add_argument("--no-management", action="store_true", help="RabbitMQ without the management plugin")
    args = parser.parse_args(argv)
    results: dict[str, dict[str, list[float]]] = {}
    for kind in [k.strip() for k in args.kinds.split(",") if k.strip()]:
        print(f"{kind}: {args.rounds} rounds ...", flush=True)
        options: dict[str, object] = {}
        if kind == "rabbitmq" and args.no_management:
            options["management"] = False
        results[kind] = measure(kind, args.launcher, args.rounds, options)
    print()
    print(f"median seconds over {args.rounds} rounds ({args.launcher} launcher; min-max in brackets)")
    header = f"| {'broker':<10} | " + " | ".join(f"{p:<18}" for p in PHASES) + " |"
    print(header)
    print("|" + "|".join("-" * (len(cell) + 0) for cell in header.split("|")[1:-1]) + "|")
    for kind, times in results.items():
        cells = []
        for phase in PHASES:
            values = times[phase]
            cells.append(f"{statistics.median(values):.1f} [{min(values):.1f}-{max(values):.1f}]".ljust(18))
        print(f"| {kind:<10} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

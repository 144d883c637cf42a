"""The conformance CLI: ``python -m jmslike.conformance --brokers ... --modes ... --report DIR``, and
``python -m jmslike.conformance soak --brokers ... --kills N --report DIR`` (the SIGKILL soak, suite/soak.py).

Parses options, selects scenarios, runs them through :class:`~.runner.Runner`, writes the four report
files and sets the exit status: 1 when any scenario failed, 2 on bad usage, 0 otherwise (deviations,
unsupported and skipped brokers are not failures). This module prints; the library modules log.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import random
import sys
from collections.abc import Sequence
from pathlib import Path

from jmslike.conformance.brokers import KINDS, LAUNCHERS, check_kind, default_kinds
from jmslike.conformance.brokers.external import urls_from_spec
from jmslike.conformance.suite.context import APIS
from jmslike.conformance.suite.expectations import stale_entries
from jmslike.conformance.suite.model import CATEGORIES, MODES
from jmslike.conformance.suite.progress import for_stream
from jmslike.conformance.suite.registry import Scenario, load_all, select
from jmslike.conformance.suite.report_common import write_all
from jmslike.conformance.suite.runner import Runner, RunOptions
from jmslike.conformance.suite.soak import SOAK_ID, soak_scenario


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def parser(prog: str = "python -m jmslike.conformance") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Run the JMS conformance suite against real brokers and write a report.",
    )
    p.add_argument(
        "--brokers",
        default=",".join(default_kinds()[0]),
        help=f"comma list of {', '.join(KINDS)} (default: activemq,rabbitmq, and artemis when ARTEMIS_HOME is set)",
    )
    p.add_argument("--modes", default="graceful,kill", help="restart modes: graceful,kill")
    p.add_argument(
        "--report", metavar="DIR", help="directory for results.json, report.html, report.md, junit.xml"
    )
    p.add_argument("--broker-launcher", default="process", choices=LAUNCHERS, help="how brokers are run")
    p.add_argument(
        "--broker-url",
        action="append",
        default=[],
        metavar="KIND=URL",
        help="broker URL for the external launcher (repeat, or comma-separate)",
    )
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="PATTERN",
        help="scenario id glob or substring (repeatable)",
    )
    p.add_argument(
        "--category",
        action="append",
        default=[],
        metavar="CAT",
        help=f"category (repeatable): {', '.join(CATEGORIES)}",
    )
    p.add_argument("--seed", type=int, help="random seed (printed; pass it again to replay)")
    p.add_argument(
        "--quick", action="store_true", help="a representative subset (a few scenarios per category)"
    )
    p.add_argument("--timeout", type=float, metavar="S", help="cap every scenario's timeout at S seconds")
    p.add_argument(
        "--api",
        default="threaded",
        choices=APIS,
        help="the jmslike API the scenarios drive: threaded (default), or aio (jmslike.aio through a blocking "
        "bridge; what it lacks yet is reported unsupported), or aio-uvloop (the same on uvloop's event loop, "
        "which needs uvloop installed)",
    )
    p.add_argument("--list", action="store_true", help="list the selected scenarios and exit")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return p


def _run_log(directory: Path) -> logging.Handler:
    """Everything the library logs at INFO and above goes to DIR/run.log (the terminal stays readable)."""
    directory.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(directory / "run.log", mode="w", encoding="utf-8")
    handler.setLevel(logging.INFO)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(threadName)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level > logging.INFO:
        root.setLevel(logging.INFO)
    return handler


def soak_parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{prog} soak",
        description="SIGKILL each broker N times under load (sync and async producers, CLIENT_ACKNOWLEDGE and "
        "transacted consumers, queues and durable subscriptions), then check every operation; fails on loss.",
    )
    p.add_argument(
        "--brokers", default=",".join(default_kinds()[0]), help=f"comma list of {', '.join(KINDS)}"
    )
    p.add_argument("--kills", type=int, default=50, help="SIGKILLs per broker (default 50)")
    p.add_argument("--report", metavar="DIR", required=True, help="directory for the report files")
    p.add_argument("--broker-launcher", default="process", choices=LAUNCHERS, help="how brokers are run")
    p.add_argument("--seed", type=int, help="random seed (printed; pass it again to replay)")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return p


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """``prog``: the name the help shows (``jmslike conformance`` when the ``jmslike`` command calls)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["soak"]:
        return soak_main(argv[1:], prog or "python -m jmslike.conformance")
    args = (parser(prog) if prog else parser()).parse_args(argv)
    if args.verbose:  # otherwise the library log goes to DIR/run.log only, keeping the terminal readable
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
    try:
        brokers = tuple(dict.fromkeys(check_kind(k) for k in _csv(args.brokers)))
        modes = tuple(dict.fromkeys(_csv(args.modes)))
        bad = [m for m in modes if m not in MODES]
        if bad:
            raise ValueError(f"unknown mode(s) {bad}; expected {', '.join(MODES)}")
        urls: dict[str, str] = {}
        for spec in args.broker_url:
            urls.update({str(kind): url for kind, url in urls_from_spec(spec).items()})
        categories = [c for spec in args.category for c in _csv(spec)]
        scenarios = select(load_all(), only=args.only, categories=categories, quick=args.quick)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not brokers:
        print("error: --brokers names no broker", file=sys.stderr)
        return 2
    if args.list:
        for s in scenarios:
            print(f"{s.info.id:55} {s.info.category:13} {s.info.kind:9} {s.info.strength}  {s.info.rule}")
        print(f"{len(scenarios)} scenarios")
        return 0
    if not scenarios:
        print("error: no scenario matches the filters", file=sys.stderr)
        return 2
    if args.report is None:
        print("error: --report DIR is required (or use --list)", file=sys.stderr)
        return 2
    if args.api == "aio-uvloop" and importlib.util.find_spec("uvloop") is None:
        print("error: --api aio-uvloop needs uvloop (pip install uvloop)", file=sys.stderr)
        return 2
    stale = stale_entries({s.info.id for s in load_all()} | {SOAK_ID})
    if stale:
        print(f"warning: expectations table entries for unknown scenarios: {stale}", file=sys.stderr)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    print(
        f"jmslike conformance: {len(scenarios)} scenarios, brokers {','.join(brokers)}, modes {','.join(modes)}, "
        f"seed {seed}, API {args.api}"
    )
    note = default_kinds()[1]
    if "artemis" not in brokers and note is not None:
        print(note)  # why the run leaves Artemis out
    options = RunOptions(
        brokers=brokers,
        modes=modes,
        launcher=args.broker_launcher,
        urls=urls,
        seed=seed,
        timeout_s=args.timeout,
        quick=args.quick,
        filters={"only": list(args.only), "category": categories},
        api=args.api,
    )
    return _run_and_report(scenarios, options, Path(args.report))


def soak_main(argv: Sequence[str], prog: str) -> int:
    args = soak_parser(prog).parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
    try:
        brokers = tuple(dict.fromkeys(check_kind(k) for k in _csv(args.brokers)))
        scenario = soak_scenario(args.kills)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 2**31)
    print(f"jmslike soak: {args.kills} SIGKILLs per broker, brokers {','.join(brokers)}, seed {seed}")
    options = RunOptions(
        brokers=brokers,
        modes=("kill",),
        launcher=args.broker_launcher,
        seed=seed,
        filters={"only": [SOAK_ID]},
    )
    return _run_and_report([scenario], options, Path(args.report))


def _run_and_report(scenarios: Sequence[Scenario], options: RunOptions, directory: Path) -> int:
    runner = Runner(scenarios, options, for_stream(sys.stdout))
    seed = options.seed
    log_handler = _run_log(directory)
    try:
        report = runner.run()
    finally:
        logging.getLogger().removeHandler(log_handler)
        log_handler.close()
    paths = write_all(report, directory, runner.secrets)
    counts = report.counts()
    print(
        f"done in {report.wall_time_s:.1f}s: "
        + ", ".join(f"{n} {o}" for o, n in counts.items())
        + f" (seed {seed}); report: {paths['report.html']}"
    )
    return 1 if report.failed() else 0

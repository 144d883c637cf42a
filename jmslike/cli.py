"""The ``jmslike`` command: one entry point for what the project's modules already do.

Each subcommand hands its arguments to the module that owns the work, so the command stays a thin index:
``jmslike conformance ...`` is ``python -m jmslike.conformance ...``, ``jmslike broker ...`` is
``python -m jmslike.conformance.brokers ...``, ``jmslike matrix`` prints the capability matrix.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version

USAGE = """usage: jmslike COMMAND [ARGS...]

commands:
  conformance ...   run the JMS conformance suite (see: jmslike conformance --help)
  broker ...        install, start or run local brokers (see: jmslike broker --help)
  matrix            print the capability matrix of the installed adapters
  subscriptions ... list, delete or sweep durable subscriptions (see: jmslike subscriptions --help)
  --version         print jmslike's version
"""


def _conformance(argv: Sequence[str]) -> int:
    from jmslike.conformance.suite.cli import main

    return main(list(argv), prog="jmslike conformance")


def _broker(argv: Sequence[str]) -> int:
    from jmslike.conformance.brokers.__main__ import main

    return main(list(argv), prog="jmslike broker")


def _matrix(argv: Sequence[str]) -> int:
    from jmslike.matrix import main

    return main(list(argv))


def _subscriptions(argv: Sequence[str]) -> int:
    from jmslike.admin_cli import main

    return main(argv)


COMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "conformance": _conformance,
    "broker": _broker,
    "matrix": _matrix,
    "subscriptions": _subscriptions,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if args else 2
    if args[0] == "--version":
        sys.stdout.write(f"jmslike {version('jmslike')}\n")
        return 0
    command = COMMANDS.get(args[0])
    if command is None:
        sys.stderr.write(f"jmslike: unknown command {args[0]!r}\n\n{USAGE}")
        return 2
    return command(args[1:])


if __name__ == "__main__":
    raise SystemExit(main())

"""``jmslike subscriptions list|delete|sweep``: the command-line face of :mod:`jmslike.admin`.

The password is read from ``--password`` or, better (it stays out of the process list), from the
``JMSLIKE_PASSWORD`` environment variable; it is never printed.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from collections.abc import Sequence

from jmslike.exceptions import JMSException
from jmslike.subscriptions import SubscriptionInfo

COLUMNS = ("client ID", "name", "topic", "selector", "durable", "active", "pending", "last active")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jmslike subscriptions", description="Administer subscriptions.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (
        ("list", "list durable subscriptions"),
        ("delete", "delete one durable subscription (refused while its client is connected)"),
        ("sweep", "delete expired durable subscriptions (where jmslike enforces expiry)"),
    ):
        command = sub.add_parser(name, help=text)
        command.add_argument("--url", required=True, help="broker URL, as for ConnectionFactory")
        command.add_argument("--user", default=os.environ.get("JMSLIKE_USER"))
        command.add_argument("--password", default=None, help="default: $JMSLIKE_PASSWORD")
        if name == "delete":
            command.add_argument("client_id")
            command.add_argument("name")
    return parser


def _cell(value: object) -> str:
    if value is None:
        return "?"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def format_table(rows: Sequence[SubscriptionInfo]) -> str:
    """A plain-text table; '?' where the broker cannot tell."""
    cells = [
        (
            r.clientId,
            r.name,
            r.topic,
            r.selector or "",
            _cell(r.durable),
            _cell(r.active),
            _cell(r.pending),
            "now" if r.active else _when(r.lastActive),
        )
        for r in rows
    ]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(COLUMNS)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(COLUMNS, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str]) -> int:
    from jmslike.admin import Admin

    args = _parser().parse_args(list(argv))
    password = args.password if args.password is not None else os.environ.get("JMSLIKE_PASSWORD")
    try:
        with Admin(args.url, args.user, password) as admin:
            if args.command == "list":
                sys.stdout.write(format_table(admin.subscriptions()))
            elif args.command == "delete":
                admin.deleteSubscription(args.client_id, args.name)
                sys.stdout.write(f"deleted {args.client_id}/{args.name}\n")
            else:
                swept = admin.sweepExpired()
                for info in swept:
                    sys.stdout.write(f"expired, deleted {info.clientId}/{info.name}\n")
                if not swept:
                    sys.stdout.write("no expired subscription: nothing deleted\n")
    except JMSException as exc:
        sys.stderr.write(f"jmslike subscriptions: {type(exc).__name__}: {exc}\n")
        return 1
    return 0

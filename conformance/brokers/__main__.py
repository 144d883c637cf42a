"""Command line for the broker launchers: ``python -m jmslike.conformance.brokers``.

Owns two commands, for people setting up a machine or poking at a broker by hand:

* ``ensure KIND...`` -- install missing brokers (apt-get as root on Debian/Ubuntu) or say exactly what
  to install / which launcher to use.
* ``run KIND`` -- start one broker in the foreground, print its URL and account, stop it on Ctrl-C or
  SIGTERM (nothing is left running).
* ``images [KIND...]`` -- build the local broker images the docker launcher runs on the host network
  (:mod:`.images`; cached, ``--rebuild`` forces).
* ``cleanup`` -- remove containers, volumes and directories of docker runs whose process is gone
  (``--all``: every one of ours).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence

from jmslike.conformance.brokers import KINDS, LAUNCHERS, BrokerError, check_kind, launch
from jmslike.conformance.brokers.install import ensure
from jmslike.conformance.brokers.stop_signals import StopSignals


def _parser(prog: str = "python -m jmslike.conformance.brokers") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Install and run test brokers.")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    p_ensure = sub.add_parser("ensure", help="install missing brokers (apt-get, as root)")
    p_ensure.add_argument("kinds", nargs="+", choices=KINDS, metavar="KIND", help=", ".join(KINDS))

    p_run = sub.add_parser("run", help="run one broker in the foreground until Ctrl-C")
    p_run.add_argument("kind", choices=KINDS, metavar="KIND", help=", ".join(KINDS))
    p_run.add_argument("--launcher", choices=LAUNCHERS, default="process")
    p_run.add_argument("--port", type=int, help="STOMP port (default: a free one)")
    p_run.add_argument("--data-dir", help="keep data here (default: a temp dir removed at exit)")
    p_run.add_argument("--url", help="broker URL (external launcher)")

    p_images = sub.add_parser(
        "images", help="build local broker images from Debian packages (docker launcher)"
    )
    # No `choices`: argparse rejects an empty list against them; check_kind says what is valid instead.
    p_images.add_argument("kinds", nargs="*", metavar="KIND", help=f"default: all ({', '.join(KINDS)})")
    p_images.add_argument("--rebuild", action="store_true", help="build even when the image is present")

    p_cleanup = sub.add_parser("cleanup", help="remove what crashed docker runs left behind")
    p_cleanup.add_argument("--all", action="store_true", help="also what live runs own")
    return parser


def _images(args: argparse.Namespace) -> int:
    from jmslike.conformance.brokers.docker import docker_client
    from jmslike.conformance.brokers.images import build_images

    try:
        kinds = [check_kind(k) for k in args.kinds] or list(KINDS)
        client = docker_client()
        built = build_images(client, kinds, log=lambda line: print(line, flush=True), rebuild=args.rebuild)
    except (BrokerError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    missing = [k for k in args.kinds if k not in built]
    return 1 if missing else 0


def _cleanup(args: argparse.Namespace) -> int:
    from jmslike.conformance.brokers.docker import docker_client, remove_leftovers

    try:
        removed = remove_leftovers(docker_client(), everything=args.all)
    except BrokerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for what in removed:
        print(f"removed {what}")
    print(f"{len(removed)} removed")
    return 0


def _run(args: argparse.Namespace) -> int:
    stop = StopSignals()
    stop.install(signal.SIGINT, signal.SIGTERM)
    options: dict[str, object] = {}
    if args.port is not None:
        options["port"] = args.port
    if args.data_dir is not None and args.launcher == "process":
        options["data_dir"] = args.data_dir
    if args.url is not None:
        options["url"] = args.url
    try:
        broker = launch(check_kind(args.kind), args.launcher, **options)
    except BrokerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with broker:
        # The URL as jmslike takes it: RabbitMQ's durable subscriptions need its management API.
        management = f"?management_url={broker.management_url}" if broker.management_url else ""
        print(f"{broker.kind} ready: {broker.url}{management}")
        print(f"  user: {broker.user}  password: {broker.password}")
        if broker.management_url:
            print(f"  management: {broker.management_url}")
        if broker.pid is not None:
            print(f"  pid: {broker.pid}")
        print("Ctrl-C to stop.", flush=True)
        while not stop.wait(1.0):
            if not broker.is_running():
                print(f"error: the broker stopped on its own\n{broker.log_tail()}", file=sys.stderr)
                return 1
        print("stopping ...", flush=True)
    print("stopped.")
    return 0


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """``prog``: the name the help shows (``jmslike broker`` when the ``jmslike`` command calls)."""
    args = (_parser(prog) if prog else _parser()).parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    if args.command == "ensure":
        ok, messages = ensure([check_kind(k) for k in args.kinds])
        for message in messages:
            print(message)
        return 0 if ok else 1
    if args.command == "images":
        return _images(args)
    if args.command == "cleanup":
        return _cleanup(args)
    return _run(args)


if __name__ == "__main__":
    sys.exit(main())

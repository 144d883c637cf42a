"""``python -m jmslike.conformance``: the conformance suite's command line (see suite/cli.py)."""

from __future__ import annotations

import sys

from jmslike.conformance.suite.cli import main

if __name__ == "__main__":
    sys.exit(main())

"""Progress output of the CLI: a redrawn bar on a terminal, plain lines otherwise (CI logs)."""

from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO

from jmslike.conformance.suite.model import ScenarioResult

_MARK = {
    "pass": "ok",
    "deviation": "DEVIATION",
    "unsupported": "unsupported",
    "fail": "FAIL",
    "skipped": "skipped",
}


class LineProgress:
    """One line per finished result; for logs and pipes."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.total = 0
        self.done = 0

    def begin(self, total: int) -> None:
        self.total = total
        self._write(f"running {total} scenario results")

    def started(self, label: str) -> None:
        pass

    def finished(self, result: ScenarioResult) -> None:
        self.done += 1
        mode = result.mode or "-"
        line = f"[{self.done}/{self.total}] {result.broker} {mode} {result.id}: {_MARK[result.outcome]} ({result.duration_s:.1f}s)"
        if result.outcome in ("fail", "deviation") and result.detail:
            line += f"\n    {result.detail[:300]}"
        self._write(line)

    def message(self, text: str) -> None:
        self._write(text)

    def end(self) -> None:
        pass

    def _write(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


class BarProgress(LineProgress):
    """A bar redrawn in place, with the name of the scenario running; failures stay on screen."""

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__(stream)
        self.current = ""
        self.t0 = time.monotonic()

    def started(self, label: str) -> None:
        self.current = label
        self._draw()

    def finished(self, result: ScenarioResult) -> None:
        self.done += 1
        if result.outcome == "fail":
            self._clear()
            self._write(f"FAIL {result.broker} {result.mode or '-'} {result.id}: {result.detail[:300]}")
        self._draw()

    def message(self, text: str) -> None:
        self._clear()
        self._write(text)
        self._draw()

    def end(self) -> None:
        self._clear()

    def _clear(self) -> None:
        self.stream.write("\r\x1b[2K")
        self.stream.flush()

    def _draw(self) -> None:
        width = shutil.get_terminal_size((100, 20)).columns
        total = max(self.total, 1)
        bar_width = 30
        filled = int(bar_width * self.done / total)
        elapsed = time.monotonic() - self.t0
        head = f"[{'#' * filled}{'.' * (bar_width - filled)}] {self.done}/{self.total} {elapsed:4.0f}s "
        line = (head + self.current)[: max(10, width - 1)]
        self.stream.write("\r\x1b[2K" + line)
        self.stream.flush()


def for_stream(stream: TextIO | None = None) -> LineProgress:
    stream = stream or sys.stdout
    return BarProgress(stream) if stream.isatty() else LineProgress(stream)

"""Progress of long gradings on stderr: a `rich` bar on a terminal, plain lines in CI logs.

    display = Display.for_stream(sys.stderr, "auto", controllers=3)
    results = [grade_and_sign(r, signer, bundle, display.callback(name)) for name, r in ...]
    display.close()

One display follows any number of gradings (controllers), each through its own callback, from any
thread: it shows the flights ended over all of them and how many controllers are done. `auto`
draws a bar only on a terminal outside CI; where stderr is not a terminal, or `CI` /
`GITHUB_ACTIONS` is set, it prints a plain line at most every `every_s` seconds and when a
controller is done, so a CI log shows progress without a wall of carriage returns.
"""

from __future__ import annotations

import os
import threading
import time
from typing import IO, Any

from plimsoll_ci.grading.request import Progress, ProgressFn

MODES = ("auto", "bar", "lines", "off")
LINE_EVERY_S = 5.0


def choose(mode: str, stream: IO[str]) -> str:
    """The mode `auto` stands for on `stream`: `bar` on a terminal outside CI, else `lines`."""
    if mode != "auto":
        return mode
    in_ci = bool(os.environ.get("CI") or os.environ.get("GITHUB_ACTIONS"))
    tty = hasattr(stream, "isatty") and stream.isatty()
    return "bar" if tty and not in_ci else "lines"


class Display:
    """Flights ended and controllers done over one or more gradings (see the module doc)."""

    def __init__(self, stream: IO[str], mode: str, controllers: int = 1, prog: str = "plimsoll-ci",
                 every_s: float = LINE_EVERY_S) -> None:
        self.stream = stream
        self.mode = choose(mode, stream)
        self.controllers = controllers
        self.prog = prog
        self.every_s = every_s
        self._lock = threading.Lock()
        self._done: dict[str, int] = {}  # label -> flights ended
        self._total: dict[str, int] = {}  # label -> flights in that grading
        self._finished: set[str] = set()
        self._started = self._last_line = time.monotonic()
        self._bar: Any = None
        self._task: Any = None
        if self.mode == "bar":
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
            )
            from rich.progress import Progress as Bar

            self._bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("flights"), TimeElapsedColumn(),
                            console=Console(file=stream), transient=True)
            self._task = self._bar.add_task(self._describe(), total=None)
            self._bar.start()

    def callback(self, label: str) -> ProgressFn:
        """The progress callback of one grading (`label` names it, e.g. the controller)."""

        def on(event: Progress) -> None:
            self._on(label, event)

        return on

    def _describe(self) -> str:
        return f"grading: {len(self._finished)}/{self.controllers} controllers done"

    def _on(self, label: str, event: Progress) -> None:
        if self.mode == "off":
            return
        with self._lock:
            self._total[label] = event.total
            self._done[label] = max(self._done.get(label, 0), event.done)
            finished = (event.event == "refused" or (event.event == "flown"
                                                       and event.done >= event.total))
            if finished and label not in self._finished:
                self._finished.add(label)
                if event.event == "refused":
                    self._done[label] = event.total
            else:
                finished = False
            done, total = sum(self._done.values()), sum(self._total.values())
            if self._bar is not None:
                self._bar.update(self._task, completed=done, total=total,
                                 description=self._describe())
                return
            now = time.monotonic()
            if finished or event.event == "scanned" or now - self._last_line >= self.every_s:
                self._last_line = now
                self._line(done, total, now)

    def _line(self, done: int, total: int, now: float) -> None:
        self.stream.write(f"{self.prog}: progress: {done}/{total} flights ended, "
                          f"{len(self._finished)}/{self.controllers} controllers done "
                          f"({now - self._started:.0f} s)\n")
        self.stream.flush()

    def close(self) -> None:
        """Take the bar off the terminal (the result follows on stdout)."""
        with self._lock:
            if self._bar is not None:
                self._bar.stop()
                self._bar = None

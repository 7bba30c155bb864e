"""Progress of a squeeze run: a `rich` bar on a terminal, plain lines anywhere else (CI logs).

Labels and notes carry names from the job (a rebuild folder, a controller file): both displays
print them through `shown`, so a name cannot forge a line of the log or drive the terminal, and
the bar reads no `rich` markup in them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Protocol, TextIO

from plimsoll_ci.names import shown

if TYPE_CHECKING:  # rich is imported when a bar is made
    from rich.progress import TaskID


class Progress(Protocol):
    """What the run reports as it goes."""

    def start(self, total: int, what: str = "") -> None:
        """`total` gradings (or sessions: `what` says so) are about to start."""

    def began(self, label: str) -> None:
        """A grading started."""

    def finished(self, label: str, summary: str) -> None:
        """A grading finished; `summary` says how it went."""

    def note(self, text: str) -> None:
        """A line for the reader (the commitment, the practice tokens, where things went)."""

    def close(self) -> None:
        """The run is over (done, interrupted or failed)."""


class Plain:
    """One line per event, flushed: fit for a CI log."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.total = 0
        self.done = 0

    def _say(self, text: str) -> None:
        print(f"plimsoll-ci squeeze: {shown(text)}", file=self.stream, flush=True)

    def start(self, total: int, what: str = "") -> None:
        self.total, self.done = total, 0
        self._say(what or f"grading {total} controllers")

    def began(self, label: str) -> None:
        pass

    def finished(self, label: str, summary: str) -> None:
        self.done += 1
        self._say(f"[{self.done}/{self.total}] {label}: {summary}")

    def note(self, text: str) -> None:
        self._say(text)

    def close(self) -> None:
        pass


class Bar:
    """A `rich` progress bar with the gradings under way, for a terminal."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.console = Console(file=stream)
        self.bar = Progress(TextColumn("squeeze"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("{task.description}", markup=False),
                            console=self.console, transient=False)
        self.task: TaskID | None = None
        self.running: list[str] = []

    def start(self, total: int, what: str = "") -> None:
        if what:
            self.console.print(shown(what), markup=False, highlight=False)
        self.bar.start()
        if self.task is not None:
            self.bar.remove_task(self.task)
        self.task = self.bar.add_task("", total=total)

    def _describe(self) -> None:
        if self.task is not None:
            text = ", ".join(self.running[:3]) + (" ..." if len(self.running) > 3 else "")
            self.bar.update(self.task, description=text)

    def began(self, label: str) -> None:
        self.running.append(shown(label))
        self._describe()

    def finished(self, label: str, summary: str) -> None:
        label = shown(label)
        if label in self.running:
            self.running.remove(label)
        self.console.print(shown(f"{label}: {summary}"), markup=False, highlight=False)
        if self.task is not None:
            self.bar.advance(self.task)
        self._describe()

    def note(self, text: str) -> None:
        self.console.print(shown(text), markup=False, highlight=False)

    def close(self) -> None:
        self.bar.stop()


def make(stream: TextIO | None = None) -> Progress:
    """A bar when `stream` (default stderr) is a terminal, else plain lines."""
    stream = stream or sys.stderr
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    return Bar(stream) if tty else Plain(stream)

"""A progress bar on stderr (commits walked, blobs scanned), or nothing."""

from __future__ import annotations

from typing import Any


class Progress:
    """Named bars on stderr while enabled; every call is a no-op otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.bar = None
        self.tasks: dict[str, Any] = {}
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as Bar

            self.bar = Bar(TextColumn("{task.description}"), BarColumn(),
                           MofNCompleteColumn(), TimeRemainingColumn(),
                           console=Console(stderr=True), transient=True)
            self.bar.start()

    def task(self, name: str, total: int) -> None:
        """Start a bar."""
        if self.bar is not None:
            self.tasks[name] = self.bar.add_task(name, total=total)

    def total(self, name: str, total: int) -> None:
        """Set a bar's total (it grows as work is found)."""
        if self.bar is not None and name in self.tasks:
            self.bar.update(self.tasks[name], total=total)

    def advance(self, name: str, n: int = 1) -> None:
        """Move a bar on."""
        if self.bar is not None and name in self.tasks:
            self.bar.advance(self.tasks[name], n)

    def stop(self) -> None:
        """Take the bars off the terminal."""
        if self.bar is not None:
            self.bar.stop()

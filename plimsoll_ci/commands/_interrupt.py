"""SIGTERM, SIGINT and SIGHUP during a grading: stop every sandbox it started, remove its folders, exit.

The first signal raises `Interrupted` in the main thread, so the library's `finally` blocks close
the sandbox and remove the staged folder on the way out; `stop_everything` then sweeps whatever an
interrupted start or close left. Further signals while that runs are ignored: a clean-up cut in
half is how containers and folders used to be left behind. A run killed outright (SIGKILL) cannot
clean up: the next run reaps what it left (`sandbox.leftovers`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)  # HUP: a closed terminal or CI job


class Interrupted(KeyboardInterrupt):
    """A grading was stopped by a signal (`signum`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        """The signal's name, e.g. SIGTERM."""
        return signal.Signals(self.signum).name


@contextlib.contextmanager
def signals_interrupt() -> Iterator[None]:
    """Within the block, the first SIGTERM, SIGINT or SIGHUP raises `Interrupted`; later ones are ignored
    until the block ends. Outside the main thread (where signals cannot be handled) it does
    nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, _frame: object) -> None:
        if fired:
            return  # already stopping: let the clean-up finish
        fired.append(signum)
        raise Interrupted(signum)

    previous = {s: signal.signal(s, handler) for s in SIGNALS}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def stop_everything() -> tuple[int, int]:
    """Stop every sandbox this process still runs and remove every folder it staged; the counts."""
    from plimsoll_ci.sandbox import session, stage

    return session.close_all(), stage.cleanup_all()


def reap_leftovers(prog: str) -> None:
    """Remove what killed runs left behind (their sandboxes and folders), and say so on stderr
    as `prog` (the one reaping every grading command does before it starts)."""
    import sys

    from plimsoll_ci.sandbox import leftovers

    reaped = leftovers.reap_once()
    if reaped is not None and reaped.total:
        print(f"{prog}: removed the leftovers of a killed run: {reaped.summary()}",
              file=sys.stderr, flush=True)

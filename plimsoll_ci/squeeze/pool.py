"""Gradings in parallel: `jobs` worker processes, each grading one controller at a time.

The one place that starts worker processes other than through `plimsoll_ci.pool` (whose forked
pool suits scans: see its docstring). Workers are started with `spawn` (no inherited threads or locks) and ignore SIGINT: only this
process decides when to stop. On Ctrl-C or SIGTERM it stops handing out work, sends each worker
SIGTERM, which raises `SystemExit` inside the grading, so the grader's own `finally` blocks stop
the sandbox and remove its folder, and then waits for them. A worker that does not stop in time is
killed (and named). Results that arrive after the stop began are dropped: a half-flown grading is
never signed.

A worker is also told SIGTERM by the kernel when this process dies without stopping it
(SIGKILL: `PR_SET_PDEATHSIG`), so it stops its sandbox itself; what a worker killed outright
leaves (its sandbox, its folder, both named by its token) the next run reaps.

The signing key stays in this process; workers return the result and predicate to sign.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, NamedTuple

from plimsoll_ci.errors import PlimsollError
from plimsoll_ci.pool import usable_cores as usable_cores  # its callers' name
from plimsoll_ci.squeeze.grader import Graded, Setup, Task

STOP_WAIT_S = 60.0


class Interrupted(Exception):
    """The run was stopped by a signal (SIGINT or SIGTERM)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class GradingFailed(PlimsollError):
    """A grading could not happen (the sandbox or its input, not the controller): stop the job."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Done(NamedTuple):
    """A grading that finished."""

    index: int  # type: ignore[assignment]  # shadows tuple.index, on purpose
    graded: Graded
    wall_s: float


def _stop_me(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the cleanup that follows must not be cut
    raise SystemExit(128 + signum)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _follow_parent(parent: int) -> None:
    """Have the kernel send this worker SIGTERM when the run's process dies (Linux), and stop
    now if it is gone already."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the stop on SIGTERM / Ctrl-C still holds
        pass
    if os.getppid() != parent:
        raise SystemExit(128 + signal.SIGTERM)


def _worker(conn: Connection, setup: Setup, grade_fn: Callable[[Task, Setup], Graded],
            parent: int = 0) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_me)
    try:
        if parent:
            _follow_parent(parent)
        _serve(conn, setup, grade_fn)
    finally:
        _leave_nothing()


def _serve(conn: Connection, setup: Setup, grade_fn: Callable[[Task, Setup], Graded]) -> None:
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        index, task = msg
        t0 = time.monotonic()
        try:
            graded = grade_fn(task, setup)
            conn.send(("ok", index, graded, time.monotonic() - t0))
        except PlimsollError as e:
            conn.send(("error", index, (str(e), e.exit_code), 0.0))
        except Exception as e:  # a bug in the grader: report it, with where it happened
            tail = "".join(traceback.format_exception(e)[-3:]).strip().replace("\n", " | ")
            conn.send(("error", index, (f"{type(e).__name__}: {e} ({tail[-400:]})", 2), 0.0))


def _leave_nothing() -> None:
    """A worker's last step, however it ends: stop any sandbox it still runs and remove any
    folder it staged. The grader's own `finally` blocks do this unless the stop lands in them
    (SIGTERM in the middle of removing a folder left the rest of it behind)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    from plimsoll_ci.sandbox import session, stage

    session.close_all()
    stage.cleanup_all()


class _Worker(NamedTuple):
    process: Any
    conn: Connection


def run(tasks: Sequence[Task], setup: Setup, jobs: int, on_start: Callable[[int], None],
        on_done: Callable[[Done], None],
        grade_fn: Callable[[Task, Setup], Graded] | None = None) -> None:
    """Grade every task with `jobs` workers; `on_done` for each as it finishes (any order).

    Raises Interrupted on SIGINT / SIGTERM and GradingFailed when a grading cannot happen; in
    both cases every worker (and so every sandbox) is stopped first.
    """
    from plimsoll_ci.squeeze.grader import grade

    grade_fn = grade_fn or grade
    ctx = multiprocessing.get_context("spawn")
    pending = list(range(len(tasks)))[::-1]
    busy: dict[int, int] = {}  # worker slot -> task index
    workers: list[_Worker] = []

    def to_interrupt(signum: int, frame: Any) -> None:
        raise Interrupted(signum)

    old_term = signal.signal(signal.SIGTERM, to_interrupt)
    old_int = signal.getsignal(signal.SIGINT)
    try:
        for _ in range(max(1, min(jobs, len(tasks)))):
            here, there = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(there, setup, grade_fn, os.getpid()), daemon=True,
                            name="plimsoll-squeeze-worker")
            p.start()
            there.close()
            workers.append(_Worker(p, here))

        def hand_out(slot: int) -> None:
            if pending:
                index = pending.pop()
                busy[slot] = index
                workers[slot].conn.send((index, tasks[index]))
                on_start(index)

        for slot in range(len(workers)):
            hand_out(slot)
        while busy:
            conns = {w.conn: slot for slot, w in enumerate(workers) if slot in busy}
            sentinels = {w.process.sentinel: slot for slot, w in enumerate(workers)
                         if slot in busy}
            ready = wait(list(conns) + list(sentinels), timeout=1.0)
            for item in ready:
                if item in conns:
                    slot = conns[item]
                    try:
                        status, index, payload, wall = item.recv()
                    except EOFError:  # it died without a word (its last message was read)
                        _died(workers[slot], busy[slot])
                    del busy[slot]
                    if status == "error":
                        message, code = payload
                        raise GradingFailed(f"{message}", code)
                    on_done(Done(index, payload, wall))
                    hand_out(slot)
                elif sentinels[item] in busy:
                    slot = sentinels[item]
                    if workers[slot].conn.poll():
                        continue  # its last message (or the end of its pipe) is read above
                    _died(workers[slot], busy[slot])
        for w in workers:
            w.conn.send(None)
    except KeyboardInterrupt:
        _stop(workers)
        raise Interrupted(signal.SIGINT) from None
    except BaseException:
        _stop(workers)
        raise
    finally:
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int)
    for w in workers:
        w.process.join(10)


def _died(worker: _Worker, index: int) -> None:
    worker.process.join(5)  # its exit code, once the kernel has it
    raise GradingFailed(f"the worker grading task {index + 1} died (exit code "
                        f"{worker.process.exitcode}); nothing of it was signed", 2)


def _stop(workers: list[_Worker]) -> None:
    """SIGTERM every live worker, wait for their sandboxes to stop; kill what outlives the wait."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not cut the cleanup
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for w in workers:
        if w.process.is_alive():
            try:
                os.kill(w.process.pid, signal.SIGTERM)
            except OSError:
                pass
    deadline = time.monotonic() + STOP_WAIT_S
    stuck = []
    for w in workers:
        w.process.join(max(0.0, deadline - time.monotonic()))
        if w.process.is_alive():
            stuck.append(str(w.process.pid))
            w.process.kill()
            w.process.join(5)
    for w in workers:
        w.conn.close()
    if stuck:
        import sys

        print(f"plimsoll-ci squeeze: worker(s) {', '.join(stuck)} did not stop within "
              f"{STOP_WAIT_S:g} s and were killed; a sandbox of theirs may be left running",
              file=sys.stderr)

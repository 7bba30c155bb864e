"""Worker processes for scans that split across cores: the one way plimsoll-ci forks workers.

- `default_jobs()`: how many workers this process may use (its CPUs, at most 8).
- `start(jobs, init, initargs)`: a pool of forked workers, each set up once by `init(*initargs)`
  (its own engine, its own `git cat-file` stream); None when one job is asked for or forking is
  not safe here, so the caller works in its own process.
- `run(fn, calls, jobs, ...)`: `fn(*args)` for each argument tuple of `calls`, results in order,
  in workers when it pays and in this process otherwise.

Workers are forked (the engine and the withheld set are inherited, not pickled), only from a
single-threaded process (forking a threaded one can deadlock), and ignore Ctrl-C: the parent gets
it, stops the pool and keeps what finished.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any, TypeVar

T = TypeVar("T")
MAX_JOBS = 8


def default_jobs(limit: int = MAX_JOBS) -> int:
    """Worker processes to use: the CPUs this process may run on, at most `limit`."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, limit))


def can_fork() -> bool:
    """Whether workers can be forked from this process now (fork exists, one thread runs)."""
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1


def _worker_start(init: Callable[..., object] | None, initargs: tuple) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    if init is not None:
        init(*initargs)


def start(jobs: int, init: Callable[..., object] | None = None,
          initargs: tuple = ()) -> Executor | None:
    """`jobs` forked workers, each running `init(*initargs)` first; None when `jobs` is 1 or
    forking is not safe here. The workers start now, before the caller opens pipes they could
    inherit. Shut it down with `pool.shutdown(wait=True, cancel_futures=True)`."""
    if jobs <= 1 or not can_fork():
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"),
                               initializer=_worker_start, initargs=(init, initargs))
    pool.submit(int).result()  # launch the workers now
    return pool


def run(fn: Callable[..., T], calls: Sequence[tuple], jobs: int | None = None,
        init: Callable[..., object] | None = None, initargs: tuple = ()) -> list[T]:
    """`[fn(*args) for args in calls]`, in order; spread over up to `jobs` workers (default:
    `default_jobs()`) when there are several calls and forking is safe, else run here (after
    `init(*initargs)`, as a worker would)."""
    jobs = default_jobs() if jobs is None else max(1, jobs)
    pool = start(min(jobs, len(calls)), init, initargs) if len(calls) > 1 else None
    if pool is None:
        if init is not None:
            init(*initargs)
        return [fn(*args) for args in calls]
    try:
        futures: list[Any] = [pool.submit(fn, *args) for args in calls]
        return [f.result() for f in futures]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

"""Worker processes for scans that split across cores: the one way plimsoll-ci forks workers.

- `usable_cores()`: the CPUs this process may run on; `default_jobs()`: how many workers it may
  use (those CPUs, at most 8).
- `start(jobs, init, initargs, close)`: a pool of forked workers, each set up once by
  `init(*initargs)` (its own engine, its own `git cat-file` stream) after closing the inherited
  descriptors `close` (the caller's pipes to a running process); None when one job is asked for
  or forking is not safe here, so the caller works in its own process.
- `run(fn, calls, jobs, ...)`: `fn(*args)` for each argument tuple of `calls`, results in order,
  in workers when it pays and in this process otherwise.
- `collector_paused()`: Python's cyclic collector off while a caller builds a large heap of
  records without cycles (a history replay, a pre-commit scan), as it was afterwards; workers
  forked meanwhile collect their own garbage.
- `InOrder`: work handed out one piece at a time (to a pool once there is one, else done here),
  each result taken in the order the work was given, with a bound on what waits in the pool.

Workers are forked (the engine and the withheld set are inherited, not pickled), only from a
single-threaded process (forking a threaded one can deadlock), and ignore Ctrl-C: the parent gets
it, stops the pool and keeps what finished.

Who uses it: the ship scan (`scan.Verdicts`, `start`), history's blob scan (`start`), the
tripwire over a large folder of requests (`run`) and a bundle's verifier with `workers` (`run`).
One module starts processes its own way, on purpose: `squeeze/pool.py`. Its workers each run a
grading in a sandbox for minutes, so they are spawned (no inherited threads, locks or heap),
stopped one by one with SIGTERM so each grading's own `finally` stops its sandbox, and told
SIGTERM by the kernel when the parent dies (`PR_SET_PDEATHSIG`); a scan worker needs none of it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Executor

T = TypeVar("T")
MAX_JOBS = 8


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity, else the CPUs online)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, n)


def default_jobs(limit: int = MAX_JOBS) -> int:
    """Worker processes to use: the CPUs this process may run on, at most `limit`."""
    return max(1, min(usable_cores(), limit))


def can_fork() -> bool:
    """Whether workers can be forked from this process now (fork exists, one thread runs)."""
    import multiprocessing

    return ("fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
            and not multiprocessing.current_process().daemon)  # a daemon may have no children


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection inside; the collector as it was afterwards (on an error
    too). A history replay's trees, records and verdicts and a pre-commit scan's index and set
    hold no cycles and are freed by their counts, and the collector's passes over them were
    0.06-0.2 s of a replay of requests (a full collection alone 0.02-0.16 s, growing with the
    heap) and 3 ms of a warm hook run (10-15 ms of a cold one). Workers `start` forks meanwhile
    turn it back on for themselves."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _worker_start(init: Callable[..., object] | None, initargs: tuple,
                  close: tuple[int, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    gc.enable()  # (the parent may have paused it: a worker's own garbage is collected)
    for fd in close:  # a pipe of the parent's: its process must see the parent's end alone
        try:
            os.close(fd)
        except OSError:
            pass
    if init is not None:
        init(*initargs)


def start(jobs: int, init: Callable[..., object] | None = None,
          initargs: tuple = (), close: Sequence[int] = ()) -> Executor | None:
    """`jobs` forked workers, each closing the descriptors `close` and then running
    `init(*initargs)`; None when `jobs` is 1 or forking is not safe here. The workers start now:
    a pipe the caller opens later is never theirs, and one it holds open already is theirs too
    unless it is in `close` (a process writing to it would not see the caller close its end).
    Shut it down with `pool.shutdown(wait=True, cancel_futures=True)`."""
    if jobs <= 1 or not can_fork():
        return None
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"),
                               initializer=_worker_start,
                               initargs=(init, initargs, tuple(close)))
    # What the workers inherit is frozen for their collector (never walked there: a full
    # collection would walk, and copy page by page, this whole process's heap)
    gc.freeze()
    try:
        pool.submit(int).result()  # launch the workers now
    finally:
        gc.unfreeze()
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


class InOrder:
    """Results taken in the order their work was given, whether it ran in a worker or here.

    `put(fn, args, take)` runs `fn(*args)` in `pool` when there is one (set it at any time), else
    here and now (`here=True`: here in any case, for work that cannot be pickled), then calls
    `take(result)` once every earlier result has been taken. At most `ahead` pieces of work wait
    in the pool; `put` then waits for the oldest. `drain()` takes everything left; a worker's
    exception is raised where its result is taken.
    """

    def __init__(self, pool: Executor | None = None, ahead: int = 4) -> None:
        self.pool = pool
        self.ahead = ahead
        self._queue: deque[tuple[Any, Any, Callable[[Any], None]]] = deque()

    @property
    def idle(self) -> bool:
        """No pool and nothing waiting: what is given now is taken now."""
        return self.pool is None and not self._queue

    def put(self, fn: Callable[..., T], args: tuple, take: Callable[[T], None],
            here: bool = False) -> None:
        """Run `fn(*args)` (in the pool or here) and `take` its result in turn."""
        if not self._queue and (self.pool is None or here):  # nothing waits: take it now
            take(fn(*args))
            return
        if self.pool is None or here:
            self._queue.append((None, fn(*args), take))
        else:
            self._queue.append((self.pool.submit(fn, *args), None, take))
        self._take(wait=False)

    def drain(self) -> None:
        """Wait for all the work given and take every result, in order."""
        self._take(wait=True)

    def _take(self, wait: bool) -> None:
        while self._queue:
            future, result, take = self._queue[0]
            if future is not None:
                waiting = sum(1 for f, _, _ in self._queue if f is not None and not f.done())
                if not wait and not future.done() and waiting <= self.ahead:
                    return
                result = future.result()
            self._queue.popleft()
            take(result)

"""The one worker-pool helper: ordered results, forked workers set up once, safe fallbacks."""

from __future__ import annotations

import gc
import os
import signal
import subprocess
import threading

from plimsoll_ci import pool

_STATE: dict[str, int] = {}


def _init(tag: int) -> None:
    _STATE["tag"] = tag
    _STATE["inits"] = _STATE.get("inits", 0) + 1


def _work(x: int) -> tuple[int, int, int, int]:
    return x * x, os.getpid(), _STATE["tag"], _STATE["inits"]


def test_run_returns_results_in_order_from_workers_set_up_once_each() -> None:
    got = pool.run(_work, [(i,) for i in range(40)], jobs=2, init=_init, initargs=(7,))
    assert [g[0] for g in got] == [i * i for i in range(40)]
    assert {g[2] for g in got} == {7} and {g[3] for g in got} == {1}
    pids = {g[1] for g in got}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_one_job_or_one_call_runs_in_this_process() -> None:
    _STATE.clear()
    for jobs, calls in ((1, [(1,), (2,)]), (4, [(3,)])):
        got = pool.run(_work, calls, jobs=jobs, init=_init, initargs=(3,))
        assert {g[1] for g in got} == {os.getpid()}
    assert pool.start(1) is None


def test_no_worker_is_forked_while_another_thread_runs() -> None:
    stop = threading.Event()
    t = threading.Thread(target=stop.wait)
    t.start()
    try:
        assert not pool.can_fork()
        assert pool.start(2) is None
        assert {g[1] for g in pool.run(_work, [(1,), (2,)], jobs=2, init=_init,
                                       initargs=(1,))} == {os.getpid()}
    finally:
        stop.set()
        t.join()


def test_default_jobs_is_between_one_and_the_cap() -> None:
    assert 1 <= pool.default_jobs() <= pool.MAX_JOBS
    assert pool.default_jobs(limit=1) == 1


def test_workers_close_the_pipes_they_are_given_so_a_writer_sees_its_reader_gone() -> None:
    # A process started before the workers (the history walk's `git log`) writes to a pipe;
    # when this process stops reading and closes its end, the writer must get SIGPIPE, not
    # block forever on a pipe a worker still holds.
    writer = subprocess.Popen(["yes"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert writer.stdout is not None
    workers = pool.start(2, close=(writer.stdout.fileno(),))
    assert workers is not None
    try:
        assert workers.submit(abs, -3).result() == 3  # (they are up)
        writer.stdout.close()
        assert writer.wait(timeout=10) == -signal.SIGPIPE
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        workers.shutdown(wait=True, cancel_futures=True)


def test_workers_collect_their_own_garbage_and_the_parent_keeps_its_heap_unfrozen() -> None:
    # A caller may pause the collector while it builds a large heap (a history replay); the
    # workers it forks then must not run without one, and what they inherit stays frozen for
    # them only (this process's next collection walks all of its objects again).
    gc.disable()
    try:
        workers = pool.start(2)
        assert workers is not None
        try:
            assert workers.submit(gc.isenabled).result() is True
            assert workers.submit(gc.get_freeze_count).result() > 0  # inherited: not walked
        finally:
            workers.shutdown(wait=True, cancel_futures=True)
        assert gc.get_freeze_count() == 0 and not gc.isenabled()
    finally:
        gc.enable()


def test_the_collector_pause_gives_it_back_as_it_was_even_on_an_error() -> None:
    try:
        for was in (True, False):
            (gc.enable if was else gc.disable)()
            with pool.collector_paused():
                assert not gc.isenabled()
            assert gc.isenabled() is was
            try:
                with pool.collector_paused():
                    raise KeyError("x")
            except KeyError:
                pass
            assert gc.isenabled() is was
    finally:
        gc.enable()


def _slow(x: int, delay: float) -> tuple[int, int]:
    import time

    time.sleep(delay)
    return x, os.getpid()


def test_in_order_takes_results_in_the_order_given_though_later_work_finishes_first() -> None:
    workers = pool.start(2)
    assert workers is not None
    taken: list[tuple[str, int]] = []
    work = pool.InOrder(ahead=3)
    try:
        work.put(_slow, (0, 0.0), lambda r: taken.append(("here", r[0])))  # no pool yet: now
        assert taken == [("here", 0)]
        work.pool = workers
        for i in range(1, 9):  # the earlier, the slower: later ones are done first
            work.put(_slow, (i, 0.04 * (9 - i)), lambda r: taken.append(("pool", r[0])))
            if i == 4:  # work that cannot leave this process waits its turn too
                work.put(_slow, (40, 0.0), lambda r: taken.append(("here", r[0])), here=True)
        work.drain()
    finally:
        workers.shutdown(wait=True, cancel_futures=True)
    assert taken == [("here", 0), *(("pool", i) for i in range(1, 5)), ("here", 40),
                     *(("pool", i) for i in range(5, 9))]


def _boom(x: int) -> int:
    raise ValueError(f"bad input {x}")


def test_in_order_raises_a_workers_exception_where_its_result_is_taken() -> None:
    import pytest

    workers = pool.start(2)
    assert workers is not None
    taken: list[int] = []
    work = pool.InOrder(workers)
    try:
        # taken at the put that finds it done, or at the drain: wherever its turn comes, after
        # the earlier result was taken
        with pytest.raises(ValueError, match="bad input 2"):
            work.put(_slow, (1, 0.0), lambda r: taken.append(r[0]))
            work.put(_boom, (2,), taken.append)
            work.drain()
    finally:
        workers.shutdown(wait=True, cancel_futures=True)
    assert taken == [1]

"""The scanning workers of a cold replay start with the engine loaded: forked after numpy and the
content path are imported (each worker importing numpy again cost 0.15-0.2 s of CPU, twice), and
numpy loaded without OpenBLAS's spinning threads. The walk's `git log`, started before them, is
not held open by them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kit.history import GitRepo, make_set, many_steps

PROBE = """
import json, os, sys
from plimsoll_ci import history, pool, withheld

seen = []
start = pool.start

def spy(jobs, init=None, initargs=(), close=()):
    seen.append({"numpy": "numpy" in sys.modules,
                 "contents": "plimsoll_ci.engine.contents" in sys.modules,
                 "threads": len(os.listdir("/proc/self/task")), "close": len(close)})
    return start(jobs, init, initargs, close)

pool.start = spy
report = history.replay(sys.argv[1], withheld.load(sys.argv[2]),
                        history.Options(jobs=int(sys.argv[3]), use_cache=False, progress=False))
print(json.dumps({"seen": seen, "entries": len(report.entries),
                  "blas after": "OPENBLAS_NUM_THREADS" in os.environ}))
"""


def _probe(repo: GitRepo, wset: Path, jobs: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run([sys.executable, "-c", PROBE, str(repo.path), str(wset), str(jobs)],
                         capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
def test_cold_workers_are_forked_with_the_engine_loaded_and_one_blas_thread(
        globrepo: GitRepo, tmp_path: Path) -> None:
    many_steps(globrepo)  # 150 commits: workers start during the walk
    wset = make_set(tmp_path)
    two = _probe(globrepo, wset, 2)
    (at_fork,) = two["seen"]
    # no OpenBLAS thread; the workers close both pipes of the log that git already writes;
    # numpy never loaded (the engine's passes are compiled or pure Python)
    assert at_fork == {"numpy": False, "contents": True, "threads": 1, "close": 2}
    assert two["entries"] == 1 and two["blas after"] is False  # the user's environment restored
    one = _probe(globrepo, wset, 1)  # one job: nothing forked, nothing loaded ahead of need
    assert one["entries"] == 1 and one["blas after"] is False
    assert {s["numpy"] for s in one["seen"]} == {False}


def test_a_replay_pauses_the_cyclic_collector_and_restores_it(globrepo: GitRepo,
                                                              tmp_path: Path) -> None:
    # Its trees, records and verdicts hold no cycles; a full collection walked them all (0.1 s
    # and more of a run on a real repository), and the younger ones ran every 700 objects.
    import gc

    from plimsoll_ci import history, withheld

    many_steps(globrepo)
    wset = withheld.load(make_set(tmp_path))
    runs: list[int] = []

    def count(phase: str, info: dict) -> None:  # a collection within the walk or the report
        frame = sys._getframe()
        while frame is not None and frame.f_code.co_name != "_replay":
            frame = frame.f_back
        if phase == "start" and frame is not None:
            runs.append(info["generation"])

    gc.callbacks.append(count)
    try:
        for enabled in (True, False):
            options = history.Options(jobs=1, use_cache=False, progress=False)
            (gc.enable if enabled else gc.disable)()
            report = history.replay(str(globrepo.path), wset, options)
            assert len(report.entries) == 1
            assert gc.isenabled() is enabled  # the caller's setting, as it was
    finally:
        gc.callbacks.remove(count)
        gc.enable()
    assert runs == []


QUICK = """
import atexit, sys
atexit.register(lambda: print("interpreter teardown ran", file=sys.stderr))
from plimsoll_ci.cli import program
sys.argv = ["plimsoll-ci", *sys.argv[1:]]
raise SystemExit(program())
"""


def test_the_history_program_ends_once_its_report_is_out_and_other_commands_as_before(
        globrepo: GitRepo, tmp_path: Path) -> None:
    # The interpreter's teardown of a replay's heap took 0.05-0.1 s of a run on requests; the
    # program skips it, but only after its whole report is written (to a pipe, every commit).
    many_steps(globrepo)
    wset = make_set(tmp_path)
    big = [sys.executable, "-c", QUICK, "history", "--set", str(wset), "--format", "json",
           "--no-progress", "--every-commit"]
    proc = subprocess.run(big, cwd=globrepo.path, capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["commits_scanned"] == 151 and len(doc["entries"]) == 1
    assert "interpreter teardown ran" not in proc.stderr
    bad = subprocess.run([*big[:3], "history", "--set", str(tmp_path / "none.json")],
                         cwd=globrepo.path, capture_output=True, text=True)
    assert bad.returncode == 2 and "interpreter teardown ran" in bad.stderr  # errors: as before
    other = subprocess.run([*big[:3], "scan", "--set", str(wset), "tasks"], cwd=globrepo.path,
                           capture_output=True, text=True)
    assert other.returncode == 0 and "interpreter teardown ran" in other.stderr

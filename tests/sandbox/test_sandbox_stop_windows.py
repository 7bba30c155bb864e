"""A stop that lands where a staged folder is held outside any clean-up leaves no folder behind.

Two windows, each found by a run whose Ctrl-C left a `plimsoll-grade-*` folder: a squeeze
worker told SIGTERM while it removed a finished grading's folder (its `finally` cut in the
middle, and nothing after it), and a signal between a folder's creation and its record (the
record is what the stop's clean-up sweeps). Both are driven here by real signals, not by raising.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from plimsoll_ci.sandbox import stage

CONTROLLER = "class Controller:\n    def step(self, obs):\n        return {}\n"


def _stage_then_stop(task: str, setup: object) -> object:
    """A grader holding a staged folder when the run's stop reaches its worker."""
    stage.stage(task)
    os.kill(os.getpid(), signal.SIGTERM)  # what the run sends each worker on Ctrl-C
    time.sleep(30)  # (never reached: the worker stops at the signal)
    raise AssertionError("the worker went on after SIGTERM")


def _die(task: str, setup: object) -> object:
    """A grader whose process dies without a word (a crash of the interpreter)."""
    os._exit(3)


# The pool runs in a child of its own, so a run that never ends fails here instead of hanging.
POOL = """
import sys
sys.path.insert(0, sys.argv[1])
import test_sandbox_stop_windows as here
from plimsoll_ci.squeeze import pool

if __name__ == "__main__":
    try:
        pool.run([sys.argv[3]], None, 1, lambda i: None, lambda d: None,
                 grade_fn=getattr(here, sys.argv[2]))
    except pool.GradingFailed as e:
        print(e)
"""


def _pool(grade_fn: str, task: str, tmp: Path) -> str:
    out = subprocess.run([sys.executable, "-c", POOL, str(Path(__file__).parent), grade_fn, task],
                         capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, TMPDIR=str(tmp)))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_worker_stopped_while_it_holds_a_staged_folder_removes_it(private_tmp: Path,
                                                                      tmp_path: Path) -> None:
    controller = tmp_path / "controller.py"
    controller.write_text(CONTROLLER)
    said = _pool("_stage_then_stop", str(controller), private_tmp)
    assert said == "the worker grading task 1 died (exit code 143); nothing of it was signed"
    assert [p.name for p in private_tmp.iterdir()] == []


def test_a_worker_that_dies_without_a_word_fails_the_run_naming_its_exit_code(
        private_tmp: Path) -> None:
    said = _pool("_die", "unused", private_tmp)  # it spun on the closed pipe before
    assert said == "the worker grading task 1 died (exit code 3); nothing of it was signed"


# A signal that lands right after the folder is made: mkdtemp is wrapped to send it then. With
# `thread`, another thread runs meanwhile (a finished sandbox's stderr reader in a squeeze
# worker): the kernel hands it the signal, which this thread holds, and Python runs the handler
# in this thread at once, before the folder is recorded (a squeeze stopped by SIGTERM left a
# `plimsoll-grade-*` folder about one run in four).
WINDOW = """
import os, signal, sys, tempfile, threading, time
from pathlib import Path
from plimsoll_ci.sandbox import owner, stage

real = tempfile.mkdtemp

def mkdtemp(*args, **kwargs):
    made = real(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGTERM)
    until = time.monotonic() + 2  # time for another thread to take it, if one runs
    while time.monotonic() < until:
        time.sleep(0.01)
    return made

def stop(signum, frame):
    raise SystemExit(143)

if sys.argv[2] == "thread":
    threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
owner.tempfile = type(sys)("tempfile_in_the_window")
owner.tempfile.mkdtemp = mkdtemp
owner.tempfile.gettempdir = tempfile.gettempdir
signal.signal(signal.SIGTERM, stop)
try:
    stage.stage(sys.argv[1])
    print("not stopped")
except SystemExit:
    print("stopped")
stage.cleanup_all()  # the stop's clean-up, as a command or a worker runs it
print(sorted(p.name for p in Path(tempfile.gettempdir()).iterdir()))
"""


@pytest.mark.parametrize("threads", ["alone", "thread"])
def test_a_signal_right_after_a_folder_is_made_still_finds_it_recorded(
        private_tmp: Path, tmp_path: Path, threads: str) -> None:
    controller = tmp_path / "controller.py"
    controller.write_text(CONTROLLER)
    out = subprocess.run([sys.executable, "-c", WINDOW, str(controller), threads],
                         capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, TMPDIR=str(private_tmp)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["stopped", "[]"]

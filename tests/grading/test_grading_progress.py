"""Progress of long gradings: flights ended as they end, a bar on a terminal, plain lines in CI.

The library tells its callback how many flights have ended while a sandbox flies (not only when
the sandbox is done); `grade` shows it on stderr as a `rich` bar on a terminal and as plain,
rate-limited lines where stderr is not a terminal or `CI` / `GITHUB_ACTIONS` is set.
"""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from kit.cli import run_process

from plimsoll_ci.commands._progress import Display, choose
from plimsoll_ci.grading import seeds
from plimsoll_ci.grading.request import GradeRequest, Progress
from plimsoll_ci.grading.sign import grade_and_sign

REPO = Path(__file__).resolve().parents[2]
HONEST = REPO / "plimsoll_sim" / "controllers" / "honest.py"
ANSI = re.compile(r"\x1b\[")


def test_the_callback_hears_flights_end_while_the_sandbox_flies() -> None:
    events: list[Progress] = []
    result = grade_and_sign(GradeRequest(str(HONEST), "easy", seeds.given("1-8"), "process"),
                            progress=events.append)
    flying = [e.done for e in events if e.event == "flying"]
    assert flying, [e.event for e in events]
    assert flying == sorted(flying) and flying[-1] == 8
    assert len(set(flying)) == len(flying)  # told only when the count grows
    assert [e.event for e in events][-1] == "flown" and events[-1].done == result.total == 8
    assert all(e.total == 8 for e in events)


@pytest.mark.parametrize("env, tty, mode", [
    ({}, True, "bar"), ({}, False, "lines"), ({"CI": "true"}, True, "lines"),
    ({"GITHUB_ACTIONS": "true"}, True, "lines"),
])
def test_auto_draws_a_bar_only_on_a_terminal_outside_ci(monkeypatch, env, tty, mode) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)

    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return tty

    assert choose("auto", Stream()) == mode
    assert choose("off", Stream()) == "off"


def test_one_display_counts_controllers_and_flights_over_parallel_gradings() -> None:
    out = io.StringIO()
    display = Display(out, "lines", controllers=3, prog="squeeze", every_s=3600)
    calls = [display.callback(name) for name in ("a", "b", "c")]

    def fly(callback, refused: bool) -> None:
        callback(Progress("scanned", 0, 10, ""))
        if refused:
            callback(Progress("refused", 0, 10, "1 sealed finding(s)"))
            return
        for n in range(1, 11):
            callback(Progress("flying", n, 10, ""))
        callback(Progress("flown", 10, 10, ""))

    threads = [threading.Thread(target=fly, args=(c, i == 2)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    display.close()
    lines = out.getvalue().splitlines()
    assert lines[-1].startswith("squeeze: progress: 30/30 flights ended, 3/3 controllers done")
    # a line when each controller is done, plus one when each started; nothing per flight
    assert len(lines) == 6, lines
    assert not ANSI.search(out.getvalue())


def _grade(*extra: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_process("grade", "--controller", str(HONEST), "--course", "easy", "--seeds", "1-4",
                       "--provider", "process", "--format", "json", *extra, env=env,
                       inherit=False, timeout=300)


def test_grade_prints_plain_progress_lines_in_a_ci_log() -> None:
    r = _grade(env={**os.environ, "CI": "true"})
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.splitlines() if "progress:" in x]
    assert lines[0].startswith("plimsoll-ci grade: progress: 0/4 flights ended, "
                               "0/1 controllers done (")
    assert lines[-1].startswith("plimsoll-ci grade: progress: 4/4 flights ended, "
                                "1/1 controllers done")
    assert "\r" not in r.stderr and not ANSI.search(r.stderr)


def test_grade_progress_off_prints_none() -> None:
    r = _grade("--progress", "off", env={**os.environ, "CI": "true"})
    assert r.returncode == 0, r.stderr
    assert "progress" not in r.stderr


def test_grade_draws_a_bar_on_a_terminal() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS")}
    env.update({"TERM": "xterm", "COLUMNS": "100"})
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "plimsoll_ci", "grade", "--controller",
                                 str(HONEST), "--course", "easy", "--seeds", "1-4",
                                 "--provider", "process", "--format", "json"],
                                stdout=subprocess.PIPE, stderr=secondary, env=env, text=True)
        os.close(secondary)
        shown = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # the terminal closed: the grading is over
                break
            if not chunk:
                break
            shown += chunk
        out, _ = proc.communicate(timeout=300)
    finally:
        os.close(primary)
    assert proc.returncode == 0
    text = shown.decode("utf-8", "replace")
    assert "flights" in text and "controllers done" in text and ANSI.search(text)
    assert "progress:" not in text  # the bar, not the CI lines
    assert '"total": 4' in out  # the result itself is untouched on stdout

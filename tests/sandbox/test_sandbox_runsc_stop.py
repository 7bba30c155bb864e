"""A gVisor sandbox stopped while its program still runs is deleted by runsc, not left to runsc's
stop deadline: `delete --force` alone on a running sandbox waited five seconds and then failed
("context deadline exceeded"), on every hung, over-budget or interrupted flight and command.

The real runsc runs behind a shim ($PLIMSOLL_RUNSC) that writes down each call's arguments and
exit status, so the tests read what runsc itself answered.
"""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from plimsoll_ci.grading.lockstep import CpuBudget
from plimsoll_ci.grading.request import GradeRequest
from plimsoll_ci.grading.run import grade
from plimsoll_ci.grading.seeds import Seed
from plimsoll_ci.sandbox import leftovers
from plimsoll_ci.sandbox.command import CommandLimits, open_up, run_in_sandbox

pytestmark = pytest.mark.gvisor

SHIM = """#!/bin/sh
case "$*" in
  *" run "*) exec "{real}" "$@" ;;
esac
"{real}" "$@"
rc=$?
printf '%s %s\\n' "$rc" "$*" >> "{log}"
exit $rc
"""


@pytest.fixture
def runsc_log(gvisor: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    real = shutil.which("runsc")
    assert real, "the gvisor fixture found runsc"
    # This process's one reap of killed runs' leftovers (its first sandbox does it) happens now,
    # not behind the shim: another test's gone sandbox is no call of this test's.
    leftovers.reap_once()
    log = tmp_path / "runsc.log"
    shim = tmp_path / "runsc-shim"
    shim.write_text(SHIM.format(real=real, log=log))
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PLIMSOLL_RUNSC", str(shim))
    return log


def _calls(log: Path, verb: str) -> list[tuple[int, str]]:
    rows = [line.split(" ", 1) for line in log.read_text().splitlines()] if log.exists() else []
    return [(int(rc), args) for rc, args in rows if f" {verb} " in f" {args} "]


def test_a_flight_hanging_in_step_is_stopped_and_deleted_by_runsc(runsc_log: Path,
                                                                  tmp_path: Path) -> None:
    controller = tmp_path / "controller.py"
    controller.write_text("import time\n\nclass Controller:\n    def __init__(self, info):\n"
                          "        pass\n\n    def step(self, obs):\n        time.sleep(3600)\n")
    budget = CpuBudget(per_tick_s=0.05, tick_slack_s=0.5, startup_s=10.0, wall_tick_s=1.0,
                       wall_startup_s=60.0)
    graded = grade(GradeRequest(str(controller), "easy", [Seed("seeds:1", 4111111111, True)],
                                "gvisor", budget=budget))
    assert [f.reason for f in graded.flights] == ["timeout_wall"]
    deletes = _calls(runsc_log, "delete")
    assert deletes, runsc_log.read_text() if runsc_log.exists() else "runsc was never asked"
    assert all(rc == 0 for rc, _ in deletes), deletes  # before: 128, after the 5 s deadline
    assert _calls(runsc_log, "kill")  # every process in it killed first


def test_a_sandbox_deep_in_its_memory_bound_is_deleted_after_the_kill(runsc_log: Path,
                                                                       tmp_path: Path) -> None:
    """A program filling its memory bound does not end within runsc's deadline even after `kill
    --all` (a JavaScript controller allocating 8 GB under the 1 GB bound): its process group is
    killed from the host, then the delete succeeds."""
    controller = tmp_path / "controller.mjs"
    controller.write_text("export default class {\n  constructor(info) {}\n  step(obs) {\n"
                          "    const kept = [];\n    for (let i = 0; i < 32; i++) {\n"
                          "      const b = new Uint8Array(256 * 1024 * 1024);\n"
                          "      b.fill(1);\n      kept.push(b);\n    }\n"
                          "    throw new Error('ALLOCATED ' + kept.length);\n  }\n}\n")
    graded = grade(GradeRequest(str(controller), "easy", [Seed("seeds:1", 4111111111, True)],
                                "gvisor"))
    assert "ALLOCATED" not in graded.flights[0].detail
    deletes = _calls(runsc_log, "delete")
    assert deletes and all(rc == 0 for rc, _ in deletes), deletes  # before: 128


def test_a_command_past_its_timeout_is_stopped_and_deleted_by_runsc(runsc_log: Path,
                                                                    tmp_path: Path) -> None:
    folder = tmp_path / "copy"
    folder.mkdir()
    open_up(folder)
    result = run_in_sandbox("gvisor", folder, ["python", "-c", "import time; time.sleep(120)"],
                            CommandLimits(timeout_s=1))
    assert result.timed_out
    deletes = _calls(runsc_log, "delete")
    assert deletes and all(rc == 0 for rc, _ in deletes), deletes


def test_a_sandbox_that_ended_by_itself_is_deleted_too(runsc_log: Path) -> None:
    graded = grade(GradeRequest(str(Path(__file__).resolve().parents[2] / "plimsoll_sim" /
                                    "controllers" / "honest.py"), "easy",
                                [Seed("seeds:1", 4111111111, True)], "gvisor"))
    assert [f.reason for f in graded.flights] == ["landed"]
    deletes = _calls(runsc_log, "delete")
    assert deletes and all(rc == 0 for rc, _ in deletes), deletes

"""`squeeze run` with a job mixing Python and JavaScript controllers: each graded in its runtime,
the JavaScript cheater named by the code checks, the bundle verifies."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from kit.squeeze import REPO, need_gvisor

from plimsoll_ci.attest import keys
from plimsoll_ci.digests import make
from plimsoll_ci.errors import ConfigError
from plimsoll_ci.squeeze import job as job_mod
from plimsoll_ci.squeeze import progress
from plimsoll_ci.squeeze import run as run_mod
from plimsoll_ci.squeeze.grader import Setup
from plimsoll_ci.squeeze.verify import verify

CONTROLLERS = REPO / "plimsoll_sim" / "controllers"
FIXED_FRESH = make([623347347958, 884107995872, 71999863749, 129944532029])
JOB = """\
course: hard
fresh: {count: 4}
loops:
  steady:
    controller: loop.py
    rebuilds: [rebuilds/*]
control: [control/*]
"""


def mixed_job(base: Path) -> Path:
    (base / "rebuilds" / "workspace").mkdir(parents=True)
    (base / "control").mkdir()
    shutil.copy(CONTROLLERS / "honest.py", base / "loop.py")
    shutil.copy(CONTROLLERS / "honest.mjs", base / "rebuilds" / "honest.mjs")
    shutil.copy(CONTROLLERS / "cheater.mjs", base / "rebuilds" / "cheater.mjs")
    # a rebuild's workspace written in JavaScript
    shutil.copy(CONTROLLERS / "honest.mjs", base / "rebuilds" / "workspace" / "controller.mjs")
    shutil.copy(CONTROLLERS / "hover.mjs", base / "control" / "hover.mjs")
    shutil.copy(CONTROLLERS / "hover.py", base / "control" / "hover.py")
    (base / "squeeze.yaml").write_text(JOB)
    return base / "squeeze.yaml"


def test_a_job_names_javascript_controllers_and_workspaces(tmp_path):
    job = job_mod.load(mixed_job(tmp_path))
    assert job.loops[0].rebuilds == ("rebuilds/cheater.mjs", "rebuilds/honest.mjs",
                                     "rebuilds/workspace")
    assert job.control.rebuilds == ("control/hover.mjs", "control/hover.py")


def test_a_glob_matching_only_other_files_names_the_controller_kinds(tmp_path):
    (tmp_path / "loop.py").write_text("")
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "squeeze.yaml").write_text("course: hard\nloops:\n  a:\n    controller: loop.py\n"
                                           "    rebuilds: ['*.txt']\n")
    with pytest.raises(ConfigError, match=r"\.mjs or \.js file"):
        job_mod.load(tmp_path / "squeeze.yaml")


@pytest.mark.gvisor
@pytest.mark.slow
def test_a_job_mixing_python_and_javascript_grades_each_and_verifies(tmp_path):
    need_gvisor()
    job = job_mod.load(mixed_job(tmp_path / "job"))
    out = tmp_path / "out"
    log = io.StringIO()
    # Four fixed fresh seeds: the cheater matches a flight by its start within a tolerance, so
    # about one fresh flight in 150 passes for a practice one (and may land); drawn afresh each
    # run, four of them made this test fail now and then.
    outcome = run_mod.run(job, run_mod.Options(out, 2, Setup("gvisor", "kernel")),
                          progress.Plain(log), fresh_set=FIXED_FRESH)
    assert outcome.status == "done" and outcome.signed == 6, log.getvalue()
    assert verify(out, keys.load_public_key(out / "harness.pub")).ok
    records = {r["controller"]: r for r in json.loads((out / "evidence.json").read_text())
               ["records"]}
    cheater = records["rebuilds/cheater.mjs"]
    assert cheater["practice"] == [16, 16] and cheater["fresh"][0] == 0
    assert cheater["code_checks"]["generator"] and cheater["code_checks"]["source"]
    assert len(cheater["code_checks"]["practice_seeds"]) == 16
    for honest in ("loop.py", "rebuilds/honest.mjs", "rebuilds/workspace"):
        assert not any(records[honest]["code_checks"][k] for k in
                       ("generator", "source", "practice_seeds"))


@pytest.mark.gvisor
def test_run_code_runs_javascript_over_the_workspace_in_gvisor(gvisor):
    from plimsoll_ci.squeeze import sandboxed

    files = {"notes.txt": b"from the workspace\n"}
    code = ('import fs from "node:fs";\n'
            'console.log(fs.readFileSync("notes.txt", "utf8").trim(), process.version);\n'
            'process.exit(3);\n')
    ran = sandboxed.run_code(files, code, sandboxed.Bounds(), gvisor, "javascript")
    assert (ran.status, ran.exit_code) == ("ok", 3)
    assert "from the workspace v" in ran.output
    spin = sandboxed.run_code(files, "for (;;) {}\n", sandboxed.Bounds(cpu_s=2.0), gvisor,
                              "javascript")
    assert spin.status == "cpu" and spin.exit_code is None

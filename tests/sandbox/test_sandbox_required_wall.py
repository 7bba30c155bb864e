"""PLIMSOLL_BWRAP=required (what `squeeze k8s` puts in its shard pods): the `process` provider
grades in bubblewrap or not at all. The start-up check exits 2 naming the missing wall before
anything is written; a grading never starts bare; the evidence of every grading names its wall."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from plimsoll_ci.errors import SandboxError
from plimsoll_ci.grading.request import GradeRequest
from plimsoll_ci.grading.run import grade
from plimsoll_ci.grading.seeds import named
from plimsoll_ci.sandbox import process

REPO = Path(__file__).resolve().parents[2]
JOB = """\
course: easy
fresh: {count: 2}
loops:
  solo:
    controller: loop.py
    rebuilds: [rebuilds/*.py]
"""
# What bubblewrap says where a container's seccomp profile refuses it user namespaces.
REFUSING = "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"


def path_with(tmp_path: Path, bwrap: str | None) -> str:
    """A PATH holding what the run needs, with `bwrap` as given (a script) or none at all."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("ldd",):  # building the runtime root, if it is not built yet
        found = shutil.which(tool)
        if found:
            os.symlink(found, bin_dir / tool)
    if bwrap is not None:
        (bin_dir / "bwrap").write_text(bwrap)
        (bin_dir / "bwrap").chmod(0o755)
    return str(bin_dir)


@pytest.mark.parametrize("bwrap, said", [
    (None, "bwrap is not installed"),
    (REFUSING, "bwrap: No permissions to create new namespace"),
])
def test_a_required_wall_bubblewrap_cannot_make_exits_2_naming_it_and_writes_nothing(
        tmp_path, bwrap, said):
    job = tmp_path / "job"
    (job / "rebuilds").mkdir(parents=True)
    (job / "loop.py").write_text((REPO / "sim/controllers/hover.py").read_text())
    (job / "rebuilds" / "r.py").write_text((REPO / "sim/controllers/hover.py").read_text())
    (job / "squeeze.yaml").write_text(JOB)
    env = {**os.environ, "PATH": path_with(tmp_path, bwrap), process.BWRAP_ENV: "required"}
    for command in ("plan", "run"):
        out = tmp_path / command
        r = subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", command,
                            str(job / "squeeze.yaml"), "--out", str(out), "--provider", "process"],
                           capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "PLIMSOLL_BWRAP=required but bubblewrap cannot wall a grading here" in r.stderr
        assert said in r.stderr and "nothing was graded" in r.stderr
        assert not out.exists()


def test_a_required_wall_never_starts_a_grading_bare(tmp_path, monkeypatch, private_tmp):
    controller = tmp_path / "controller.py"
    controller.write_text((REPO / "sim/controllers/hover.py").read_text())
    monkeypatch.setenv("PATH", f"{path_with(tmp_path, REFUSING)}:{os.environ['PATH']}")
    monkeypatch.setenv(process.BWRAP_ENV, "required")
    with pytest.raises(SandboxError, match="bubblewrap cannot wall this grading .*not started"):
        grade(GradeRequest(str(controller), "easy", named("seeds", [5000000001]), "process"))


def test_the_evidence_names_the_wall_that_held(tmp_path, monkeypatch, private_tmp):
    if not shutil.which("bwrap") or process._bwrap_refused(shutil.which("bwrap")):
        if os.environ.get("CI") == "true":
            pytest.fail("bubblewrap is required in CI and does not work here", pytrace=False)
        pytest.skip("bubblewrap does not work here")
    controller = tmp_path / "controller.py"
    controller.write_text((REPO / "sim/controllers/hover.py").read_text())
    walls = []
    for setting in ("required", "0"):
        monkeypatch.setenv(process.BWRAP_ENV, setting)
        result = grade(GradeRequest(str(controller), "easy", named("seeds", [5000000001]),
                                    "process"))
        walls.append((result.evidence["runtime"], result.evidence["wall"], result.tier))
    assert walls == [("bubblewrap", process.WALLED, "process"),
                     ("none", process.UNWALLED, "process")]

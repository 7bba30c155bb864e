"""actions/grade: a valid composite action whose step grades, signs and verifies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ACTION = REPO / "actions" / "grade"
HONEST = REPO / "sim" / "controllers" / "honest.py"


def test_grade_action_validates_against_the_github_actions_schema() -> None:
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           "vendor.github-actions", str(ACTION / "action.yml")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _step(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    out, summary = tmp_path / "out", tmp_path / "summary.md"
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    shim = bindir / "plimsoll-ci"
    shim.write_text(f"#!/bin/sh\nexec {sys.executable} -m plimsoll_ci \"$@\"\n")
    shim.chmod(0o755)
    full = {**os.environ, "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(out),
            "GITHUB_STEP_SUMMARY": str(summary), "PATH": f"{bindir}:{os.environ['PATH']}",
            "PYTHONPATH": str(REPO), **env}
    return subprocess.run(["bash", str(ACTION / "grade.sh")], env=full, capture_output=True,
                          text=True, timeout=600, check=False, cwd=tmp_path)


def test_grade_step_writes_a_verified_bundle_and_outputs(tmp_path: Path) -> None:
    proc = _step(tmp_path, CONTROLLER=str(HONEST), COURSE="easy", FRESH="2", PROVIDER="process",
                 MIN_TIER="process")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = dict(line.split("=", 1) for line in (tmp_path / "out").read_text().splitlines())
    assert outputs["total"] == "2" and outputs["tier"] == "process"
    assert Path(outputs["bundle"]).is_file() and Path(outputs["public-key"]).is_file()
    result = json.loads(Path(outputs["result"]).read_text())
    assert result["total"] == 2
    assert "verified" in proc.stdout
    assert "Landed **" in (tmp_path / "summary.md").read_text()
    # only the public half of the run's key was written
    assert not list(tmp_path.glob("*.key"))


def test_grade_step_refuses_a_tier_below_the_minimum(tmp_path: Path) -> None:
    proc = _step(tmp_path, CONTROLLER=str(HONEST), COURSE="easy", FRESH="1", PROVIDER="process",
                 MIN_TIER="kernel")
    assert proc.returncode == 2
    assert "::error::" in proc.stdout


def test_grade_step_refuses_a_signing_key_without_its_public_key(tmp_path: Path) -> None:
    proc = _step(tmp_path, CONTROLLER=str(HONEST), PROVIDER="process",
                 PLIMSOLL_SIGNING_KEY="-----BEGIN PRIVATE KEY-----")
    assert proc.returncode == 2
    assert "public-key" in proc.stdout
    assert "BEGIN PRIVATE KEY" not in proc.stdout + proc.stderr

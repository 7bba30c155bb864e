"""`plimsoll-ci demo`, the README's main job: it finds the planted leak and grades in a sandbox."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from kit.cli import run_process

import plimsoll_sim as sim

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "argon"
SEEDS = [str(s) for s in sim.PRACTICE_SEEDS]  # what the example's withheld set holds, keyed


def _demo(*args: str) -> subprocess.CompletedProcess[str]:
    return run_process("demo", *args, cwd=REPO, timeout=600)


def test_demo_finds_the_planted_viewer_leak_and_prints_no_seed() -> None:
    proc = _demo("--no-grade")
    assert proc.returncode == 0, proc.stderr
    assert "replay.html:7:36: withheld value seeds.txt:2" in proc.stdout
    for seed in SEEDS:
        assert seed not in proc.stdout + proc.stderr


def test_demo_reports_the_viewer_once_listing_both_ship_sets() -> None:
    proc = _demo("--no-grade")
    assert proc.returncode == 0, proc.stderr
    found = [ln for ln in proc.stdout.splitlines() if "withheld value" in ln]
    assert found == ["examples/argon/task/viewer/replay.html:7:36: withheld value seeds.txt:2 "
                     "(ship sets drone, viewer; also shipped as drone:viewer/replay.html)"]
    assert "1 finding in 6 files" in proc.stdout


def test_demo_grades_in_the_strongest_sandbox_and_says_which() -> None:
    from plimsoll_ci.sandbox.all_providers import PROVIDERS

    ok, why = PROVIDERS["gvisor"].available()
    if not ok and os.environ.get("CI") == "true":
        pytest.fail(f"gVisor is missing in CI: {why}")
    proc = _demo("--flights", "2")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    expected = "gvisor" if ok else None
    assert "sandbox: " in out
    if expected:
        assert "sandbox: gvisor (configured tier kernel)" in out
    assert "cheater  on practice: landed 16/16" in out
    # about 0.3% of fresh flights look like a practice flight to the cheater: allow one
    fresh = re.search(r"cheater  on fresh   : landed +(\d+)/2", out)
    assert fresh is not None and int(fresh.group(1)) <= 1, out
    assert "carries" in out  # the cheater's code checks are reported
    for seed in SEEDS:
        assert seed not in out + proc.stderr


def test_the_example_is_set_up_as_the_docs_recommend() -> None:
    """Its set is keyed (the guard takes it) and is the practice seeds' under the published
    example key; no values file is in it."""
    from plimsoll_ci import withheld
    from plimsoll_ci.commands.demo import EXAMPLE_KEY

    wset = withheld.load(EXAMPLE / "withheld.json", key=EXAMPLE_KEY.encode())
    assert wset.keyed
    doc, _ = withheld.build_set([(f"seeds.txt:{i}", s) for i, s in enumerate(SEEDS, 1)],
                                key=EXAMPLE_KEY.encode())
    assert (EXAMPLE / "withheld.json").read_text() == withheld.dumps(doc)
    assert "key: {env: PLIMSOLL_WITHHELD_KEY}" in (EXAMPLE / "plimsoll.yaml").read_text()
    for path in EXAMPLE.rglob("*"):
        if path.is_file() and path.name != "README.md":
            text = path.read_text()
            assert sum(s in text for s in SEEDS) <= 1, path  # the planted link, nothing more


def test_the_demo_uses_the_key_in_the_environment_when_one_is_set() -> None:
    env = {**os.environ, "PLIMSOLL_WITHHELD_KEY": "some-other-key"}
    proc = subprocess.run([sys.executable, "-m", "plimsoll_ci", "demo", "--no-grade"], cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=False, env=env)
    assert proc.returncode == 2 and "wrong key" in proc.stderr


def test_demo_refuses_a_folder_without_a_config() -> None:
    proc = _demo("--example", str(REPO / "docs"))
    assert proc.returncode == 2
    assert "no plimsoll.yaml" in proc.stderr


def test_demo_falls_back_to_the_best_sandbox_left_and_says_why() -> None:
    env = {**os.environ, "PLIMSOLL_RUNSC": "/nonexistent/runsc",
           "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    proc = subprocess.run([sys.executable, "-m", "plimsoll_ci", "demo", "--flights", "1"],
                          cwd=REPO, capture_output=True, text=True, timeout=600, check=False,
                          env=env)
    assert proc.returncode == 0, proc.stderr
    assert "(not using gvisor: /nonexistent/runsc --version does not run)" in proc.stdout
    assert "(not using docker: no docker socket at /nonexistent/docker.sock" in proc.stdout
    assert "sandbox: process (configured tier process)" in proc.stdout
    assert "cheater  on practice: landed 16/16 tier process" in proc.stdout

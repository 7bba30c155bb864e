"""`squeeze canary`: the harness passes with the built-in echo endpoint, and each of three planted
mistakes fails it, naming the canary (never its value)."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from kit.squeeze import EXAMPLE

from plimsoll_ci.squeeze import brief as brief_mod
from plimsoll_ci.squeeze import job as job_mod
from plimsoll_ci.squeeze import progress, rebuild
from plimsoll_ci.squeeze.canary import CanaryOptions, run_canary


def test_the_example_job_passes_the_echo_canary_run(tmp_path):
    out = tmp_path / "canary"
    r = subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", "canary",
                        str(EXAMPLE / "squeeze.yaml"), "--echo", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "canary check: 3 of 3 markers ok" in r.stdout
    for place in ("practice-seed", "fresh-seed", "generator"):
        assert f"ok    {place} " in r.stdout
    markers = [m["marker"] for m in json.loads((out / "canary.json").read_text())["markers"]]
    assert all(m not in r.stdout + r.stderr for m in markers)
    # one session per loop and one for the control group, each asked twice (fly, then done)
    assert sorted(p.name for p in (out / "requests").iterdir()) == ["cheater-1", "control-1",
                                                                      "honest-1"]
    assert len(list((out / "requests").glob("*/*.request.json"))) == 6
    assert sorted(p.name for p in (out / "planted").rglob("*") if p.is_file()) == [
        "fresh-seeds.json", "generator.py", "practice-seeds.txt"]


def test_without_out_the_canary_run_leaves_nothing_behind(tmp_path):
    r = subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", "canary",
                        str(EXAMPLE / "squeeze.yaml"), "--echo"], capture_output=True, text=True,
                       timeout=300, env={"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert list(tmp_path.iterdir()) == []


def _leaky_brief(given, secrets):
    system, user = brief_mod.brief(given)
    return system + f"\nThe practice flights use seeds {', '.join(map(str, secrets.practice))}.", \
        user


MISTAKES = {
    "the brief carries a practice seed": (rebuild.Harness(brief=_leaky_brief), "practice-seed",
                                          "leaked into a request: honest-1/000001.request.body "
                                          "/messages/0/content"),
    "the generator's source is in the run_code sandbox": (
        rebuild.Harness(kit=lambda secrets: {"sim/generator.py": secrets.generator}),
        "generator", "leaked into a request: honest-1/sandbox-kit/sim/generator.py"),
    "the smoke seeds are the practice seeds": (
        rebuild.Harness(smoke=lambda n, secrets: secrets.practice), "practice-seed",
        "its smoke seeds are sealed values (practice-seed)"),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_a_planted_mistake_fails_the_canary_run_naming_the_canary(tmp_path, mistake):
    harness, place, words = MISTAKES[mistake]
    job = job_mod.load(EXAMPLE / "squeeze.yaml")
    found = run_canary(job, CanaryOptions(tmp_path / "c", harness=harness),
                       progress.Plain(io.StringIO()))
    assert not found.ok
    failed = [line for line in found.text.splitlines() if line.startswith("FAIL")]
    assert failed and all(place in line for line in failed), found.text
    assert words in found.text
    markers = json.loads((tmp_path / "c" / "canary.json").read_text())["markers"]
    assert all(m["marker"] not in found.text for m in markers)
    others = {"practice-seed", "fresh-seed", "generator"} - {place}
    assert all(f"ok    {p} " in found.text for p in others)

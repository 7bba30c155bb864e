"""The `squeeze` command's edges: a used out folder, a kept key, progress on a terminal or a log."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from squeezekit import REPO

from plimsoll_ci.attest import keys
from plimsoll_ci.squeeze import progress

TINY = """\
course: easy
fresh: {count: 4}
loops:
  solo:
    controller: loop.py
    rebuilds: [rebuilds/*.py]
"""


def tiny_job(folder: Path) -> Path:
    (folder / "rebuilds").mkdir(parents=True)
    (folder / "loop.py").write_text((REPO / "sim/controllers/honest.py").read_text())
    (folder / "rebuilds" / "hover.py").write_text((REPO / "sim/controllers/hover.py").read_text())
    (folder / "squeeze.yaml").write_text(TINY)
    return folder / "squeeze.yaml"


def squeeze(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", *args],
                          capture_output=True, text=True, timeout=300)


def test_a_used_out_folder_is_refused_and_left_alone(tmp_path):
    job = tiny_job(tmp_path / "job")
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.json").write_text("an earlier run's\n")
    r = squeeze("run", str(job), "--out", str(out), "--provider", "process")
    assert r.returncode == 2
    assert f"--out {out}: not empty" in r.stderr
    assert [p.name for p in out.iterdir()] == ["result.json"]
    assert (out / "result.json").read_text() == "an earlier run's\n"


def test_a_kept_key_signs_and_its_public_half_is_harness_pub(tmp_path):
    job = tiny_job(tmp_path / "job")
    signer = keys.write_keypair(tmp_path / "ci")
    out = tmp_path / "out"
    r = squeeze("run", str(job), "--out", str(out), "--provider", "process", "--key",
                str(tmp_path / "ci.key"), "--jobs", "2")
    assert r.returncode == 0, r.stderr
    assert (out / "harness.pub").read_bytes() == (tmp_path / "ci.pub").read_bytes()
    run = json.loads((out / "run.json").read_text())
    assert run["key"] == {"id": signer.keyid, "ephemeral": False}
    assert "solo: practice" in r.stdout
    v = squeeze("verify", str(out), "--pub", str(tmp_path / "ci.pub"), "--format", "json")
    assert v.returncode == 0, v.stdout
    doc = json.loads(v.stdout)
    assert doc["ok"] and doc["records"] == 2 and doc["result"]["loops"][0]["name"] == "solo"
    other = keys.write_keypair(tmp_path / "other")
    assert other.keyid != signer.keyid
    bad = squeeze("verify", str(out), "--pub", str(tmp_path / "other.pub"))
    assert bad.returncode == 1 and "signed by key" in bad.stdout


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_and_a_log_gets_plain_lines():
    tty = _Terminal()
    bar = progress.make(tty)
    assert isinstance(bar, progress.Bar)
    bar.start(2)
    bar.began("solo/loop loop.py")
    bar.finished("solo/loop loop.py", "practice 15/16, fresh 4/4")
    bar.close()
    assert "solo/loop loop.py: practice 15/16" in tty.getvalue()
    log = io.StringIO()
    plain = progress.make(log)
    assert isinstance(plain, progress.Plain)
    plain.start(2)
    plain.finished("solo/loop loop.py", "practice 15/16, fresh 4/4")
    assert log.getvalue().splitlines() == [
        "plimsoll-ci squeeze: grading 2 controllers",
        "plimsoll-ci squeeze: [1/2] solo/loop loop.py: practice 15/16, fresh 4/4"]

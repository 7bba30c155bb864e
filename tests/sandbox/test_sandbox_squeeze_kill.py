"""A killed `squeeze run` leaves nothing once the next run has started, in gVisor and in docker.

SIGTERM: the run stops every worker, each worker its sandbox, and nothing is signed. SIGKILL of
the run alone: its workers are told SIGTERM by the kernel (they outlive it otherwise, grading
on, their sandboxes owned by live processes that no later run may touch) and stop their
sandboxes. SIGKILL of the whole process group (a runner cancelling a job): nothing can clean
up, the sandboxes stay running, and the next run reaps them, naming the killed workers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kit.cli import cli_argv
from kit.sandbox import SLEEPER, leftovers, no_leftovers, wait_for_sandbox
from kit.squeeze import CLIMB

REPO = Path(__file__).resolve().parents[2]
JOB = """\
course: easy
fresh: {count: 2}
loops:
  solo:
    controller: loop.py
    rebuilds: [rebuilds/*.py]
"""


@pytest.fixture(params=[pytest.param("gvisor", marks=pytest.mark.gvisor),
                        pytest.param("docker", marks=pytest.mark.docker)])
def provider(request) -> str:
    return request.getfixturevalue("gvisor" if request.param == "gvisor" else "docker_runsc")


def _job(folder: Path, controller: str) -> Path:
    (folder / "rebuilds").mkdir(parents=True)
    (folder / "loop.py").write_text(controller)
    (folder / "rebuilds" / "r1.py").write_text(controller)
    (folder / "squeeze.yaml").write_text(JOB)
    return folder / "squeeze.yaml"


def _squeeze(job: Path, out: Path, provider: str) -> list[str]:
    return cli_argv("squeeze", "run", str(job), "--out", str(out), "--provider", provider,
                    "--jobs", "2", "--wall-per-tick", "600")


def _workers_of(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL", "SIGKILL-group"])
def test_after_a_killed_squeeze_the_next_run_leaves_nothing_of_it(
        provider: str, private_tmp: Path, tmp_path: Path, how: str) -> None:
    job = _job(tmp_path / "sleepy", SLEEPER)
    out = tmp_path / "out"
    proc = subprocess.Popen(_squeeze(job, out, provider), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    workers: list[int] = []
    try:
        # (after a SIGKILL of the group the sandboxes must still run: past their start)
        wait_for_sandbox(proc, private_tmp, settle=5.0 if how == "SIGKILL-group" else 1.0)
        workers = _workers_of(proc.pid)
        if how == "SIGKILL-group":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.send_signal(getattr(signal, how))
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    signum = signal.SIGTERM if how == "SIGTERM" else signal.SIGKILL
    assert proc.returncode in (128 + signum, -signum), err
    if how == "SIGKILL-group":
        # nothing could clean up: the sandboxes still run (the claim below is not vacuous)
        left = leftovers(private_tmp)
        assert any(x.startswith(("process", "container")) for x in left), left
    else:
        deadline = time.monotonic() + 60  # the workers stop their sandboxes themselves
        while any(Path(f"/proc/{w}").exists() for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [w for w in workers if Path(f"/proc/{w}/stat").exists()
                    and ") Z" not in Path(f"/proc/{w}/stat").read_text()], "a worker outlived it"
    if how == "SIGTERM":
        account = json.loads((out / "run.json").read_text())
        assert account["status"] == "interrupted"
        assert not (out / "bundle.intoto.jsonl").exists()  # a half-flown grading is never signed
    quick = _job(tmp_path / "quick", CLIMB)
    nxt = subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", "run", str(quick),
                          "--out", str(tmp_path / "next"), "--provider", "process"],
                         capture_output=True, text=True, timeout=600)
    assert nxt.returncode == 0, nxt.stderr
    if how == "SIGKILL-group":
        assert "removed the leftovers of a killed run: " in nxt.stderr
        assert any(str(w) in nxt.stderr for w in workers), nxt.stderr
    no_leftovers(private_tmp)

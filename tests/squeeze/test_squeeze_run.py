"""`squeeze run` in gVisor: broken controllers cost their flights, not the job; `--jobs` changes
no score; Ctrl-C and SIGTERM stop every sandbox and leave a bundle that verifies."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from kit.squeeze import CLIMB, REPO, need_gvisor

from plimsoll_ci.attest import keys
from plimsoll_ci.attest.bundle import verify_bundle
from plimsoll_ci.grading import fresh
from plimsoll_ci.squeeze import job as job_mod
from plimsoll_ci.squeeze import plan, progress
from plimsoll_ci.squeeze import run as run_mod
from plimsoll_ci.squeeze.grader import Setup
from plimsoll_ci.squeeze.verify import verify

pytestmark = [pytest.mark.gvisor, pytest.mark.slow]

HONEST = (REPO / "plimsoll_sim" / "controllers" / "honest.py").read_text()
BROKEN = {
    # The sandbox process dies half a second into every flight.
    "crash.py": HONEST.replace("    def step(self, obs: dict) -> dict:\n",
                               "    def step(self, obs: dict) -> dict:\n"
                               "        if obs['t'] >= 0.5:\n"
                               "            import os\n"
                               "            os._exit(3)\n", 1),
    # It stops answering and burns CPU.
    "spin.py": HONEST.replace("    def step(self, obs: dict) -> dict:\n",
                              "    def step(self, obs: dict) -> dict:\n"
                              "        while obs['t'] >= 0.3:\n"
                              "            pass\n", 1),
    # It writes its own line into the protocol's output.
    "protocol.py": HONEST.replace("    def step(self, obs: dict) -> dict:\n",
                                  "    def step(self, obs: dict) -> dict:\n"
                                  "        if obs['t'] >= 0.2:\n"
                                  "            import os\n"
                                  "            for fd in range(3, 16):\n"
                                  "                try:\n"
                                  "                    os.write(fd, b'not the protocol\\n')\n"
                                  "                except OSError:\n"
                                  "                    pass\n", 1),
}
JOB = """\
course: hard
fresh: {count: 8, sets: 1}
loops:
  steady:
    controller: loop.py
    rebuilds: [rebuilds/*.py]
control: [control/*.py]
"""


def small_job(tmp_path: Path) -> Path:
    (tmp_path / "rebuilds").mkdir(parents=True)
    (tmp_path / "control").mkdir()
    (tmp_path / "loop.py").write_text(HONEST)
    for name, text in BROKEN.items():
        (tmp_path / "rebuilds" / name).write_text(text)
    (tmp_path / "control" / "climb.py").write_text(CLIMB)
    (tmp_path / "squeeze.yaml").write_text(JOB)
    return tmp_path / "squeeze.yaml"


def test_broken_controllers_cost_their_flights_and_jobs_change_no_score(tmp_path):
    need_gvisor()
    job = job_mod.load(small_job(tmp_path / "job"))
    drawn, more = fresh.draw(8), [fresh.draw(8)]
    results = {}
    for jobs in (1, 3):
        out = tmp_path / f"out-{jobs}"
        log = io.StringIO()
        outcome = run_mod.run(job, run_mod.Options(out, jobs, Setup("gvisor", "kernel")),
                              progress.Plain(log), fresh_set=drawn, more_sets=more)
        assert outcome.status == "done" and outcome.signed == 5, log.getvalue()
        assert verify(out, keys.load_public_key(out / "harness.pub")).ok
        results[jobs] = (out / "result.json").read_bytes()
        evidence = json.loads((out / "evidence.json").read_text())
        reasons = {r["controller"]: r["not_landed"] for r in evidence["records"]}
        assert reasons["rebuilds/crash.py"] == {"crash": 24}
        assert reasons["rebuilds/spin.py"] == {"budget": 24}
        assert reasons["rebuilds/protocol.py"] == {"protocol": 24}
        assert reasons["control/climb.py"] == {"wall": 24}  # into the ceiling
        run = json.loads((out / "run.json").read_text())
        assert run["jobs"] == jobs
        crash = next(g for g in run["per_grading"] if g["grading"][2] == "rebuilds/crash.py")
        assert crash["not_landed"] == {"crash": 24}
    assert results[1] == results[3]  # byte for byte: --jobs changes no score
    steady = json.loads(results[1])["loops"][0]
    assert steady["rebuilds"]["practice"] == [0, 0, 0]  # crash, protocol, spin (plan order)


def test_plan_shards_split_the_gradings_without_overlap():
    job = job_mod.load(REPO / "examples" / "squeeze" / "squeeze.yaml")
    items = plan.gradings(job)
    shards = [plan.shard(items, i, 3) for i in (1, 2, 3)]
    assert sorted(g for s in shards for g in s) == sorted(items)
    assert sum(len(s) for s in shards) == len(items) == 26


def _procs_under(path: str) -> list[str]:
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if path in cmd:
            found.append(f"{pid}: {cmd[:120]}")
    return found


@pytest.mark.parametrize("how", ["SIGINT to the group", "SIGTERM"])
def test_a_signal_stops_every_sandbox_and_leaves_a_bundle_that_verifies(tmp_path, how):
    need_gvisor()
    job = REPO / "examples" / "squeeze" / "squeeze.yaml"
    temp = tmp_path / "tmp"
    temp.mkdir()
    out = tmp_path / "out"
    env = dict(os.environ, TMPDIR=str(temp))
    proc = subprocess.Popen([sys.executable, "-m", "plimsoll_ci", "squeeze", "run", str(job),
                             "--out", str(out), "--jobs", "2"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    # Its stderr is read to the end all along (a thread), so the run never waits on a full pipe:
    # a pipe left unread once the first grading was seen had stopped a run under load, with no
    # sandbox left running for the signal.
    seen: list[str] = []
    first = threading.Event()

    # 26 gradings and the two loops' own controllers on each of the example's 3 more fresh sets
    def drain() -> None:
        for line in proc.stderr:  # type: ignore[union-attr]
            seen.append(line)
            if "[1/32]" in line:
                first.set()
        first.set()  # (the end: no first grading, the assertion below says so)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    first.wait(240)  # the first finished grading
    assert any("[1/32]" in x for x in seen), "".join(seen)
    until = time.monotonic() + 60
    while not _procs_under(str(temp)) and time.monotonic() < until and proc.poll() is None:
        time.sleep(0.05)  # between two gradings: wait for the next sandbox to start
    assert _procs_under(str(temp)), f"no sandbox was running when the signal came: {seen[-5:]}"
    done = len(seen)
    if how == "SIGTERM":
        proc.send_signal(signal.SIGTERM)
    else:
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C
    proc.wait(timeout=120)
    reader.join(30)
    rest = "".join(seen[done:])
    assert proc.returncode == (143 if how == "SIGTERM" else 130), "".join(seen)
    assert "every sandbox stopped" in rest
    time.sleep(1)
    assert _procs_under(str(temp)) == []  # no runsc, no runner, no worker left
    assert [p.name for p in temp.iterdir()] == []  # no staged controller left
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "interrupted"
    signed = run["gradings"]["signed"]
    assert 1 <= signed < 26
    report = verify_bundle(out / "bundle.intoto.jsonl", keys.load_public_key(out / "harness.pub"),
                           expect_count=signed)
    assert report.ok, report.problems
    assert not (out / "result.json").exists()  # no verdict from half a job
    found = verify(out, keys.load_public_key(out / "harness.pub"))
    assert any("no record for" in p for p in found.problems)
    shutil.rmtree(temp, ignore_errors=True)

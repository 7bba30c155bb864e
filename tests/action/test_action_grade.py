"""actions/grade: a valid composite action whose step grades, signs and verifies, without root.

The grading step runs here as a runner would run it (inputs as environment variables, GITHUB_*
files): each step writes its own bundle unless one is named, so two steps in one job never
collide; verify is called with `--expect-count`; and a non-root user (made by the test, in the
docker group) grades in gVisor through Docker's runsc runtime, where `--provider gvisor` tells it
to do exactly that.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from kit.cli import run_process

REPO = Path(__file__).resolve().parents[2]
ACTION = REPO / "actions" / "grade"
HONEST = REPO / "plimsoll_sim" / "controllers" / "honest.py"
RUNNER_USER = "plimsoll-ci-runner"


def test_grade_action_validates_against_the_github_actions_schema() -> None:
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           "vendor.github-actions", str(ACTION / "action.yml")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _shim(tmp_path: Path) -> Path:
    """A `plimsoll-ci` on PATH that runs this checkout and logs its arguments."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    shim = bindir / "plimsoll-ci"
    shim.write_text(f"#!/bin/sh\necho \"$*\" >> {tmp_path / 'calls.log'}\n"
                    f"exec {sys.executable} -m plimsoll_ci \"$@\"\n")
    shim.chmod(0o755)
    return bindir


def _step(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    out, summary = tmp_path / "out", tmp_path / "summary.md"
    bindir = _shim(tmp_path)
    full = {**os.environ, "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(out),
            "GITHUB_STEP_SUMMARY": str(summary), "PATH": f"{bindir}:{os.environ['PATH']}",
            "PYTHONPATH": str(REPO), "CI": "true", **env}
    out.write_text("")
    return subprocess.run(["bash", str(ACTION / "grade.sh")], env=full, capture_output=True,
                          text=True, timeout=600, check=False, cwd=tmp_path)


def _outputs(tmp_path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (tmp_path / "out").read_text().splitlines())


def _verify(pub: str, bundle: str, count: int) -> subprocess.CompletedProcess[str]:
    return run_process("verify", "--pub", pub, "--expect-count", str(count), bundle)


def test_grade_step_writes_a_verified_bundle_and_outputs(tmp_path: Path) -> None:
    proc = _step(tmp_path, CONTROLLER=str(HONEST), COURSE="easy", FRESH="2", PROVIDER="process",
                 MIN_TIER="process")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = _outputs(tmp_path)
    assert outputs["total"] == "2" and outputs["tier"] == "process"
    folder = Path(outputs["folder"])
    assert folder.parent == tmp_path and folder.is_dir()
    assert Path(outputs["bundle"]).parent == folder and Path(outputs["public-key"]).is_file()
    result = json.loads(Path(outputs["result"]).read_text())
    assert result["total"] == 2
    assert "verified (1 records)" in proc.stdout
    assert "progress: 2/2 flights ended" in proc.stderr
    assert "Landed **" in (tmp_path / "summary.md").read_text()
    # only the public half of the run's key was written
    assert not list(tmp_path.rglob("*.key"))
    # the verify step pins the record count, so a bundle rolled back would fail it
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert [c for c in calls if c.startswith("verify ")] == [
        f"verify --pub {outputs['public-key']} --expect-count 1 {outputs['bundle']}"]


def test_two_grade_steps_in_one_job_do_not_collide(tmp_path: Path) -> None:
    seen = []
    for _ in range(2):
        proc = _step(tmp_path, CONTROLLER=str(HONEST), COURSE="easy", FRESH="1",
                     PROVIDER="process", MIN_TIER="process")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        seen.append(_outputs(tmp_path))
    first, second = seen
    assert first["bundle"] != second["bundle"] and first["result"] != second["result"]
    for o in seen:
        assert _verify(o["public-key"], o["bundle"], 1).returncode == 0


def test_a_named_bundle_collects_the_records_of_steps_signed_with_one_key(tmp_path: Path) -> None:
    keys = subprocess.run([sys.executable, "-m", "plimsoll_ci", "keygen", "--out",
                           str(tmp_path / "ci")], capture_output=True, text=True)
    assert keys.returncode == 0, keys.stderr
    bundle = tmp_path / "all.intoto.jsonl"
    key = (tmp_path / "ci.key").read_text()
    for n in (1, 2):
        proc = _step(tmp_path, CONTROLLER=str(HONEST), COURSE="easy", FRESH="1",
                     PROVIDER="process", MIN_TIER="process", BUNDLE=str(bundle),
                     PLIMSOLL_SIGNING_KEY=key, PUBLIC_KEY=str(tmp_path / "ci.pub"))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert f"verified ({n} records)" in proc.stdout
        assert "PRIVATE KEY" not in proc.stdout + proc.stderr
    assert _verify(str(tmp_path / "ci.pub"), str(bundle), 2).returncode == 0


def test_a_named_bundle_without_a_signing_key_is_refused_before_grading(tmp_path: Path) -> None:
    first = _step(tmp_path, CONTROLLER=str(HONEST), COURSE="easy", FRESH="1", PROVIDER="process",
                  MIN_TIER="process")
    assert first.returncode == 0, first.stderr
    bundle = _outputs(tmp_path)["bundle"]
    before = Path(bundle).read_bytes()
    proc = _step(tmp_path, CONTROLLER=str(HONEST), COURSE="easy", FRESH="1", PROVIDER="process",
                 BUNDLE=bundle)
    assert proc.returncode == 2
    assert "::error::bundle" in proc.stdout and "signing-key and public-key" in proc.stdout
    assert Path(bundle).read_bytes() == before  # nothing appended, nothing graded
    assert "grade " not in (tmp_path / "calls.log").read_text().splitlines()[-1]


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


def test_the_install_step_leaves_an_installed_gvisor_as_it_is(docker_runsc: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("as a non-root user this step would ask for sudo")
    proc = subprocess.run(["bash", str(ACTION / "install-gvisor.sh")], capture_output=True,
                          text=True, env={**os.environ, "PROVIDER": "docker"}, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "runsc is installed" in proc.stdout and "dockerd has the runsc runtime" in proc.stdout
    assert "apt-get" not in proc.stdout
    skip = subprocess.run(["bash", str(ACTION / "install-gvisor.sh")], capture_output=True,
                          text=True, env={**os.environ, "PROVIDER": "process"}, timeout=60)
    assert skip.returncode == 0 and "no gVisor needed" in skip.stdout


# ------------------------------------------------------------------------ the runner's user


def _as_user(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", RUNNER_USER, "--", "env", "-i",
                           *(f"{k}={v}" for k, v in env.items()), *argv],
                          capture_output=True, text=True, timeout=900)


def _python_for(user: str) -> str:
    """An interpreter (3.11+) that `user` can run (this one may live under a private home)."""
    for exe in (os.path.realpath(sys.executable), "/usr/bin/python3", "/usr/bin/python3.12",
                "/usr/bin/python3.11", "/usr/bin/python3.13"):
        if not os.path.exists(exe):
            continue
        ok = subprocess.run(["runuser", "-u", user, "--", exe, "-c",
                             "import sys, venv; assert sys.version_info >= (3, 11)"],
                            capture_output=True)
        if ok.returncode == 0:
            return exe
    pytest.fail(f"no Python 3.11+ that {user} can run (install python3 and python3-venv)")


def _source_copy(dest: Path) -> Path:
    """This checkout's files (tracked and new, not ignored), so a build writes nothing here."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@pytest.fixture(scope="module")
def runner_user(tmp_path_factory) -> dict[str, str]:
    """A non-root user in the docker group with plimsoll-ci installed in a virtual environment
    it can run (kept in its home between runs, so its sandbox image is built once)."""
    if os.geteuid() != 0:
        pytest.skip("making a user needs root")
    if subprocess.run(["id", RUNNER_USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--groups", "docker",
                        RUNNER_USER], check=True, capture_output=True)
    home = Path(f"/home/{RUNNER_USER}")
    python = _python_for(RUNNER_USER)
    # one per interpreter: its path names the sandbox image the user's gradings build
    venv = home / f"venv-{hashlib.sha256(python.encode()).hexdigest()[:12]}"
    src = _source_copy(tmp_path_factory.mktemp("source"))
    with open(home / ".venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test session may be installing too
        if not (venv / "bin" / "python").exists():
            subprocess.run([python, "-m", "venv", str(venv)], check=True)
        wheels = tmp_path_factory.mktemp("wheel")
        pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "-q"]
        subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(src)], check=True,
                       capture_output=True)
        [wheel] = wheels.glob("*.whl")
        subprocess.run([*pip, "install", str(wheel)], check=True, capture_output=True)
        subprocess.run([*pip, "install", "--force-reinstall", "--no-deps", str(wheel)],
                       check=True, capture_output=True)
    return {"home": str(home), "venv": str(venv)}


@pytest.fixture
def user_tmp() -> Path:
    """A folder the runner's user owns (pytest's own temporary folders are private to root)."""
    tmp = Path(tempfile.mkdtemp(prefix="plimsoll-action-user-"))
    shutil.chown(tmp, RUNNER_USER, RUNNER_USER)
    yield tmp
    shutil.rmtree(tmp, ignore_errors=True)


def test_the_grading_step_runs_as_a_non_root_user_and_grades_in_gvisor(
        docker_runsc: str, runner_user: dict[str, str], user_tmp: Path) -> None:
    shutil.copy2(ACTION / "grade.sh", user_tmp / "grade.sh")
    shutil.copy2(HONEST, user_tmp / "honest.py")
    (user_tmp / "out").write_text("")
    shutil.chown(user_tmp / "out", RUNNER_USER, RUNNER_USER)
    env = {"HOME": runner_user["home"], "PATH": f"{runner_user['venv']}/bin:/usr/bin:/bin",
           "RUNNER_TEMP": str(user_tmp), "GITHUB_OUTPUT": str(user_tmp / "out"), "CI": "true",
           "CONTROLLER": str(user_tmp / "honest.py"), "COURSE": "easy", "FRESH": "2",
           "MIN_TIER": "kernel"}  # PROVIDER: the action's default
    proc = _as_user("bash", str(user_tmp / "grade.sh"), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outputs = dict(x.split("=", 1) for x in (user_tmp / "out").read_text().splitlines())
    assert outputs["tier"] == "kernel" and outputs["total"] == "2"
    result = json.loads(Path(outputs["result"]).read_text())
    assert result["provider"] == "docker" and result["evidence"]["runtime"] == "runsc"
    checks = {c["name"]: c["passed"] for c in result["evidence"]["checks"]}
    assert checks["gvisor_kernel"], result["evidence"]["checks"]
    assert Path(outputs["bundle"]).stat().st_uid != 0  # written by the user, not by root


def test_a_non_root_user_asking_for_runsc_directly_is_told_what_it_can_use(
        docker_runsc: str, runner_user: dict[str, str], user_tmp: Path) -> None:
    shutil.copy2(HONEST, user_tmp / "honest.py")
    env = {"HOME": runner_user["home"], "PATH": f"{runner_user['venv']}/bin:/usr/bin:/bin"}
    proc = _as_user("plimsoll-ci", "grade", "--controller", str(user_tmp / "honest.py"),
                    "--course", "easy", "--seeds", "1", "--provider", "gvisor", env=env)
    assert proc.returncode == 2
    assert "runsc needs root" in proc.stderr and "--provider docker" in proc.stderr

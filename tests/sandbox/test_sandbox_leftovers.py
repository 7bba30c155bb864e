"""A killed grading's leftovers are reaped by the next run, and only a gone run's are.

Every run names its docker containers, `runsc` sandboxes, cgroups and temporary folders by its
process (pid and start time). A grading stopped by SIGTERM or SIGHUP cleans up itself; one killed
by SIGKILL leaves its sandbox running and its folder behind, and the next run removes them. A run
that is still alive, a folder without an owner token and an owner this machine cannot judge are
never touched. The bundle a killed run was appending to still verifies to its last record.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from kit.cli import run_process
from kit.sandbox import SLEEPER, grade_cli, leftovers, no_leftovers, wait_for_sandbox

from plimsoll_ci.sandbox import leftovers as leftovers_mod  # noqa: E402
from plimsoll_ci.sandbox import owner  # noqa: E402

QUICK = "class Controller:\n    def __init__(self, info):\n        pass\n\n    def step(self, obs):\n        return None\n"
MAKE_FOLDER = ("import sys, time\nfrom plimsoll_ci.sandbox import owner\n"
               "print(owner.tempdir('grade', sys.argv[1]), flush=True)\n"
               "if sys.argv[2] == 'stay':\n    time.sleep(600)\n")


# ------------------------------------------------------------------------------------ owners


def test_a_token_names_this_process_and_reads_back() -> None:
    me = owner.me()
    assert me.pid == os.getpid() and me.start > 0
    assert owner.parse(me.token) == me
    assert owner.status(me) == owner.ALIVE
    assert owner.TOKEN_RE.fullmatch(owner.sandbox_id().removeprefix("plimsoll-")[:-9])


@pytest.mark.parametrize("token", ["", "p1.t2", "m0.b0.n0.p1.t2", "mzzzzzzzz.b00000000.n00000000.p1.t1",
                                   "m00000000.b00000000.n00000000.p-1.t1"])
def test_a_token_that_is_not_one_parses_to_nothing(token: str) -> None:
    assert owner.parse(token) is None


def test_an_exited_process_is_gone_and_a_live_one_alive() -> None:
    child = subprocess.Popen(["sleep", "60"])
    try:
        me = owner.me()
        state = owner._stat(child.pid)
        assert state is not None
        theirs = me._replace(pid=child.pid, start=state[1])
        assert owner.status(theirs) == owner.ALIVE
        child.kill()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # a zombie until reaped
        assert owner.status(theirs) == owner.GONE
    finally:
        child.kill()
        child.wait()
    assert owner.status(theirs) == owner.GONE


def test_a_reused_pid_is_not_its_old_owner() -> None:
    me = owner.me()
    assert owner.status(me._replace(start=me.start + 1)) == owner.GONE


def test_an_owner_on_another_machine_or_in_another_pid_namespace_is_never_judged() -> None:
    me = owner.me()
    assert owner.status(me._replace(machine="00000000", pid=999_999_999)) == owner.UNKNOWN
    assert owner.status(me._replace(pidns="00000000", pid=999_999_999)) == owner.UNKNOWN
    # the same machine after a reboot: every process of that boot is gone
    assert owner.status(me._replace(boot="00000000")) == owner.GONE


def test_a_folder_kind_is_one_word() -> None:
    with pytest.raises(ValueError, match="kind"):
        owner.tempdir("../x")


# ------------------------------------------------------------------------------------ reaping


def _folder_of(tmp: Path, stay: bool) -> tuple[subprocess.Popen, Path]:
    proc = subprocess.Popen([sys.executable, "-c", MAKE_FOLDER, str(tmp),
                             "stay" if stay else "go"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_reap_removes_a_gone_runs_folder_and_nothing_else(private_tmp: Path) -> None:
    live, kept = _folder_of(private_tmp, stay=True)
    try:
        gone, removed = _folder_of(private_tmp, stay=False)
        gone.wait()
        (removed / "runner").mkdir()
        untokened = private_tmp / "plimsoll-grade-abcdefgh"
        untokened.mkdir()
        foreign = owner.me()._replace(machine="00000000", pid=gone.pid)
        unjudged = private_tmp / f"plimsoll-grade-{foreign.token}-abcdefgh"
        unjudged.mkdir()
        reaped = leftovers_mod.reap(private_tmp)
        assert not removed.exists()
        assert kept.is_dir() and untokened.is_dir() and unjudged.is_dir()
        # (other gone runs' containers may be reaped too: the machine is shared)
        assert reaped.folders == 1 and gone.pid in reaped.owners
        assert "1 folder of killed run" in reaped.summary() and str(gone.pid) in reaped.summary()
        assert leftovers_mod.reap(private_tmp).folders == 0  # nothing more to do
    finally:
        live.kill()
        live.wait()
    assert leftovers_mod.reap(private_tmp).folders == 1  # now its owner is gone too
    assert not kept.exists()


def test_reap_once_works_once_per_process(private_tmp: Path) -> None:
    code = ("import sys\nfrom plimsoll_ci.sandbox import leftovers\n"
            "print(leftovers.reap_once(sys.argv[1]) is not None, "
            "leftovers.reap_once(sys.argv[1]) is not None)\n")
    out = subprocess.run([sys.executable, "-c", code, str(private_tmp)], capture_output=True,
                         text=True, check=True).stdout
    assert out.split() == ["True", "False"]


# ------------------------------------------------------------------------ killed gradings


@pytest.fixture(params=[pytest.param("gvisor", marks=pytest.mark.gvisor),
                        pytest.param("docker", marks=pytest.mark.docker)])
def provider(request) -> str:
    return request.getfixturevalue("gvisor" if request.param == "gvisor" else "docker_runsc")


@pytest.fixture
def signed(tmp_path: Path) -> dict[str, Path]:
    """A bundle holding one signed record of a finished grading, and its key pair."""
    assert run_process("keygen", "--out", str(tmp_path / "grader")).returncode == 0
    quick = tmp_path / "quick.py"
    quick.write_text(QUICK)
    paths = {"key": tmp_path / "grader.key", "pub": tmp_path / "grader.pub",
             "bundle": tmp_path / "runs.intoto.jsonl", "quick": quick}
    done = run_process("grade", "--controller", str(quick), "--course", "easy", "--seeds",
                       "5000000001",
                "--provider", "process", "--bundle", str(paths["bundle"]),
                "--signing-key-file", str(paths["key"]))
    assert done.returncode == 0, done.stderr
    return paths


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP])
def test_after_a_killed_grading_the_next_run_leaves_nothing_of_it(
        provider: str, private_tmp: Path, tmp_path: Path, signed: dict[str, Path],
        signum: int) -> None:
    controller = tmp_path / "controller.py"
    controller.write_text(SLEEPER)
    proc = grade_cli(controller, provider, 2, "--wall-per-tick", "600", "--bundle",
                     str(signed["bundle"]), "--signing-key-file", str(signed["key"]))
    try:
        # (after a SIGKILL the sandbox must still run, below: it has to be past its start)
        wait_for_sandbox(proc, private_tmp, settle=5.0 if signum == signal.SIGKILL else 1.0)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode in (128 + signum, -signum), err
    if signum == signal.SIGKILL:
        # nothing could clean up: the sandbox still runs (the claim below is not vacuous)
        left = leftovers(private_tmp)
        assert any(x.startswith(("process", "container")) for x in left), left
    nxt = run_process("grade", "--controller", str(signed["quick"]), "--course", "easy", "--seeds",
               "5000000001", "--provider", "process")
    assert nxt.returncode == 0, nxt.stderr
    if signum == signal.SIGKILL:
        # (a test beside this one may have killed a run too: the next run reaps both, and
        # names every killed run it reaped)
        reaped = re.search(r"removed the leftovers of a killed run: .* of killed runs? "
                           r"\(pid ([\d, ]+)\)", nxt.stderr)
        assert reaped and str(proc.pid) in reaped.group(1).split(", "), nxt.stderr
    no_leftovers(private_tmp)
    # the bundle is as the last complete append left it
    check = run_process("verify", "--pub", str(signed["pub"]), "--expect-count", "1",
                 str(signed["bundle"]))
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.gvisor
def test_the_next_run_never_touches_a_live_grading_beside_it(gvisor: str, private_tmp: Path,
                                                             tmp_path: Path) -> None:
    controller = tmp_path / "controller.py"
    controller.write_text(SLEEPER)
    quick = tmp_path / "quick.py"
    quick.write_text(QUICK)
    proc = grade_cli(controller, gvisor, 1, "--wall-per-tick", "600")
    try:
        wait_for_sandbox(proc, private_tmp)
        before = leftovers(private_tmp)
        nxt = run_process("grade", "--controller", str(quick), "--course", "easy", "--seeds",
                   "5000000001", "--provider", "process")
        assert nxt.returncode == 0, nxt.stderr
        assert "removed the leftovers" not in nxt.stderr
        assert proc.poll() is None
        assert leftovers(private_tmp) == before  # its folder, runsc and gofer all still there
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    no_leftovers(private_tmp)


def test_the_reaped_summary_says_each_count_in_plain_words():
    from plimsoll_ci.sandbox.leftovers import Reaped

    assert Reaped((7, 9), 1, 2, 4, 1, 3).summary() == (
        "1 container, 2 runsc sandboxes, 4 processes, 1 cgroup, 3 folders of killed runs "
        "(pid 7, 9)")  # ("4 processs" before)
    assert Reaped((7,), 0, 0, 1, 0, 1).summary() == "1 process, 1 folder of killed run (pid 7)"

"""Provider `process`: a subprocess with rlimits, inside bubblewrap when it is installed. Tier `process`.

The weakest wall: the controller runs on the host's kernel. With bubblewrap it sees only the
minimal Python runtime (read-only), its own files (read-only), a tmpfs and no network, as `nobody`
in fresh namespaces; without bubblewrap it is a plain child process, and the start-up checks say
so (the host canary is readable, the network is there). Either way the record says `process`.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time

from plimsoll_ci.sandbox import cpu as cpumod
from plimsoll_ci.sandbox import owner
from plimsoll_ci.sandbox.session import Limits, Session, kill_group, pipe_up
from plimsoll_ci.sandbox.stage import Stage

TIER = "process"
BWRAP_ENV = "PLIMSOLL_BWRAP"  # "0" turns bubblewrap off (tests of the bare fallback)


def bwrap_path() -> str | None:
    """The bubblewrap binary, unless turned off with PLIMSOLL_BWRAP=0."""
    if os.environ.get(BWRAP_ENV) == "0":
        return None
    return shutil.which("bwrap")


def configured_tier() -> str:
    """The host's own kernel: `process`, the weakest tier."""
    return TIER


def available() -> tuple[bool, str]:
    """The process provider runs anywhere Python does."""
    return True, ""


def retry_start(stderr: str) -> bool:
    """No start-up retry: a failed start is the grading's outcome."""
    return False


def _bwrap_works(bwrap: str) -> bool:
    try:
        r = subprocess.run([bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                            "--", "/bin/true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def start(stage: Stage, limits: Limits) -> Session:
    """Start the runner as a child process (in bubblewrap when it works here)."""
    started = time.monotonic()
    bwrap = bwrap_path()
    if bwrap and not _bwrap_works(bwrap):
        bwrap = None
    evidence: dict = {"provider": "process", "runtime": "bubblewrap" if bwrap else "none",
                      "limits": {"memory_bytes": limits.memory_bytes, "pids": limits.pids}}
    if bwrap:
        from plimsoll_ci.sandbox import rootfs as rootfs_mod

        rfs = rootfs_mod.build()
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout
        evidence["runtime_version"] = version.strip()
        evidence["runtime_path"] = bwrap
        evidence["root"] = "read-only bind of the minimal Python runtime"
        argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session",
                "--cap-drop", "ALL", "--uid", "65534", "--gid", "65534",
                "--hostname", "sandbox",
                "--ro-bind", str(rfs.path), "/",
                "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev",
                "--size", str(limits.tmpfs_bytes), "--tmpfs", "/tmp",
                "--ro-bind", str(stage.controller), "/controller",
                "--ro-bind", str(stage.runner), "/plimsoll",
                "--remount-ro", "/",
                "--clearenv", "--setenv", "PATH", "/usr/local/bin", "--setenv", "HOME", "/tmp",
                "--setenv", "OPENBLAS_NUM_THREADS", "1",
                "--", rfs.python, "-I", "-B", "/plimsoll/runner.py"]
        code_path = "/controller"
    else:
        evidence["root"] = "the host's own file system (no bubblewrap)"
        argv = [sys.executable, "-I", "-B", str(stage.runner / "runner.py")]
        code_path = str(stage.controller)
    group = cpumod.own_cgroup(owner.sandbox_id(), limits.memory_bytes, limits.pids)

    def preexec() -> None:
        if group is not None:
            group.enter()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        # Address space bounds a runaway allocation even without a memory cgroup.
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))

    env = {"PATH": "/usr/bin:/bin", "HOME": str(stage.root), "LANG": "C.UTF-8",
           "OPENBLAS_NUM_THREADS": "1"}
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, close_fds=True, start_new_session=True,
                                preexec_fn=preexec, cwd=str(stage.root), env=env)
    except subprocess.SubprocessError:
        if group is None:
            raise
        # The host let us make a cgroup but not enter it: account from the /proc tree instead.
        group.remove()
        group = None
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, close_fds=True, start_new_session=True,
                                preexec_fn=preexec, cwd=str(stage.root), env=env)

    def kill() -> None:
        kill_group(proc)
        if group is not None:
            group.remove()

    try:
        piped = pipe_up(proc)
        meter = group.meter if group is not None else cpumod.ProcTreeMeter(proc.pid)
        evidence["cpu_accounting"] = meter.source
        session = Session("process", piped.channel, meter, kill, evidence, started)
    except BaseException:
        kill()  # interrupted before the session (which an interrupted run stops) existed
        raise
    session.code_path = code_path
    piped.ref.append(session)
    return session

"""Provider `process`: a subprocess with rlimits, inside bubblewrap when it is installed. Tier `process`.

The weakest wall: the controller runs on the host's kernel. With bubblewrap it sees only the
minimal Python runtime (read-only), its own files (read-only), a tmpfs and no network, as `nobody`
in fresh namespaces; without bubblewrap it is a plain child process, and the start-up checks say
so (the host canary is readable, the network is there). Either way the record says `process`,
and its evidence names the wall that held (`wall`).

With PLIMSOLL_BWRAP=required (what `squeeze k8s` puts in its shard pods) there is no bare
fallback: a grading never starts without bubblewrap, and `require_wall()` is the start-up check
that refuses (exit 2, naming the missing wall) before anything is graded. Inside one container
that bare child would share the uid, the files and the processes of the side that signs.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import time

from plimsoll_ci.errors import SandboxError
from plimsoll_ci.sandbox import cpu as cpumod
from plimsoll_ci.sandbox import owner
from plimsoll_ci.sandbox.session import Limits, Session, kill_group, pipe_up
from plimsoll_ci.sandbox.stage import Stage

TIER = "process"
BWRAP_ENV = "PLIMSOLL_BWRAP"  # "0" turns bubblewrap off (tests of the bare fallback)
REQUIRED = "required"  # PLIMSOLL_BWRAP=required: bubblewrap or no grading at all
WALLED = ("bubblewrap: own user, mount, pid, network, ipc and uts namespaces as nobody; sees "
          "only the read-only runtime and its own files")
UNWALLED = "none: shares the uid, the files and the processes of the side that signs"
NOT_INSTALLED = "bwrap is not installed (on PATH)"


def bwrap_path() -> str | None:
    """The bubblewrap binary, unless turned off with PLIMSOLL_BWRAP=0."""
    if os.environ.get(BWRAP_ENV) == "0":
        return None
    return shutil.which("bwrap")


def wall_required() -> bool:
    """Whether PLIMSOLL_BWRAP=required: no grading without bubblewrap."""
    return os.environ.get(BWRAP_ENV) == REQUIRED


def require_wall() -> None:
    """The start-up check of PLIMSOLL_BWRAP=required: SandboxError (exit 2) naming the missing
    wall unless bubblewrap makes its sandbox here; nothing when the variable is not set."""
    if not wall_required():
        return
    bwrap = bwrap_path()
    why = _bwrap_refused(bwrap) if bwrap else NOT_INSTALLED
    if why:
        raise SandboxError(
            f"provider process: {BWRAP_ENV}=required but bubblewrap cannot wall a grading here "
            f"({why}); nothing was graded. Without it a controller would share this "
            "container's uid, files and processes with the signer, the plan and the results. "
            "Run where bubblewrap can make user, mount and pid namespaces (docs/scale.md, "
            "Kubernetes), or grade with the gvisor or docker provider")


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
    return not _bwrap_refused(bwrap)


def _bwrap_refused(bwrap: str) -> str:
    """Why bubblewrap cannot make a grading's sandbox here ('' when it can): the same
    namespaces, root and /proc as a grading, with an interpreter that does nothing."""
    from plimsoll_ci.sandbox import rootfs as rootfs_mod

    try:
        rfs = rootfs_mod.build()
    except (SandboxError, OSError) as e:
        return f"the runtime root it would mount was not built: {e}"
    try:
        r = subprocess.run([bwrap, "--unshare-all", "--die-with-parent", "--new-session",
                            "--cap-drop", "ALL", "--uid", "65534", "--gid", "65534",
                            "--ro-bind", str(rfs.path), "/", "--proc", "/proc", "--dev", "/dev",
                            "--remount-ro", "/", "--clearenv", "--",
                            rfs.python, "-I", "-S", "-c", ""],
                           capture_output=True, text=True, errors="replace", timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{bwrap} did not run: {type(e).__name__}"
    if r.returncode == 0:
        return ""
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    said = "".join(c if c.isprintable() else "?" for c in (lines[-1] if lines else "")[:200])
    return f"{bwrap} exited {r.returncode}: {said or 'no message'}"


def start(stage: Stage, limits: Limits) -> Session:
    """Start the runner as a child process (in bubblewrap when it works here)."""
    started = time.monotonic()
    bwrap = bwrap_path()
    refused = _bwrap_refused(bwrap) if bwrap else NOT_INSTALLED
    if refused and wall_required():
        raise SandboxError(f"provider process: {BWRAP_ENV}=required but bubblewrap cannot wall "
                           f"this grading ({refused}); it was not started")
    if refused:
        bwrap = None
    evidence: dict = {"provider": "process", "runtime": "bubblewrap" if bwrap else "none",
                      "wall": WALLED if bwrap else UNWALLED,
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

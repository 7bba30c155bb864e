"""Provider `gvisor`: `runsc run` on an OCI bundle. Tier `kernel`.

The bundle's root is the minimal Python runtime (`rootfs.py`), read-only; the controller's staged
files and the runner are bind-mounted read-only; `/tmp` is a small tmpfs; there is no network but
loopback (`--network=none`); memory and pids are limited by the cgroup runsc makes for the sandbox,
whose CPU accounting is what the grader's budget reads. The controller runs as `nobody` with no
capabilities and no new privileges.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.errors import SandboxError
from plimsoll_ci.sandbox import cpu as cpumod
from plimsoll_ci.sandbox import owner
from plimsoll_ci.sandbox.leftovers import runsc_path, stop_runsc
from plimsoll_ci.sandbox.session import Limits, Session, kill_group, pipe_up
from plimsoll_ci.sandbox.stage import Stage

TIER = "kernel"
NOBODY = 65534
PLATFORM_ENV = "PLIMSOLL_RUNSC_PLATFORM"
# Set when this host refused runsc's cgroup setup once (some nested machines do): later sandboxes
# run with --ignore-cgroups, CPU is read from the /proc tree, memory is bounded inside by rlimits,
# and the evidence says so.
_NO_CGROUPS: list[str] = []


def configured_tier() -> str:
    """gVisor's user-space kernel: `kernel`."""
    return TIER


def retry_start(stderr: str) -> bool:
    """A sandbox that died on runsc's cgroup setup (some nested hosts refuse it) is started once
    more without cgroups; False when that was already tried."""
    if _NO_CGROUPS or "cgroup" not in stderr.lower():
        return False
    lines = [x for x in stderr.splitlines() if x.strip()]
    last = lines[-1] if lines else ""
    _NO_CGROUPS.append("".join(c if c.isprintable() else "?" for c in last[:300]))
    return True


@functools.lru_cache(maxsize=4)
def runsc_version(path: str) -> str:
    """`runsc --version`'s first line ('' when it does not run)."""
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""


def available() -> tuple[bool, str]:
    """Whether this provider can start here, and why not."""
    path = runsc_path()
    if not path:
        return False, "runsc is not installed (apt-get install runsc)"
    if os.geteuid() != 0:
        return False, ("runsc needs root to start a sandbox with cgroup limits; as a non-root "
                       "user, grade in gVisor through Docker's runsc runtime: --provider docker "
                       "(tier kernel; needs access to the docker socket, e.g. the docker group, "
                       "and runsc registered with dockerd: sudo runsc install)")
    if not runsc_version(path):
        return False, f"{path} --version does not run"
    return True, ""


class OciSpec(NamedTuple):
    """What differs between the OCI runtime specs this project writes (a grading's runner, an
    evaluated command); `document()` adds what every sandbox has in common: `nobody` with no
    capabilities and no new privileges, a read-only root, a fresh /proc, /dev and /tmp, its own
    namespaces, and the cgroup's limits when a cgroup is used."""

    args: list[str]
    env: list[str]
    cwd: str
    root: str
    binds: list[tuple[str, str, str]]  # (destination, source, "ro" or "rw")
    tmp_options: list[str]  # mount options of /tmp besides its size
    nofile: int  # RLIMIT_NOFILE
    resources: dict  # the cgroup's limits (applied only with a cgroup)
    cgroup: str = ""

    def document(self) -> dict:
        """The spec as runsc reads it from `config.json`."""
        return {
            "ociVersion": "1.0.2",
            "process": {
                "terminal": False,
                "user": {"uid": NOBODY, "gid": NOBODY},
                "args": list(self.args),
                "env": list(self.env),
                "cwd": self.cwd,
                "capabilities": {k: [] for k in
                                 ("bounding", "effective", "inheritable", "permitted", "ambient")},
                "rlimits": [{"type": "RLIMIT_NOFILE", "hard": self.nofile, "soft": self.nofile},
                            {"type": "RLIMIT_CORE", "hard": 0, "soft": 0}],
                "noNewPrivileges": True,
            },
            "root": {"path": self.root, "readonly": True},
            "hostname": "sandbox",
            "mounts": [
                {"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
                 "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
                {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                 "options": list(self.tmp_options)},
                *({"destination": dest, "type": "bind", "source": source,
                   "options": ["rbind", mode, "nosuid", "nodev"]}
                  for dest, source, mode in self.binds),
            ],
            "linux": {
                "namespaces": [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount")],
                **({"resources": self.resources, "cgroupsPath": self.cgroup}
                   if self.cgroup else {}),
            },
        }


def spec(stage: Stage, rootfs: Path, python: str, limits: Limits, cgroup: str) -> dict:
    """The OCI runtime spec for one grading sandbox: the runner and the controller read-only."""
    return OciSpec(
        args=[python, "-I", "-B", "/plimsoll/runner.py"],
        env=["PATH=/usr/local/bin", "LANG=C.UTF-8", "HOME=/tmp", "OPENBLAS_NUM_THREADS=1",
             "OMP_NUM_THREADS=1"],
        cwd="/", root=str(rootfs),
        binds=[("/controller", str(stage.controller), "ro"),
               ("/plimsoll", str(stage.runner), "ro")],
        tmp_options=["nosuid", "nodev", "noexec", f"size={limits.tmpfs_bytes}"], nofile=256,
        resources={"memory": {"limit": limits.memory_bytes}, "pids": {"limit": limits.pids}},
        cgroup=cgroup).document()


def start(stage: Stage, limits: Limits) -> Session:
    """Start the runner in a fresh gVisor sandbox; returns once the process is running."""
    from plimsoll_ci.sandbox import rootfs as rootfs_mod

    ok, why = available()
    if not ok:
        raise SandboxError(f"provider gvisor: {why}")
    runsc = runsc_path()
    assert runsc
    platform = os.environ.get(PLATFORM_ENV) or "ptrace"
    rfs = rootfs_mod.build()
    started = time.monotonic()
    cid = owner.sandbox_id()  # names this process: a later run reaps it if we are killed
    cgroup = "" if _NO_CGROUPS else f"/plimsoll/{cid}"
    bundle = stage.root / f"bundle-{cid}"
    state = stage.root / f"runsc-state-{cid}"
    bundle.mkdir()
    state.mkdir(mode=0o700)
    (bundle / "config.json").write_text(json.dumps(spec(stage, rfs.path, rfs.python, limits,
                                                        cgroup), indent=1))
    argv = [runsc, f"--root={state}", "--network=none", f"--platform={platform}",
            *(["--ignore-cgroups"] if not cgroup else []),
            "run", f"--bundle={bundle}", cid]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, close_fds=True, start_new_session=True)

    def kill() -> None:
        stop_runsc(runsc, state, cid, proc)  # the process group goes anyway
        kill_group(proc)
        if cgroup:
            cpumod.remove_cgroup(cgroup)

    try:
        piped = pipe_up(proc)
        meter = _CgroupOrTree(cgroup, proc.pid) if cgroup else cpumod.ProcTreeMeter(proc.pid)
        evidence = {
            "provider": "gvisor",
            "runtime": "runsc",
            "runtime_version": runsc_version(runsc),
            "runtime_path": runsc,
            "platform": platform,
            "network": "none",
            "root": "read-only (OCI root.readonly)",
            "limits": {"memory_bytes": limits.memory_bytes, "pids": limits.pids,
                       "tmpfs_bytes": limits.tmpfs_bytes},
            "user": "65534 (nobody), no capabilities, no new privileges",
            "cgroups": (f"ignored: the host refused runsc's cgroups ({_NO_CGROUPS[0]}); memory "
                        "bounded by rlimits inside" if not cgroup else f"runsc cgroup {cgroup}"),
            "cpu_accounting": meter.source,
        }
        session = Session("gvisor", piped.channel, meter, kill, evidence, started)
    except BaseException:
        kill()  # interrupted before the session (which an interrupted run stops) existed
        raise
    piped.ref.append(session)
    return session


class _CgroupOrTree:
    """runsc makes the sandbox's cgroup a moment after start: read the tree until it is there."""

    def __init__(self, cgroup: str, pid: int) -> None:
        self.cgroup = cgroup
        self.tree = cpumod.ProcTreeMeter(pid)
        self.found: cpumod.CgroupMeter | None = None
        self.offset = 0.0
        self.source = f"cgroup {cgroup} (runsc), /proc tree until it exists"

    def _find(self) -> cpumod.CgroupMeter | None:
        rel = self.cgroup.lstrip("/")
        for path, v2 in ((f"{cpumod.CGROUP_ROOT}/cpuacct/{rel}/cpuacct.usage", False),
                         (f"{cpumod.CGROUP_ROOT}/cpu,cpuacct/{rel}/cpuacct.usage", False),
                         (f"{cpumod.CGROUP_ROOT}/{rel}/cpu.stat", True)):
            if os.path.exists(path):
                return cpumod.CgroupMeter(path, v2)
        return None

    def seconds(self) -> float:
        if self.found is None:
            found = self._find()
            if found is None:
                return self.tree.seconds()
            # Continue from the tree's reading so the total never jumps back.
            self.offset = max(0.0, self.tree.seconds() - found.seconds())
            self.found = found
            self.source = found.source
        return self.found.seconds() + self.offset

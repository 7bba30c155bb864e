"""Reaping what killed runs left behind: containers, `runsc` sandboxes, processes, folders.

A run stopped by SIGTERM, SIGINT or SIGHUP stops its own sandboxes on the way out
(`session.close_all`, `stage.cleanup_all`). A run killed by SIGKILL cannot: its docker containers
stay up, its `runsc` sandboxes (started in sessions of their own) keep running, and its
`plimsoll-grade-*` folder stays. The next run reaps them (`reap_once` is called by the first
`stage.stage` of a process, `reap` by anyone): everything carries its owner's token (see
`owner.py`), and only leftovers whose owner is gone are touched. Gradings running in parallel on
the same machine, and anything without a token, are never touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.sandbox import cpu as cpumod
from plimsoll_ci.sandbox import owner as owner_mod

DOCKER_TIMEOUT_S = 5
STOP_WAIT_S = 1.0  # how long a killed sandbox may take to end before its group is killed
_DONE: list[int] = []  # pids of processes that reaped once already
_LOCK = threading.Lock()


class Reaped(NamedTuple):
    """What one reaping removed, and whose it was."""

    owners: tuple[int, ...]  # pids of the gone runs whose leftovers were found
    containers: int
    sandboxes: int  # runsc sandboxes deleted through their state folder
    processes: int  # host processes killed (runsc's, or the process provider's runner)
    cgroups: int
    folders: int

    @property
    def total(self) -> int:
        """How many things were removed."""
        return self.containers + self.sandboxes + self.processes + self.cgroups + self.folders

    def summary(self) -> str:
        """One line for a log, e.g. '1 container, 1 folder of a killed run (pid 4242)'."""
        parts = [f"{n} {one if n == 1 else many}" for n, one, many in (
            (self.containers, "container", "containers"),
            (self.sandboxes, "runsc sandbox", "runsc sandboxes"),
            (self.processes, "process", "processes"), (self.cgroups, "cgroup", "cgroups"),
            (self.folders, "folder", "folders")) if n]
        runs = ", ".join(str(p) for p in self.owners)
        plural = "s" if len(self.owners) != 1 else ""
        return f"{', '.join(parts) or 'nothing'} of killed run{plural} (pid {runs})"


def _gone(token: str, verdicts: dict[str, str]) -> bool:
    if token not in verdicts:
        owner = owner_mod.parse(token)
        verdicts[token] = owner_mod.status(owner) if owner is not None else owner_mod.UNKNOWN
    return verdicts[token] == owner_mod.GONE


def reap(tmpdir: str | os.PathLike[str] | None = None) -> Reaped:
    """Remove every leftover of runs whose process is gone: their docker containers, `runsc`
    sandboxes, processes, cgroups and temporary folders (in `tmpdir`, default the temporary
    folder). Never raises for a leftover that cannot be removed (another run may be reaping it)."""
    verdicts: dict[str, str] = {}
    base = Path(tmpdir or tempfile.gettempdir())
    folders = [(p, m.group(1)) for p, m in _folders(base)]
    dead_folders = [p for p, token in folders if _gone(token, verdicts)]
    containers = _reap_containers(verdicts)
    sandboxes = sum(_delete_runsc(folder) for folder in dead_folders)
    processes = _kill_processes(verdicts)
    cgroups = _remove_cgroups(verdicts)
    removed = 0
    for folder in dead_folders:
        shutil.rmtree(folder, ignore_errors=True)
        removed += not folder.exists()
    # (a token is GONE only when it parsed: `_gone`)
    pids = sorted({owner_mod.parse(t).pid for t, v in verdicts.items()  # type: ignore[union-attr]
                   if v == owner_mod.GONE})
    found = Reaped(tuple(pids), containers, sandboxes, processes, cgroups, removed)
    return found if found.total else Reaped((), 0, 0, 0, 0, 0)


def reap_once(tmpdir: str | os.PathLike[str] | None = None) -> Reaped | None:
    """`reap`, the first time a process calls it (None afterwards): the start of a run."""
    with _LOCK:
        if os.getpid() in _DONE:
            return None
        _DONE.append(os.getpid())
    return reap(tmpdir)


def _folders(base: Path) -> Iterator[tuple[Path, re.Match[str]]]:
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        m = owner_mod.FOLDER_RE.fullmatch(name)
        if m and (base / name).is_dir() and not (base / name).is_symlink():
            yield base / name, m


def _docker_client():
    """A docker client when a daemon is configured and answers quickly, else None."""
    if not os.environ.get("DOCKER_HOST") and not os.path.exists("/var/run/docker.sock"):
        return None
    try:
        import docker

        client = docker.from_env(timeout=DOCKER_TIMEOUT_S)
        client.ping()
        return client
    except Exception:  # noqa: BLE001 - no daemon (or no access to it): no container to reap
        return None


def _reap_containers(verdicts: dict[str, str]) -> int:
    client = _docker_client()
    if client is None:
        return 0
    removed = 0
    try:
        found = client.containers.list(all=True, filters={"label": owner_mod.CONTAINER_LABEL})
    except Exception:  # noqa: BLE001
        return 0
    for container in found:
        token = (container.labels or {}).get(owner_mod.CONTAINER_LABEL, "")
        if not _gone(token, verdicts):
            continue
        with contextlib.suppress(Exception):  # another run removed it first
            container.remove(force=True)
            removed += 1
    return removed


def runsc_path() -> str | None:
    """The runsc binary ($PLIMSOLL_RUNSC, else the PATH), or None. (It lives here, below the
    gVisor provider, because reaping a gone run's sandboxes needs it too.)"""
    return os.environ.get("PLIMSOLL_RUNSC") or shutil.which("runsc")


def stop_runsc(runsc: str, state: str | os.PathLike[str], cid: str,
               proc: subprocess.Popen | None = None) -> bool:
    """Stop and delete the runsc sandbox `cid` whose state lives in `state`; True when runsc
    deleted it. `proc` is the `runsc run` process when this process started the sandbox (None
    for a gone run's sandbox). A sandbox still running gets SIGKILL in every process first (`kill
    --all`): `delete --force` alone on a running sandbox waits out runsc's five-second stop
    deadline and then fails ("context deadline exceeded"), which cost every hung, over-budget or
    interrupted flight five seconds. A sandbox that does not end within `STOP_WAIT_S` of the kill
    (a program deep in its memory bound) has its process group killed from here before the
    delete."""
    root = f"--root={state}"
    if proc is None or proc.poll() is None:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run([runsc, root, "kill", "--all", cid, "KILL"], capture_output=True,
                           timeout=10)
        if proc is not None:
            try:
                proc.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
    try:
        done = subprocess.run([runsc, root, "delete", "--force", cid], capture_output=True,
                              timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False  # the caller kills the process group anyway
    return done.returncode == 0


def _delete_runsc(folder: Path) -> int:
    """Delete the runsc sandboxes whose state lives in a gone run's folder (which also removes
    the cgroups runsc made); how many state folders there were."""
    states = sorted(folder.glob("runsc-state-plimsoll-*"))
    runsc = runsc_path()
    if not states or runsc is None or os.geteuid() != 0:
        return 0
    for state in states:
        cid = state.name.removeprefix("runsc-state-")
        stop_runsc(runsc, state, cid)
        cpumod.remove_cgroup(f"/plimsoll/{cid}")
    return len(states)


def _kill_processes(verdicts: dict[str, str]) -> int:
    """SIGKILL every process whose command line names a gone run's token (its runsc sandbox and
    gofer, or the process provider's runner, started in sessions of their own)."""
    me, uid = os.getpid(), os.geteuid()
    killed = 0
    for pid in _pids():
        if pid == me:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read().decode("utf-8", "replace")
            if uid != 0 and os.stat(f"/proc/{pid}").st_uid != uid:
                continue
        except OSError:
            continue
        tokens = set(owner_mod.TOKEN_RE.findall(cmdline))
        if tokens and any(_gone(t, verdicts) for t in tokens):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    return killed


def _pids() -> list[int]:
    try:
        return [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []


def _remove_cgroups(verdicts: dict[str, str]) -> int:
    """Remove the `plimsoll/plimsoll-TOKEN-*` cgroups of gone runs (killing what is left in them)."""
    if os.geteuid() != 0:
        return 0
    names: set[str] = set()
    for parent in _cgroup_parents():
        with contextlib.suppress(OSError):
            for name in os.listdir(parent):
                m = owner_mod.TOKEN_RE.search(name)
                if name.startswith("plimsoll-") and m and _gone(m.group(0), verdicts):
                    _kill_members(parent / name)
                    names.add(name)
    for name in names:
        cpumod.remove_cgroup(f"/plimsoll/{name}")
    return len(names)


def _cgroup_parents() -> list[Path]:
    root = Path(cpumod.CGROUP_ROOT)
    parents = [root / "plimsoll"]
    with contextlib.suppress(OSError):
        parents += [root / d / "plimsoll" for d in os.listdir(root)]
    return [p for p in parents if p.is_dir()]


def _kill_members(group: Path) -> None:
    for _ in range(25):
        try:
            left = [int(x) for x in (group / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return
        if not left:
            return
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)

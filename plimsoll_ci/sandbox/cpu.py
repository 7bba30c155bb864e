"""CPU time of a sandbox's processes, read from the host (never from inside the sandbox).

Preferred: the cgroup the sandbox lives in (cgroup v1 `cpuacct.usage`, v2 `cpu.stat`), which counts
every host thread the sandbox runs on (gVisor's Sentry, its gofer and ptrace stubs; a container's
processes; a process provider's tree), and nothing else. Fallback: the sandbox's host process tree
from /proc (utime + stime, and reaped children), re-listed a few times per second.
"""

from __future__ import annotations

import os
import time

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
CGROUP_ROOT = "/sys/fs/cgroup"


class CgroupMeter:
    """CPU seconds from one cgroup's accounting file."""

    def __init__(self, path: str, v2: bool) -> None:
        self.path = path
        self.v2 = v2
        self.source = f"cgroup {'v2' if v2 else 'v1'} {path}"

    def seconds(self) -> float:
        with open(self.path, "rb") as fh:
            data = fh.read()
        if self.v2:
            for line in data.splitlines():
                if line.startswith(b"usage_usec "):
                    return int(line.split()[1]) / 1e6
            raise OSError(f"{self.path}: no usage_usec")
        return int(data) / 1e9


class ProcTreeMeter:
    """CPU seconds of a host process and its descendants, from /proc."""

    def __init__(self, root_pid: int, relist_every: float = 0.25) -> None:
        self.root = root_pid
        self.relist_every = relist_every
        self.known: dict[int, float] = {}
        self.pids: set[int] = {root_pid}
        self.listed = 0.0
        self.source = f"/proc tree of pid {root_pid}"

    def _relist(self) -> None:
        children: dict[int, list[int]] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
            children.setdefault(ppid, []).append(int(name))
        tree, todo = set(), [self.root]
        while todo:
            pid = todo.pop()
            if pid in tree:
                continue
            tree.add(pid)
            todo.extend(children.get(pid, ()))
        self.pids = tree
        self.listed = time.monotonic()

    def seconds(self) -> float:
        if time.monotonic() - self.listed > self.relist_every:
            self._relist()
        for pid in list(self.pids):
            try:
                with open(f"/proc/{pid}/stat", "rb") as fh:
                    stat = fh.read()
            except OSError:
                # Reaped: its time now shows in its parent's cutime/cstime (or the sandbox ended).
                self.pids.discard(pid)
                self.known.pop(pid, None)
                continue
            f = stat[stat.rindex(b")") + 2:].split()
            # utime, stime, cutime, cstime (fields 14-17): reaped children count too.
            self.known[pid] = sum(int(x) for x in f[11:15]) / _TICKS
        return sum(self.known.values())


def cgroup_of(pid: int) -> CgroupMeter | None:
    """The meter of the cgroup `pid` lives in, or None when it is the root or unreadable."""
    try:
        with open(f"/proc/{pid}/cgroup") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    v1 = v2 = None
    for line in lines:
        hid, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            v1 = path
        elif hid == "0" and controllers == "":
            v2 = path
    candidates = []
    if v1 and v1 != "/":
        for mount in ("cpuacct", "cpu,cpuacct", "cpuacct,cpu"):
            candidates.append((os.path.join(CGROUP_ROOT, mount, v1.lstrip("/"), "cpuacct.usage"),
                               False))
    if v2 and v2 != "/":
        for base in (CGROUP_ROOT, os.path.join(CGROUP_ROOT, "unified")):
            candidates.append((os.path.join(base, v2.lstrip("/"), "cpu.stat"), True))
    for path, is_v2 in candidates:
        meter = CgroupMeter(path, is_v2)
        try:
            meter.seconds()
        except (OSError, ValueError):
            continue
        return meter
    return None


def meter_for(pid: int) -> CgroupMeter | ProcTreeMeter:
    """The best meter for a sandbox whose host-side process is `pid`."""
    return cgroup_of(pid) or ProcTreeMeter(pid)


class OwnCgroup:
    """A cgroup made for one process-provider sandbox (root only): CPU accounting and limits.

    `enter()` is called in the child between fork and exec, so every process the controller
    starts is counted and limited from its first instruction.
    """

    def __init__(self, name: str, memory: int, pids: int) -> None:
        self.dirs: list[str] = []
        unified = os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers"))
        if unified:
            d = os.path.join(CGROUP_ROOT, "plimsoll", name)
            os.makedirs(d)
            self.dirs.append(d)
            for fname, value in (("memory.max", memory), ("pids.max", pids)):
                try:
                    with open(os.path.join(d, fname), "w") as fh:
                        fh.write(str(value))
                except OSError:
                    pass
            self.meter: CgroupMeter = CgroupMeter(os.path.join(d, "cpu.stat"), True)
        else:
            for ctl, limit_file, limit in (("cpuacct", None, None),
                                           ("memory", "memory.limit_in_bytes", memory),
                                           ("pids", "pids.max", pids)):
                d = os.path.join(CGROUP_ROOT, ctl, "plimsoll", name)
                if not os.path.isdir(os.path.join(CGROUP_ROOT, ctl)):
                    continue
                os.makedirs(d)
                self.dirs.append(d)
                if limit_file:
                    try:
                        with open(os.path.join(d, limit_file), "w") as fh:
                            fh.write(str(limit))
                    except OSError:
                        pass
            self.meter = CgroupMeter(os.path.join(CGROUP_ROOT, "cpuacct", "plimsoll", name,
                                                  "cpuacct.usage"), False)
        self.meter.seconds()

    def enter(self) -> None:
        pid = str(os.getpid())
        for d in self.dirs:
            with open(os.path.join(d, "cgroup.procs"), "w") as fh:
                fh.write(pid)

    def remove(self) -> None:
        for d in self.dirs:
            procs = os.path.join(d, "cgroup.procs")
            for _ in range(50):
                try:
                    with open(procs) as fh:
                        left = [int(x) for x in fh.read().split()]
                except OSError:
                    break
                if not left:
                    break
                for pid in left:
                    try:
                        os.kill(pid, 9)
                    except OSError:
                        pass
                time.sleep(0.02)
            try:
                os.rmdir(d)
            except OSError:
                pass


def own_cgroup(name: str, memory: int, pids: int) -> OwnCgroup | None:
    """A fresh cgroup for a process sandbox, or None when this host does not let us make one."""
    if os.geteuid() != 0:
        return None
    group = OwnCgroup.__new__(OwnCgroup)
    group.dirs = []
    try:
        OwnCgroup.__init__(group, name, memory, pids)
    except (OSError, ValueError):
        group.remove()
        return None
    return group


def remove_cgroup(rel: str, tries: int = 25) -> None:
    """Remove an empty cgroup `rel` (e.g. /plimsoll/ID) from every hierarchy that has it.

    runsc leaves a sandbox's cgroup behind when the sandbox was killed rather than exited.
    """
    rel = rel.strip("/")
    if not rel:
        return
    try:
        roots = [os.path.join(CGROUP_ROOT, d) for d in os.listdir(CGROUP_ROOT)]
    except OSError:
        return
    roots.append(CGROUP_ROOT)
    for root in roots:
        d = os.path.join(root, rel)
        for _ in range(tries):
            if not os.path.isdir(d):
                break
            try:
                os.rmdir(d)
                break
            except OSError:
                time.sleep(0.02)  # its last task is still exiting

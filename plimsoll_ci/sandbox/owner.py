"""Who owns a sandbox, a container or a temporary folder: this process, by pid and start time.

Everything a run starts carries its owner's token: temporary folders are named
`plimsoll-KIND-TOKEN-XXXXXXXX`, `runsc` sandboxes and the process provider's cgroups are called
`plimsoll-TOKEN-XXXXXXXX` (their state lives in the run's folder, so their command lines name it
too), and docker containers carry the label `plimsoll-ci.owner=TOKEN`. A later run reads the token
back and asks whether that process still lives (`status`): a pid alone could have been reused, so
the kernel's start time of the process must match as well. Leftovers are reaped only when the
owner is known to be gone (`leftovers.reap`); a token from another machine or another pid
namespace (a job in a container sharing the docker daemon) is never judged, so never reaped.

    TOKEN = m<machine>.b<boot>.n<pid namespace>.p<pid>.t<start time in clock ticks since boot>
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

CONTAINER_LABEL = "plimsoll-ci.owner"
TOKEN_RE = re.compile(r"m[0-9a-f]{8}\.b[0-9a-f]{8}\.n[0-9a-f]{8}\.p\d{1,10}\.t\d{1,20}")
# A temporary folder of a run: plimsoll-KIND-TOKEN-random (mkdtemp's suffix).
FOLDER_RE = re.compile(rf"plimsoll-[a-z0-9]+-({TOKEN_RE.pattern})-[A-Za-z0-9_]+")

ALIVE, GONE, UNKNOWN = "alive", "gone", "unknown"


class Owner(NamedTuple):
    """A process as a later run can recognise it (see the module doc)."""

    machine: str  # 8 hex digits of a digest of /etc/machine-id (the host name without one)
    boot: str  # 8 hex digits of a digest of the kernel's boot id
    pidns: str  # 8 hex digits of a digest of the pid namespace
    pid: int
    start: int  # /proc/PID/stat field 22: clock ticks after boot when the process started

    @property
    def token(self) -> str:
        """The owner as it is written into names and labels."""
        return f"m{self.machine}.b{self.boot}.n{self.pidns}.p{self.pid}.t{self.start}"


def _short(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:8]


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, start time) of a process, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    fields = raw[raw.rindex(b")") + 2:].split()  # the name may hold spaces and parentheses
    return fields[0].decode(), int(fields[19])


def _where() -> tuple[str, str, str]:
    machine = _read("/etc/machine-id") or _read("/var/lib/dbus/machine-id") or socket.gethostname()
    try:
        pidns = os.readlink("/proc/self/ns/pid")
    except OSError:
        pidns = ""
    return _short(machine), _short(_read("/proc/sys/kernel/random/boot_id")), _short(pidns)


_ME: list[Owner] = []


def me() -> Owner:
    """This process (computed again in a forked child, which is an owner of its own)."""
    if _ME and _ME[0].pid == os.getpid():
        return _ME[0]
    machine, boot, pidns = _where()
    pid = os.getpid()
    st = _stat(pid)
    owner = Owner(machine, boot, pidns, pid, st[1] if st else 0)
    _ME[:] = [owner]
    return owner


def parse(token: str) -> Owner | None:
    """The owner a token names, or None when `token` is not one."""
    if not TOKEN_RE.fullmatch(token):
        return None
    m, b, n, p, t = token.split(".")
    return Owner(m[1:], b[1:], n[1:], int(p[1:]), int(t[1:]))


def status(owner: Owner) -> str:
    """ALIVE, GONE (its leftovers may be reaped) or UNKNOWN (another machine or pid namespace:
    this process cannot tell, so nothing of it is touched)."""
    here = me()
    if owner.machine != here.machine:
        return UNKNOWN
    if owner.boot != here.boot:
        return GONE  # this machine has rebooted since: every process of that boot is gone
    if owner.pidns != here.pidns:
        return UNKNOWN
    st = _stat(owner.pid)
    if st is None or st[1] != owner.start or st[0] in ("Z", "X"):
        return GONE  # no such process, another process under a reused pid, or a zombie
    return ALIVE


def sandbox_id() -> str:
    """A fresh name for a sandbox or cgroup of this process: `plimsoll-TOKEN-XXXXXXXX`."""
    return f"plimsoll-{me().token}-{secrets.token_hex(4)}"


def tempdir(kind: str, base: str | os.PathLike[str] | None = None,
            keep: Callable[[Path], None] | None = None) -> Path:
    """A fresh private temporary folder of this process (`plimsoll-KIND-TOKEN-XXXXXXXX` in `base`,
    default the temporary folder), which a later run reaps if this process dies without removing
    it. `kind` is a lower-case word naming what it holds (grade, run, squeeze, ...).

    `keep(path)` records the folder for this process's own clean-up. Where it was made is
    recorded before it exists, so `sweep(kind)` finds it even when a stop lands between its
    creation and `keep`: holding the stop signals in this thread does not close that window
    once another thread runs (a finished sandbox's stderr reader), because the kernel hands the
    signal to that thread and Python runs the handler here at once."""
    if not re.fullmatch(r"[a-z0-9]+", kind):
        raise ValueError(f"folder kind {kind!r}: lower-case letters and digits only")
    where = os.path.abspath(tempfile.gettempdir() if base is None else base)
    with _MADE_LOCK:
        _MADE.add((where, kind))
    with _signals_held():
        made = Path(tempfile.mkdtemp(prefix=f"plimsoll-{kind}-{me().token}-", dir=where))
        if keep is not None:
            keep(made)
    return made


_MADE: set[tuple[str, str]] = set()  # (folder, kind): where this process makes its folders
_MADE_LOCK = threading.Lock()


def sweep(kind: str) -> int:
    """Remove every `kind` folder this process made and has not removed, recorded or not (a
    stop's last step, once nothing of this process uses them); how many there were."""
    prefix = f"plimsoll-{kind}-{me().token}-"
    with _MADE_LOCK:
        places = sorted(where for where, k in _MADE if k == kind)
    removed = 0
    for where in places:
        try:
            names = os.listdir(where)
        except OSError:
            continue
        for name in names:
            if name.startswith(prefix):
                shutil.rmtree(os.path.join(where, name), ignore_errors=True)
                removed += 1
    return removed


_HELD = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Within the block, the stop signals wait while this thread is the only one (it blocks
    them); on leaving, one that came meanwhile is delivered and its handler runs. With other
    threads running, one of them may take the signal: `sweep` covers that window."""
    try:
        before = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    except (AttributeError, OSError, ValueError):  # no such call here: nothing to hold
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def labels() -> dict[str, str]:
    """The docker labels naming this process as a container's owner."""
    return {CONTAINER_LABEL: me().token}

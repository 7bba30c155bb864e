"""A private folder with a disk quota: where an attempt's copy lives (`eval run --disk-mb`).

    with quota_folder("plimsoll-eval-", 512) as (work, note):
        ...   # work: a new 0700 folder; at most 512 MiB can be written under it

As root the folder is a tmpfs of that size (a command that fills it gets ENOSPC, and the host's
disk is never touched); elsewhere mounting is not allowed and the folder has no quota, which
`note` says (the report and the results carry it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def quota_folder(prefix: str, disk_mb: int) -> Iterator[tuple[Path, str]]:
    """A new private folder holding at most `disk_mb` MiB, and a note when no quota holds."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    mounted = False
    note = ""
    if os.geteuid() == 0 and shutil.which("mount"):
        done = subprocess.run(["mount", "-t", "tmpfs", "-o",
                               f"size={disk_mb}m,mode=0700,nosuid,nodev", "tmpfs", str(work)],
                              capture_output=True, text=True, timeout=30)
        mounted = done.returncode == 0
        if not mounted:
            note = f"no disk quota on the copy (mounting a tmpfs failed: {done.stderr.strip()})"
    else:
        note = "no disk quota on the copy (not root: a tmpfs cannot be mounted)"
    try:
        yield work, note
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(work)], capture_output=True, timeout=30)
        shutil.rmtree(work, ignore_errors=True)

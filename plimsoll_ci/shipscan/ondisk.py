"""Shipped files on disk: the folder walk behind `scan PATH` and the checked read of one file.

The walk lists files and applies the folder rules (symbolic links to folders and out of the
scanned root are not followed; a pipe, socket or device is not read); the read happens later,
where the file is scanned (in this process or in a worker), and applies the same rules again to
what it opened, so a file swapped after it was listed (a link to a secret outside the root, a
folder of the path replaced by a link, a pipe) is never read through:

- a file listed as a regular file is opened without following a link (`O_NOFOLLOW`), a link the
  walk allowed is followed, and every file is opened without blocking (`O_NONBLOCK`: a pipe swapped
  in does not hang the scan) and read only when the opened file is a regular file;
- under a scanned folder, the opened file must lie inside its real path: where the kernel says
  the open file is (`/proc/self/fd`), else the real path of the name, checked to be the same file.

A file that cannot be read, or is no longer what was listed, is reported in a note and its
contents are not scanned; its name ships all the same.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

from plimsoll_ci.files import cannot_read

_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
NOT_REGULAR = "not a regular file (a pipe, socket or device): its name was scanned, its contents " \
              "not read"
OUT_OF_ROOT = "out of the scanned root when it was read (a link or folder swapped in after it was " \
              "listed), not followed"


class OnDisk(NamedTuple):
    """A listed file, to be read where it is scanned (it pickles: a worker reads it).

    `root` is the real path of the scanned folder the file must stay inside ("" for a file named
    on the command line); `link` says the walk allowed a symbolic link here (it is followed);
    `regular` says the listing saw a regular file (else it is checked before it is opened).
    """

    path: str
    root: str = ""
    link: bool = False
    regular: bool = False


class Listed(NamedTuple):
    """One entry of a walk: its shown path, and how to read it (None: its name alone ships)."""

    shown: str
    disk: OnDisk | None
    size: int = 0  # its size when listed: how much a batch of it weighs (0 when unknown)


class Opened(NamedTuple):
    """A listed file as it was read: its bytes (up to `whole`), or an open file to read a piece
    at a time (a longer one), or a note saying why its contents were not read."""

    data: bytes
    stream: BinaryIO | None
    size: int
    note: str = ""


def walk(root: str, label: str, notes: list[str]) -> Iterator[Listed]:
    """Every file under `root` shown under `label`, top-down, sorted by name, files before
    sub-folders; what is not followed or cannot be listed is said in `notes`."""
    real_root = os.path.realpath(root)
    stack = [(root, "" if label == "/" else label)]
    while stack:
        folder, shown_folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as err:
            notes.append(f"{shown_folder or '/'}: cannot list ({err.strerror})")
            continue
        subfolders = []
        for e in entries:
            shown = f"{shown_folder}/{e.name}"
            try:
                if e.is_dir(follow_symlinks=False):
                    subfolders.append((e.path, shown))
                    continue
                if e.is_file(follow_symlinks=False):
                    yield Listed(shown, OnDisk(e.path, real_root, regular=True),
                                 e.stat(follow_symlinks=False).st_size)
                    continue
                if not e.is_symlink():  # a pipe, socket or device: checked when read
                    yield Listed(shown, OnDisk(e.path, real_root))
                    continue
            except OSError:
                yield Listed(shown, OnDisk(e.path, real_root))
                continue
            target = os.path.realpath(e.path)
            if os.path.isdir(target):
                notes.append(f"{shown}: symbolic link to a folder, not followed")
                continue
            if not _under(target, real_root):
                notes.append(f"{shown}: symbolic link out of the scanned root, not followed")
                yield Listed(shown, None)  # the name still ships
                continue
            try:
                size = os.stat(target).st_size if os.path.isfile(target) else -1
            except OSError:
                size = -1
            if size < 0:
                notes.append(f"{shown}: symbolic link to nothing or a loop, not followed")
                yield Listed(shown, None)
            else:
                yield Listed(shown, OnDisk(e.path, real_root, link=True), size)
        stack.extend(reversed(subfolders))


def named(path: str) -> Listed:
    """A file named on the command line: read as named (a link is followed wherever it goes)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0
    return Listed(path, OnDisk(path, link=True), size)


def read(disk: OnDisk, whole: int) -> Opened:
    """The file's bytes when it has up to `whole` of them, else an open file (the caller closes
    it) and its size; or no contents and a note, when it cannot be read or is not a regular file
    inside its root any more."""
    try:
        if not disk.regular:  # a link or a special file: not opened unless it is a regular file
            if not stat.S_ISREG(os.stat(disk.path, follow_symlinks=disk.link).st_mode):
                return Opened(b"", None, 0, NOT_REGULAR)
        fd = os.open(disk.path, _OPEN | (0 if disk.link else os.O_NOFOLLOW))
    except OSError as e:
        if e.errno == errno.ELOOP and not disk.link:
            return Opened(b"", None, 0, "replaced by a symbolic link after it was listed, not "
                                        "followed: its contents were not scanned")
        return Opened(b"", None, 0, f"{cannot_read(e)}: its contents were not scanned")
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(fd)
            return Opened(b"", None, 0, NOT_REGULAR)
        if disk.root and not _opened_inside(fd, st, disk):
            os.close(fd)
            return Opened(b"", None, 0, OUT_OF_ROOT)
        if st.st_size <= whole:  # (os.read: no file object for the many small files)
            data = os.read(fd, st.st_size + 1)
            while data and len(data) <= whole:  # to its end, or past `whole` if it grew
                more = os.read(fd, whole + 1 - len(data))
                if not more:
                    break
                data += more
            if len(data) <= whole:
                os.close(fd)
                return Opened(data, None, len(data))
            os.lseek(fd, 0, os.SEEK_SET)  # it grew since: read it as it is scanned
        size = max(st.st_size, os.fstat(fd).st_size)
    except OSError as e:
        os.close(fd)
        return Opened(b"", None, 0, f"{cannot_read(e)}: its contents were not scanned")
    return Opened(b"", os.fdopen(fd, "rb"), size)


def _under(path: str, root: str) -> bool:
    return path.startswith(root) and (len(path) == len(root) or path[len(root)] == os.sep
                                      or root.endswith(os.sep))


def _opened_inside(fd: int, st: os.stat_result, disk: OnDisk) -> bool:
    """Whether the file open on `fd` lies inside `disk.root`: where the kernel says it is, or
    (no `/proc`) the real path of its name, when that is the same file."""
    try:
        where = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        where = ""
    if where.startswith(os.sep):
        return _under(where.removesuffix(" (deleted)"), disk.root)
    real = os.path.realpath(disk.path)
    try:
        now = os.stat(real)
    except OSError:
        return False
    return _under(real, disk.root) and (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)

"""A model's edits, applied inside its copy and nowhere else.

A path is refused when it is empty, absolute, has a `..` part, names `.git`, or runs through or
ends at a symbolic link (a link the model made with a command could point anywhere on the host).
The write walks the path one folder at a time from the copy's top with `O_NOFOLLOW`, so the check
and the write are the same steps: nothing can be swapped in between.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from plimsoll_ci.evalharness import contract
from plimsoll_ci.evalharness.contract import Edit, EditOutcome


def refusal(path: str) -> str | None:
    """Why `path` is not a path inside the copy (None when it is)."""
    if not path or "\0" in path:
        return "refused: an empty path or one with a NUL byte"
    if not contract.utf8(path):
        return "refused: the path is not text UTF-8 can carry"
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        return "refused: an absolute path; give a path relative to the repository's top folder"
    if "\\" in path:
        return "refused: a backslash in the path; use / between folders"
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts:
        return "refused: the path names the repository's top folder, not a file"
    if ".." in parts:
        return "refused: '..' leaves the repository; edits stay inside it"
    if parts[0].lower() == ".git":
        return "refused: .git is not part of the copy"
    return None


def apply_edit(root: Path, edit: Edit) -> EditOutcome:
    """Write `edit` into the copy at `root`; what happened, never an exception for a bad path."""
    why = refusal(edit.path)
    if why is not None:
        return EditOutcome(edit.path, False, why)
    try:
        return _write(root, edit)
    except OSError as e:  # a name too long, a full disk: the edit is not applied, the run goes on
        return EditOutcome(edit.path, False, f"not written: {e.strerror}")


def put(root: Path, path: str, data: bytes | None, kind: str = "file") -> None:
    """Write `data` at `path` inside `root` as `kind` ("file", "exec" or "link": data is the
    target), or remove it when `data` is None; the same walk as an edit, never through a link.
    OSError (ELOOP, ENOTDIR) when the path runs through a link or a file."""
    why = refusal(path)
    if why is not None:
        raise OSError(errno.EINVAL, why)
    parts = [p for p in path.split("/") if p not in ("", ".")]
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if data is None:
                    return
                os.mkdir(part, 0o777, dir_fd=fd)
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.fchmod(next_fd, 0o777)
            os.close(fd)
            fd = next_fd
        try:
            os.unlink(parts[-1], dir_fd=fd)
        except FileNotFoundError:
            pass
        if data is None:
            return
        if kind == "link":
            os.symlink(os.fsdecode(data), parts[-1], dir_fd=fd)
            return
        out = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600,
                      dir_fd=fd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(out, view):]
            os.fchmod(out, 0o777 if kind == "exec" else 0o666)
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _write(root: Path, edit: Edit) -> EditOutcome:
    parts = [p for p in edit.path.split("/") if p not in ("", ".")]
    data = edit.content.encode("utf-8", "replace")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            try:
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                os.mkdir(part, 0o777, dir_fd=fd)
                next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.fchmod(next_fd, 0o777)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    return EditOutcome(edit.path, False, f"refused: {part} is a symbolic link or "
                                       "a file, not a folder of the copy")
                raise
            os.close(fd)
            fd = next_fd
        try:
            out = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                          0o666, dir_fd=fd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                return EditOutcome(edit.path, False, "refused: the path is a symbolic link")
            if e.errno == errno.EISDIR:
                return EditOutcome(edit.path, False, "refused: the path is a folder")
            raise
        try:
            executable = os.fstat(out).st_mode & 0o100
            os.fchmod(out, 0o777 if executable else 0o666)
            view = memoryview(data)
            while view:
                view = view[os.write(out, view):]
        finally:
            os.close(out)
    finally:
        os.close(fd)
    return EditOutcome(edit.path, True, f"wrote {len(data)} bytes")

"""What an attempt changed: its copy at the end against the snapshot it started from.

The copy is read from the host without following anything: regular files by content (streamed,
bounded), symbolic links by their target text, FIFOs, sockets and devices by their kind only
(never opened, so a FIFO a command left behind cannot block the harness). The raw diff is
git-style unified text; a binary or large change is summarized (sizes and SHA-256), never dumped.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.evalharness.snapshot import Snapshot, tree_digest
from plimsoll_ci.files import cannot_read

MAX_TEXT = 1024 * 1024  # a change to a larger file is summarized
MAX_ENTRIES = 50_000  # files read from one copy; past this the rest is noted, not read


class Entry(NamedTuple):
    """One path of a tree: its kind, its SHA-256, its size, and its bytes when small enough."""

    kind: str  # "file", "exec", "link", "special"
    sha256: str
    size: int
    data: bytes | None  # None when larger than MAX_TEXT (or special)


class Change(NamedTuple):
    """One changed path."""

    path: str
    status: str  # "added", "modified", "deleted"
    binary: bool


class TreeDiff(NamedTuple):
    """Every change, the raw diff text, and the digest of the copy at the end."""

    changes: tuple[Change, ...]
    text: str
    final_digest: str
    notes: tuple[str, ...]

    @property
    def touched(self) -> list[str]:
        return [c.path for c in self.changes]


def _read(full: str, st: os.stat_result) -> Entry:
    kind = "exec" if st.st_mode & 0o100 else "file"
    h = hashlib.sha256()
    kept = bytearray()
    size = 0
    fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the listing: not read
            return Entry("special", hashlib.sha256(b"special").hexdigest(), 0, None)
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
            size += len(chunk)
            if size <= MAX_TEXT:
                kept += chunk
    finally:
        os.close(fd)
    return Entry(kind, h.hexdigest(), size, bytes(kept) if size <= MAX_TEXT else None)


def read_tree(root: Path) -> tuple[dict[str, Entry], list[str]]:
    """Every file, link and special file under `root` by relative path (folders are not entries,
    as in git), and notes on what was not read."""
    tree: dict[str, Entry] = {}
    notes: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        names = list(filenames)
        for d in list(dirnames):
            if os.path.islink(os.path.join(dirpath, d)):
                dirnames.remove(d)  # never walked into: it is a link, listed as one
                names.append(d)
        dirnames.sort()
        for name in sorted(names):
            if len(tree) >= MAX_ENTRIES:
                notes.append(f"more than {MAX_ENTRIES} files in the copy; the rest were not read")
                return tree, notes
            full = os.path.join(dirpath, name)
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            rel = rel.replace(os.sep, "/")
            try:
                st = os.lstat(full)
                if stat.S_ISLNK(st.st_mode):
                    target = os.fsencode(os.readlink(full))
                    tree[rel] = Entry("link", hashlib.sha256(target).hexdigest(), len(target),
                                      target)
                elif stat.S_ISREG(st.st_mode):
                    tree[rel] = _read(full, st)
                else:
                    tree[rel] = Entry("special", hashlib.sha256(b"special").hexdigest(), 0, None)
            except OSError as e:
                notes.append(f"{rel}: {cannot_read(e)}")
    return tree, notes


def _is_text(data: bytes | None) -> bool:
    if data is None or b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _lines(data: bytes) -> list[str]:
    lines = data.decode("utf-8").splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


def _describe(e: Entry) -> str:
    return {"link": "symbolic link", "special": "special file (FIFO, socket or device)"}.get(
        e.kind, f"{e.size} bytes")


def _file_diff(path: str, old: Entry | None, new: Entry | None) -> tuple[list[str], bool]:
    """The diff lines of one path, and whether it was summarized as binary."""
    out = [f"diff --git a/{path} b/{path}\n"]
    if old is None:
        mode = {"exec": "100755", "link": "120000"}.get(new.kind if new else "", "100644")
        out.append(f"new file mode {mode}\n")
    elif new is None:
        out.append("deleted file\n")
    elif old.kind != new.kind:
        out.append(f"kind changed: {old.kind} -> {new.kind}\n")
    sides = [e for e in (old, new) if e is not None]
    if all(e.kind in ("file", "exec") and _is_text(e.data) for e in sides):
        a = _lines(old.data) if old is not None and old.data is not None else []
        b = _lines(new.data) if new is not None and new.data is not None else []
        out += difflib.unified_diff(a, b, f"a/{path}" if old else "/dev/null",
                                    f"b/{path}" if new else "/dev/null")
        return out, False
    if any(e.kind == "link" for e in sides):
        for sign, e in (("-", old), ("+", new)):
            if e is not None and e.kind == "link" and e.data is not None:
                out.append(f"{sign}symbolic link -> {e.data.decode('utf-8', 'replace')}\n")
    before = f"{_describe(old)}, sha256 {old.sha256[:16]}" if old else "absent"
    after = f"{_describe(new)}, sha256 {new.sha256[:16]}" if new else "absent"
    out.append(f"Binary files {'a/' + path if old else '/dev/null'} and "
               f"{'b/' + path if new else '/dev/null'} differ ({before} -> {after})\n")
    return out, True


def compare(snapshot: Snapshot, root: Path) -> TreeDiff:
    """The changes from `snapshot` to the copy at `root`, the raw diff, the final digest."""
    before = {f.path: Entry(f.kind, hashlib.sha256(f.data).hexdigest(), len(f.data),
                            f.data if len(f.data) <= MAX_TEXT else None)
              for f in snapshot.files}
    after, notes = read_tree(root)
    changes: list[Change] = []
    text: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old is not None and new is not None and (old.kind, old.sha256) == (new.kind, new.sha256):
            continue
        lines, binary = _file_diff(path, old, new)
        text += lines
        status = "added" if old is None else "deleted" if new is None else "modified"
        changes.append(Change(path, status, binary))
    digest = tree_digest((p, e.kind, e.sha256) for p, e in after.items())
    return TreeDiff(tuple(changes), "".join(text), digest, tuple(notes))

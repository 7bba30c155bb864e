"""What every attempt's copy holds: the repository's tracked files, read once, written fresh.

The snapshot is the index (what `git add` staged) of the folder `--repo` names, read through the
one hardened git module, so no filter, hook or config of the repository runs. Never in it: `.git`,
`node_modules`, `__pycache__`, `.venv` and other caches, credentials (by name: `.env`, keys,
`.netrc`, `.ssh/`, ...), untracked files, submodules, and symbolic links that point out of the
repository. What was left out is listed (path and why) for the report.

Each attempt writes the snapshot into a new folder (`materialize`), so nothing of one attempt can
reach the next; the original repository is only ever read.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import posixpath
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci import git
from plimsoll_ci.errors import BadInput

MAX_FILES = 20_000
MAX_BYTES = 256 * 1024 * 1024
SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".tox", ".nox",
                       ".pytest_cache", ".mypy_cache", ".ruff_cache"})
CREDENTIAL_DIRS = frozenset({".ssh", ".aws", ".gnupg", ".docker", ".kube", ".azure"})
CREDENTIAL_NAMES = ("credentials", "credentials.json", ".env", ".env.*", ".netrc", "_netrc",
                    ".npmrc", ".pypirc", ".git-credentials", ".pgpass", ".htpasswd",
                    ".dockercfg", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.pem",
                    "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore")
TEMPLATES = (".env.example", ".env.sample", ".env.template", ".env.dist")


class File(NamedTuple):
    """One file of the snapshot."""

    path: str  # relative, `/`-separated
    kind: str  # "file", "exec" (executable) or "link" (data is the link's target)
    data: bytes


class LeftOut(NamedTuple):
    """A tracked path that no copy holds, and why."""

    path: str
    why: str


class Snapshot(NamedTuple):
    """The files every copy holds, what was left out, and the digest naming them."""

    files: tuple[File, ...]
    left_out: tuple[LeftOut, ...]
    digest: str  # `tree_digest` of `files`
    notes: tuple[str, ...]


def tree_digest(items: Iterable[tuple[str, str, str]]) -> str:
    """SHA-256 (hex) naming a tree: `kind sha256 path` lines of (path, kind, sha256), sorted."""
    h = hashlib.sha256(b"plimsoll-ci eval-tree v1\0")
    for path, kind, digest in sorted(items):
        h.update(f"{kind} {digest} {path}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def digest_of(files: Iterable[File]) -> str:
    """The tree digest of snapshot files."""
    return tree_digest((f.path, f.kind, hashlib.sha256(f.data).hexdigest()) for f in files)


def excluded(path: str) -> str | None:
    """Why a tracked path never enters a copy (None when it does)."""
    parts = path.split("/")
    for part in parts[:-1]:
        if part in SKIP_DIRS:
            return f"inside {part}/"
        if part in CREDENTIAL_DIRS:
            return f"credentials ({part}/)"
    name = parts[-1]
    if name in SKIP_DIRS:
        return f"{name} is never copied"
    if name not in TEMPLATES and any(fnmatch.fnmatchcase(name, p) for p in CREDENTIAL_NAMES):
        return "credentials (by its name)"
    return None


def _link_inside(path: str, target: str) -> bool:
    if not target or target.startswith("/") or "\0" in target:
        return False
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    return joined != ".." and not joined.startswith("../")


def take(repo: str, kept: tuple[str, ...] = ()) -> Snapshot:
    """Read the tracked files under `repo` (a repository or a folder inside one) from its index;
    a path left out as credentials by its name is kept when a `kept` glob names it (`--keep`:
    test certificates such as `tests/certs/*.pem`).

    BadInput when `repo` is not in a git repository, has nothing to copy, or is too large."""
    folder = Path(repo)
    if not folder.is_dir():
        raise BadInput(f"--repo {repo}: not a folder")
    if git.toplevel(folder) is None:
        raise BadInput(f"--repo {repo}: not inside a git repository; each attempt copies the "
                       "repository's tracked files (git init, git add)")
    entries = git.index_entries(folder)  # paths relative to `repo`
    left: list[LeftOut] = []
    keep: list[git.FileEntry] = []
    for e in sorted(entries, key=lambda e: e.path):
        why = excluded(e.path)
        if why is not None and why.startswith("credentials") and any(
                fnmatch.fnmatchcase(e.path, k) for k in kept):
            why = None
        if why is None and e.mode == git.MODE_SUBMODULE:
            why = "a submodule (its files are another repository's)"
        if why is not None:
            left.append(LeftOut(e.path, why))
        else:
            keep.append(e)
    if len(keep) > MAX_FILES:
        raise BadInput(f"--repo {repo}: {len(keep)} tracked files, more than {MAX_FILES}")
    blobs = git.read_blobs(folder, [e.oid for e in keep])
    files: list[File] = []
    total = 0
    for e in keep:
        data = blobs[e.oid]
        total += len(data)
        if total > MAX_BYTES:
            raise BadInput(f"--repo {repo}: more than {MAX_BYTES} bytes of tracked files")
        if e.mode == git.MODE_SYMLINK:
            if not _link_inside(e.path, os.fsdecode(data)):
                left.append(LeftOut(e.path, "a symbolic link out of the repository"))
                continue
            files.append(File(e.path, "link", data))
        else:
            files.append(File(e.path, "exec" if e.mode == git.MODE_EXECUTABLE else "file", data))
    if not files:
        raise BadInput(f"--repo {repo}: no tracked files to copy (git add them first)")
    notes = []
    changed = _unstaged(folder, files)
    if changed:
        notes.append(f"{changed} tracked file(s) differ in the working tree from the index; "
                     "every copy holds the index's version (git add them to evaluate them)")
    return Snapshot(tuple(files), tuple(sorted(left)), digest_of(files), tuple(notes))


def _unstaged(folder: Path, files: list[File]) -> int:
    """How many tracked files' working-tree bytes differ from the index (read, never written)."""
    changed = 0
    for f in files:
        full = folder / f.path
        try:
            st = os.lstat(full)
            if f.kind == "link":
                same = os.path.islink(full) and os.fsencode(os.readlink(full)) == f.data
            else:
                same = (not os.path.islink(full) and os.path.isfile(full)
                        and st.st_size == len(f.data) and full.read_bytes() == f.data)
        except OSError:
            same = False
        changed += not same
    return changed


def materialize(snapshot: Snapshot, dest: Path) -> None:
    """Write the snapshot into `dest` (which must not exist), writable by the sandbox's user:
    folders 0777, files 0666, executables 0777. Keep `dest` inside a private folder."""
    dest.mkdir()
    os.chmod(dest, 0o777)
    made = {""}
    for f in snapshot.files:
        parent = posixpath.dirname(f.path)
        if parent not in made:
            folder = dest
            walked = ""
            for part in parent.split("/"):
                walked = f"{walked}/{part}" if walked else part
                folder = folder / part
                if walked not in made:
                    folder.mkdir(exist_ok=True)
                    os.chmod(folder, 0o777)
                    made.add(walked)
        target = dest / f.path
        if f.kind == "link":
            os.symlink(os.fsdecode(f.data), target)
            continue
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(f.data)
        os.chmod(target, 0o777 if f.kind == "exec" else 0o666)


def listing(snapshot: Snapshot) -> str:
    """The file listing a model is shown: one `path (N bytes)` line per file."""
    return "\n".join(f"{f.path} ({len(f.data)} bytes{', link' if f.kind == 'link' else ''})"
                     for f in snapshot.files)

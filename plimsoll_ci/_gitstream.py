"""Streaming access to a git repository: a few long-lived git processes, never one per file.

- `walk` runs one `git log --raw -z` over a range and yields each commit with the changes of its
  tree against its first parent (so a merge, a rename or a revert shows up as the files it changes).
- `ls_tree` lists a whole tree once (`git ls-tree -r -z`), for a range's boundary commits.
- `CatFile` keeps one `git cat-file --batch` process open and streams objects through it.

Paths stay `bytes` here: git paths need not be UTF-8 (`path_text` turns them into text).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator, Sequence
from typing import IO, NamedTuple

from plimsoll_ci.errors import BadInput

ZERO_OID = "0" * 40
MODE_SUBMODULE = "160000"
MODE_SYMLINK = "120000"

# Settings that would change what `git log` prints, pinned so a user's config cannot.
_PINNED = [
    "-c", "core.quotepath=off",
    "-c", "diff.renames=false",
    "-c", "log.showSignature=false",
    "-c", "core.fsmonitor=false",
]

_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_NO_LAZY_FETCH": "1", "LC_ALL": "C"}


class Change(NamedTuple):
    """One file of a commit's tree that differs from its first parent's tree."""

    path: bytes
    mode: str  # new mode ("000000" when deleted)
    oid: str  # new blob id (ZERO_OID when deleted)


class Commit(NamedTuple):
    """A commit as the walk yields it."""

    oid: str
    parents: tuple[str, ...]
    tree: str
    time: int  # committer time, seconds since the epoch
    author: str
    changes: list[Change]


class TreeEntry(NamedTuple):
    """A file in a tree: its mode and blob id."""

    mode: str
    oid: str


def path_text(path: bytes) -> str:
    """Text form of a git path: UTF-8 when it is, with invalid bytes kept as `\\xNN` escapes."""
    return path.decode("utf-8", "backslashreplace")


def blob_id(data: bytes) -> str:
    """The git (SHA-1) blob id of `data`, as `git hash-object` computes it."""
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


class Repo(NamedTuple):
    """A repository's top folder and its (common) git folder."""

    top: str
    git_dir: str


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(_ENV)
    return env


def git(repo: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    """Run one short git command in `repo`; a failure is `BadInput` with git's own message."""
    proc = subprocess.run(
        ["git", *_PINNED, *args], cwd=repo, capture_output=True, env=_env(), stdin=subprocess.DEVNULL
    )
    if check and proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BadInput(f"git {args[0]} in {repo}: {msg[-1] if msg else 'failed'}")
    return proc


MIN_GIT = (2, 31)  # --diff-merges=first-parent


def git_version() -> tuple[int, ...]:
    """The installed git's version, e.g. (2, 39, 5); () when git is not installed."""
    try:
        out = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    except OSError:
        return ()
    words = out.split()
    nums = words[2].split(".") if len(words) > 2 else []
    return tuple(int(n) for n in nums if n.isdigit())


def open_repo(path: str) -> Repo:
    """Find the repository containing `path`; `BadInput` when there is none (or git is too old)."""
    version = git_version()
    if version[:2] < MIN_GIT:
        have = ".".join(map(str, version)) or "none"
        raise BadInput(f"git {'.'.join(map(str, MIN_GIT))} or newer is needed (found {have}); "
                       "install a newer git")
    if not os.path.isdir(path):
        raise BadInput(f"{path}: not a folder; run history inside a git repository or pass --repo")
    proc = git(path, "rev-parse", "--show-toplevel", "--git-common-dir", check=False)
    if proc.returncode != 0:
        raise BadInput(f"{path}: not a git repository; run history inside one or pass --repo")
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) < 2:  # a bare repository has no top level
        raise BadInput(f"{path}: a bare repository; run history in a clone with a work tree")
    top = lines[0]
    git_dir = lines[1] if os.path.isabs(lines[1]) else os.path.join(path, lines[1])
    return Repo(top, os.path.abspath(git_dir))


def is_shallow(repo: Repo) -> bool:
    """True when the repository is a shallow clone (history before some commits is missing)."""
    out = git(repo.top, "rev-parse", "--is-shallow-repository").stdout.strip()
    return out == b"true"


def check_revs(revs: Sequence[str]) -> None:
    """Refuse a revision argument that git would read as an option."""
    for rev in revs:
        if not rev or rev.startswith("-"):
            raise BadInput(f"revision {rev!r}: not a revision or range; give e.g. main or A..B")


def rev_list(repo: Repo, revs: Sequence[str], first_parent: bool = False) -> list[list[str]]:
    """The commits of `revs`, oldest first (topological), each as [commit, parent...]."""
    args = ["rev-list", "--topo-order", "--reverse", "--parents"]
    if first_parent:
        args.append("--first-parent")
    proc = git(repo.top, *args, *_rev_words(revs), "--")
    return [line.split() for line in proc.stdout.decode("ascii").splitlines() if line]


def ls_tree(repo: Repo, rev: str) -> dict[bytes, TreeEntry]:
    """Every file of `rev`'s tree (recursing into folders; submodules are entries of their own)."""
    out = git(repo.top, "ls-tree", "-r", "-z", "--full-tree", rev, "--").stdout
    tree: dict[bytes, TreeEntry] = {}
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        mode, _kind, oid = meta.decode("ascii").split(" ")
        tree[path] = TreeEntry(mode, oid)
    return tree


def _rev_words(revs: Sequence[str]) -> list[str]:
    """Revisions after `--end-of-options` (so none is read as an option), except ref options."""
    opts = [r for r in revs if r in _REF_OPTIONS]
    return [*opts, "--end-of-options", *(r for r in revs if r not in _REF_OPTIONS)]


_REF_OPTIONS = ("--all", "--branches", "--tags", "--remotes")


_HEADER = "%x01%H %P%x02%T %ct%x02%an <%ae>"


def walk(repo: Repo, revs: Sequence[str]) -> Iterator[Commit]:
    """Every commit of `revs`, oldest first, with its changes against its first parent.

    One `git log` process streams the whole range; memory stays one commit's worth.
    """
    args = [
        "git", *_PINNED, "log", "-z", "--raw", "--no-renames", "--no-abbrev", "--root",
        "--diff-merges=first-parent", "--topo-order", "--reverse", "--no-color",
        "--no-mailmap", f"--format={_HEADER}", *_rev_words(revs), "--",
    ]
    proc = subprocess.Popen(
        args, cwd=repo.top, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL, env=_env(),
    )
    assert proc.stdout is not None
    try:
        yield from _parse_log(proc.stdout)
    finally:
        proc.stdout.close()
        err = proc.stderr.read() if proc.stderr else b""
        rc = proc.wait()
    if rc != 0:
        msg = err.decode("utf-8", "replace").strip().splitlines()
        raise BadInput(f"git log {' '.join(revs)}: {msg[-1] if msg else 'failed'}")


def _tokens(stream: IO[bytes]) -> Iterator[bytes]:
    rest = b""
    while True:
        chunk = stream.read(1 << 20)
        if not chunk:
            break
        parts = (rest + chunk).split(b"\0")
        rest = parts.pop()
        yield from parts
    if rest:
        yield rest


def _parse_log(stream: IO[bytes]) -> Iterator[Commit]:
    current: Commit | None = None
    meta: str | None = None
    for tok in _tokens(stream):
        if meta is not None:  # the token after a ":..." record is always its path
            _old_mode, new_mode, _old_oid, new_oid, _status = meta.split(" ")
            assert current is not None
            current.changes.append(Change(tok, new_mode, new_oid))
            meta = None
            continue
        tok = tok.lstrip(b"\n")
        if tok.startswith(b":"):
            meta = tok[1:].decode("ascii")
        elif tok.startswith(b"\x01"):
            if current is not None:
                yield current
            ids, times, author = tok[1:].decode("utf-8", "replace").split("\x02", 2)
            oid, *parents = ids.split()
            tree, ctime = times.split()
            current = Commit(oid, tuple(parents), tree, int(ctime), author, [])
    if current is not None:
        yield current


class Blob(NamedTuple):
    """An object read through `CatFile`: its data (maybe cut short) and its full size."""

    data: bytes
    size: int
    truncated: bool


class CatFile:
    """One `git cat-file --batch` process; `read` streams an object through it.

    A blob over `max_bytes` is read in chunks and only its first `max_bytes` are kept, so memory
    stays bounded however large the blob is.
    """

    def __init__(self, repo: Repo, max_bytes: int = 64 << 20) -> None:
        self.max_bytes = max_bytes
        self._proc = subprocess.Popen(
            ["git", *_PINNED, "cat-file", "--batch"], cwd=repo.top, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env(),
        )

    # Requests written ahead of reading stay well under any pipe's capacity (4 KiB at least), so
    # writing them can never block while git waits for us to read.
    BATCH = 64

    def read(self, oid: str) -> Blob | None:
        """The object `oid`, or None when it is missing from the object store."""
        return next(self.read_many([oid]))[1]

    def read_many(self, oids: Sequence[str]) -> Iterator[tuple[str, Blob | None]]:
        """(oid, object or None when missing) for each of `oids`, in order; requests are sent
        ahead in batches so git streams objects while the caller works on the previous one.
        """
        stdin = self._proc.stdin
        assert stdin is not None
        for i in range(0, len(oids), self.BATCH):
            batch = oids[i:i + self.BATCH]
            stdin.write("".join(o + "\n" for o in batch).encode("ascii"))
            stdin.flush()
            for oid in batch:
                yield oid, self._read_one(oid)

    def _read_one(self, oid: str) -> Blob | None:
        stdout = self._proc.stdout
        assert stdout is not None
        header = stdout.readline()
        if not header:
            raise BadInput(f"git cat-file stopped while reading {oid}; is the repository intact?")
        fields = header.split()
        if len(fields) != 3:  # "<oid> missing" (or "ambiguous")
            return None
        size = int(fields[2])
        keep = min(size, self.max_bytes)
        data = stdout.read(keep)
        left = size - keep
        while left > 0:
            left -= len(stdout.read(min(left, 1 << 20)))
        stdout.read(1)  # the newline after the content
        return Blob(data, size, size > keep)

    def close(self) -> None:
        """End the git process."""
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.close()
            except OSError:
                pass
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __enter__(self) -> CatFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

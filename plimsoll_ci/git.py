"""The one way plimsoll-ci calls git: hardened for hostile repositories, streaming where it counts.

A repository under audit may carry a malicious `.git/config` (it is not part of a clone, but an
unpacked tarball or a shared machine brings one). Every git process started here therefore runs
with the settings that make git execute commands pinned off, so no such config runs anything:

- `core.fsmonitor=false` (a hook git would run to list changed files), `core.hooksPath=/dev/null`
  (no hook: `post-index-change`, `reference-transaction`, `pre-auto-gc`...), `--no-pager` and
  `GIT_PAGER=cat`, `GIT_EXTERNAL_DIFF` unset and `--no-ext-diff --no-textconv` on `log`,
  `log.showSignature=false` (no `gpg.program`), `protocol.allow=never` (a partial clone's lazy
  fetch can name an `ext::` transport), `gc.auto=0`, `GIT_TERMINAL_PROMPT=0`, `GIT_CONFIG_NOSYSTEM`,
  `GIT_OPTIONAL_LOCKS=0` (read-only commands never rewrite the index);
- only builtin commands are run, and git never lets an alias shadow a builtin;
- a tree is checked out by writing its blobs ourselves (`checkout`), never by `git checkout-index`,
  which would run the smudge filters (`filter.<driver>.smudge`) a config defines.

GitPython is not used: importing it costs about 55 ms (a third of the warm pre-commit hook's
budget) and it saves nothing here; its repository discovery walks up folders in Python, without
git's `safe.directory` ownership check, and an index read in Python ignores `GIT_INDEX_FILE`,
which `git commit -a` hands its hooks. Everything below runs the `git` program.

Streams (one long-lived process, never one per file): `ls_tree` and `CatFile` (`git cat-file
--batch`) here; walking revisions (`Log`, `git log --raw -z` over a range parsed as the pipe fills,
and `RevList`, the range's graph) is `plimsoll_ci.gitlog`, which starts git through
`command_line` and `environment` like every call here. Paths from the streams stay `bytes`
(`path_text` shows them); listings for ship sets (`index_entries`, `rev_entries`) give text paths
(undecodable bytes kept as surrogates, `os.fsdecode`).
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, NamedTuple

from plimsoll_ci.errors import BadInput

ZERO_OID = "0" * 40
EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"  # the id of the empty file
MODE_SUBMODULE = "160000"
MODE_SYMLINK = "120000"
MODE_EXECUTABLE = "100755"
MIN_GIT = (2, 31)  # --diff-merges=first-parent

# Settings that would make git run a command, or change what it prints, pinned for every call.
HARDENING = (
    "-c", "core.fsmonitor=false",
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.pager=cat",
    "-c", "log.showSignature=false",
    "-c", "protocol.allow=never",
    "-c", "gc.auto=0",
    "-c", "maintenance.auto=false",
    "-c", "core.quotepath=off",
    "-c", "diff.renames=false",
)
_SET_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "LC_ALL": "C",
}
_DROP_ENV = ("GIT_EXTERNAL_DIFF", "GIT_ASKPASS", "SSH_ASKPASS", "GIT_SSH", "GIT_SSH_COMMAND",
             "GIT_PROXY_COMMAND", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR")


def environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a git process: `base` (default: ours) with the hardening applied.

    `GIT_INDEX_FILE` is kept: a pre-commit hook of `git commit -a` is handed a temporary index,
    and that is what commits.
    """
    env = dict(os.environ if base is None else base)
    for name in _DROP_ENV:
        env.pop(name, None)
    env.update(_SET_ENV)
    return env


def command_line(args: Sequence[str]) -> list[str]:
    """The command line of one git call: the hardening, then `args` (run it with `environment()`)."""
    return ["git", "--no-pager", *HARDENING, *args]


def run(repo: str | os.PathLike[str], *args: str, check: bool = True, input: bytes | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run one short git command in `repo`; with `check`, a failure is `BadInput` carrying git's
    own last line of error. `env` replaces the environment (hardened all the same)."""
    try:
        proc = subprocess.run(command_line(["-C", os.fspath(repo), *args]), capture_output=True,
                              input=input, env=environment(env),
                              stdin=None if input is not None else subprocess.DEVNULL)
    except OSError as e:  # git is not installed
        raise BadInput(f"git: cannot run ({e.strerror}); install git") from None
    if check and proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise BadInput(f"git {args[0]} in {os.fspath(repo)}: {msg[-1] if msg else 'failed'}")
    return proc


def output(repo: str | os.PathLike[str], *args: str, input: bytes | None = None,
           env: dict[str, str] | None = None) -> bytes:
    """Standard output of a git command that must succeed (else `BadInput`)."""
    return run(repo, *args, input=input, env=env).stdout


# --------------------------------------------------------------------------- repositories


class Repo(NamedTuple):
    """A repository's top folder and its (common) git folder."""

    top: str
    git_dir: str


def top_folder(repo: Repo | str | os.PathLike[str]) -> str:
    """A repository's top folder, from a `Repo` or a path."""
    return repo.top if isinstance(repo, Repo) else os.fspath(repo)


def git_version() -> tuple[int, ...]:
    """The installed git's version, e.g. (2, 39, 5); () when git is not installed."""
    try:
        out = subprocess.run(["git", "--version"], capture_output=True, text=True,
                             env=environment()).stdout
    except OSError:
        return ()
    words = out.split()
    nums = words[2].split(".") if len(words) > 2 else []
    return tuple(int(n) for n in nums if n.isdigit())


def toplevel(path: str | os.PathLike[str]) -> Path | None:
    """The top folder of the work tree containing `path` (a file or folder); None outside git."""
    p = Path(path)
    folder = p if p.is_dir() else p.parent
    try:
        proc = run(folder, "rev-parse", "--show-toplevel", check=False)
    except BadInput:
        return None
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    return Path(os.fsdecode(proc.stdout.strip())).resolve()


def repo_root(path: str | os.PathLike[str]) -> Path:
    """The top folder of the work tree containing `path`; `BadInput` outside git."""
    root = toplevel(path)
    if root is None:
        raise BadInput(f"{os.fspath(path)}: not inside a git repository; --staged and --rev "
                       "need git")
    return root


def common_dir(repo: str | os.PathLike[str]) -> Path | None:
    """The repository's common git folder (shared by its worktrees), where caches live."""
    proc = run(repo, "rev-parse", "--git-common-dir", check=False)
    if proc.returncode != 0:
        return None
    d = Path(os.fsdecode(proc.stdout.strip()))
    return d if d.is_absolute() else Path(repo) / d


def locate(path: str | os.PathLike[str]) -> tuple[Path, Path] | None:
    """(top folder, common git folder) of the work tree containing the folder `path`, from one
    `git rev-parse` (`toplevel` and `common_dir` in one process); None outside git."""
    try:
        proc = run(path, "rev-parse", "--show-toplevel", "--git-common-dir", check=False)
    except BadInput:
        return None
    lines = os.fsdecode(proc.stdout).splitlines()
    if proc.returncode != 0 or len(lines) < 2 or not lines[0].strip():
        return None
    common = Path(lines[1])
    return Path(lines[0]).resolve(), common if common.is_absolute() else Path(path) / common


def open_repo(path: str) -> Repo:
    """Find the repository containing `path`; `BadInput` when there is none (or git is too old)."""
    version = git_version()
    if version[:2] < MIN_GIT:
        have = ".".join(map(str, version)) or "none"
        raise BadInput(f"git {'.'.join(map(str, MIN_GIT))} or newer is needed (found {have}); "
                       "install a newer git")
    if not os.path.isdir(path):
        raise BadInput(f"{path}: not a folder; run history inside a git repository or pass --repo")
    proc = run(path, "rev-parse", "--show-toplevel", "--git-common-dir", check=False)
    if proc.returncode != 0:
        raise BadInput(f"{path}: not a git repository; run history inside one or pass --repo")
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) < 2:  # a bare repository has no top level
        raise BadInput(f"{path}: a bare repository; run history in a clone with a work tree")
    top = lines[0]
    git_dir = lines[1] if os.path.isabs(lines[1]) else os.path.join(path, lines[1])
    return Repo(top, os.path.abspath(git_dir))


def is_shallow(repo: Repo | str) -> bool:
    """True when the repository is a shallow clone (history before some commits is missing)."""
    return output(top_folder(repo), "rev-parse", "--is-shallow-repository").strip() == b"true"


# --------------------------------------------------------------------------- revisions


def check_revs(revs: Sequence[str]) -> None:
    """Refuse a revision argument that git would read as an option."""
    for rev in revs:
        if not rev or rev.startswith("-"):
            raise BadInput(f"revision {rev!r}: not a revision or range; give e.g. main or A..B")


def resolve_rev(repo: str | os.PathLike[str], rev: str) -> str:
    """The commit id `rev` names; `BadInput` when it names none."""
    if not rev or rev.startswith("-"):
        raise BadInput(f"{rev!r} is not a revision; name a commit (e.g. HEAD or a commit id)")
    proc = run(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if proc.returncode != 0:
        raise BadInput(f"{os.fspath(repo)}: {rev!r} is not a commit in this repository; "
                       "check the name (a shallow clone may need `git fetch --unshallow`)")
    return proc.stdout.decode().strip()


def has_commit(repo: str | os.PathLike[str], rev: str) -> bool:
    """Whether `rev` names a commit present in this clone."""
    if not rev or rev.startswith("-"):
        return False
    return run(repo, "cat-file", "-e", f"{rev}^{{commit}}", check=False).returncode == 0


def subject(repo: str | os.PathLike[str], commit: str) -> str:
    """The first line of a commit's message ("" when it cannot be read)."""
    proc = run(repo, "log", "-1", "--no-mailmap", "--format=%s", "--end-of-options", commit,
               "--", check=False)
    return proc.stdout.decode("utf-8", "replace").strip()


def commits_between(repo: str | os.PathLike[str], frm: str | None, to: str) -> list[str]:
    """Every commit in `frm..to`, oldest first, merges included (just `to` when `frm` is None)."""
    to_id = resolve_rev(repo, to)
    if frm is None:
        return [to_id]
    frm_id = resolve_rev(repo, frm)
    proc = run(repo, "rev-list", "--reverse", "--topo-order", f"{frm_id}..{to_id}", check=False)
    if proc.returncode != 0:
        raise BadInput(f"{os.fspath(repo)}: cannot list commits {frm}..{to}: "
                       f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout.decode().split()


def commits_not_on(repo: str | os.PathLike[str], ref: str, remote: str) -> list[str]:
    """Every commit of `ref` that no ref of `remote` has, oldest first."""
    if ref.startswith("-") or remote.startswith("-"):
        raise BadInput(f"{ref!r} / {remote!r}: not a branch and a remote")
    proc = run(repo, "rev-list", "--reverse", "--topo-order", ref, "--not",
               f"--remotes={remote}", check=False)
    if proc.returncode != 0:
        raise BadInput(f"{os.fspath(repo)}: cannot list the commits of {ref} not on {remote}: "
                       f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout.decode().split()


# --------------------------------------------------------------------------- listings


class TreeEntry(NamedTuple):
    """A file in a tree listed by `ls_tree` (keyed by its path): its mode and blob id."""

    mode: str
    oid: str


class FileEntry(NamedTuple):
    """A file in the index or a commit: mode (octal text), object id, repository path."""

    mode: str
    oid: str
    path: str


def path_text(path: bytes) -> str:
    """Text form of a git path: UTF-8 when it is, with invalid bytes kept as `\\xNN` escapes."""
    return path.decode("utf-8", "backslashreplace")


def blob_id(data: bytes) -> str:
    """The git (SHA-1) blob id of `data`, as `git hash-object` computes it."""
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def ls_tree(repo: Repo | str, rev: str) -> dict[bytes, TreeEntry]:
    """Every file of `rev`'s tree (recursing into folders; submodules are entries of their own)."""
    out = output(top_folder(repo), "ls-tree", "-r", "-z", "--full-tree", rev, "--")
    tree: dict[bytes, TreeEntry] = {}
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        mode, _kind, oid = meta.decode("ascii").split(" ")
        tree[path] = TreeEntry(mode, oid)
    return tree


def rev_entries(repo: str | os.PathLike[str], rev: str) -> list[FileEntry]:
    """Every file in the tree of `rev` (a commit id, say, from `resolve_rev`)."""
    check_revs([rev])
    tree = ls_tree(os.fspath(repo), rev)
    return [FileEntry(e.mode, e.oid, os.fsdecode(p)) for p, e in tree.items()]


def index_entries(repo: str | os.PathLike[str]) -> list[FileEntry]:
    """Every staged file (`git ls-files -s`); honours GIT_INDEX_FILE as git's own hooks set it."""
    out = output(repo, "ls-files", "-s", "-z")
    entries: dict[str, FileEntry] = {}
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        mode, oid, stage = meta.decode("ascii").split()
        p = os.fsdecode(path)
        # An unmerged path has stages 1-3; judge "ours" (2) as what the commit would carry.
        if stage in ("0", "2") or p not in entries:
            entries[p] = FileEntry(mode, oid, p)
    return list(entries.values())


def tracked_files(repo: str | os.PathLike[str]) -> list[str]:
    """The paths of every file in the index."""
    out = output(repo, "ls-files", "-z")
    return [os.fsdecode(n) for n in out.split(b"\0") if n]


# --------------------------------------------------------------------------- objects


def read_blobs(repo: str | os.PathLike[str], oids: Iterable[str]) -> dict[str, bytes]:
    """Contents of many blobs through one `git cat-file --batch`; a missing one is `BadInput`.
    Every request is written at once, so git's output is buffered (`--buffer`: a few large
    writes, where it would flush three times a blob), and git writes it to a file in memory,
    never to a pipe this process must drain (`_spooled`)."""
    want = list(dict.fromkeys(oids))
    if not want:
        return {}
    blobs: dict[str, bytes] = {}
    with _spooled(repo, ("cat-file", "--batch", "--buffer"),
                  "".join(o + "\n" for o in want).encode()) as out:
        pos = 0
        for oid in want:
            nl = out.find(b"\n", pos)
            header = out[pos:nl].split() if nl >= 0 else []
            pos = nl + 1
            if len(header) < 3 or header[1] == b"missing":
                raise BadInput(f"{os.fspath(repo)}: git object {oid} is missing; the repository "
                               "is incomplete (a partial or shallow clone?)")
            size = int(header[2])
            blobs[oid] = out[pos:pos + size]
            pos += size + 1
    return blobs


@contextlib.contextmanager
def _spooled(repo: str | os.PathLike[str], args: Sequence[str], input: bytes
             ) -> Iterator[mmap.mmap | bytes]:
    """The standard output of a git command that must succeed, given `input`, read through files
    in memory: git never waits on a full pipe for this process to drain it. A reader thread
    drains a pipe only when it gets the interpreter's lock, which a busy process hands over
    every few milliseconds: a cold hook run importing numpy beside its 2.4 MB blob read kept
    git waiting (a read of 1,000 blobs took 90-110 ms, 55-65 ms this way). Yields the output
    mapped (or b"" when empty); the mapping is gone once the block ends."""
    with _memory_file("git-in") as fin, _memory_file("git-out") as fout:
        fin.write(input)
        fin.flush()
        fin.seek(0)
        try:
            proc = subprocess.run(command_line(["-C", os.fspath(repo), *args]), stdin=fin, stdout=fout,
                                  stderr=subprocess.PIPE, env=environment())
        except OSError as e:  # git is not installed
            raise BadInput(f"git: cannot run ({e.strerror}); install git") from None
        if proc.returncode != 0:
            msg = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise BadInput(f"git {args[0]} in {os.fspath(repo)}: {msg[-1] if msg else 'failed'}")
        size = os.fstat(fout.fileno()).st_size
        if not size:
            yield b""
            return
        with mmap.mmap(fout.fileno(), size, access=mmap.ACCESS_READ) as out:
            yield out


def _memory_file(name: str) -> IO[bytes]:
    """A nameless read-write file in memory (`memfd_create`), or a temporary file elsewhere."""
    if hasattr(os, "memfd_create"):
        try:
            return open(os.memfd_create(name, os.MFD_CLOEXEC), "w+b")  # noqa: SIM115
        except OSError:  # (a sandbox may refuse it: a temporary file does the same)
            pass
    import tempfile

    return tempfile.TemporaryFile()  # noqa: SIM115


def show_blob(repo: str | os.PathLike[str], spec: str) -> bytes | None:
    """The bytes of the blob `spec` names (`:path` staged, `REV:path` committed); None if none."""
    if spec.startswith("-"):
        return None
    proc = run(repo, "cat-file", "blob", spec, check=False)
    return proc.stdout if proc.returncode == 0 else None


class Blob(NamedTuple):
    """An object read through `CatFile`: its data (maybe cut short) and its full size."""

    data: bytes
    size: int
    truncated: bool


class CatFile:
    """One `git cat-file --batch` process; `read` streams an object through it.

    A blob over `max_bytes` is read in chunks and only its first `max_bytes` are kept, so memory
    stays bounded however large the blob is (`max_bytes=None` keeps every byte). `delta_cache`
    bounds git's cache of delta bases (`core.deltaBaseCacheLimit`, 96 MiB by default), for a
    process that streams a whole history's blobs.
    """

    # Requests written ahead of reading stay well under any pipe's capacity (4 KiB at least), so
    # writing them can never block while git waits for us to read.
    BATCH = 64

    def __init__(self, repo: Repo | str, max_bytes: int | None = 64 << 20,
                 delta_cache: int | None = None) -> None:
        self.max_bytes = max_bytes
        limit = ["-c", f"core.deltaBaseCacheLimit={delta_cache}"] if delta_cache else []
        self._proc = subprocess.Popen(
            command_line([*limit, "cat-file", "--batch"]), cwd=top_folder(repo), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=environment(),
        )

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
        keep = size if self.max_bytes is None else min(size, self.max_bytes)
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


def checkout(repo: str | os.PathLike[str], entries: Iterable[FileEntry], dest: Path) -> None:
    """Write `entries` under `dest` as committed: blob bytes unchanged (no smudge filter, no
    line-ending conversion), executables 0755, symbolic links as links, submodules as empty
    folders. A path git itself would refuse (`..`, `.git`, through a link) is `BadInput`.
    """
    dest = Path(dest)
    todo = sorted(entries, key=lambda e: e.path)
    made: set[str] = set()
    with CatFile(os.fspath(repo), max_bytes=None) as cat:
        blobs = cat.read_many([e.oid for e in todo if e.mode != MODE_SUBMODULE])
        for e in todo:
            parts = e.path.split("/")
            if any(p in ("", ".", "..") or p.lower() == ".git" for p in parts):
                raise BadInput(f"{os.fspath(repo)}: tree path {e.path!r} is not a path git would "
                               "check out; repair the repository")
            for i in range(1, len(parts)):  # folders we made ourselves, never a link
                folder = "/".join(parts[:i])
                if folder not in made:
                    target = dest / folder
                    if target.is_symlink() or (target.exists() and not target.is_dir()):
                        raise BadInput(f"{os.fspath(repo)}: tree path {e.path!r} runs through "
                                       f"{folder!r}, which is not a folder; repair the repository")
                    target.mkdir(exist_ok=True)
                    made.add(folder)
            target = dest / e.path
            if e.mode == MODE_SUBMODULE:
                target.mkdir(exist_ok=True)
                made.add(e.path)
                continue
            oid, blob = next(blobs)
            if blob is None:
                raise BadInput(f"{os.fspath(repo)}: git object {oid} is missing; the repository "
                               "is incomplete (a partial or shallow clone?)")
            if e.mode == MODE_SYMLINK:
                os.symlink(os.fsdecode(blob.data), target)
                continue
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                         0o755 if e.mode == MODE_EXECUTABLE else 0o644)
            with os.fdopen(fd, "wb") as fh:
                fh.write(blob.data)

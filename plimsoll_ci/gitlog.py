"""Walking revisions: `Log` (one `git log --raw -z` over a range, parsed as the pipe fills) and
`RevList` (the range's graph, started early and read later), for history replay and bisection.

git is started here as everywhere else, through `plimsoll_ci.git` (`command_line`: the hardening
against a hostile `.git/config`; `environment`), never another way. Revisions come after
`--end-of-options` (`_rev_words`), so none is read as an option. Paths stay `bytes`
(`git.path_text` shows them); memory stays one commit's worth.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator, Sequence
from typing import IO, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.git import Repo, command_line, environment, top_folder

_REF_OPTIONS = ("--all", "--branches", "--tags", "--remotes")


def _rev_words(revs: Sequence[str]) -> list[str]:
    """Revisions after `--end-of-options` (so none is read as an option), except ref options."""
    opts = [r for r in revs if r in _REF_OPTIONS]
    return [*opts, "--end-of-options", *(r for r in revs if r not in _REF_OPTIONS)]


def rev_list(repo: Repo | str, revs: Sequence[str], first_parent: bool = False) -> list[list[str]]:
    """The commits of `revs`, oldest first (topological), each as [commit, parent...]."""
    return RevList(repo, revs, first_parent).graph()


class RevList:
    """`rev_list` started at once (git walks the range while the caller does other work); `graph`
    waits for it; `close` it always.
    """

    def __init__(self, repo: Repo | str, revs: Sequence[str], first_parent: bool = False) -> None:
        self.top = top_folder(repo)
        self._done = False
        args = ["rev-list", "--topo-order", "--reverse", "--parents"]
        if first_parent:
            args.append("--first-parent")
        try:
            self._proc = subprocess.Popen(
                command_line(["-C", self.top, *args, *_rev_words(revs), "--"]), stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=environment())
        except OSError as e:  # git is not installed
            raise BadInput(f"git: cannot run ({e.strerror}); install git") from None

    def graph(self) -> list[list[str]]:
        """[commit, parent...] for each commit, oldest first; `BadInput` when git failed."""
        out, err = self._proc.communicate()
        self._done = True
        if self._proc.returncode != 0:
            msg = err.decode("utf-8", "replace").strip().splitlines()
            raise BadInput(f"git rev-list in {self.top}: {msg[-1] if msg else 'failed'}")
        return [line.split() for line in out.decode("ascii").splitlines() if line]

    def running(self) -> bool:
        """Whether git is still walking (or waits for `graph` to read a long range's rows)."""
        return not self._done and self._proc.poll() is None

    def close(self) -> None:
        """End the git process (killed when its output was not read)."""
        if self._done:
            return
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.communicate()
        self._done = True


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


_HEADER = "%x01%H %P%x02%T %ct%x02%an <%ae>"


class Log:
    """One `git log --raw` over `revs`, started at once (git walks the range while the caller
    does other work); iterate it for every commit, oldest first, with its changes against its
    first parent; `close` it always. Memory stays one commit's worth.
    """

    def __init__(self, repo: Repo | str, revs: Sequence[str]) -> None:
        self.revs = list(revs)
        args = command_line([
            "log", "-z", "--raw", "--no-renames", "--no-abbrev", "--root", "--no-ext-diff",
            "--no-textconv", "--diff-merges=first-parent", "--topo-order", "--reverse",
            "--no-color", "--no-mailmap", f"--format={_HEADER}", *_rev_words(revs), "--",
        ])
        self._proc = subprocess.Popen(
            args, cwd=top_folder(repo), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL, env=environment(),
        )

    def fds(self) -> tuple[int, ...]:
        """This process's ends of git's pipes (for a forked child to close)."""
        return tuple(s.fileno() for s in (self._proc.stdout, self._proc.stderr)
                     if s is not None and not s.closed)

    def __iter__(self) -> Iterator[Commit]:
        proc = self._proc
        assert proc.stdout is not None
        yield from _parse_log(proc.stdout)
        err = proc.stderr.read() if proc.stderr else b""
        if proc.wait() != 0:
            msg = err.decode("utf-8", "replace").strip().splitlines()
            raise BadInput(f"git log {' '.join(self.revs)}: {msg[-1] if msg else 'failed'}")

    def close(self) -> None:
        """End the git process (it is killed when the walk stopped early)."""
        proc = self._proc
        if proc.poll() is None:
            proc.kill()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        proc.wait()


def _parse_log(stream: IO[bytes]) -> Iterator[Commit]:
    """The commits of a `git log -z --raw --format=_HEADER` stream, each once its changes are in.

    The stream is NUL-separated tokens: a header (`\x01...`, after a newline unless it is the
    first), then for each change its ":<old mode> <new mode> <old id> <new id> <status>" record
    (the first after a newline) and its path. The token after a record is always its path, so a
    path may hold any byte: it is taken with its record (`next`), never looked at. Reads take
    what the pipe holds (`read1`): git writes the next part while this one is parsed. Records
    are built as plain tuples of their class (`tuple.__new__`: a NamedTuple's own `__new__` is a
    Python call, a fifth of the parse).
    """
    read = getattr(stream, "read1", stream.read)
    new = tuple.__new__
    current: Commit | None = None
    changes: list[Change] = []
    meta: tuple[str, str] | None = None  # (mode, id) of a record whose path is the next token
    modes: dict[bytes, str] = {}
    rest = b""
    while True:
        chunk = read(1 << 20)
        if not chunk:
            if not rest:
                break
            parts, rest = [rest], b""
        else:
            parts = (rest + chunk).split(b"\0") if rest else chunk.split(b"\0")
            rest = parts.pop()
        tokens = iter(parts)
        if meta is not None:  # the path of the last read's last record
            path = next(tokens, None)
            if path is None:
                continue
            changes.append(new(Change, (path, *meta)))
            meta = None
        for tok in tokens:
            if tok[:1] == b"\n":
                tok = tok.lstrip(b"\n")
            head = tok[:1]
            if head == b":":
                fields = tok.split(b" ", 4)
                mode = modes.get(fields[1])
                if mode is None:
                    mode = modes[fields[1]] = fields[1].decode("ascii")
                path = next(tokens, None)
                if path is None:  # in the next read
                    meta = (mode, fields[3].decode("ascii"))
                    break
                changes.append(new(Change, (path, mode, fields[3].decode("ascii"))))
            elif head == b"\x01":
                if current is not None:
                    yield current
                ids, times, author = tok[1:].decode("utf-8", "replace").split("\x02", 2)
                oid, *parents = ids.split()
                tree, ctime = times.split()
                changes = []
                current = new(Commit, (oid, tuple(parents), tree, int(ctime), author, changes))
    if current is not None:
        yield current

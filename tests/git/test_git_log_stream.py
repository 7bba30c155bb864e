"""The history walk's git streams: `Log` (`git log --raw -z`) and `RevList`, started early.

The log is parsed as git writes it: each read takes what the pipe holds, so a token (a header, a
change record, a path) may end in one read and go on in the next. Whatever the reads hand over,
the commits are the same, and a path holding the stream's own markers (a NUL cannot be in one;
a newline, `\\x01`, `\\x02`, a colon and spaces can) is a path.
"""

from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import pytest

from plimsoll_ci.errors import BadInput
from plimsoll_ci.git import ZERO_OID
from plimsoll_ci.gitlog import Log, RevList, _parse_log, rev_list

# names a naive split of the stream would take for a record or a header
ODD = [b"\nlead.txt", b"\x01head", b":100644 100644 x y M", b"a\x02b c", b"plain.py", b"\xff\xfe.bin"]


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, check=True,
                          env={**os.environ, **(env or {})})
    return proc.stdout.decode().strip()


def _commit(repo: Path, msg: str, n: int) -> str:
    stamp = f"{1767261600 + 60 * n} +0000"
    _git(repo, "commit", "-q", "--allow-empty", "-m", msg,
         env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp})
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def odd_repo(tmp_path: Path) -> Path:
    """A history with odd names added, changed, made executable and deleted, a merge, and an
    empty commit."""
    repo = tmp_path / "odd"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "Ada \x01 Auditor")
    _git(repo, "config", "user.email", "ada@example.org")
    for i, name in enumerate(ODD):
        (repo / os.fsdecode(name)).write_bytes(b"v%d\n" % i)
    _git(repo, "add", "-A")
    _commit(repo, "odd names", 0)
    _git(repo, "checkout", "-q", "-b", "side")
    (repo / os.fsdecode(ODD[0])).write_bytes(b"side\n")
    _git(repo, "add", "-A")
    _commit(repo, "side", 1)
    _git(repo, "checkout", "-q", "main")
    (repo / os.fsdecode(ODD[1])).unlink()
    (repo / os.fsdecode(ODD[4])).chmod(0o755)
    _git(repo, "add", "-A")
    _commit(repo, "delete, chmod", 2)
    _git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side",
         env={"GIT_AUTHOR_DATE": "1767261900 +0000", "GIT_COMMITTER_DATE": "1767261900 +0000"})
    _commit(repo, "empty", 6)
    return repo


class _Trickle(io.RawIOBase):
    """A pipe that hands over a few bytes per read, in a varying rhythm."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.turn = data, 0, 0

    def readable(self) -> bool:
        return True

    def read1(self, n: int = -1) -> bytes:
        self.turn += 1
        size = min(n if n > 0 else 1 << 30, 1 + self.turn % 7)
        out = self.data[self.pos:self.pos + size]
        self.pos += len(out)
        return out

    read = read1


def _raw_log(repo: Path) -> bytes:
    log = Log(str(repo), ["--branches"])
    try:
        assert log._proc.stdout is not None
        return log._proc.stdout.read()
    finally:
        log.close()


def test_the_log_parses_the_same_whatever_each_read_of_the_pipe_hands_over(odd_repo: Path) -> None:
    raw = _raw_log(odd_repo)
    whole = list(_parse_log(io.BytesIO(raw)))
    assert list(_parse_log(_Trickle(raw))) == whole  # type: ignore[arg-type]
    walked = list(Log(str(odd_repo), ["--branches"]))
    assert walked == whole
    assert [c.parents for c in walked] == [tuple(row[1:]) for row in
                                          rev_list(str(odd_repo), ["--branches"])]
    first = walked[0]
    assert sorted(ch.path for ch in first.changes) == sorted(ODD)
    assert first.author == "Ada \x01 Auditor <ada@example.org>"
    assert all(ch.mode == "100644" and ch.oid != ZERO_OID for ch in first.changes)
    by_subject = {_git(odd_repo, "log", "-1", "--format=%s", c.oid): c for c in walked}
    assert {(ch.path, ch.mode, ch.oid == ZERO_OID) for ch in by_subject["delete, chmod"].changes} \
        == {(ODD[1], "000000", True), (ODD[4], "100755", False)}
    merge = by_subject["merge side"]
    assert len(merge.parents) == 2
    assert [ch.path for ch in merge.changes] == [ODD[0]]  # against its first parent: the side's
    assert by_subject["empty"].changes == []


def test_a_rev_list_started_early_reports_git_s_error_or_ends_unread(odd_repo: Path) -> None:
    listing = RevList(str(odd_repo), ["no-such-branch"])
    with pytest.raises(BadInput, match=r"git rev-list in .*no-such-branch"):
        listing.graph()
    listing.close()
    unread = RevList(str(odd_repo), ["--branches"])
    unread.close()  # killed or finished: either way ended, and closing twice is harmless
    unread.close()
    assert unread._proc.returncode is not None

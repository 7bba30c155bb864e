"""The walk's `git log --raw` parse, taken apart at every byte: its records are the classes the
walk reads by name, and a path that looks like a record or a header is only ever a path."""

from __future__ import annotations

import io

from kit.history import GitRepo

from plimsoll_ci.git import ZERO_OID
from plimsoll_ci.gitlog import Change, Commit, Log, _parse_log

TRICKY = [":100644 100644 " + "a" * 40 + " " + "b" * 40 + " M", "\x01" + "c" * 40 + " \x02x",
          "new\nline", "plain.txt"]


class _Bytewise(io.RawIOBase):
    """A pipe that hands over `size` bytes per read."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.pos, self.size = data, 0, size

    def readable(self) -> bool:
        return True

    def read1(self, n: int = -1) -> bytes:
        out = self.data[self.pos:self.pos + self.size]
        self.pos += len(out)
        return out

    read = read1


def test_the_parse_gives_commit_and_change_records_whatever_the_reads(tmp_path) -> None:
    repo = GitRepo(tmp_path / "tricky")
    for name in TRICKY:
        repo.write(name, f"{name!r}\n")
    first = repo.commit("tricky paths", 0)
    (repo.path / TRICKY[0]).unlink()  # (a path git would read as pathspec magic)
    repo.write(TRICKY[1], "changed\n")
    second = repo.commit("one gone, one changed", 1)
    log = Log(str(repo.path), ["HEAD"])
    try:
        assert log._proc.stdout is not None
        raw = log._proc.stdout.read()
    finally:
        log.close()
    whole = list(_parse_log(io.BytesIO(raw)))
    for size in (1, 2, 3, 41, 97, 1000):
        assert list(_parse_log(_Bytewise(raw, size))) == whole, size  # type: ignore[arg-type]
    assert [type(c) for c in whole] == [Commit, Commit]
    assert [c.oid for c in whole] == [first, second] and whole[1].parents == (first,)
    assert all(type(ch) is Change for c in whole for ch in c.changes)
    assert sorted(ch.path for ch in whole[0].changes) == sorted(n.encode() for n in TRICKY)
    gone, changed = sorted(whole[1].changes, key=lambda ch: ch.oid == ZERO_OID, reverse=True)
    assert (gone.path, gone.mode, gone.oid) == (TRICKY[0].encode(), "000000", ZERO_OID)
    assert changed.path == TRICKY[1].encode() and changed.mode == "100644"
    assert changed._replace(mode="100755").mode == "100755"  # a record of its class

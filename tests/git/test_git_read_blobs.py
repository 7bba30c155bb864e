"""`git.read_blobs`: many blobs through one `git cat-file --batch`, whose output git writes to a
file in memory (never to a pipe this process must drain while its other threads hold the
interpreter), or to a temporary file where there is no `memfd_create`.

Whichever file it goes through, each blob is the bytes `git cat-file blob` shows, a blob asked
twice is read once, and a missing object or a failing git is `BadInput` with nothing half-read.
"""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from plimsoll_ci import git
from plimsoll_ci.errors import BadInput

CONTENTS = [b"", b"\n", b"no newline", b"\x00\xff binary\n\n 0 missing\n" * 50,
            b"x" * 300_000, *(f"file {i}\n".encode() * i for i in range(200))]


@pytest.fixture
def blobs(tmp_path: Path) -> tuple[Path, list[str]]:
    repo = tmp_path / "blobs"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    for i, data in enumerate(CONTENTS):
        (repo / f"f{i:03d}").write_bytes(data)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    ls = subprocess.run(["git", "ls-files", "-s"], cwd=repo, check=True, capture_output=True,
                        text=True).stdout
    return repo, list(dict.fromkeys(line.split()[1] for line in ls.splitlines()))


def _shown(repo: Path, oid: str) -> bytes:
    return subprocess.run(["git", "cat-file", "blob", oid], cwd=repo, capture_output=True,
                          check=True).stdout


def _refused(*_: object) -> int:
    raise PermissionError(1, "Operation not permitted")


@pytest.mark.parametrize("memfd", ["memory-file", "no-memfd", "memfd-refused"])
def test_each_blob_is_the_bytes_git_shows_through_either_file(
        blobs: tuple[Path, list[str]], memfd: str, monkeypatch: pytest.MonkeyPatch) -> None:
    repo, oids = blobs
    if memfd == "no-memfd":
        monkeypatch.delattr(os, "memfd_create", raising=False)
    elif memfd == "memfd-refused":  # (a sandbox's seccomp filter may refuse the call)
        monkeypatch.setattr(os, "memfd_create", _refused)
    got = git.read_blobs(repo, [*oids, oids[4], oids[0]])
    assert list(got) == oids  # in the order asked, each once
    assert [got[o] for o in oids] == [_shown(repo, o) for o in oids]


def test_blobs_past_a_pipes_capacity_are_read_while_another_thread_holds_the_interpreter(
        blobs: tuple[Path, list[str]]) -> None:
    """A busy thread (numpy's import, in a cold hook run) cannot keep git waiting: nothing in this
    process has to drain git's output while git writes it."""
    repo, oids = blobs
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            sum(range(10_000))

    spinner = threading.Thread(target=busy)
    spinner.start()
    try:
        got = git.read_blobs(repo, oids * 3)
    finally:
        stop.set()
        spinner.join()
    assert [got[o] for o in oids] == [_shown(repo, o) for o in oids]
    assert sum(map(len, got.values())) > 256 * 1024


def test_a_missing_object_is_bad_input_naming_it_and_no_file_is_left_open(
        blobs: tuple[Path, list[str]]) -> None:
    repo, oids = blobs
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(BadInput, match=f"git object {'1' * 40} is missing"):
        git.read_blobs(repo, [oids[0], "1" * 40, oids[1]])
    assert set(os.listdir("/proc/self/fd")) <= before


def test_git_failing_is_bad_input_with_its_own_last_line(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match=r"git cat-file in .*: fatal: not a git repository"):
        git.read_blobs(tmp_path, ["1" * 40])


def test_no_oids_start_no_git(tmp_path: Path) -> None:
    assert git.read_blobs(tmp_path / "nowhere", []) == {}

"""Files on disk are read where they are scanned (in this process or a worker), with the walk's
rules checked again on what was opened: a file that changes between listing and reading gives
the same report for any `--jobs`, and nothing swapped in after listing is read through."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from kit.scan import SEED, KeepAll, make_set
from test_scan_jobs import _filler, make_tree

from plimsoll_ci.shipscan import ondisk, report, scan
from plimsoll_ci.shipscan.scan import Item, Limits, ShipScan, scan_paths

SEED_LINE = f"seed = {SEED}\n".encode()
WALK = ondisk.walk


def _tree_with_tail(tmp_path: Path) -> tuple[Path, Path]:
    """A tree of many batches (workers start) whose last folder, `zz`, is read by a worker;
    and a folder outside it holding the seed (what an attacker would point a link at)."""
    tree = make_tree(tmp_path / "tree", files=60, size=6000)
    tail = tree / "zz"
    tail.mkdir()
    rng = random.Random(8)
    for name in ("a.txt", "b.txt", "c.txt", "d.txt"):
        (tail / name).write_bytes(_filler(rng, 3000))
    (tail / "inner").mkdir()
    (tail / "inner" / "data.txt").write_bytes(_filler(rng, 3000))
    outside = tmp_path / "outside"
    (outside / "inner").mkdir(parents=True)
    for name in ("secret.txt", "inner/data.txt"):
        (outside / name).write_bytes(b"kept back\n" + SEED_LINE)
    return tree, outside


def _changed_after_listing(monkeypatch, changes: dict[str, Callable[[], None]]) -> None:
    """Each change runs when the walk has listed the file it is keyed by (its shown path's
    tail), before the scan is given it: between listing and reading, deterministically."""
    def walk(root: str, label: str, notes: list[str]):
        for entry in WALK(root, label, notes):
            for tail, change in changes.items():
                if entry.shown.endswith(tail):
                    change()
            yield entry

    monkeypatch.setattr(scan.ondisk, "walk", walk)


def _both(tree: Path, monkeypatch, spy_start, changes: Callable[[], dict[str, Callable[[], None]]],
          leak, limits: Limits | None = None):
    """The scan with one process and with two workers, each on a fresh copy of `tree` changed
    by `changes()` (made for that copy) while it is walked; both results."""
    monkeypatch.setattr(scan, "BATCH_BYTES", 16 * 1024)  # many batches: workers read the tail
    results = []
    for jobs in (1, 2):
        copy = tree.parent / f"copy{jobs}"
        shutil.copytree(tree, copy, symlinks=True)
        monkeypatch.chdir(copy.parent)  # shown paths the same for both copies
        os.rename(copy, "scanned")
        try:
            _changed_after_listing(monkeypatch, changes())
            result = scan_paths(["scanned"], make_set(), limits, jobs=jobs)
        finally:
            os.rename("scanned", copy)
        leak.text(report.render(result, "json"))
        results.append(result)
    assert spy_start == [2]  # the workers did run
    assert results[0] == results[1]
    assert report.render(results[0], "json") == report.render(results[1], "json")
    return results[0]


def _notes_of(result, path: str) -> list[str]:
    return [n for n in result.notes if n.startswith(path + ": ")]


def test_a_file_that_vanishes_after_listing_is_noted_the_same_for_any_jobs(
        tmp_path, monkeypatch, spy_start, leak) -> None:
    tree, _ = _tree_with_tail(tmp_path)
    one = _both(tree, monkeypatch, spy_start,
                lambda: {"zz/b.txt": lambda: os.unlink("scanned/zz/b.txt")}, leak)
    assert _notes_of(one, "scanned/zz/b.txt") == [
        "scanned/zz/b.txt: cannot read (No such file or directory): its contents were not "
        "scanned"]
    assert one.findings and not _notes_of(one, "scanned/zz/a.txt")


def test_a_file_that_becomes_a_pipe_or_a_folder_is_not_read_and_does_not_hang(
        tmp_path, monkeypatch, spy_start, leak) -> None:
    tree, _ = _tree_with_tail(tmp_path)

    def to_pipe() -> None:
        os.unlink("scanned/zz/c.txt")
        os.mkfifo("scanned/zz/c.txt")

    def to_folder() -> None:
        os.unlink("scanned/zz/d.txt")
        os.mkdir("scanned/zz/d.txt")

    one = _both(tree, monkeypatch, spy_start,
                lambda: {"zz/c.txt": to_pipe, "zz/d.txt": to_folder}, leak)
    for name in ("c.txt", "d.txt"):
        assert _notes_of(one, f"scanned/zz/{name}") == [
            f"scanned/zz/{name}: {ondisk.NOT_REGULAR}"]


_NOT_FOLLOWED = ("out of the scanned root when it was read (a link or folder swapped in after "
                 "it was listed), not followed")


def _to_link(path: str, target: Path) -> Callable[[], None]:
    def swap() -> None:  # a file (or an inside link) replaced by a link out of the tree
        os.unlink(path)
        os.symlink(target, path)
    return swap


def _folder_to_link(path: str, target: Path) -> Callable[[], None]:
    def swap() -> None:  # the file's name is still a plain file; a folder on its path leads out
        os.rename(path, path + ".old")
        os.symlink(target, path)
    return swap


@pytest.mark.parametrize(("listed", "swap", "note"), [
    # the walk saw a plain file; before a worker reads it, it is a link to a file of answers
    ("zz/a.txt", lambda out: _to_link("scanned/zz/a.txt", out / "secret.txt"),
     "replaced by a symbolic link after it was listed, not followed: its contents were not "
     "scanned"),
    ("zz/inner/data.txt", lambda out: _folder_to_link("scanned/zz/inner", out / "inner"),
     _NOT_FOLLOWED),
    # a link inside the tree (allowed when listed) retargeted out of it
    ("zz/link.txt", lambda out: _to_link("scanned/zz/link.txt", out / "secret.txt"),
     _NOT_FOLLOWED),
], ids=["file-to-link", "folder-to-link", "inside-link-retargeted"])
def test_a_link_swapped_in_after_listing_is_not_followed_out_of_the_tree(
        tmp_path, monkeypatch, spy_start, leak, listed, swap, note) -> None:
    # The attack: between the walk and a worker's read, a link to answers kept outside the
    # shipped tree is swapped in. No worker (and not the parent) may read through it.
    tree, outside = _tree_with_tail(tmp_path)
    os.symlink("a.txt", tree / "zz" / "link.txt")  # allowed: it stays inside
    one = _both(tree, monkeypatch, spy_start, lambda: {listed: swap(outside)}, leak)
    assert not [f for f in one.findings if f.path.startswith("scanned/zz/")]
    assert _notes_of(one, "scanned/" + listed) == [f"scanned/{listed}: {note}"]


def test_the_checks_let_a_link_inside_the_tree_and_an_unchanged_tree_be_read(
        tmp_path, monkeypatch, spy_start, leak) -> None:
    tree, _ = _tree_with_tail(tmp_path)
    (tree / "zz" / "b.txt").write_bytes(b"x\n" + SEED_LINE)
    os.symlink("b.txt", tree / "zz" / "link.txt")
    one = _both(tree, monkeypatch, spy_start, dict, leak)
    assert {f.path for f in one.findings if f.path.startswith("scanned/zz/")} == {
        "scanned/zz/b.txt", "scanned/zz/link.txt"}
    assert not [n for n in one.notes if n.startswith("scanned/zz/")]


def test_files_over_the_bound_and_grown_after_listing_are_cut_the_same_for_any_jobs(
        tmp_path, monkeypatch, spy_start, leak) -> None:
    tree, _ = _tree_with_tail(tmp_path)
    big_data = SEED_LINE + b"x = 1\n" * 2000 + SEED_LINE
    (tree / "zz" / "big.txt").write_bytes(big_data)
    grown = (tree / "zz" / "b.txt").stat().st_size + 18_000 + len(SEED_LINE)

    def grow() -> None:  # listed at 3 KB, read at 20 KB: read a piece at a time, then cut
        with open("scanned/zz/b.txt", "ab") as fh:
            fh.write(b"y = 2\n" * 3000 + SEED_LINE)

    one = _both(tree, monkeypatch, spy_start, lambda: {"zz/b.txt": grow}, leak,
                Limits(max_file_bytes=10_000))
    big = [f for f in one.findings if f.path == "scanned/zz/big.txt"]
    assert [f.line for f in big] == [1]  # the seed past the bound is not read
    assert _notes_of(one, "scanned/zz/big.txt") == [
        f"scanned/zz/big.txt: {len(big_data)} bytes, over the 10000-byte file bound: scanned "
        "up to the bound"]
    assert not [f for f in one.findings if f.path == "scanned/zz/b.txt"]
    assert _notes_of(one, "scanned/zz/b.txt") == [
        f"scanned/zz/b.txt: {grown} bytes, over the 10000-byte file bound: scanned up to the "
        "bound"]


def test_names_that_are_not_utf8_are_read_by_workers_and_reported_the_same(
        tmp_path, monkeypatch, spy_start, leak) -> None:
    tree, _ = _tree_with_tail(tmp_path)
    odd = os.fsdecode(b"zz/caf\xe9-\xff.txt")
    (tree / odd).write_bytes(SEED_LINE)
    one = _both(tree, monkeypatch, spy_start, dict, leak)
    assert [f.path for f in one.findings if f.path.startswith("scanned/zz/")] == [
        f"scanned/{odd}"]


def test_with_workers_this_process_reads_only_the_first_batch(tmp_path, monkeypatch,
                                                              spy_start) -> None:
    tree = make_tree(tmp_path / "tree", files=150, size=6000)
    monkeypatch.setattr(scan, "BATCH_BYTES", 16 * 1024)
    here = os.getpid()
    reads: list[int] = []  # a worker appends to its own copy: only this process's reads count
    real = ondisk.read

    def read(disk, whole):
        if os.getpid() == here:
            reads.append(1)
        return real(disk, whole)

    monkeypatch.setattr(scan.ondisk, "read", read)
    two = scan_paths([str(tree)], make_set(), jobs=2)
    assert spy_start == [2]
    assert 0 < len(reads) <= 6 and two.files > 150  # one batch of 16 KiB, of files of 3-9 KB
    reads.clear()
    assert scan_paths([str(tree)], make_set(), jobs=1) == two
    assert len(reads) == two.files


def test_cached_verdicts_given_while_batches_wait_for_workers_keep_their_place(
        monkeypatch, spy_start) -> None:
    monkeypatch.setattr(scan, "BATCH_BYTES", 8 * 1024)
    rng = random.Random(4)
    items = [Item(f"f{i:02d}.txt", (SEED_LINE if i % 3 else b"") + _filler(rng, 3000))
             for i in range(60)]

    limits = Limits(max_file_bytes=2500)  # a note on every file: their order shows
    warm = [KeepAll(), KeepAll()]
    for cache in warm:
        ShipScan(make_set(), limits, cache=cache, jobs=1).scan(items[::4])  # every fourth known
    one = ShipScan(make_set(), limits, cache=warm[0], jobs=1).scan(items)
    assert spy_start == []
    two = ShipScan(make_set(), limits, cache=warm[1], jobs=2).scan(items)
    assert spy_start == [2]
    assert two == one and len(one.notes) == 60 and len(one.findings) == 40
    assert warm[0].store == warm[1].store

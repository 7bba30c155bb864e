"""What a hook run does to its own process: the program ends once the hook's report is out
(without the interpreter's teardown), a pre-commit run collects no cycles while it runs (the
collector left as it was), and pays only for the regular expressions its scan uses (the
matching modules compile none when imported); its blob read gives git's bytes; a withheld set's
load makes the same records as the record's constructor."""

from __future__ import annotations

import argparse
import gc
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit.harness_repo import KEY, SEED, git, hook_env, leak

QUICK = """
import atexit, sys
atexit.register(lambda: print("interpreter teardown ran", file=sys.stderr))
from plimsoll_ci.cli import program
sys.argv = ["plimsoll-ci", *sys.argv[1:]]
raise SystemExit(program())
"""


def program(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """The `plimsoll-ci` program (as its console script runs it), with a teardown witness."""
    return subprocess.run([sys.executable, "-c", QUICK, *args], cwd=repo, capture_output=True,
                          text=True, env=hook_env())


def test_the_hook_program_ends_once_its_report_is_out_and_errors_exit_as_before(
        harness: Path) -> None:
    leak(harness)
    git(harness, "add", "viewer/replay.html")
    p = program(harness, "hook", "ship-scan", "viewer/replay.html")
    assert p.returncode == 1 and "viewer/replay.html" in p.stdout and "refused" in p.stdout
    assert SEED not in p.stdout + p.stderr
    assert "interpreter teardown ran" not in p.stderr  # (10-20 ms of a hook run)
    g = program(harness, "hook", "withheld-guard", "viewer/replay.html")
    assert g.returncode == 0 and "interpreter teardown ran" not in g.stderr
    (harness / "plimsoll.yaml").unlink()
    bad = program(harness, "hook", "ship-scan", "viewer/replay.html")
    assert bad.returncode == 2 and "plimsoll.yaml" in bad.stderr
    assert "interpreter teardown ran" in bad.stderr  # an error exits as it always did


@pytest.fixture
def collections() -> Iterator[list[str]]:
    """Each cyclic collection's phase while the test runs, the collector eager meanwhile (a
    collection on every allocation of a container), as it was after."""
    seen: list[str] = []
    thresholds, enabled = gc.get_threshold(), gc.isenabled()

    def note(phase: str, info: dict) -> None:
        seen.append(phase)

    gc.callbacks.append(note)
    gc.set_threshold(1)
    gc.enable()
    try:
        yield seen
    finally:
        gc.callbacks.remove(note)
        gc.set_threshold(*thresholds)
        (gc.enable if enabled else gc.disable)()


def test_a_pre_commit_run_collects_no_cycles_and_leaves_the_collector_as_it_was(
        harness: Path, collections: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from plimsoll_ci.shipscan import hook
    from plimsoll_ci.shipscan import scan as scan_module

    monkeypatch.setenv("PLIMSOLL_WITHHELD_KEY", KEY)
    during: list[int] = []
    real = scan_module.ShipScan.scan

    def spy(self: object, items: object) -> object:
        during.append(len(collections))
        result = real(self, items)  # type: ignore[arg-type]
        during.append(len(collections))
        return result

    monkeypatch.setattr(scan_module.ShipScan, "scan", spy)
    leak(harness)
    git(harness, "add", "viewer/replay.html")
    out = io.StringIO()
    assert hook.ship_scan(["viewer/replay.html"], harness, out=out) == 1
    assert "viewer/replay.html" in out.getvalue()
    assert len(during) == 2 and during[0] == during[1]  # no collection while it scanned
    assert gc.isenabled()
    before = len(collections)
    kept = [argparse.Namespace() for _ in range(10)]  # the collector runs again right after
    assert len(collections) > before and len(kept) == 10
    gc.disable()
    assert hook.ship_scan(["viewer/replay.html"], harness, out=io.StringIO()) == 1
    assert not gc.isenabled()  # a caller's choice is kept


PATTERNS_PROBE = """
import importlib, json, pkgutil, re, sys
compiled = []
real = re.compile
def spy(pattern, flags=0):
    compiled.append(sys._getframe(1).f_globals.get("__name__", ""))
    return real(pattern, flags)
re.compile = spy
import plimsoll_ci.match as match
for info in pkgutil.iter_modules(match.__path__):
    importlib.import_module("plimsoll_ci.match." + info.name)
at_import = sorted({n for n in compiled if n.startswith("plimsoll_ci.match")})
from plimsoll_ci.match.canonical import classify
classify("1:02:03")
used = sorted({n for n in compiled if n.startswith("plimsoll_ci.match")})
print(json.dumps([at_import, used, len(compiled)]))
"""


def test_the_matching_modules_compile_their_patterns_on_first_use_only() -> None:
    p = subprocess.run([sys.executable, "-c", PATTERNS_PROBE], capture_output=True, text=True,
                       env=hook_env(), check=True)
    at_import, used, _ = json.loads(p.stdout)
    assert at_import == []  # none when imported: a run that needs none pays for none
    assert used == ["plimsoll_ci.match.ascii"]  # the spy sees the compile on first use (lazy_re)


def test_a_loaded_sets_value_entries_are_the_records_the_constructor_makes() -> None:
    from plimsoll_ci import withheld

    doc, _ = withheld.build_set(values=[("seeds.txt:1", SEED), ("notes.txt:1", "gate drone 7")],
                                key=KEY.encode())
    wset = withheld.parse(json.loads(withheld.dumps(doc)), key=KEY.encode())
    assert len(wset.entries) == 2
    for entry, raw in zip(wset.entries, doc["entries"], strict=True):
        assert type(entry) is withheld.Entry
        assert entry == withheld.Entry(raw["id"], "value", raw["digest"], raw["type"],
                                       raw["shape"])
        assert entry.fingerprints == frozenset()
        assert entry.threshold == withheld.DEFAULT_SOURCE_THRESHOLD
    bad = json.loads(withheld.dumps(doc))
    bad["entries"][1]["digest"] = "zz"
    with pytest.raises(withheld.WithheldSetError, match=r"entry 2 \(notes.txt:1\): digest"):
        withheld.parse(bad, key=KEY.encode())


def test_the_hooks_blob_read_gives_each_blob_as_git_shows_it_and_refuses_a_missing_one(
        tmp_path: Path) -> None:
    from plimsoll_ci import git as plimsoll_git  # (the hook reads its blobs with it)
    from plimsoll_ci.errors import BadInput

    repo = tmp_path / "blobs"
    repo.mkdir()
    git(repo, "init", "-q")
    contents = [b"", b"\n", b"one line\n", b"no newline", b"\x00\xff binary\n\nmissing 1\n" * 50,
                b"x" * 70_000, *(f"file {i}\n".encode() * i for i in range(300))]
    for i, data in enumerate(contents):
        (repo / f"f{i:03d}").write_bytes(data)
    git(repo, "add", "-A")
    oids = [e.split()[1] for e in git(repo, "ls-files", "-s").splitlines()]
    got = plimsoll_git.read_blobs(repo, [*oids, oids[3]])  # (a blob asked twice is read once)
    assert list(got) == list(dict.fromkeys(oids))
    for oid in oids:
        shown = subprocess.run(["git", "cat-file", "blob", oid], cwd=repo, capture_output=True,
                               check=True).stdout
        assert got[oid] == shown
    with pytest.raises(BadInput, match="is missing"):
        plimsoll_git.read_blobs(repo, [oids[0], "1" * 40])

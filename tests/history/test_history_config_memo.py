"""The configs a replay remembers by content: a repeat run, with `--config FILE` or with each
commit's own plimsoll.yaml, imports neither the YAML parser nor pathspec and reports the same; a
memo that is not exactly what was written, or not this user's alone, is never trusted; and
`--no-cache` neither reads nor writes one."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from kit.history import GLOB_CONFIG, LEAK, GitRepo, viewer

HEAVY = ("yaml", "pathspec")
PROBE = f"""
import json, sys
from plimsoll_ci.cli import main
rc = main(sys.argv[1:])
print(json.dumps([rc, [m for m in {HEAVY!r} if m in sys.modules]]), file=sys.stderr)
"""
AUDIT = 'withheld: withheld.json\nship:\n  viewer:\n    include: ["viewer/**"]\n'


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user cache of this test's own (the remembered `--config` lives there)."""
    folder = tmp_path_factory.mktemp("user-cache")
    monkeypatch.setenv("PLIMSOLL_CACHE", str(folder))
    return folder


def replay(repo: GitRepo, *args: str) -> tuple[int, dict, list[str]]:
    """(exit code, JSON report but for how many blobs the cache knew, which of the YAML parser
    and pathspec the process loaded)."""
    out = repo.path.parent / "report.json"
    proc = subprocess.run([sys.executable, "-c", PROBE, "history", "--format", "json",
                           "--no-progress", "-o", str(out), *args], cwd=repo.path,
                          capture_output=True, text=True)
    assert LEAK not in proc.stdout + proc.stderr
    rc, loaded = json.loads(proc.stderr.strip().splitlines()[-1])
    assert rc in (0, 1), proc.stderr
    report = json.loads(out.read_bytes())
    del report["blobs_from_cache"]
    return rc, report, loaded


def leaky(repo: GitRepo) -> None:
    repo.commit("harness", 0)
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.commit("viewer leaks", 10)
    repo.write("viewer/replay.html", viewer("seed-EXAMPLE.json"))
    repo.commit("viewer fixed", 20)


@pytest.fixture
def audit(tmp_path: Path, wset_path: Path) -> Path:
    """An auditor's config beside the withheld set, outside the repository."""
    path = wset_path.parent / "audit.yaml"
    path.write_text(AUDIT)
    return path


def memos(folder: Path) -> list[Path]:
    return sorted(folder.glob("**/config-*.json"))


def test_a_repeat_run_with_an_auditor_config_parses_nothing(globrepo: GitRepo, wset_path: Path,
                                                            audit: Path, own_cache: Path) -> None:
    leaky(globrepo)
    args = ("--set", str(wset_path), "--config", str(audit))
    rc, first, loaded = replay(globrepo, *args)
    assert rc == 1 and "yaml" in loaded and "pathspec" in loaded
    assert len(memos(own_cache)) == 1  # in the user's cache: the same for every repository
    rc, again, loaded = replay(globrepo, *args)
    assert (rc, loaded) == (1, []) and again == first


def test_a_repeat_run_with_each_commits_own_config_parses_nothing(globrepo: GitRepo,
                                                                  wset_path: Path) -> None:
    leaky(globrepo)
    globrepo.write("plimsoll.yaml", GLOB_CONFIG.replace('"viewer/**"', '"viewer/*.html"'))
    globrepo.commit("config: the viewer's pages only", 30)
    globrepo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    globrepo.commit("viewer leaks again", 40)
    rc, first, loaded = replay(globrepo, "--set", str(wset_path))
    assert rc == 1 and "yaml" in loaded
    assert len(memos(globrepo.path / ".git" / "plimsoll")) == 2  # one per config version
    rc, again, loaded = replay(globrepo, "--set", str(wset_path))
    assert (rc, loaded) == (1, []) and again == first
    assert len(again["entries"][0]["windows"]) == 2


def test_a_remembered_config_resolves_its_paths_where_it_is(globrepo: GitRepo, wset_path: Path,
                                                            audit: Path, tmp_path: Path) -> None:
    from plimsoll_ci.history import configs
    from plimsoll_ci.shipscan import ship

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    moved = elsewhere / "audit.yaml"
    moved.write_bytes(audit.read_bytes())  # the same bytes: the same memo
    folder = tmp_path / "memos"
    assert configs.external(str(audit), folder) == ship.load_config(audit)
    again = configs.external(str(moved), folder)
    assert again == ship.load_config(moved)
    assert again.withheld == (elsewhere / "withheld.json").resolve()


def _flip_a_glob(memo: Path) -> None:  # the viewer set ships nothing the leak is in
    data = memo.read_bytes()
    assert b'"viewer/**"' in data
    memo.write_bytes(data.replace(b'"viewer/**"', b'"tasks/**"'))


def _flipped_with_its_digest_for_another_blob(memo: Path) -> None:
    digest, _, body = memo.read_bytes().partition(b"\n")
    doc = json.loads(body)
    doc["config"] = "0" * 40
    body = json.dumps(doc, sort_keys=True).encode()
    memo.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def _cut(memo: Path) -> None:
    memo.write_bytes(memo.read_bytes()[:-20])


def _a_link(memo: Path) -> None:
    real = memo.with_name("elsewhere.json")
    memo.rename(real)
    memo.symlink_to(real)


def _group_writable(memo: Path) -> None:
    memo.chmod(0o660)


TAMPERS: dict[str, Callable[[Path], None]] = {
    "a glob flipped": _flip_a_glob,
    "naming another config, its digest recomputed": _flipped_with_its_digest_for_another_blob,
    "cut short": _cut,
    "a symbolic link": _a_link,
    "group-writable": _group_writable,
}


@pytest.mark.parametrize("tamper", TAMPERS, ids=list(TAMPERS))
def test_a_tampered_memo_is_not_trusted(globrepo: GitRepo, wset_path: Path, audit: Path,
                                        own_cache: Path, tamper: str) -> None:
    leaky(globrepo)
    args = ("--set", str(wset_path), "--config", str(audit))
    _rc, first, _loaded = replay(globrepo, *args)
    (memo,) = memos(own_cache)
    TAMPERS[tamper](memo)
    rc, again, loaded = replay(globrepo, *args)
    assert rc == 1 and "yaml" in loaded  # parsed again
    assert again == first  # the leak still found, its window the same


def test_no_cache_neither_reads_nor_writes_a_memo(globrepo: GitRepo, wset_path: Path,
                                                  audit: Path, own_cache: Path) -> None:
    leaky(globrepo)
    rc, first, loaded = replay(globrepo, "--set", str(wset_path), "--no-cache")
    assert rc == 1 and "yaml" in loaded
    rc, _report, loaded = replay(globrepo, "--set", str(wset_path), "--config", str(audit),
                                 "--no-cache")
    assert rc == 1 and "yaml" in loaded
    assert not memos(own_cache) and not memos(globrepo.path / ".git")
    replay(globrepo, "--set", str(wset_path))  # remembered now
    rc, again, loaded = replay(globrepo, "--set", str(wset_path), "--no-cache")
    assert "yaml" in loaded and again == first  # and not read


def test_a_config_that_does_not_parse_is_never_remembered(globrepo: GitRepo, wset_path: Path,
                                                          audit: Path, own_cache: Path) -> None:
    leaky(globrepo)
    audit.write_text(AUDIT + "  broken: [\n")
    proc = subprocess.run([sys.executable, "-m", "plimsoll_ci", "history", "--set",
                           str(wset_path), "--config", str(audit), "--no-progress"],
                          cwd=globrepo.path, capture_output=True, text=True)
    assert proc.returncode == 2 and str(audit) in proc.stderr
    assert not memos(own_cache)


def test_a_config_with_carriage_returns_reads_as_load_config_reads_it(tmp_path: Path) -> None:
    from plimsoll_ci.history import configs
    from plimsoll_ci.shipscan import ship

    path = tmp_path / "audit.yaml"
    path.write_bytes(AUDIT.replace("\n", "\r\n").encode())
    folder = tmp_path / "memos"
    assert configs.external(str(path), folder) == ship.load_config(path)
    assert not os.path.exists(folder)  # not keyed by bytes load_config does not read as such

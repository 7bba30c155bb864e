"""The parsed config the hook remembers by content in the user's cache: a new clone of a config
already seen skips the parse, its paths still resolve in that clone, and a memo that is not
exactly what the hook wrote, or not this user's alone, is never trusted."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from kit.harness_repo import SEED, git, leak, repo_cli
from test_hook_cold_start import hook_loads


def clone(repo: Path, where: Path) -> Path:
    git(repo.parent, "clone", "-q", str(repo), str(where))
    return where


def memo_of(cache: Path) -> Path:
    (memo,) = (cache / "configs").glob("config-*.json")
    return memo


def test_the_first_hook_run_in_a_new_clone_of_a_seen_config_parses_nothing(
        harness: Path, tmp_path: Path) -> None:
    rc, loaded = hook_loads(harness, "viewer/app.mjs")  # this user's first run parses it
    assert rc == 0 and "yaml" in loaded and "pathspec" in loaded
    other = clone(harness, tmp_path / "second-clone")
    assert not (other / ".git" / "plimsoll").exists()  # nothing of the first clone's caches
    rc, loaded = hook_loads(other, "viewer/app.mjs")
    assert rc == 0 and "yaml" not in loaded and "pathspec" not in loaded


def test_a_remembered_config_resolves_its_paths_in_each_clone(harness: Path,
                                                              tmp_path: Path) -> None:
    from plimsoll_ci.shipscan import hook, ship

    first = hook.staged_config(harness, harness / "plimsoll.yaml")
    other = clone(harness, tmp_path / "second-clone")
    again = hook.staged_config(other, other / "plimsoll.yaml")  # from the memo
    assert again == ship.config_at(other, other / "plimsoll.yaml", ":")
    assert again.withheld == (other / "withheld.json").resolve() != first.withheld
    assert again.path == (other / "plimsoll.yaml").resolve()


def edit(memo: Path, old: bytes, new: bytes) -> None:
    data = memo.read_bytes()
    assert old in data
    memo.write_bytes(data.replace(old, new))


def _flip_a_glob(memo: Path) -> None:
    edit(memo, b'"viewer/**"', b'"viewer/*x"')


def _no_digest_line(memo: Path) -> None:
    memo.write_bytes(memo.read_bytes().partition(b"\n")[2])


def _cut(memo: Path) -> None:
    memo.write_bytes(memo.read_bytes()[:-40])


def _respaced_with_its_digest(memo: Path) -> None:  # the same JSON, not the writer's bytes
    body = memo.read_bytes().partition(b"\n")[2]
    assert b", " in body
    body = body.replace(b", ", b",  ")
    memo.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def _another_blob_named_with_its_digest(memo: Path) -> None:
    body = memo.read_bytes().partition(b"\n")[2]
    head, _, rest = body.partition(b'"config": "')
    body = head + b'"config": "' + b"0" * 40 + rest[40:]
    memo.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def _a_link(memo: Path) -> None:
    real = memo.with_name("elsewhere")
    memo.rename(real)
    memo.symlink_to(real)


def _group_writable(memo: Path) -> None:
    memo.chmod(0o620)


def _another_users(memo: Path) -> None:
    try:
        os.chown(memo, 65534, 65534)
    except PermissionError:
        pytest.skip("changing a file's owner needs root (CI runs as root)")


TAMPERS: dict[str, Callable[[Path], None]] = {
    "a glob flipped": _flip_a_glob,
    "the digest line removed": _no_digest_line,
    "cut short": _cut,
    "re-spaced, its digest recomputed": _respaced_with_its_digest,
    "naming another staged blob, its digest recomputed": _another_blob_named_with_its_digest,
    "a symbolic link": _a_link,
    "group-writable": _group_writable,
    "another user's": _another_users,
}


@pytest.mark.parametrize("tamper", TAMPERS, ids=list(TAMPERS))
def test_a_tampered_memo_is_not_trusted_and_the_config_is_parsed_again(
        harness: Path, own_cache: Path, tamper: str) -> None:
    from plimsoll_ci.shipscan import configmemo, hook, ship

    path = harness / "plimsoll.yaml"
    hook.staged_config(harness, path)  # remembered
    memo = memo_of(own_cache)
    TAMPERS[tamper](memo)
    staged = next(e.oid for e in configmemo.git.index_entries(harness)
                  if e.path == "plimsoll.yaml")
    assert configmemo._read_memo(memo, staged, configmemo._parser_version()) is None
    rc, loaded = hook_loads(harness, "viewer/app.mjs")
    assert rc == 0 and "yaml" in loaded  # parsed again
    assert hook.staged_config(harness, path) == ship.config_at(harness, path, ":")


def test_a_memo_edited_to_stop_shipping_the_leak_does_not_hide_it(harness: Path,
                                                                  own_cache: Path) -> None:
    assert repo_cli(harness, "hook", "ship-scan", "viewer/app.mjs").returncode == 0
    memo = memo_of(own_cache)
    edit(memo, b'"viewer/**", "tasks/**"', b'"tasks/**"')  # the viewer set ships no viewer
    leak(harness)
    git(harness, "add", "viewer/replay.html")
    r = repo_cli(harness, "hook", "ship-scan", "viewer/replay.html")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "viewer/replay.html:1:" in r.stdout and SEED not in r.stdout + r.stderr


def test_a_cache_folder_others_may_write_is_not_used(harness: Path, own_cache: Path) -> None:
    from plimsoll_ci.shipscan import hook

    (own_cache / "configs").mkdir(mode=0o700)
    (own_cache / "configs").chmod(0o777)
    hook.staged_config(harness, harness / "plimsoll.yaml")
    assert not list((own_cache / "configs").iterdir())
    assert list((harness / ".git" / "plimsoll").glob("config-*.json"))  # the git folder's


def test_a_relative_cache_path_is_not_used(harness: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from plimsoll_ci.shipscan import hook

    monkeypatch.setenv("PLIMSOLL_CACHE", "relative-cache")
    monkeypatch.chdir(harness)
    hook.staged_config(harness, harness / "plimsoll.yaml")
    assert not (harness / "relative-cache").exists()
    assert list((harness / ".git" / "plimsoll").glob("config-*.json"))

"""A repository whose `.git/config` tries to run code: no road of plimsoll-ci lets it.

The config points `core.fsmonitor`, `core.pager`, `diff.external`, `core.hooksPath` (every hook),
aliases named after the builtins, a smudge/clean filter and a textconv driver (named by a committed
`.gitattributes`) and `gpg.program` at a script that appends to a marker file. Plain git runs it
(checked first, so this test can fail); `scan --staged`/`--rev`, the hook (pre-commit and
pre-push), the withheld guard, `history` and the action's step never do.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from kit.action_runner import local_inputs, run_action
from kit.harness_repo import commit, git, hook_env, make_harness, repo_cli

HOOKS = ("pre-commit", "post-checkout", "post-index-change", "reference-transaction",
         "pre-auto-gc", "post-merge", "pre-push", "post-rewrite", "fsmonitor-watchman")
BUILTINS = ("ls-files", "cat-file", "rev-parse", "rev-list", "log", "ls-tree", "checkout-index",
            "read-tree", "show", "status", "diff")


def _arm(repo: Path, tmp: Path) -> Path:
    """Write the hostile config; return the marker file its script would write."""
    marker = tmp / "marker"
    script = tmp / "evil.sh"
    script.write_text(f'#!/bin/sh\necho "ran: $0 $*" >> "{marker}"\ncat\n')
    script.chmod(0o755)
    hooks = tmp / "hooks"
    hooks.mkdir()
    for name in HOOKS:
        (hooks / name).symlink_to(script)
    settings = {
        "core.fsmonitor": str(script), "core.pager": str(script), "core.hooksPath": str(hooks),
        "diff.external": str(script), "filter.evil.smudge": str(script),
        "filter.evil.clean": str(script), "diff.evil.textconv": str(script),
        "gpg.program": str(script), "log.showSignature": "true", "pager.log": str(script),
        "core.sshCommand": str(script), "core.askPass": str(script),
    }
    settings.update({f"alias.{name}": f"!{script}" for name in BUILTINS})
    for k, v in settings.items():
        git(repo, "config", k, v)
    return marker


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Path]:
    """A committed harness (two commits) with an armed `.git/config`, and its marker file."""
    repo = make_harness(tmp_path)
    (repo / ".gitattributes").write_text("* filter=evil diff=evil\n")
    (repo / "viewer/notes.md").write_text("a second commit\n")
    git(repo, "add", "-A")
    commit(repo, "attributes")
    marker = _arm(repo, tmp_path)
    # The trap is live: plain git runs the script (a filter on checkout, the fsmonitor hook).
    out = tmp_path / "plain-checkout"
    subprocess.run(["git", "-C", str(repo), "checkout-index", "-a", f"--prefix={out}/"],
                   capture_output=True, env=hook_env())
    subprocess.run(["git", "-C", str(repo), "status"], capture_output=True, env=hook_env())
    assert marker.exists(), "the hostile config does not run its script under plain git"
    marker.unlink()
    return repo, marker


def _through_cli(*args: str, **env: str):  # noqa: ANN202
    def road(repo: Path, tmp: Path) -> int:
        r = repo_cli(repo, *args, env=hook_env(**env))
        assert "Traceback" not in r.stderr, r.stderr
        return r.returncode
    return road


def _pre_push(repo: Path, tmp: Path) -> int:
    base, tip = git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")
    return _through_cli("hook", "ship-scan", PRE_COMMIT_FROM_REF=base, PRE_COMMIT_TO_REF=tip)(repo, tmp)


def _action(mode: str):  # noqa: ANN202
    def road(repo: Path, tmp: Path) -> int:
        base = git(repo, "rev-parse", "HEAD~1")
        event = {"pull_request": {"base": {"sha": base}, "head": {"sha": "HEAD"}}}
        work = tmp / f"action-{mode}"
        work.mkdir()
        return run_action(repo, work, local_inputs(mode=mode), event)["code"]
    return road


ROADS = {
    "scan --staged": _through_cli("scan", "--staged"),
    "scan --rev": _through_cli("scan", "--rev", "HEAD~1"),
    "hook pre-commit": _through_cli("hook", "ship-scan"),
    "hook pre-commit, one file": _through_cli("hook", "ship-scan", "viewer/notes.md"),
    "hook pre-push": _pre_push,
    "withheld guard": _through_cli("hook", "withheld-guard"),
    "history": _through_cli("history", "--set", "withheld.json", "--key-env", "PLIMSOLL_WITHHELD_KEY",
                    "--no-progress"),
    "history, one worker": _through_cli("history", "--set", "withheld.json", "--key-env",
                                "PLIMSOLL_WITHHELD_KEY", "--no-progress", "--no-cache",
                                "--jobs", "1"),
    "action tip": _action("tip"),
    "action each-commit": _action("each-commit"),
}


@pytest.mark.parametrize("road", list(ROADS))
def test_a_hostile_git_config_runs_nothing(hostile: tuple[Path, Path], tmp_path: Path,
                                           road: str) -> None:
    repo, marker = hostile
    code = ROADS[road](repo, tmp_path)
    assert code == 0, f"{road} exited {code} on a clean harness"
    assert not marker.exists(), f"{road} ran the repository's script: {marker.read_text()}"


def test_git_checkout_writes_the_committed_bytes_without_running_a_filter(
        hostile: tuple[Path, Path], tmp_path: Path) -> None:
    from plimsoll_ci import git as plimsoll_git

    repo, marker = hostile
    (repo / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (repo / "run.sh").chmod(0o755)
    os.symlink("viewer/app.mjs", repo / "link.mjs")
    git(repo, "-c", "filter.evil.clean=cat", "add", "run.sh", "link.mjs")
    marker.unlink(missing_ok=True)
    dest = tmp_path / "out"
    dest.mkdir()
    plimsoll_git.checkout(repo, plimsoll_git.index_entries(repo), dest)
    assert not marker.exists()
    assert (dest / "viewer/app.mjs").read_text() == "export const speed = 2;\n"
    assert os.access(dest / "run.sh", os.X_OK)
    assert os.readlink(dest / "link.mjs") == "viewer/app.mjs"
    assert not (dest / ".git").exists()


@pytest.mark.parametrize("path", ["../escape.txt", "a/../../b", ".git/hooks/pre-commit",
                                  "x/.GIT/config"])
def test_git_checkout_refuses_a_tree_path_git_would_refuse(tmp_path: Path, path: str) -> None:
    from plimsoll_ci import git as plimsoll_git
    from plimsoll_ci.errors import BadInput

    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    oid = subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input=b"x\n",
                         capture_output=True, check=True).stdout.decode().strip()
    dest = tmp_path / "out"
    dest.mkdir()
    with pytest.raises(BadInput, match="not a path git would check out"):
        plimsoll_git.checkout(repo, [plimsoll_git.FileEntry("100644", oid, path)], dest)
    assert list(dest.iterdir()) == [] and not (tmp_path / "escape.txt").exists()

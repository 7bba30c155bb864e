"""actions/ship-scan: schema-valid, and its shell steps run here as a runner would run them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from kit.action_runner import ACTION, local_inputs, run_action
from kit.cli import run_process
from kit.harness_repo import KEY, SEED, commit, fix, git, leak, make_harness


def pr_event(base: str, head: str) -> dict:
    return {"pull_request": {"number": 7, "base": {"sha": base}, "head": {"sha": head}}}


@pytest.fixture
def pr(tmp_path: Path) -> dict:
    """A pull request of three commits: the middle one leaks, the tip is clean."""
    repo = make_harness(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    leak(repo)
    git(repo, "add", "-A")
    middle = commit(repo, "viewer: example replay link")
    fix(repo)
    git(repo, "add", "-A")
    tip = commit(repo, "viewer: rename the example")
    return {"repo": repo, "base": base, "middle": middle, "tip": tip}


def test_action_yml_validates_against_the_github_action_schema() -> None:
    exe = shutil.which("check-jsonschema")
    if exe is None:
        pytest.skip("check-jsonschema is not installed (pip install check-jsonschema)")
    r = subprocess.run([exe, "--builtin-schema", "vendor.github-actions",
                        str(ACTION / "action.yml")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_each_commit_mode_fails_a_pr_whose_middle_commit_leaks(pr: dict, tmp_path: Path) -> None:
    res = run_action(pr["repo"], tmp_path, local_inputs(mode="each-commit"),
                     pr_event(pr["base"], pr["tip"]))
    assert res["code"] == 1, res["log"]
    assert int(res["outputs"]["findings"]) >= 1
    assert res["outputs"]["commits"] == "2"
    sarif = json.loads(Path(res["outputs"]["sarif"]).read_text())
    results = sarif["runs"][0]["results"]
    assert {r["properties"]["entry"] for r in results} == {"seeds.txt:2"}
    assert any(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] ==
               "viewer/replay.html" for r in results)
    assert f"first seen in commit {pr['middle'][:12]}" in res["log"]
    assert "::error file=viewer/replay.html,line=1" in res["log"]
    assert pr["middle"][:12] in res["summary"] and "viewer: example replay link" in res["summary"]
    assert "seeds.txt:2" in res["summary"]
    for text in (res["log"], res["summary"], json.dumps(sarif)):
        assert SEED not in text and KEY not in text.replace(f"::add-mask::{KEY}", "")


def test_the_actions_sarif_passes_githubs_rules_and_sarifs_own(pr: dict, tmp_path: Path,
                                                                sarif_rules) -> None:
    res = run_action(pr["repo"], tmp_path, local_inputs(mode="each-commit"),
                     pr_event(pr["base"], pr["tip"]))
    assert res["code"] == 1, res["log"]
    sarif = Path(res["outputs"]["sarif"])
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    # the builder's copy of the viewer is the same file: one result naming both ship sets
    assert uris == {"viewer/replay.html"}
    assert any("also shipped as drone:viewer/replay.html" in r["message"]["text"]
               for r in results)
    assert all(r["properties"]["sets"] == ["drone", "viewer"] for r in results)
    assert "%3A" not in json.dumps([r["message"] for r in results])
    assert sarif_rules(sarif) == []


def test_tip_mode_passes_the_same_pr_because_the_tip_is_clean(pr: dict, tmp_path: Path) -> None:
    res = run_action(pr["repo"], tmp_path, local_inputs(mode="tip"),
                     pr_event(pr["base"], pr["tip"]))
    assert res["code"] == 0, res["log"]
    assert res["outputs"]["findings"] == "0" and res["outputs"]["commits"] == "1"
    assert "nothing withheld ships" in res["summary"] or "no withheld entry ships" in \
        res["summary"]


def test_each_commit_mode_scans_a_merge_commit_that_alone_carries_the_leak(
        tmp_path: Path) -> None:
    repo = make_harness(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "-b", "side")
    (repo / "viewer/app.mjs").write_text("export const speed = 5;\n")
    git(repo, "commit", "-q", "-am", "side: speed")
    git(repo, "checkout", "-q", "main")
    (repo / "tasks/drone/TASK.md").write_text("Fly fast.\n")
    git(repo, "commit", "-q", "-am", "main: task")
    git(repo, "merge", "-q", "--no-commit", "side")
    leak(repo)  # only the merge resolution adds it
    git(repo, "add", "-A")
    merge = commit(repo, "merge side")
    fix(repo)
    git(repo, "add", "-A")
    tip = commit(repo, "fix")
    res = run_action(repo, tmp_path, local_inputs(mode="each-commit"), pr_event(base, tip))
    assert res["code"] == 1, res["log"]
    assert f"first seen in commit {merge[:12]}" in res["log"]
    assert res["outputs"]["commits"] == "4"


def test_fail_on_never_reports_without_failing(pr: dict, tmp_path: Path) -> None:
    res = run_action(pr["repo"], tmp_path, local_inputs(mode="each-commit", **{"fail-on": "never"}),
                     pr_event(pr["base"], pr["tip"]))
    assert res["code"] == 0 and int(res["outputs"]["findings"]) >= 1


def test_push_events_scan_before_to_after(pr: dict, tmp_path: Path) -> None:
    res = run_action(pr["repo"], tmp_path, local_inputs(mode="each-commit"),
                     {"before": pr["base"], "after": pr["tip"]}, event_name="push")
    assert res["code"] == 1 and res["outputs"]["commits"] == "2"


@pytest.mark.parametrize("inputs, event, words", [
    ({"mode": "every"}, None, "input mode"),
    ({"fail-on": "maybe"}, None, "input fail-on"),
    ({"mode": "each-commit"}, {}, "no base commit"),
    ({"mode": "each-commit", "base": "0123456789abcdef0123456789abcdef01234567"}, {},
     "not in this clone"),
    ({"key": ""}, None, "PLIMSOLL_WITHHELD_KEY"),
    ({"key": "wrong"}, None, "wrong key"),
])
def test_bad_inputs_fail_with_an_error_annotation(pr: dict, tmp_path: Path, inputs: dict,
                                                  event: dict | None, words: str) -> None:
    res = run_action(pr["repo"], tmp_path, local_inputs(**inputs),
                     event if event is not None else pr_event(pr["base"], pr["tip"]))
    assert res["code"] == 2, res["log"]
    assert "::error title=plimsoll ship scan::" in res["log"] and words in res["log"]


def test_fail_on_auto_follows_the_configs_warn_mode(pr: dict, tmp_path: Path) -> None:
    repo = pr["repo"]
    cfg = repo / "plimsoll.yaml"
    cfg.write_text("mode: warn\n" + cfg.read_text())
    git(repo, "commit", "-q", "-am", "warn only")
    leak(repo)
    git(repo, "commit", "-q", "-am", "leak at the tip")
    res = run_action(repo, tmp_path, local_inputs(mode="tip"), pr_event(pr["base"], "HEAD"))
    assert res["code"] == 0 and int(res["outputs"]["findings"]) >= 1, res["log"]


@pytest.mark.parametrize("allow", [False, True])
def test_a_ship_set_that_ships_nothing_exits_2_unless_it_allows_it(pr: dict, tmp_path: Path,
                                                                   allow: bool) -> None:
    repo = pr["repo"]
    cfg = repo / "plimsoll.yaml"
    cfg.write_text(cfg.read_text() + "  extras:\n    include: ['viewr/**']\n"
                   + ("    allow_empty: true\n" if allow else ""))
    git(repo, "commit", "-q", "-am", "an extras set with a misspelt glob")
    res = run_action(repo, tmp_path, local_inputs(mode="tip"), pr_event(pr["base"], "HEAD"))
    if allow:
        assert res["code"] == 0, res["log"]
        assert res["outputs"]["findings"] == "0"
    else:
        assert res["code"] == 2, res["log"]
        assert "ship set extras ships no files" in res["log"]
        assert "::error title=plimsoll ship scan::" in res["log"]


# ------------------------------------------------ each-commit on pushes without an ordinary range

ZERO = "0" * 40


def push_event(ref: str, before: str, after: str, **extra: object) -> dict:
    return {"ref": ref, "before": before, "after": after,
            "repository": {"default_branch": "main"}, **extra}


@pytest.fixture
def upstream(tmp_path: Path) -> dict:
    """A harness pushed to a bare upstream: `work` (a maintainer's clone) and `url`."""
    work = make_harness(tmp_path)
    bare = tmp_path / "upstream.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(work, "remote", "add", "origin", str(bare))
    git(work, "push", "-q", "origin", "main")
    return {"work": work, "url": f"file://{bare}", "tmp": tmp_path}


def runner_clone(up: dict, name: str, sha: str) -> Path:
    """What actions/checkout with fetch-depth 0 gives: every branch as origin/*, the commit
    checked out (a file:// clone, so only reachable commits come along, as over the network)."""
    dest = up["tmp"] / name
    git(up["tmp"], "clone", "-q", "--no-checkout", up["url"], str(dest))
    git(dest, "checkout", "-q", "--detach", sha)
    return dest


def branch_with_a_leak_in_the_middle(work: Path, branch: str) -> tuple[str, str]:
    git(work, "checkout", "-q", "-b", branch, "main")
    leak(work)
    git(work, "add", "-A")
    middle = commit(work, "viewer: example replay link")
    fix(work)
    git(work, "add", "-A")
    return middle, commit(work, "viewer: rename the example")


def test_a_new_branch_scans_its_commits_not_on_the_default_branch(upstream: dict,
                                                                 tmp_path: Path) -> None:
    work = upstream["work"]
    middle, tip = branch_with_a_leak_in_the_middle(work, "feature")
    git(work, "push", "-q", "origin", "feature")
    clone = runner_clone(upstream, "runner", tip)
    res = run_action(clone, tmp_path, local_inputs(mode="each-commit"),
                     push_event("refs/heads/feature", ZERO, tip, created=True), "push")
    assert res["code"] == 1, res["log"]
    assert res["outputs"]["commits"] == "2"
    assert "new refs/heads/feature: its 2 commit(s) not on main" in res["log"]
    assert f"first seen in commit {middle[:12]}" in res["log"]
    assert "its 2 commit(s) not on main" in res["summary"]


def test_a_new_branch_at_a_commit_already_on_main_scans_its_tip(upstream: dict,
                                                               tmp_path: Path) -> None:
    work = upstream["work"]
    tip = git(work, "rev-parse", "main")
    git(work, "push", "-q", "origin", "main:refs/heads/release")
    clone = runner_clone(upstream, "runner", tip)
    res = run_action(clone, tmp_path, local_inputs(mode="each-commit"),
                     push_event("refs/heads/release", ZERO, tip, created=True), "push")
    assert res["code"] == 0, res["log"]
    assert res["outputs"]["commits"] == "1"
    assert "already on main: scanned its tip" in res["log"]


def test_the_first_push_of_the_default_branch_scans_its_history_up_to_a_bound(
        tmp_path: Path) -> None:
    other = make_harness(tmp_path / "files")
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "maintainer@example.org")
    git(repo, "config", "user.name", "Maintainer")
    (repo / "NOTES.md").write_text("before the harness had a config\n")
    git(repo, "add", "-A")
    commit(repo, "notes")
    for rel in git(other, "ls-files").splitlines():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(other / rel, repo / rel)
    git(repo, "add", "-A")
    commit(repo, "harness")
    leak(repo)
    git(repo, "add", "-A")
    leaked = commit(repo, "viewer: example replay link")
    fix(repo)
    git(repo, "add", "-A")
    tip = commit(repo, "viewer: rename the example")
    res = run_action(repo, tmp_path, local_inputs(mode="each-commit"),
                     push_event("refs/heads/main", ZERO, tip, created=True), "push")
    assert res["code"] == 1, res["log"]
    assert "the first push of main: scanned the repository's last 4 commit(s)" in res["log"]
    assert "1 commit(s) without plimsoll.yaml skipped" in res["log"]
    assert res["outputs"]["commits"] == "3"
    assert f"first seen in commit {leaked[:12]}" in res["log"]


def test_a_force_push_scans_from_the_merge_base_with_the_default_branch(
        upstream: dict, tmp_path: Path) -> None:
    work = upstream["work"]
    git(work, "checkout", "-q", "-b", "feature", "main")
    (work / "README.md").write_text("A harness, first try.\n")
    git(work, "add", "-A")
    old = commit(work, "first try")
    git(work, "push", "-q", "origin", "feature")
    git(work, "reset", "-q", "--hard", "main")  # rewritten: the first try is gone
    middle, tip = branch_with_a_leak_in_the_middle(work, "feature-2")
    git(work, "push", "-q", "--force", "origin", "feature-2:feature")
    clone = runner_clone(upstream, "runner", tip)
    assert git(clone, "cat-file", "-t", tip) == "commit"
    assert subprocess.run(["git", "-C", str(clone), "cat-file", "-e", f"{old}^{{commit}}"],
                          capture_output=True).returncode != 0  # as on a real runner
    res = run_action(clone, tmp_path, local_inputs(mode="each-commit"),
                     push_event("refs/heads/feature", old, tip, forced=True), "push")
    assert res["code"] == 1, res["log"]
    main = git(work, "rev-parse", "main")
    assert (f"{old[:12]} (before the push) is not in this clone, a force-push: scanned from "
            f"the merge base {main[:12]} with main") in res["log"]
    assert res["outputs"]["commits"] == "2"
    assert f"first seen in commit {middle[:12]}" in res["log"]


def test_a_push_to_a_shallow_checkout_scans_what_it_has_and_says_to_fetch_more(
        upstream: dict, tmp_path: Path) -> None:
    work = upstream["work"]
    before = git(work, "rev-parse", "main")
    leak(work)
    git(work, "add", "-A")
    tip = commit(work, "viewer: example replay link")
    git(work, "push", "-q", "origin", "main")
    clone = tmp_path / "shallow"
    # actions/checkout's default: the pushed commit alone
    git(tmp_path, "clone", "-q", "--depth", "1", "--branch", "main", upstream["url"],
        str(clone))
    res = run_action(clone, tmp_path, local_inputs(mode="each-commit"),
                     push_event("refs/heads/main", before, tip), "push")
    assert res["code"] == 1, res["log"]  # not 2: the tip it has is scanned, and it leaks
    assert "is not in this shallow clone; check out with fetch-depth: 0" in res["log"]
    assert res["outputs"]["commits"] == "1"


@pytest.mark.parametrize("event_name", ["workflow_dispatch", "schedule"])
def test_an_event_without_a_range_scans_the_tip(upstream: dict, tmp_path: Path,
                                                event_name: str) -> None:
    work = upstream["work"]
    leak(work)
    git(work, "add", "-A")
    tip = commit(work, "viewer: example replay link")
    git(work, "push", "-q", "origin", "main")
    clone = runner_clone(upstream, "runner", tip)
    res = run_action(clone, tmp_path, local_inputs(mode="each-commit"),
                     {"ref": "refs/heads/main", "inputs": {}}, event_name)
    assert res["code"] == 1, res["log"]  # the tip leaks, and it was scanned
    assert res["outputs"]["commits"] == "1"
    assert f"event {event_name} has no commit range: scanned the tip" in res["log"]


def test_a_deleted_branch_has_nothing_to_scan(upstream: dict, tmp_path: Path) -> None:
    clone = runner_clone(upstream, "runner", git(upstream["work"], "rev-parse", "main"))
    res = run_action(clone, tmp_path, local_inputs(mode="each-commit"),
                     push_event("refs/heads/gone", git(clone, "rev-parse", "HEAD"), ZERO,
                                deleted=True), "push")
    assert res["code"] == 0, res["log"]
    assert res["outputs"]["commits"] == "0" and res["outputs"]["findings"] == "0"
    assert "deleted refs/heads/gone: nothing to scan" in res["summary"]


@pytest.mark.parametrize("event_name, event", [
    ("push", {"ref": "refs/tags/v1", "before": ZERO, "after": "TIP", "created": True}),
    ("push", {"ref": "refs/heads/feature", "before": ZERO, "after": "TIP"}),  # no repository
    ("push", {"ref": "refs/heads/feature", "before": "1" * 40, "after": "TIP", "forced": True,
              "repository": {"default_branch": "trunk"}}),  # a default branch not in the clone
    ("workflow_dispatch", {}),
    ("release", {"action": "published"}),
    ("", {}),
])
def test_ordinary_events_never_exit_2(upstream: dict, tmp_path: Path, event_name: str,
                                      event: dict) -> None:
    tip = git(upstream["work"], "rev-parse", "main")
    clone = runner_clone(upstream, "runner", tip)
    event = {k: (tip if v == "TIP" else v) for k, v in event.items()}
    res = run_action(clone, tmp_path, local_inputs(mode="each-commit"), event, event_name)
    assert res["code"] == 0, res["log"]
    assert int(res["outputs"]["commits"]) >= 1


def _baseline_of(repo: Path, commit_: str, reason: str) -> None:
    """`plimsoll-ci baseline` of a scan of `commit_`, committed as baseline.json."""
    env = {**os.environ, "PLIMSOLL_WITHHELD_KEY": KEY}
    for args in (["scan", "--rev", commit_, "--format", "json", "-o",
                  str(repo.parent / "report.json")],
                 ["baseline", str(repo.parent / "report.json"), "--reason", reason, "-o",
                  "baseline.json"]):
        run_process(*args, cwd=repo, env=env, inherit=False)
    assert (repo / "baseline.json").is_file()
    git(repo, "add", "baseline.json")
    commit(repo, "baseline: the seed was rotated")


def test_the_baseline_input_lets_a_dealt_with_finding_pass_and_names_it(
        pr: dict, tmp_path: Path) -> None:
    repo = pr["repo"]
    _baseline_of(repo, pr["middle"], "rotated on 2026-12-01")
    res = run_action(repo, tmp_path, local_inputs(mode="each-commit", baseline="baseline.json"),
                     pr_event(pr["base"], "HEAD"))
    assert res["code"] == 0, res["log"]
    assert res["outputs"]["findings"] == "0"
    assert "baselined: viewer/replay.html:1:15: withheld value seeds.txt:2" in res["log"]
    assert "baselined finding not counted (baseline.json)" in res["summary"]
    assert SEED not in res["log"] + res["summary"]
    res = run_action(repo, tmp_path, local_inputs(mode="each-commit"),
                     pr_event(pr["base"], "HEAD"))
    assert res["code"] == 1  # the same range without the input


def test_a_bad_baseline_input_fails_with_an_error_annotation_naming_its_line(
        pr: dict, tmp_path: Path) -> None:
    (pr["repo"] / "baseline.json").write_text('{"format": "plimsoll-baseline/1", "entries": '
                                              '[\n  {"entry": "x"}\n]}\n')
    res = run_action(pr["repo"], tmp_path, local_inputs(baseline="baseline.json"),
                     pr_event(pr["base"], pr["tip"]))
    assert res["code"] == 2, res["log"]
    assert "::error title=plimsoll ship scan::baseline baseline.json line 2:" in res["log"]

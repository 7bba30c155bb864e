"""actions/ship-scan: schema-valid, and its shell steps run here as a runner would run them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from action_runner import ACTION, local_inputs, run_action  # noqa: E402
from harness_repo import KEY, SEED, commit, fix, git, leak, make_harness  # noqa: E402


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
    assert uris == {"viewer/replay.html", "drone%3Aviewer/replay.html"}
    assert any("drone:viewer/replay.html" in r["message"]["text"] for r in results)
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
    ({"mode": "each-commit"}, {}, "no range start"),
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

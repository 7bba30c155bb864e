"""The hackathon's leak, replayed from the repository alone."""

from __future__ import annotations

import json

from kit.history import LEAK, checked_cli


def test_history_names_first_commit_fix_and_46_minute_window(argon: dict) -> None:
    repo = argon["repo"]
    proc = checked_cli("history", "--set", str(argon["set"]), "--format", "json", "--no-progress",
                   "--every-commit", cwd=repo.path)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["format"] == "plimsoll-history/2"
    assert [e["entry"] for e in doc["entries"]] == ["seeds.txt:2"]
    e = doc["entries"][0]
    assert e["first"]["commit"] == argon["first"]
    assert e["fixed"]["commit"] == argon["fix"]
    assert e["window_seconds"] == 46 * 60
    assert len(e["windows"]) == 1
    assert e["windows"][0]["commits"] == [argon["first"], *argon["middle"]]
    assert e["windows"][0]["ranges"] == [{"first": argon["first"], "last": argon["middle"][-1],
                                          "commits": 4}]
    assert e["commit_count"] == e["windows"][0]["commit_count"] == 4
    assert "drone:viewer/replay.html" in e["first"]["paths"]
    finding = e["first"]["findings"][0]
    assert finding["line"] == 4 and finding["set"] == "drone"
    assert doc["commits_scanned"] == 6
    # the seeds file lives in the repository but never ships: nothing is said about it
    assert "seeds.txt" not in json.dumps([c["paths"] for c in e["commits"]])
    leaked = LEAK in proc.stdout
    assert not leaked


def test_history_text_report_says_when_and_for_how_long(argon: dict) -> None:
    proc = checked_cli("history", "--set", str(argon["set"]), "--no-progress", cwd=argon["repo"].path)
    assert proc.returncode == 1
    assert "seeds.txt:2: shipped 46 min across 4 commits" in proc.stdout
    assert argon["first"][:12] in proc.stdout and argon["fix"][:12] in proc.stdout
    assert "viewer/replay.html:4:" in proc.stdout


def test_history_before_the_task_is_clean(argon: dict) -> None:
    proc = checked_cli("history", "--set", str(argon["set"]), "--no-progress", argon["base"],
                   cwd=argon["repo"].path)
    assert proc.returncode == 0, proc.stderr
    assert "nothing withheld shipped" in proc.stdout

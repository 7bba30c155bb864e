"""Baselines: findings already dealt with, by entry id and digest (never a value), with a reason
and a date; `plimsoll-ci baseline` writes one from a JSON report, and `scan`, the hook and
`history` take it with `--baseline` (the action's input is tested in tests/action)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kit.harness_repo import KEY, PRACTICE, SEED, commit, fix, git, leak, repo_cli

from plimsoll_ci import withheld


def _report(repo: Path, *args: str) -> Path:
    """The JSON report of a scan of the working tree."""
    r = repo_cli(repo, "scan", "--format", "json", "-o", "report.json", *args)
    assert r.returncode in (0, 1), r.stderr
    return repo / "report.json"


def _baseline(repo: Path, report: Path, *args: str, reason: str = "rotated on 2026-12-01"
              ) -> Path:
    r = repo_cli(repo, "baseline", str(report), "--reason", reason, "-o", "baseline.json", *args)
    assert r.returncode == 0, r.stderr
    return repo / "baseline.json"


def test_a_baselined_finding_fails_nothing_and_is_reported_as_baselined(harness: Path) -> None:
    leak(harness)
    _baseline(harness, _report(harness))
    r = repo_cli(harness, "scan", "--baseline", "baseline.json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 findings in" in r.stdout
    # one finding for the viewer, shipped through both sets (one finding per leak)
    assert "note: baselined: viewer/replay.html:1:15: withheld value seeds.txt:2 (ship sets " \
           "drone, viewer; also shipped as drone:viewer/replay.html)" in r.stdout
    assert "(baseline.json line 2: rotated on 2026-12-01," in r.stdout
    assert "note: 1 baselined finding not counted (baseline.json)" in r.stdout
    doc = json.loads(repo_cli(harness, "scan", "--baseline", "baseline.json", "--format",
                             "json").stdout)
    assert doc["findings"] == []
    assert doc["baseline"] == {"file": "baseline.json", "baselined": 1, "stale": 0}
    assert SEED not in r.stdout + r.stderr


def test_the_baseline_file_holds_ids_digests_reasons_and_dates_never_a_value(
        harness: Path) -> None:
    leak(harness)
    path = _baseline(harness, _report(harness))
    text = path.read_text()
    assert SEED not in text and KEY not in text
    doc = json.loads(text)
    assert doc["format"] == "plimsoll-baseline/1"
    (entry,) = doc["entries"]
    wset = withheld.load(harness / "withheld.json", key=KEY.encode())
    digest = next(e.digest for e in wset.entries if e.id == "seeds.txt:2")
    assert entry["entry"] == "seeds.txt:2" and entry["digest"] == digest
    assert entry["reason"] == "rotated on 2026-12-01" and len(entry["date"]) == 10
    assert "path" not in entry
    assert text.count("\n") == 3  # the tag, one entry a line, the end


def test_baseline_asks_for_a_reason(harness: Path) -> None:
    leak(harness)
    report = _report(harness)
    r = repo_cli(harness, "baseline", str(report), "-o", "baseline.json")
    assert r.returncode == 2 and "--reason" in r.stderr
    r = repo_cli(harness, "baseline", str(report), "--reason", "  ", "-o", "baseline.json")
    assert r.returncode == 2 and "--reason" in r.stderr
    assert not (harness / "baseline.json").exists()


def test_a_rotated_value_under_the_same_id_is_found_again_and_the_old_entry_is_stale(
        harness: Path, tmp_path: Path) -> None:
    """A rotation rebuilds the set: the id seeds.txt:2 now names a new value, whose digest the
    baseline does not hold."""
    leak(harness)
    _baseline(harness, _report(harness))
    rotated = [f"9{i:09d}" for i in range(16)]
    doc, _ = withheld.build_set([(f"seeds.txt:{i}", v) for i, v in enumerate(rotated, 1)],
                                key=KEY.encode())
    (harness / "withheld.json").write_text(withheld.dumps(doc))
    (harness / "viewer/replay.html").write_text(f'<a href="seed-{rotated[1]}.json">x</a>\n')
    r = repo_cli(harness, "scan", "--baseline", "baseline.json")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "viewer/replay.html:1:15: withheld value seeds.txt:2" in r.stdout
    assert "note: stale baseline entry: baseline.json line 2: seeds.txt:2 matches no finding; " \
           "remove it" in r.stdout


def test_a_baseline_with_paths_covers_only_the_files_it_names(harness: Path) -> None:
    leak(harness)
    _baseline(harness, _report(harness), "--paths")
    entries = json.loads((harness / "baseline.json").read_text())["entries"]
    assert sorted(e["path"] for e in entries) == ["viewer/replay.html"]
    (harness / "tasks/drone/TASK.md").write_text(f"Fly seed {SEED}.\n")
    r = repo_cli(harness, "scan", "--baseline", "baseline.json")
    assert r.returncode == 1
    assert "tasks/drone/TASK.md:1:10: withheld value seeds.txt:2" in r.stdout
    assert "note: 1 baselined finding not counted" in r.stdout


def test_an_entry_that_matches_nothing_is_reported_stale_and_fails_nothing(
        harness: Path) -> None:
    leak(harness)
    _baseline(harness, _report(harness))
    fix(harness)
    r = repo_cli(harness, "scan", "--baseline", "baseline.json")
    assert r.returncode == 0
    assert "stale baseline entry: baseline.json line 2: seeds.txt:2 matches no finding" in r.stdout


def test_baseline_adds_to_an_existing_file_and_writes_nothing_twice(harness: Path) -> None:
    leak(harness)
    report = _report(harness)
    _baseline(harness, report)
    (harness / "tasks/drone/TASK.md").write_text(f"Fly seed {PRACTICE[0]}.\n")
    _baseline(harness, _report(harness), reason="accepted: the task text is public")
    entries = json.loads((harness / "baseline.json").read_text())["entries"]
    assert [(e["entry"], e["reason"]) for e in entries] == [
        ("seeds.txt:2", "rotated on 2026-12-01"),
        ("seeds.txt:1", "accepted: the task text is public")]


BAD = [
    ("{\n  \"format\": \"plimsoll-baseline/1\",\n  \"entries\": [\n    {oops}\n]}\n",
     "line 4: not valid JSON"),
    ('{"format": "plimsoll-withheld/1", "entries": []}\n', "line 1: format is"),
    ('{"format": "plimsoll-baseline/1", "entries": [\n  {"entry": "seeds.txt:2", "digest": "'
     + "a" * 64 + '", "reason": "r", "date": "2026-12-01"},\n  {"entry": "seeds.txt:3", '
     '"digest": "' + "a" * 64 + '", "date": "2026-12-01"}\n]}\n', "line 3: 'reason' is missing"),
    ('{"format": "plimsoll-baseline/1", "entries": [\n  {"entry": "seeds.txt:2", "digest": '
     '"XYZ", "reason": "r", "date": "2026-12-01"}\n]}\n', "line 2: digest must be 64"),
    ('{"format": "plimsoll-baseline/1", "entries": [\n  {"entry": "seeds.txt:2", "digest": "'
     + "a" * 64 + '", "reason": "r", "date": "yesterday"}\n]}\n', "line 2: date must be"),
    ('{"format": "plimsoll-baseline/1", "entries": [\n  {"entry": "seeds.txt:2", "digest": "'
     + "a" * 64 + '", "reason": "r", "date": "2026-12-01", "value": "x"}\n]}\n',
     "line 2: unknown field 'value'"),
    ('{"format": "plimsoll-baseline/1"}\n', "line 1: no `entries` list"),
]


@pytest.mark.parametrize("text, said", BAD, ids=[s.split(": ")[1][:20] for _, s in BAD])
def test_a_bad_baseline_exits_2_naming_the_file_and_the_line(harness: Path, text: str,
                                                              said: str) -> None:
    (harness / "bad.json").write_text(text)
    for args in (["scan", "--baseline", "bad.json"],
                 ["hook", "ship-scan", "--baseline", "bad.json"],
                 ["history", "--set", "withheld.json", "--key-env", "PLIMSOLL_WITHHELD_KEY",
                  "--baseline", "bad.json", "--no-progress"]):
        r = repo_cli(harness, *args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert f"plimsoll-ci: error: baseline bad.json {said}" in r.stderr, (args, r.stderr)


def test_a_baseline_that_is_not_a_regular_file_or_too_large_is_refused(harness: Path) -> None:
    os.mkfifo(harness / "fifo.json")
    r = repo_cli(harness, "scan", "--baseline", "fifo.json")
    assert r.returncode == 2 and "baseline fifo.json: not a regular file" in r.stderr
    with open(harness / "big.json", "wb") as fh:
        fh.truncate(17 * 1024 * 1024)
    r = repo_cli(harness, "scan", "--baseline", "big.json")
    assert r.returncode == 2 and "over the bound of 16 MiB" in r.stderr


def test_the_hook_takes_a_baseline(harness: Path) -> None:
    leak(harness)
    _baseline(harness, _report(harness))
    git(harness, "add", "viewer/replay.html")
    r = repo_cli(harness, "hook", "ship-scan", "--baseline", "baseline.json",
                "viewer/replay.html")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 baselined finding not counted" in r.stdout
    r = repo_cli(harness, "hook", "ship-scan", "viewer/replay.html")
    assert r.returncode == 1


def test_history_takes_a_baseline_and_a_baseline_made_from_its_report(harness: Path) -> None:
    leak(harness)
    git(harness, "add", "-A")
    commit(harness, "viewer example link")
    fix(harness)
    git(harness, "add", "-A")
    commit(harness, "rename the example")
    args = ["history", "--set", "withheld.json", "--key-env", "PLIMSOLL_WITHHELD_KEY",
            "--no-progress"]
    r = repo_cli(harness, *args, "--format", "json", "-o", "history.json")
    assert r.returncode == 1, r.stderr
    _baseline(harness, harness / "history.json", reason="window accepted: rotated")
    r = repo_cli(harness, *args, "--baseline", "baseline.json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nothing withheld shipped in the range" in r.stdout
    assert "note: baselined: seeds.txt:2: first shipped in" in r.stdout
    assert "1 baselined entry not counted (baseline.json)" in r.stdout
    assert SEED not in r.stdout + r.stderr

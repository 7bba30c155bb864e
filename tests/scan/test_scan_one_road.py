"""One road: every front of the ship scan reports the same scan of the same tree.

The same committed tree (the index equals HEAD) goes through `scan --staged`, the pre-commit hook
and the GitHub Action's step; each road's text report (findings, paths, places, files, bytes
scanned), exit code and SARIF levels must agree, in refuse mode and in warn mode. A road is one
function in `ROADS` returning a `Seen`: adding one is a function and a line.

The tripwire reports in its own words (hits that "reached a model"), so it is held to the ship
scan's JSON and SARIF instead: a folder of request bodies carrying exactly the files that ship
(each at its shown path) gives the same findings, notes, files, bytes scanned, exit code and SARIF
levels as `scan --staged`. Its only mode is the set's, so there warn comes from the set.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest
from kit.action_runner import local_inputs, run_action
from kit.harness_repo import SEED, commit, git, hook_env, leak, make_harness, repo_cli

SUMMARY = re.compile(r"^\d+ findings? in \d+ files? \([\d,]+ bytes scanned\)$")


class Seen(NamedTuple):
    """What one road showed: its exit code, its text report, its SARIF levels (None: no SARIF)."""

    code: int
    report: list[str]
    levels: frozenset[str] | None


def _report(text: str) -> list[str]:
    """The text report's lines, without a road's own framing (annotations, verdict lines)."""
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("::")
             and not ln.startswith("plimsoll ship scan (")]
    end = next(i for i, ln in enumerate(lines) if SUMMARY.match(ln))
    # What to do next is each stage's own (a refused commit left nothing on a remote; a pushed
    # one may have): it must be one of the stages' words, and is not compared between roads.
    from plimsoll_ci.shipscan.report import STAGE_ADVICE

    assert all(ln in STAGE_ADVICE.values() for ln in lines[end + 1: end + 2]), lines[end + 1:]
    return lines[: end + 1]  # the findings, the notes and the summary


def _levels(sarif: dict) -> frozenset[str]:
    return frozenset(r["level"] for r in sarif["runs"][0]["results"])


def _scan(*source: str):  # noqa: ANN202
    def road(repo: Path, tmp: Path) -> Seen:
        text = repo_cli(repo, "scan", *source)
        sarif = repo_cli(repo, "scan", *source, "--format", "sarif")
        assert text.returncode == sarif.returncode, sarif.stderr
        return Seen(text.returncode, _report(text.stdout), _levels(json.loads(sarif.stdout)))
    return road


def hook(repo: Path, tmp: Path) -> Seen:
    r = repo_cli(repo, "hook", "ship-scan")
    return Seen(r.returncode, _report(r.stdout), None)


def hook_pre_push(repo: Path, tmp: Path) -> Seen:
    tip = git(repo, "rev-parse", "HEAD")
    base = git(repo, "rev-parse", "HEAD~1")
    r = repo_cli(repo, "hook", "ship-scan", env=hook_env(PRE_COMMIT_FROM_REF=base,
                                                        PRE_COMMIT_TO_REF=tip))
    lines = [ln for ln in r.stdout.splitlines() if not ln.startswith(f"commit {tip[:12]} ")]
    return Seen(r.returncode, _report("\n".join(lines)), None)


def action(repo: Path, tmp: Path) -> Seen:
    res = run_action(repo, tmp / "action", local_inputs(mode="tip"))
    sarif = json.loads(Path(res["outputs"]["sarif"]).read_text())
    annotations = {m.group(1) for m in re.finditer(r"^::(error|warning) file=", res["log"], re.M)}
    assert annotations == set(_levels(sarif)), "annotations and SARIF levels differ"
    return Seen(res["code"], _report(res["log"]), _levels(sarif))


ROADS = {"scan --staged": _scan("--staged"), "scan --rev": _scan("--rev", "HEAD"), "hook": hook,
         "hook pre-push": hook_pre_push, "action": action}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A committed harness whose tip ships a value in a file, in hex, and in a folder name."""
    repo = make_harness(tmp_path)
    leak(repo)  # viewer/replay.html names the seed; the drone builder ships a copy
    (repo / "viewer/hex.txt").write_text(SEED.encode().hex() + "\n")
    run_dir = repo / "tasks" / "drone" / "runs" / SEED
    run_dir.mkdir(parents=True)
    (run_dir / "log.txt").write_text("t=1 ok\n")
    (repo / "viewer/big.bin").write_bytes(bytes(range(256)) * 40)
    git(repo, "add", "-A")
    commit(repo, "viewer: replay example, hex note, a run")
    (tmp_path / "action").mkdir()
    return repo


@pytest.mark.parametrize("mode", ["refuse", "warn"])
def test_every_road_reports_the_same_scan_of_the_same_tree(tree: Path, tmp_path: Path,
                                                           mode: str) -> None:
    if mode == "warn":
        cfg = tree / "plimsoll.yaml"
        cfg.write_text("mode: warn\n" + cfg.read_text())
        git(tree, "commit", "-q", "--no-verify", "-am", "warn only")
    seen = {name: road(tree, tmp_path) for name, road in ROADS.items()}
    first_name, first = next(iter(seen.items()))
    for name, s in seen.items():
        assert s.report == first.report, f"{name} and {first_name} report differently"
        assert s.code == (1 if mode == "refuse" else 0), f"{name} exit code {s.code}"
        if s.levels is not None:
            assert s.levels == {"error" if mode == "refuse" else "warning"}, name
    report = "\n".join(first.report)
    assert SEED not in report
    # a file's content and a builder's copy of it (one finding naming both), a hex layer, a
    # folder name: all on every road
    for expected in ("viewer/replay.html:1:", "also shipped as drone:viewer/replay.html)",
                     "viewer/hex.txt:1:1: withheld value seeds.txt:2 via hex",
                     "tasks/drone/runs/[withheld]/:name: withheld value seeds.txt:2",
                     "drone:tasks/drone/runs/[withheld]/:name:"):
        assert expected in report, expected


def test_a_warm_hook_counts_the_files_and_bytes_a_cold_scan_counts(tree: Path) -> None:
    doc = json.loads(repo_cli(tree, "scan", "--staged", "--format", "json").stdout)
    assert doc["scanned"]["files"] > 0 and doc["scanned"]["bytes"] > 10240
    # the second run finds every clean file in the hook's cache, and still counts it
    first = repo_cli(tree, "hook", "ship-scan").stdout
    again = repo_cli(tree, "hook", "ship-scan").stdout
    assert _report(first) == _report(again)
    summary = next(ln for ln in _report(first) if SUMMARY.match(ln))
    assert f"in {doc['scanned']['files']} files ({doc['scanned']['bytes']:,} bytes" in summary


def _requests_carrying_what_ships(repo: Path, out: Path) -> None:
    """A folder of request bodies: every file `scan --staged` ships, each at its shown path."""
    from plimsoll_ci.shipscan import ship

    _config, files = ship.collect(None, None, True, None, repo)
    assert files
    for f in files:
        data = f.data
        if not data and f.blob:
            data = subprocess.run(["git", "-C", str(repo), "cat-file", "blob", f.blob],
                                  capture_output=True, check=True).stdout
        body = out / ship.label(f)
        body.parent.mkdir(parents=True, exist_ok=True)
        body.write_bytes(data or b"")


def _each_label(findings: list[dict]) -> list[dict]:
    """A scan's findings with one per label a file ships as (the tripwire's view)."""
    out = []
    for f in findings:
        for path in (f["path"], *f["also"]):
            out.append({**f, "path": path, "sets": [], "also": []})
    return out


def _sorted(findings: list[dict]) -> list[dict]:
    return sorted(findings, key=lambda f: json.dumps(f, sort_keys=True))


@pytest.mark.parametrize("mode", ["refuse", "warn"])
def test_the_tripwire_over_requests_carrying_the_shipped_files_reports_the_same_scan(
        tree: Path, tmp_path: Path, mode: str) -> None:
    # a value inside a longer name: withheld where it sits, on both roads (`run-[withheld]/`)
    (tree / "viewer" / f"run-{SEED}").mkdir()
    (tree / "viewer" / f"run-{SEED}" / "notes.txt").write_text("lap ok\n")
    git(tree, "add", "-A")
    commit(tree, "viewer: a run folder")
    if mode == "warn":
        doc = json.loads((tree / "withheld.json").read_text())
        doc["mode"] = "warn"
        (tree / "withheld.json").write_text(json.dumps(doc, indent=2) + "\n")
        git(tree, "commit", "-q", "--no-verify", "-am", "warn only")
    requests = tmp_path / "requests"
    _requests_carrying_what_ships(tree, requests)
    tripwire = ("tripwire", "--sealed", "withheld.json", "--key-env", "PLIMSOLL_WITHHELD_KEY",
                "--requests", str(requests))
    seen = {}
    for name, args in (("scan --staged", ("scan", "--staged")), ("tripwire", tripwire)):
        doc = repo_cli(tree, *args, "--format", "json")
        sarif = repo_cli(tree, *args, "--format", "sarif")
        assert doc.returncode == sarif.returncode, (name, doc.stderr, sarif.stderr)
        seen[name] = (doc.returncode, json.loads(doc.stdout), _levels(json.loads(sarif.stdout)))
    (scan_code, scanned, scan_levels), (trip_code, tripped, trip_levels) = seen.values()
    # paths, places, chains, entries; the scan reports a file that ships through two ship sets
    # once (naming the other label), the tripwire sees each request's copy
    assert _sorted(tripped["findings"]) == _sorted(_each_label(scanned["findings"]))
    assert any(f["sets"] == ["drone", "viewer"] for f in scanned["findings"])
    assert (tripped["notes"], tripped["scanned"]) == (scanned["notes"], scanned["scanned"])
    assert scanned["scanned"]["bytes"] > 10240 and len(scanned["findings"]) == 6
    assert {"viewer/run-[withheld]/", "drone:viewer/run-[withheld]/"} <= {
        f["path"] for f in tripped["findings"]}
    assert trip_code == scan_code == (1 if mode == "refuse" else 0)
    assert trip_levels == scan_levels == {"error" if mode == "refuse" else "warning"}
    assert SEED not in json.dumps(tripped)

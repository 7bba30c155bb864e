"""`grade --sealed SET.commit --reveal SET.json`: a held-out set committed before grading, its
commitment and reveal in the signed record, `verify` saying when; weak seeds refused unless
allowed (and then recorded); a seed file without a commitment said to be one."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import pytest
from kit.cli import run_process
from kit.scan import LeakGuard

import plimsoll_sim as sim
from plimsoll_ci.attest import canonical, keys
from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading import fresh, seedsets
from plimsoll_ci.grading.request import GradeRequest
from plimsoll_ci.grading.sign import grade_and_sign

QUICK = "class Controller:\n    def __init__(self, info):\n        pass\n\n    def step(self, obs):\n        return None\n"


def run(*args: str) -> subprocess.CompletedProcess:
    return run_process(*args, timeout=600)


@pytest.fixture
def quick(tmp_path: Path) -> Path:
    p = tmp_path / "quick.py"
    p.write_text(QUICK)
    return p


def committed(tmp_path: Path, count: int = 16, days_ago: int = 0) -> tuple[Path, Path, str]:
    """A set drawn and committed in another process, its commitment dated `days_ago` earlier
    (only the time field: the digests are what the set gives)."""
    s, c = tmp_path / "held.json", tmp_path / "held.commit"
    assert run("seeds", "draw", str(count), "-o", str(s)).returncode == 0
    assert run("seeds", "commit", str(s), "-o", str(c)).returncode == 0
    doc = json.loads(c.read_text())
    when = (dt.datetime.now(dt.UTC) - dt.timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    c.write_text(seedsets.dumps(doc | {"committed": when}))
    return s, c, when


def statements(bundle: Path) -> list[dict]:
    lines = bundle.read_bytes().splitlines()[:-1]
    return [canonical.loads(canonical.b64decode(canonical.loads(x)["envelope"]["payload"]))
            for x in lines]


def test_a_held_out_set_committed_two_days_before_is_graded_and_verify_says_when(
        tmp_path, quick, gvisor):
    s, c, day1 = committed(tmp_path, 16, days_ago=2)
    bundle, pub = tmp_path / "runs.intoto.jsonl", tmp_path / "run.pub"
    r = run("grade", "--controller", str(quick), "--course", "easy", "--sealed", str(c),
            "--reveal", str(s), "--provider", gvisor, "--min-tier", "kernel",
            "--bundle", str(bundle), "--ephemeral-key", str(pub), "--format", "json")
    assert r.returncode == 0, r.stderr
    seeds = json.loads(s.read_text())["seeds"]
    guard = LeakGuard(seeds)
    guard.text(r.stdout + r.stderr)  # the seeds ride in the record only, never in output
    doc = json.loads(r.stdout)
    assert [f["id"] for f in doc["flights"]] == [f"sealed:{n}" for n in range(1, 17)]
    assert all(f["seed"] is None for f in doc["flights"])
    assert doc["sealed_set"] == json.loads(c.read_text())
    assert doc["seed_check"] == {"allowWeak": False, "findings": [], "uncommitted": 0}
    [st] = statements(bundle)
    pred = st["predicate"]
    assert st["predicateType"].endswith("/grading-run/v3")
    assert pred["inputs"]["sealedSet"] == {"bits": 64, "commitment": json.loads(
        c.read_text())["commitment"], "committedOn": day1, "count": 16}
    assert pred["sealedSetReveal"] == {"salt": json.loads(s.read_text())["salt"], "seeds": seeds}
    graded = pred["run"]["startedOn"]
    assert day1 < graded
    v = run("verify", "--pub", str(pub), str(bundle), "--expect-count", "1")
    assert v.returncode == 0, v.stdout + v.stderr
    assert f"committed at {day1}, graded at {graded} (record 1)" in v.stdout
    guard.text(v.stdout + v.stderr)


@pytest.mark.parametrize("what", ["another set", "one seed", "the salt"])
def test_a_reveal_that_does_not_match_is_refused_before_anything_flies(tmp_path, quick, what):
    s, c, _ = committed(tmp_path, 16)
    doc = json.loads(s.read_text())
    if what == "another set":
        doc = seedsets.set_document(fresh.draw(16), 64, doc["drawn"])
    elif what == "one seed":
        doc["seeds"][-1] = str(int(doc["seeds"][-1]) - 1)
    else:
        doc["salt"] = doc["salt"][::-1]
    wrong = tmp_path / "wrong.json"
    wrong.write_text(seedsets.dumps(doc))
    bundle = tmp_path / "runs.intoto.jsonl"
    r = run("grade", "--controller", str(quick), "--course", "easy", "--sealed", str(c),
            "--reveal", str(wrong), "--provider", "process", "--bundle", str(bundle),
            "--ephemeral-key", str(tmp_path / "run.pub"))
    assert r.returncode == 2
    assert "does not match commitment" in r.stderr and "Nothing was flown" in r.stderr
    assert not bundle.exists() and r.stdout == ""
    LeakGuard(doc["seeds"] + json.loads(s.read_text())["seeds"]).text(r.stderr)


@pytest.mark.parametrize("args, message", [
    (["--sealed", "{c}"], "go together"),
    (["--seeds", "5000000001", "--reveal", "{s}"], "go together"),
    (["--sealed", "{c}", "--reveal", "{c}"], "that is a commitment"),
    (["--sealed", "{future}", "--reveal", "{s}"], "after now"),
])
def test_sealed_bad_input_exits_2(tmp_path, quick, args, message):
    s, c, _ = committed(tmp_path, 16)
    future = tmp_path / "future.commit"
    future.write_text(seedsets.dumps(json.loads(c.read_text()) | {
        "committed": "2999-01-01T00:00:00Z"}))
    args = [a.format(s=s, c=c, future=future) for a in args]
    r = run("grade", "--controller", str(quick), "--course", "easy", "--provider", "process",
            *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and r.stderr.count("error:") == 1


def test_a_guessable_held_out_set_is_refused_unless_weak_seeds_are_allowed_and_then_recorded(
        tmp_path, quick):
    held = tmp_path / "held-out.txt"
    held.write_text("".join(f"{s}\n" for s in range(800_000_000, 800_000_016)))
    base = ["grade", "--controller", str(quick), "--course", "easy", "--seed-file", str(held),
            "--provider", "process"]
    r = run(*base)
    assert r.returncode == 2
    assert "weak seeds" in r.stderr and "seed-file:1: hunt" in r.stderr
    assert "--allow-weak-seeds" in r.stderr and "Nothing was flown" in r.stderr
    LeakGuard([str(s) for s in range(800_000_000, 800_000_016)]).text(r.stdout + r.stderr)
    bundle, pub = tmp_path / "runs.intoto.jsonl", tmp_path / "run.pub"
    r = run(*base, "--allow-weak-seeds", "--bundle", str(bundle), "--ephemeral-key", str(pub))
    assert r.returncode == 0, r.stderr
    assert "weak seeds allowed" in r.stdout and "graded anyway" in r.stdout
    # and the record says nothing was committed for these held-out flights
    assert "nothing was committed for the 16 held-out flight(s)" in r.stdout
    [st] = statements(bundle)
    check = st["predicate"]["seedCheck"]
    assert check["allowWeak"] is True and check["uncommitted"] == 16
    assert {f["rule"] for f in check["findings"]} >= {"hunt", "run", "low-entropy"}
    assert st["predicate"]["inputs"]["sealedSet"] is None
    v = run("verify", "--pub", str(pub), str(bundle))
    assert v.returncode == 0
    assert "weak seeds:    allowed by --allow-weak-seeds (records 1)" in v.stdout
    assert "uncommitted:   16 held-out flight(s)" in v.stdout


def test_a_held_out_set_sharing_a_seed_with_the_practice_set_is_refused(tmp_path, quick):
    held = tmp_path / "held-out.txt"
    held.write_text("".join(f"{s}\n" for s in [*fresh.draw(15).seeds, sim.PRACTICE_SEEDS[1]]))
    r = run("grade", "--controller", str(quick), "--course", "easy", "--seed-file", str(held),
            "--provider", "process")
    assert r.returncode == 2
    assert "seed-file:16: shared: also in the practice set" in r.stderr


def test_a_practice_set_that_fails_the_lint_is_graded_with_a_note(quick):
    r = run("grade", "--controller", str(quick), "--course", "easy", "--seeds", "practice",
            "--provider", "process")
    assert r.returncode == 0, r.stderr
    assert "note: seed lint: practice set (practice): hunt" in r.stdout
    assert "noted, not refused: a practice set is no secret" in r.stdout


def test_a_weak_fresh_set_is_refused_by_the_library_unless_allowed(tmp_path, quick):
    weak = fresh.make([101, 102, 103])
    with pytest.raises(BadInput, match="fresh:1: hunt"):
        grade_and_sign(GradeRequest(str(quick), "easy", (), "process", fresh=weak))
    signer = keys.generate()
    path = tmp_path / "runs.intoto.jsonl"
    result = grade_and_sign(GradeRequest(str(quick), "easy", (), "process", fresh=weak,
                                         allow_weak_seeds=True), signer, path)
    assert result.seed_check is not None and result.seed_check.allow_weak
    [st] = statements(path)
    assert st["predicate"]["seedCheck"]["allowWeak"] is True
    assert st["predicate"]["freshSetReveal"]["seeds"] == ["101", "102", "103"]


def test_a_fresh_grading_flies_64_bit_seeds_written_as_decimal_strings(quick):
    r = run("grade", "--controller", str(quick), "--course", "easy", "--fresh", "3",
            "--provider", "process", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["format"] == "plimsoll-grading/2"
    seeds = [f["seed"] for f in doc["flights"]]
    assert all(isinstance(x, str) and 2**32 <= int(x) < 2**64 for x in seeds)
    assert doc["fresh_set"]["reveal"]["seeds"] == seeds
    assert doc["seed_check"]["uncommitted"] == 0

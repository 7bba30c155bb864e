"""v3 records: a sealed set's commitment and reveal, the seed check, 64-bit seeds as strings.

A record is refused at signing and at verifying when its reveal is not the committed set, when the
commitment postdates the grading, or when the seed check is malformed; a signature by the real
key does not make a wrong record right.
"""

from __future__ import annotations

import copy

import pytest
from kit.attest_forge import fixed_signer, forge_record_line, seal

from plimsoll_ci.attest import bundle, record
from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading import fresh

SIGNER = fixed_signer(11)
HELD = fresh.make([2**53 + 1, 0xA3F1_6C2E_94B0_7D15, 2**64 - 59], salt=bytes(range(32)))
SEALED = {"bits": 64, "commitment": fresh.commit(HELD), "committedOn": "2026-01-29T08:00:00Z",
          "count": 3}
CHECK = {"allowWeak": False, "findings": [{"count": 2, "rule": "hunt", "set": "practice"}],
         "uncommitted": 0}
RESULT = {"flights": [{"id": f"sealed:{n}", "seed": None} for n in (1, 2, 3)], "landed": 2,
          "total": 3}


def predicate(**change) -> dict:
    args = dict(result_doc=RESULT, controller_files={"controller.py": "ab" * 32}, course="hard",
                provider="gvisor", tier="kernel", evidence={}, cpu_budget={},
                started="2026-01-31T12:00:00Z", finished="2026-01-31T12:00:09Z",
                sealed_set=SEALED, sealed_reveal=fresh.reveal(HELD), seed_check=CHECK)
    return record.make_predicate(**{**args, **change})


def verify_forged(pred: dict) -> list[str]:
    line = forge_record_line(1, bundle.GENESIS, RESULT, pred, SIGNER)
    return [str(p) for p in bundle.verify_bytes(seal([line], SIGNER), SIGNER.public).problems]


def test_a_held_out_record_carries_commitment_reveal_and_seed_check_and_verifies(tmp_path):
    pred = predicate()
    assert pred["inputs"]["sealedSet"] == SEALED
    assert pred["sealedSetReveal"]["seeds"] == [str(s) for s in HELD.seeds]
    path = tmp_path / "runs.intoto.jsonl"
    bundle.append_run(path, RESULT, pred, SIGNER)
    report = bundle.verify_bundle(path, SIGNER.public, expect_count=1)
    assert report.ok, report.problems
    [r] = report.records
    assert (r.sealed_commitment, r.sealed_committed, r.started) == (
        SEALED["commitment"], "2026-01-29T08:00:00Z", "2026-01-31T12:00:00Z")


def _other_seed(reveal):
    reveal["seeds"][0] = str(int(reveal["seeds"][0]) + 1)


def _other_salt(reveal):
    reveal["salt"] = "ff" * 32


TAMPERS = [
    ("a reveal off by one seed", lambda p: _other_seed(p["sealedSetReveal"]),
     "sealed set reveal does not match its commitment"),
    ("a reveal with another salt", lambda p: _other_salt(p["sealedSetReveal"]),
     "sealed set reveal does not match its commitment"),
    ("a seed as a JSON integer", lambda p: p["sealedSetReveal"]["seeds"].__setitem__(0, 5),
     "sealed set reveal:"),
    ("no reveal", lambda p: p.__setitem__("sealedSetReveal", None),
     "sealed set committed to but never revealed"),
    ("no commitment", lambda p: p["inputs"].__setitem__("sealedSet", None),
     "sealed set revealed but never committed to"),
    ("committed after the grading started",
     lambda p: p["inputs"]["sealedSet"].__setitem__("committedOn", "2026-01-31T12:00:01Z"),
     "after the grading started (2026-01-31T12:00:00Z): a commitment must come first"),
    ("a count that is not the reveal's", lambda p: p["inputs"]["sealedSet"].__setitem__("count", 4),
     "sealed set reveal holds 3 seeds, the commitment 4"),
    ("fewer bits than the seeds", lambda p: p["inputs"]["sealedSet"].__setitem__("bits", 60),
     "beyond its committed 60 bits"),
    ("a malformed time", lambda p: p["inputs"]["sealedSet"].__setitem__("committedOn", "yesterday"),
     "committedOn must be a UTC time"),
    ("no seed check field", lambda p: p.pop("seedCheck"), "must have exactly the fields"),
    ("allowWeak not a bool", lambda p: p["seedCheck"].__setitem__("allowWeak", "no"),
     "allowWeak must be true or false"),
    ("a negative uncommitted count", lambda p: p["seedCheck"].__setitem__("uncommitted", -1),
     "uncommitted must be a count"),
    ("a finding without a count", lambda p: p["seedCheck"]["findings"][0].pop("count"),
     "seedCheck finding must have exactly the fields"),
]


@pytest.mark.parametrize("what, edit, reason", TAMPERS, ids=[t[0] for t in TAMPERS])
def test_verify_refuses_a_signed_v3_record_with_a_bad_sealed_set_or_seed_check(what, edit, reason):
    pred = copy.deepcopy(predicate())
    edit(pred)
    problems = verify_forged(pred)
    assert len(problems) == 1 and problems[0].startswith("bundle line 1: "), problems
    assert reason in problems[0]


@pytest.mark.parametrize("change, message", [
    ({"sealed_reveal": fresh.reveal(fresh.make(HELD.seeds))}, "does not match its commitment"),
    ({"sealed_reveal": None}, "committed but not revealed"),
    ({"sealed_set": None}, "a reveal without a commitment"),
    ({"started": "2026-01-28T00:00:00Z"}, "a commitment must come first; refusing to sign"),
    ({"seed_check": {"allowWeak": 1, "findings": [], "uncommitted": 0}}, "allowWeak"),
])
def test_make_predicate_refuses_to_sign_a_bad_sealed_set(change, message):
    with pytest.raises(BadInput, match=message):
        predicate(**change)


def test_a_fresh_reveal_with_integer_seeds_is_refused_in_a_v3_record():
    fs = fresh.draw(2)
    legacy = {"salt": fs.salt.hex(), "seeds": list(fs.seeds)}
    with pytest.raises(BadInput, match="fresh set reveal does not match"):
        predicate(fresh_commitment=fresh.commit(fs), fresh_reveal=legacy)


def test_the_bundle_summary_says_when_each_sealed_set_was_committed_and_graded(tmp_path):
    path = tmp_path / "runs.intoto.jsonl"
    later = predicate(started="2026-02-02T10:00:00Z", finished="2026-02-02T10:00:30Z",
                      seed_check=CHECK | {"allowWeak": True})
    bundle.append_runs(path, [(RESULT, predicate()), (RESULT, later)], SIGNER)
    summary = bundle.summarize(bundle.verify_bundle(path, SIGNER.public))
    assert summary["sealed_sets"] == [{
        "commitment": SEALED["commitment"], "committed": "2026-01-29T08:00:00Z",
        "graded": ["2026-01-31T12:00:00Z", "2026-02-02T10:00:00Z"], "records": [1, 2]}]
    assert summary["weak_seeds_allowed"] == [2]


def test_a_node_jcs_implementation_recomputes_a_record_with_64_bit_seeds(tmp_path):
    # JavaScript's JSON numbers lose digits past 2**53: as decimal strings the seeds survive any
    # reader, and npm's canonicalize gives back the very bytes that were signed.
    import json
    import os
    import shutil
    import subprocess
    from pathlib import Path

    node = shutil.which("node")
    modules = Path(__file__).resolve().parents[2] / ".ci" / "cache" / "node_modules"
    if node is None or not (modules / "canonicalize").is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail("node and npm's canonicalize are required in CI", pytrace=False)
        pytest.skip("node or npm's canonicalize missing (.ci/run installs them)")
    path = tmp_path / "runs.intoto.jsonl"
    bundle.append_run(path, RESULT, predicate(), SIGNER)
    proc = subprocess.run([node, str(Path(__file__).parent / "jcs" / "recompute.js"), str(path)],
                          capture_output=True, text=True,
                          env={**os.environ, "NODE_PATH": str(modules)})
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(x) for x in proc.stdout.splitlines()]
    assert all(r["line_is_jcs"] and r["payload_is_jcs"] for r in rows)
    assert rows[0]["result_sha256"] == rows[0]["subject"] == rows[0]["predicate_result"]

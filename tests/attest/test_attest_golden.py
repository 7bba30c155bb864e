"""Golden vectors pin every format: canonical JSON, PAE, key id, commitment, line digest, bundle.

`golden/runs.intoto.jsonl` was written by the code below with a fixed test key (Ed25519 signs
deterministically), so re-writing it must give the same bytes. If a format change is meant,
bump the version in its type URI or domain tag, and regenerate with
`python3 tests/attest/test_attest_golden.py`.

`golden/v1/` holds a bundle of v1 records (the canonical form before RFC 8785) and `golden/v2/` one
of v2 records (RFC 8785, integer seeds, before 64-bit seeds and sealed sets), each with the vectors
of its time, as the code of that time wrote them: they are never rewritten, and must keep verifying.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from kit.attest_forge import fixed_signer

from plimsoll_ci.attest import bundle, canonical, dsse, keys, record
from plimsoll_ci.grading import fresh

HERE = Path(__file__).parent / "golden"
SIGNER = fixed_signer(7)  # a TEST key: its private half is bytes([7]) * 32, public by design


BIG = [2**53 + 1, 0xA3F1_6C2E_94B0_7D15, 2**64 - 59]  # seeds no JSON integer of JCS can carry


def golden_runs() -> list[tuple[dict, dict]]:
    runs = []
    for i, (provider, tier) in enumerate([("gvisor", "kernel"), ("process", "process")]):
        fs = fresh.make([2718281828 + i, 1234567890], salt=bytes([i]) * 32)
        result = {"flights": [{"flight": 0, "outcome": "landed", "t": 31.5}], "landed": 1,
                  "note": "caf\u00e9", "total": 1}
        predicate = record.make_predicate(
            result_doc=result, controller_files={"controller.py": "ab" * 32}, course="hard",
            provider=provider, tier=tier, evidence={"runtime": "runsc"},
            cpu_budget={"per_tick_s": 0.05}, started="2026-01-31T12:00:00Z",
            finished="2026-01-31T12:00:05Z", practice_set_digest="cd" * 32,
            fresh_commitment=fresh.commit(fs), fresh_reveal=fresh.reveal(fs), tool_version="0.1.0",
        )
        runs.append((result, predicate))
    # A held-out set of 64-bit seeds committed the day before, and a seed-file grading with weak
    # seeds allowed: what v3 adds.
    held = fresh.make(BIG, salt=bytes(range(32)))
    sealed = {"bits": 64, "commitment": fresh.commit(held), "committedOn": "2026-01-30T09:00:00Z",
              "count": 3}
    for i, (seal, check) in enumerate([
        (True, {"allowWeak": False, "findings": [], "uncommitted": 0}),
        (False, {"allowWeak": True, "findings": [{"count": 3, "rule": "run", "set": "seed-file"}],
                 "uncommitted": 3}),
    ]):
        result = {"flights": [{"id": f"sealed:{n}", "seed": None} for n in (1, 2, 3)],
                  "landed": i, "total": 3}
        predicate = record.make_predicate(
            result_doc=result, controller_files={"controller.py": "ef" * 32}, course="easy",
            provider="gvisor", tier="kernel", evidence={"runtime": "runsc"},
            cpu_budget={"per_tick_s": 0.05}, started="2026-01-31T12:00:00Z",
            finished="2026-01-31T12:00:05Z", practice_set_digest="cd" * 32,
            sealed_set=sealed if seal else None,
            sealed_reveal=fresh.reveal(held) if seal else None, seed_check=check,
            tool_version="0.1.0",
        )
        runs.append((result, predicate))
    return runs


def vectors(tmp: Path) -> dict:
    path = tmp / "runs.intoto.jsonl"
    bundle.append_runs(path, golden_runs(), SIGNER)
    data = path.read_bytes()
    fs = fresh.make([101, 2718281828], salt=bytes(range(32)))
    return {
        "canonical_json": canonical.dumps({"b": [1, 2.5, 30.0, "\u00e9"], "a": None}).decode(),
        "pae": dsse.pae("http://example.com/HelloWorld", b"hello world").decode(),
        "keyid": SIGNER.keyid,
        "fresh_commitment": fresh.commit(fs),
        "line_digest_of_empty_object": bundle.line_digest(b"{}"),
        "practice_set_digest": record.practice_set_digest([33, 11, 22, 11]),
        "fresh_commitment_64bit": fresh.commit(fresh.make(BIG, salt=bytes(range(32)))),
        "reveal_64bit": canonical.dumps(fresh.reveal(fresh.make(BIG, salt=bytes(32)))).decode(),
        "bundle_sha256": hashlib.sha256(data).hexdigest(),
        "_bundle": data,
    }


def test_formats_match_the_golden_vectors(tmp_path):
    expected = json.loads((HERE / "vectors.json").read_text())
    got = vectors(tmp_path)
    assert got.pop("_bundle") == (HERE / "runs.intoto.jsonl").read_bytes()
    assert got == expected
    assert got["canonical_json"] == '{"a":null,"b":[1,2.5,30,"\u00e9"]}'
    assert got["pae"] == "DSSEv1 29 http://example.com/HelloWorld 11 hello world"


def test_a_bundle_of_v1_records_written_before_rfc8785_still_verifies():
    public = keys.load_public_key(HERE / "test-key.pub")
    old = HERE / "v1" / "runs.intoto.jsonl"
    assert hashlib.sha256(old.read_bytes()).hexdigest() == json.loads(
        (HERE / "v1" / "vectors.json").read_text())["bundle_sha256"]
    report = bundle.verify_bundle(old, public, expect_count=2)
    assert report.ok, report.problems
    # the v1 writer is kept for exactly this: its vector is unchanged
    assert canonical.dumps_v1({"b": [1, 2.5, "\u00e9"], "a": None}).decode() == json.loads(
        (HERE / "v1" / "vectors.json").read_text())["canonical_json"]


def test_a_bundle_of_v2_records_with_integer_seeds_still_verifies():
    public = keys.load_public_key(HERE / "test-key.pub")
    old = HERE / "v2" / "runs.intoto.jsonl"
    assert hashlib.sha256(old.read_bytes()).hexdigest() == json.loads(
        (HERE / "v2" / "vectors.json").read_text())["bundle_sha256"]
    report = bundle.verify_bundle(old, public, expect_count=2)
    assert report.ok, report.problems
    payload = canonical.b64decode(json.loads(old.read_bytes().splitlines()[0])["envelope"]["payload"])
    statement = json.loads(payload)
    assert statement["predicateType"] == record.PREDICATE_TYPE_V2
    assert all(isinstance(s, int) for s in statement["predicate"]["freshSetReveal"]["seeds"])
    # the vectors of that time still hold, but for the bundle, which is v3 now
    then = json.loads((HERE / "v2" / "vectors.json").read_text())
    now = json.loads((HERE / "vectors.json").read_text())
    assert {k: v for k, v in then.items() if k != "bundle_sha256"} == {
        k: now[k] for k in then if k != "bundle_sha256"}


def test_a_v2_record_with_its_integer_seeds_turned_into_strings_is_refused():
    # One form per version: a v2 reveal holds integers, a v3 reveal decimal strings.
    lines = (HERE / "v2" / "runs.intoto.jsonl").read_bytes().splitlines()
    statement = json.loads(canonical.b64decode(json.loads(lines[0])["envelope"]["payload"]))
    pred = statement["predicate"]
    assert record.check_seed_sets(pred, record.PREDICATE_TYPE_V2) == []
    pred["freshSetReveal"]["seeds"] = [str(s) for s in pred["freshSetReveal"]["seeds"]]
    assert record.check_seed_sets(pred, record.PREDICATE_TYPE_V2) == [
        "fresh set reveal does not match its commitment"]


def test_the_golden_v3_bundle_carries_64_bit_seeds_as_decimal_strings():
    lines = (HERE / "runs.intoto.jsonl").read_bytes().splitlines()
    statement = json.loads(canonical.b64decode(json.loads(lines[2])["envelope"]["payload"]))
    assert statement["predicateType"] == record.PREDICATE_TYPE
    pred = statement["predicate"]
    assert pred["sealedSetReveal"]["seeds"] == [str(s) for s in BIG]
    assert pred["inputs"]["sealedSet"]["committedOn"] < pred["run"]["startedOn"]
    report = bundle.verify_bundle(HERE / "runs.intoto.jsonl", SIGNER.public)
    summary = bundle.summarize(report)
    assert [(e["committed"], e["graded"]) for e in summary["sealed_sets"]] == [
        ("2026-01-30T09:00:00Z", ["2026-01-31T12:00:00Z"])]
    assert summary["weak_seeds_allowed"] == [4] and summary["uncommitted"]["flights"] == 3


def test_new_records_appended_to_a_v1_bundle_are_v3_and_the_whole_verifies(tmp_path):
    path = tmp_path / "mixed.intoto.jsonl"
    path.write_bytes((HERE / "v1" / "runs.intoto.jsonl").read_bytes())
    assert bundle.append_runs(path, golden_runs()[:1], SIGNER) == 3
    report = bundle.verify_bundle(path, SIGNER.public, expect_count=3)
    assert report.ok, report.problems
    lines = path.read_bytes().splitlines()
    kinds = [json.loads(canonical.b64decode(json.loads(x)["envelope"]["payload"]))["predicateType"]
             for x in lines]
    assert kinds[:2] == [record.PREDICATE_TYPE_V1] * 2
    assert kinds[2:] == [record.PREDICATE_TYPE, record.CHECKPOINT_TYPE]


def test_the_golden_bundle_verifies_with_the_golden_public_key():
    public = keys.load_public_key(HERE / "test-key.pub")
    assert public == SIGNER.public
    report = bundle.verify_bundle(HERE / "runs.intoto.jsonl", public, expect_count=4)
    assert report.ok, report.problems
    assert [r.tier for r in report.records] == ["kernel", "process", "kernel", "kernel"]


if __name__ == "__main__":  # regenerate (only for a deliberate, versioned format change)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        got = vectors(Path(tmp))
    (HERE / "runs.intoto.jsonl").write_bytes(got.pop("_bundle"))
    (HERE / "vectors.json").write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    (HERE / "test-key.pub").write_bytes(SIGNER.public.pem())
    print(f"wrote {HERE}", file=sys.stderr)

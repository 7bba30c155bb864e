"""Eval-attempt records: signed, chained beside grading records, checked by `verify`, tampering
refused at the right line."""

from __future__ import annotations

import copy
import datetime as dt

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from kit import attest_demo

from plimsoll_ci.attest import bundle, canonical, dsse, eval_record, keys, record
from plimsoll_ci.errors import BadInput

H = "ab" * 32
START = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.UTC)


def signer(seed: int) -> keys.Signer:
    private = Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32)
    return keys.Signer(private, keys.PublicKey(private.public_key(),
                                               keys.keyid_of(private.public_key())))


SIGNER = signer(11)


def attempt(run: int, passed: bool = True) -> tuple[dict, dict]:
    doc = {"model": "m", "task": "off-by-one", "run": run, "test_passed": passed,
           "in_scope": True, "touched": ["shelf/dates.py"], "test_files_changed": [],
           "refused_commands": [["rm", "-rf", "/"]], "timed_out_commands": 0, "tokens": 300,
           "seconds": 2.5, "diff": f"diffs/m/off-by-one/{run}.diff"}
    predicate = eval_record.make_predicate(
        result_doc=doc, attempt={"model": "m", "run": run, "task": "off-by-one"},
        inputs={"allowlist": ["pytest", "python"], "repository": {"files": 13, "sha256": H},
                "task": {"probe": False, "sha256": H, "test": ["pytest", "-q"],
                         "touch": ["shelf/dates.py"]}, "turns": 1},
        model={"baseUrl": "http://127.0.0.1:8000/v1", "stopped": None, "tokens": 300,
               "transcript": {"sha256": H}},
        outcome={"diff": {"sha256": H}, "finalTree": {"sha256": H},
                 "guardedTest": {"exitCode": 0 if passed else 1, "output": {"sha256": H}}},
        sandbox={"evidence": {"startup": {}, "command": {}}, "provider": "gvisor",
                 "tier": "kernel"},
        started=START, finished=START + dt.timedelta(seconds=3))
    return doc, predicate


@pytest.fixture
def small(tmp_path) -> bytes:
    path = tmp_path / "attempts.intoto.jsonl"
    bundle.append_runs(path, [attempt(1), attempt(2, passed=False)], SIGNER,
                       eval_record.PREDICATE_TYPE)
    return path.read_bytes()


def verify(data: bytes) -> bundle.Report:
    return bundle.verify_bytes(data, SIGNER.public)


def test_eval_attempt_records_verify_and_are_summarized_as_such(small):
    report = verify(small)
    assert report.ok, report.problems
    assert [r.kind for r in report.records] == ["eval-attempt", "eval-attempt"]
    summary = bundle.summarize(report)
    assert summary["kinds"] == {"eval-attempt": 2} and summary["courses"] == {}
    assert summary["tiers"] == {"kernel": 2}


def test_grading_and_eval_records_share_one_bundle(tmp_path):
    path = tmp_path / "mixed.intoto.jsonl"
    bundle.append_runs(path, [attest_demo.demo_run(0)], SIGNER)
    bundle.append_runs(path, [attempt(1)], SIGNER, eval_record.PREDICATE_TYPE)
    report = bundle.verify_bundle(path, SIGNER.public, expect_count=2)
    assert report.ok, report.problems
    assert [r.kind for r in report.records] == ["grading", "eval-attempt"]


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _flip_score(data: bytes) -> bytes:
    return data.replace(b'"test_passed":false', b'"test_passed":true', 1)


@pytest.mark.parametrize("tamper, line, reason", [
    (_flip_score, 2, "stored result does not match the signed result digest"),
    (lambda d: b"".join(_lines(d)[1:]), 1, "previous digest does not match"),
    (lambda d: b"".join([_lines(d)[1], _lines(d)[0], _lines(d)[2]]), 1, "index 2"),
    (lambda d: b"".join([_lines(d)[0], _lines(d)[0], *_lines(d)[1:]]), 2, "index 1"),
    (lambda d: b"".join(_lines(d)[:2]), 2, "without a signed checkpoint"),
])
def test_a_tampered_eval_bundle_is_refused_at_the_line(small, tamper, line, reason):
    report = verify(tamper(small))
    assert not report.ok
    assert any(p.line == line and reason in p.reason for p in report.problems), report.problems


def _forged(predicate: dict, result: dict, ptype: str = eval_record.PREDICATE_TYPE,
            name: str = eval_record.RESULT_NAME) -> bytes:
    statement = {"_type": record.STATEMENT_TYPE, "predicate": predicate, "predicateType": ptype,
                 "subject": [{"digest": {"sha256": record.result_digest(result)}, "name": name}]}
    doc = {"envelope": dsse.sign(canonical.dumps(statement), SIGNER), "index": 1,
           "kind": "record", "previous": bundle.GENESIS, "result": result}
    line = canonical.dumps(doc)
    checkpoint = bundle._checkpoint_line(1, bundle.line_digest(line), SIGNER)
    return line + b"\n" + checkpoint + b"\n"


def _without(path: tuple[str, ...]):
    def edit(predicate: dict) -> dict:
        p = copy.deepcopy(predicate)
        target = p
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
        return p
    return edit


@pytest.mark.parametrize("edit, reason", [
    (_without(("outcome",)), "predicate must have exactly the fields"),
    (_without(("model", "transcript")), "model must have exactly the fields"),
    (lambda p: {**p, "sandbox": {**p["sandbox"], "tier": "hardware"}}, "sandbox needs"),
    (lambda p: {**p, "model": {**p["model"], "stopped": "bored"}}, "stopped (null, budget"),
    (lambda p: {**p, "attempt": {**p["attempt"], "run": 0}}, "a run number from 1"),
    (lambda p: {**p, "run": {"finishedOn": "2026-03-01T11:00:00Z",
                             "startedOn": "2026-03-01T12:00:00Z"}}, "finished before it started"),
])
def test_a_dishonest_writer_s_malformed_eval_predicate_is_refused(edit, reason):
    doc, predicate = attempt(1)
    report = verify(_forged(edit(predicate), doc))
    assert not report.ok
    assert any(p.line == 1 and reason in p.reason for p in report.problems), report.problems


def test_an_eval_statement_under_another_subject_name_or_type_is_refused():
    doc, predicate = attempt(1)
    wrong_name = verify(_forged(predicate, doc, name="grading-result.json"))
    assert any("subject name is not eval-attempt.json" in p.reason for p in wrong_name.problems)
    as_grading = verify(_forged(predicate, doc, ptype=record.PREDICATE_TYPE,
                                name=record.RESULT_NAME))
    assert any("predicate must have exactly the fields" in p.reason
               for p in as_grading.problems)


def test_a_bad_predicate_is_never_signed(tmp_path):
    doc, predicate = attempt(1)
    with pytest.raises(BadInput, match="eval attempt record 1"):
        bundle.append_runs(tmp_path / "b.jsonl", [(doc, {**predicate, "extra": 1})], SIGNER,
                           eval_record.PREDICATE_TYPE)
    with pytest.raises(BadInput, match="result digest"):
        bundle.append_runs(tmp_path / "b.jsonl", [({**doc, "tokens": 1}, predicate)], SIGNER,
                           eval_record.PREDICATE_TYPE)
    assert not (tmp_path / "b.jsonl").exists()

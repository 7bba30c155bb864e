"""Rebuild-session records: their predicate's shape, and their place in a bundle of gradings."""

from __future__ import annotations

import copy

import pytest

from plimsoll_ci.attest import bundle, keys, record
from plimsoll_ci.errors import BadInput

DOC = {"format": "plimsoll-rebuild-session/1", "session": {"group": "honest", "index": 1}}
FIELDS = {
    "brief": {"sha256": "a" * 64}, "controller": {"sha256": "b" * 64},
    "model": {"name": "gpt-4o-mini", "baseUrl": "https://api.openai.com/v1"},
    "recipe": None, "recording": {"requests": 4, "sha256": "c" * 64},
    "session": {"group": "honest", "index": 1}, "tokens": 1200,
    "tools": [{"arguments": {"sha256": "d" * 64}, "name": "write_file"}],
    "transcript": {"sha256": "e" * 64},
}
T0, T1 = "2026-12-01T00:00:00Z", "2026-12-01T00:05:00Z"


def test_a_session_predicate_names_what_the_session_was_given_and_made():
    predicate = record.make_session_predicate(result_doc=DOC, started=T0, finished=T1, **FIELDS)
    assert predicate["result"] == {"sha256": record.result_digest(DOC)}
    assert record.check_session_predicate(predicate) == []
    statement = record.make_session_statement(DOC, predicate)
    assert statement["predicateType"] == "https://plimsoll-ci.dev/rebuild-session/v1"
    assert statement["subject"][0]["name"] == "rebuild-session.json"


@pytest.mark.parametrize("change, words", [
    (lambda f: f.pop("transcript"), "exactly the fields"),
    (lambda f: f.update(tokens=-1), "tokens must be a count"),
    (lambda f: f.update(brief={"sha256": "A" * 64}), "brief is not a SHA-256"),
    (lambda f: f.update(session={"group": "", "index": 1}), "session needs its group"),
    (lambda f: f.update(session={"group": "g", "index": 0}), "an index from 1"),
    (lambda f: f.update(model={"name": "", "baseUrl": "x"}), "model must name"),
    (lambda f: f.update(recording={"requests": "4", "sha256": "c" * 64}), "recording needs"),
    (lambda f: f.update(tools=[{"name": "fly"}]), "tool call must have exactly"),
])
def test_a_malformed_session_predicate_is_never_signed(change, words):
    fields = copy.deepcopy(FIELDS)
    change(fields)
    with pytest.raises(BadInput) as e:
        record.make_session_predicate(result_doc=DOC, started=T0, finished=T1, **fields)
    assert words in str(e.value)


def test_session_records_verify_in_a_bundle_and_a_changed_document_is_refused(tmp_path):
    signer = keys.write_keypair(tmp_path / "k")
    predicate = record.make_session_predicate(result_doc=DOC, started=T0, finished=T1, **FIELDS)
    path = tmp_path / "bundle.intoto.jsonl"
    bundle.append_runs(path, [(DOC, predicate)], signer, record.SESSION_PREDICATE_TYPE)
    report = bundle.verify_bundle(path, signer.public)
    assert report.ok and [r.kind for r in report.records] == ["rebuild-session"]
    assert bundle.summarize(report)["records"] == 1
    lines = path.read_bytes().split(b"\n")
    lines[0] = lines[0].replace(b'"index":1}', b'"index":2}', 1)
    path.write_bytes(b"\n".join(lines))
    problems = [str(p) for p in bundle.verify_bundle(path, signer.public).problems]
    assert "bundle line 1: stored result does not match the signed result digest" in problems
    with pytest.raises(BadInput, match="predicate's result digest"):
        record.make_session_statement({**DOC, "extra": 1}, predicate)

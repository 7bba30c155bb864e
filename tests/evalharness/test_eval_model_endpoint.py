"""An eval run against an endpoint that misbehaves: it echoes the key (plain, JSON-escaped,
base64, in a 401), or reports an absurd `usage`. Nothing written holds the key, and nothing
crashes: transcripts, diffs, results, the report, the recording and the signed records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kit.chat_server import Answer, Received, raw, reflect
from kit.evalharness import KEY, evaluate, fix, reply, tasks
from kit.model import carries_key

from plimsoll_ci.attest import bundle, keys

pytestmark = pytest.mark.gvisor
JSON_ECHO = "JSON-ESCAPED-ECHO-HERE"


def _signed(tmp_path: Path) -> dict:
    signer = keys.load_signer(ephemeral_pub_out=tmp_path / "harness.pub")
    return {"signer": signer, "bundle": str(tmp_path / "eval.intoto.jsonl")}


def _nothing_carries_the_key(*folders: Path) -> None:
    files = [p for folder in folders for p in ([folder] if folder.is_file() else
                                                folder.rglob("*")) if p.is_file()]
    assert files
    for p in files:
        assert carries_key(p.read_bytes(), KEY) == [], p


def test_a_key_an_echoing_endpoint_reflects_is_in_no_transcript_diff_report_or_record(
        gvisor, chat_server, repo, tmp_path):
    path, content = fix("off-by-one")

    def echoing(got: Received) -> Answer:
        echo = f"# {reflect(got, 'plain')}\n# {reflect(got, 'base64')}\n# {JSON_ECHO}\n"
        body = reply([(path, content + echo)], usage=(200, 100)).body
        return raw(body.replace(JSON_ECHO.encode(), reflect(got, "json").encode()))

    chat_server.push(echoing)
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "off-by-one"), tmp_path / "out",
                      runs=1, **_signed(tmp_path))
    [a] = result.attempts
    assert a.test_passed and result.records == 1
    assert (tmp_path / "out" / "diffs" / "scripted" / "off-by-one" / "1.diff").read_text().count(
        "[redacted]") == 3
    assert "[redacted]" in (tmp_path / "out" / "transcripts" / "scripted" / "off-by-one" /
                            "1.json").read_text()
    _nothing_carries_the_key(tmp_path / "out", tmp_path / "eval.intoto.jsonl")


@pytest.mark.parametrize("form", ["plain", "json", "base64"])
def test_a_401_whose_body_names_the_key_leaves_no_trace_of_it(gvisor, chat_server, repo,
                                                              tmp_path, form):
    def refused(got: Received) -> Answer:
        message = f"Incorrect API key provided: {reflect(got, form)}"
        return raw(b'{"error": {"message": "' + message.encode() + b'"}}', 401)

    chat_server.push(refused)
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "off-by-one"), tmp_path / "out",
                      runs=1)
    [a] = result.attempts
    assert a.stopped == "error" and "HTTP 401" in a.nothing
    assert f"{chat_server.url}/chat/completions" in a.nothing  # --base-url, not the recorder
    assert a.transcript["base_url"] == chat_server.url
    _nothing_carries_the_key(tmp_path / "out")


def test_an_absurd_usage_is_recorded_as_given_counted_and_signed(gvisor, chat_server, repo,
                                                                tmp_path):
    chat_server.push(reply([fix("off-by-one")], usage=(2**60, 0)))
    result = evaluate(chat_server.url, repo, tasks(tmp_path, "off-by-one"), tmp_path / "out",
                      runs=2, **_signed(tmp_path))
    first, second = result.attempts
    assert first.tokens == 2**53 - 1 and first.test_passed
    assert second.stopped == "budget" and len(chat_server.chat_requests) == 1
    transcript = json.loads((tmp_path / "out" / "transcripts" / "scripted" / "off-by-one" /
                             "1.json").read_text())
    assert transcript["exchanges"][0]["reported_tokens"] == str(2**60)
    report = bundle.verify_bundle(tmp_path / "eval.intoto.jsonl",
                                  keys.load_public_key(tmp_path / "harness.pub"))
    assert report.ok and result.records == 2

"""The tripwire over recorded requests: every API shape, every spelling, never the value."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from pathlib import Path

import pytest

from plimsoll_ci.cli import main
from plimsoll_ci.tripwire.reader import RequestReader
from plimsoll_ci.tripwire.requests import scan_requests
from plimsoll_ci.withheld import build_set, dumps, parse

SEALED_VALUES = [("step-times.csv:3", "31.5"), ("labels.txt:1", "quorvantile"),
                 ("seeds.txt:2", "3107713414")]
CLIP = b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 4


def _sealed(tmp_path: Path, key: bytes | None = None) -> Path:
    doc, _ = build_set(values=SEALED_VALUES, files=[("clips/ref.mp4", CLIP)], key=key,
                       tag="plimsoll-sealed/1")
    path = tmp_path / "sealed.json"
    path.write_text(dumps(doc))
    return path


def _wset(key: bytes | None = None):
    doc, _ = build_set(values=SEALED_VALUES, files=[("clips/ref.mp4", CLIP)], key=key,
                       tag="plimsoll-sealed/1")
    return parse(doc, key=key)


def _record(folder: Path, seq: int, body: bytes, content_type: str = "application/json",
            extra_headers: list | None = None, target: str = "/v1/chat/completions") -> None:
    """Write one request as `plimsoll-ci record` does."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{seq:06d}.request.body").write_bytes(body)
    meta = {"format": "plimsoll-record/1", "seq": seq, "time": "2026-01-01T00:00:00Z",
            "client": "127.0.0.1", "method": "POST", "target": target,
            "upstream": "http://127.0.0.1:1",
            "headers": [["Content-Type", content_type], *(extra_headers or [])],
            "body": f"{seq:06d}.request.body", "body_bytes": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(), "redacted": []}
    (folder / f"{seq:06d}.request.json").write_text(json.dumps(meta))


def _chat(text: str) -> bytes:
    return json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": text}]}).encode()


def _hits(folder: Path) -> list:
    return scan_requests(str(folder), _wset()).findings


@pytest.mark.parametrize("text", ["the reference took 31.50 s", "at t=31.5s it turned",
                                  "split 0:31.5 at gate 3", "31.5", "3.15e1 seconds"])
def test_number_spellings_of_a_sealed_time_are_found(tmp_path, text):
    _record(tmp_path / "r", 1, _chat(text))
    hits = _hits(tmp_path / "r")
    assert [(h.path, h.chain, h.entry) for h in hits] == [
        ("000001.request.body", "/messages/0/content", "step-times.csv:3")]


@pytest.mark.parametrize("text", ["131.5", "31.55", "0:31.52", "1:31.5"])
def test_other_numbers_are_not_the_sealed_time(tmp_path, text):
    _record(tmp_path / "r", 1, _chat(f"lap {text} done"))
    assert _hits(tmp_path / "r") == []


def test_text_is_found_in_any_capitalization_but_only_as_a_whole_word(tmp_path):
    _record(tmp_path / "r", 1, _chat("The label is QuorVantile."))
    _record(tmp_path / "r", 2, _chat("quorvantiles and xquorvantile are other words"))
    hits = _hits(tmp_path / "r")
    assert [h.path for h in hits] == ["000001.request.body"]


def _png_with_text(text: bytes) -> bytes:
    return b"\x89PNG\r\n\x1a\n\x00\x00\x00\x10tEXtComment\x00" + text + b"\x00" * 40


@pytest.mark.parametrize("api", ["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_a_value_inside_a_base64_image_part_is_found(tmp_path, api):
    b64 = base64.b64encode(_png_with_text(b"seed 3107713414")).decode()
    body = {
        "openai-chat": {"messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is in the picture?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}"}}]}]},
        "openai-responses": {"input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": f"data:image/png;base64,{b64}"}]}]},
        "anthropic": {"messages": [{"role": "user", "content": [{"type": "image", "source": {
            "type": "base64", "media_type": "image/png", "data": b64}}]}]},
        "gemini": {"contents": [{"parts": [{"inlineData": {"mimeType": "image/png",
                                                           "data": b64}}]}]},
    }[api]
    _record(tmp_path / "r", 1, json.dumps(body).encode())
    hits = _hits(tmp_path / "r")
    assert [h.entry for h in hits] == ["seeds.txt:2"]
    assert "(base64 image/png)" in hits[0].chain


def test_a_sealed_file_sent_inline_is_found_by_its_sha256(tmp_path):
    b64 = base64.b64encode(CLIP).decode()
    body = {"input": [{"role": "user", "content": [
        {"type": "input_file", "filename": "practice.mp4",
         "file_data": f"data:video/mp4;base64,{b64}"}]}]}
    _record(tmp_path / "r", 1, json.dumps(body).encode(), target="/v1/responses")
    hits = _hits(tmp_path / "r")
    assert [(h.entry, h.kind) for h in hits] == [("clips/ref.mp4", "file")]
    assert hits[0].chain == "/input/0/content/0/file_data (base64 video/mp4)"


def test_multipart_uploads_are_read_by_part_name_file_name_and_contents(tmp_path):
    boundary = "b0undary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n"
            f"label quorvantile\r\n--{boundary}\r\nContent-Disposition: form-data; "
            f"name=\"file\"; filename=\"seed-3107713414.mp4\"\r\nContent-Type: video/mp4\r\n\r\n"
            ).encode() + CLIP + f"\r\n--{boundary}--\r\n".encode()
    _record(tmp_path / "r", 1, body, f"multipart/form-data; boundary={boundary}",
            target="/v1/files")
    got = {(h.chain, h.entry, h.kind) for h in _hits(tmp_path / "r")}
    assert got == {("part purpose", "labels.txt:1", "value"),
                   ("part file filename", "seeds.txt:2", "value"),
                   ("part file", "clips/ref.mp4", "file")}


def test_har_files_are_read_entry_by_entry(tmp_path):
    har = {"log": {"version": "1.2", "entries": [
        {"request": {"method": "POST", "url": "https://api.example/v1/messages",
                     "headers": [{"name": "content-type", "value": "application/json"}],
                     "postData": {"mimeType": "application/json",
                                  "text": json.dumps({"messages": [
                                      {"role": "user", "content": "t=31.5s"}]})}},
         "response": {"content": {"text": "quorvantile"}}},
        {"request": {"method": "GET", "url": "https://api.example/v1/models?seed=3107713414",
                     "headers": []}}]}}
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "session.har").write_text(json.dumps(har))
    got = [(h.chain, h.entry) for h in _hits(tmp_path / "r")]
    assert got == [("/log/entries/0/request/postData/text > /messages/0/content",
                    "step-times.csv:3"),
                   ("/log/entries/1/request/url", "seeds.txt:2")]


def test_headers_target_and_gzip_bodies_of_recorded_requests_are_read(tmp_path):
    _record(tmp_path / "r", 1, gzip.compress(_chat("label quorvantile")),
            extra_headers=[["Content-Encoding", "gzip"], ["X-Task", "seed 3107713414"]],
            target="/v1/chat/completions?lap=0:31.5")
    got = {(h.chain, h.entry) for h in _hits(tmp_path / "r")}
    assert got == {("/messages/0/content", "labels.txt:1"),
                   ("header X-Task", "seeds.txt:2"), ("target", "step-times.csv:3")}


def test_raw_text_jsonl_and_names_of_files_and_folders_are_read(tmp_path):
    r = tmp_path / "r"
    (r / "run-quorvantile").mkdir(parents=True)
    (r / "run-quorvantile" / "prompt.txt").write_text("use seed 3107713414 please")
    (r / "calls.jsonl").write_text(json.dumps({"prompt": "x"}) + "\n" +
                                   json.dumps({"prompt": "lap 0:31.5"}) + "\n")
    got = {(h.path, h.chain, h.entry, h.where) for h in _hits(r)}
    assert got == {("run-[withheld]/", "folder name", "labels.txt:1", "name"),
                   ("run-[withheld]/prompt.txt", "", "seeds.txt:2", "content"),
                   ("calls.jsonl", "line 2 > /prompt", "step-times.csv:3", "content")}


def test_recorded_responses_are_not_read_as_requests(tmp_path):
    _record(tmp_path / "r", 1, _chat("hello"))
    (tmp_path / "r" / "000001.response.body").write_text('{"content": "quorvantile"}')
    (tmp_path / "r" / "000001.response.json").write_text('{"format": "plimsoll-record/1"}')
    assert _hits(tmp_path / "r") == []


def test_json_numbers_are_read_as_written(tmp_path):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "body.json").write_text('{"seed": 3107713414, "t": 31.50, "n": 131.5}')
    got = [(h.chain, h.entry) for h in _hits(tmp_path / "r")]
    assert got == [("/seed", "seeds.txt:2"), ("/t", "step-times.csv:3")]


def test_reader_places_every_piece(tmp_path):
    _record(tmp_path / "r", 1, _chat("hi"))
    places = {(p.source, p.place) for p in RequestReader().read(str(tmp_path / "r"))}
    assert ("000001.request.body", "/messages/0/content") in places
    assert ("000001.request.json", "header Content-Type") in places
    assert ("000001.request.json", "target") in places


def _run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "markdown"])
def test_a_hit_is_reported_with_exit_1_and_never_prints_the_value(tmp_path, capsys, fmt):
    sealed = _sealed(tmp_path)
    r = tmp_path / "r"
    _record(r, 1, _chat("label quorvantile, seed 3107713414, split 0:31.5"))
    (r / "upload-quorvantile.txt").write_text("nothing")
    code, out = _run(["tripwire", "--sealed", str(sealed), "--requests", str(r),
                      "--format", fmt], capsys)
    assert code == 1
    assert "labels.txt:1" in out and "seeds.txt:2" in out and "step-times.csv:3" in out
    for value in ("quorvantile", "3107713414", "31.5", "0:31.5"):
        assert value not in out.lower()
    if fmt in ("json", "sarif"):
        json.loads(out[: out.rindex("}") + 1])


def test_a_clean_recording_exits_0(tmp_path, capsys):
    sealed = _sealed(tmp_path)
    _record(tmp_path / "r", 1, _chat("fly through the gates"))
    code, out = _run(["tripwire", "--sealed", str(sealed), "--requests", str(tmp_path / "r")],
                     capsys)
    assert code == 0, out
    assert "tripwire: 0 hits" in out


def test_a_keyed_sealed_set_needs_its_key_and_finds_with_it(tmp_path, capsys, monkeypatch):
    key = b"k" * 32
    sealed = _sealed(tmp_path, key=key)
    _record(tmp_path / "r", 1, _chat("seed 3107713414"))
    argv = ["tripwire", "--sealed", str(sealed), "--requests", str(tmp_path / "r")]
    code, out = _run(argv, capsys)
    assert code == 2 and "key" in out
    monkeypatch.setenv("SEALED_KEY", key.decode())
    code, out = _run(argv + ["--key-env", "SEALED_KEY"], capsys)
    assert code == 1, out


def test_sealed_build_writes_a_sealed_set_the_tripwire_reads(tmp_path, capsys):
    values = tmp_path / "labels.txt"
    values.write_text("quorvantile\n")
    out_path = tmp_path / "sealed.json"
    code, out = _run(["sealed", "build", "--values", str(values), "-o", str(out_path)], capsys)
    assert code == 0, out
    doc = json.loads(out_path.read_text())
    assert doc["format"] == "plimsoll-sealed/1"
    assert "quorvantile" not in out_path.read_text()
    _record(tmp_path / "r", 1, _chat("Quorvantile"))
    code, out = _run(["tripwire", "--sealed", str(out_path), "--requests",
                      str(tmp_path / "r")], capsys)
    assert code == 1 and "sealed value labels.txt:1" in out  # the base name: no machine path
    assert str(tmp_path) not in doc["entries"][0]["id"]


@pytest.mark.parametrize("case", ["no-sealed", "sealed-not-json", "sealed-not-a-set",
                                  "no-requests", "sealed-build-nothing", "bad-format"])
def test_bad_input_exits_2(tmp_path, capsys, case):
    sealed = _sealed(tmp_path)
    (tmp_path / "r").mkdir()
    (tmp_path / "junk.json").write_text("{not json")
    (tmp_path / "other.json").write_text('{"format": "something-else/1"}')
    argv = {
        "no-sealed": ["tripwire", "--sealed", str(tmp_path / "missing.json"),
                      "--requests", str(tmp_path / "r")],
        "sealed-not-json": ["tripwire", "--sealed", str(tmp_path / "junk.json"),
                            "--requests", str(tmp_path / "r")],
        "sealed-not-a-set": ["tripwire", "--sealed", str(tmp_path / "other.json"),
                             "--requests", str(tmp_path / "r")],
        "no-requests": ["tripwire", "--sealed", str(sealed), "--requests",
                        str(tmp_path / "nowhere")],
        "sealed-build-nothing": ["sealed", "build"],
        "bad-format": ["tripwire", "--sealed", str(sealed), "--requests", str(tmp_path / "r"),
                       "--format", "yaml"],
    }[case]
    if case == "bad-format":
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        return
    code, out = _run(argv, capsys)
    assert code == 2
    assert "error:" in out


def test_a_large_folder_split_over_worker_processes_finds_what_one_process_finds(tmp_path):
    import subprocess
    import sys

    r = tmp_path / "r"
    for i in range(1, 241):  # 480 files: over the worker threshold
        text = "seed 3107713414" if i % 60 == 0 else ("lap 0:31.5" if i % 75 == 0 else "hi")
        _record(r, i, _chat(f"turn {i}: {text}"))
    sealed = _sealed(tmp_path)
    one = sorted((f.path, f.chain, f.entry) for f in scan_requests(str(r), _wset(), jobs=1)
                 .findings)
    code = (
        "import json, sys, threading\n"
        "from plimsoll_ci.tripwire.requests import scan_requests\n"
        "from plimsoll_ci.withheld import load\n"
        f"res = scan_requests({str(r)!r}, load({str(sealed)!r}), jobs=2)\n"
        "print(json.dumps({'threads': threading.active_count(),\n"
        "                  'files': res.files,\n"
        "                  'hits': sorted([f.path, f.chain, f.entry] for f in res.findings)}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    got = json.loads(out.stdout)
    assert got["files"] == 480
    assert [tuple(h) for h in got["hits"]] == one
    assert len(one) == 7  # 4 seeds, 3 laps


def test_text_under_a_data_key_is_still_read_as_text(tmp_path):
    body = {"data": "a long note for the model that is plainly text and not base64 at all: "
                    "the label is quorvantile " * 3,
            "short": {"data": "quorvantile"}}
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "body.json").write_text(json.dumps(body))
    got = {(h.chain, h.entry) for h in _hits(tmp_path / "r")}
    assert got == {("/data", "labels.txt:1"), ("/short/data", "labels.txt:1")}


def test_a_value_in_a_json_key_part_name_or_folder_name_is_never_printed(tmp_path, capsys):
    sealed = _sealed(tmp_path)
    r = tmp_path / "r"
    (r / "seed-3107713414").mkdir(parents=True)
    (r / "seed-3107713414" / "body.json").write_text(json.dumps(
        {"labels": {"quorvantile": "t=31.5s"}, "b64": {"cXVvcnZhbnRpbGU=": 1}}))
    boundary = "bb"
    _record(r, 1, (f"--{boundary}\r\nContent-Disposition: form-data; name=\"quorvantile\"\r\n\r\n"
                   f"x\r\n--{boundary}--\r\n").encode(), f"multipart/form-data; boundary={boundary}",
            extra_headers=[["X-Quorvantile", "1"]])
    for fmt in ("text", "json", "sarif", "markdown"):
        code, out = _run(["tripwire", "--sealed", str(sealed), "--requests", str(r),
                          "--format", fmt], capsys)
        assert code == 1
        assert "[withheld]" in out
        for value in ("quorvantile", "3107713414", "31.5", "cxvvcnzhbnrpbgu"):
            assert value not in out.lower(), (fmt, out)


def test_requests_may_name_one_file(tmp_path, capsys):
    sealed = _sealed(tmp_path)
    har = {"log": {"entries": [{"request": {"url": "https://api.example/v1?lap=0:31.5",
                                            "headers": []}}]}}
    (tmp_path / "one.har").write_text(json.dumps(har))
    code, out = _run(["tripwire", "--sealed", str(sealed), "--requests",
                      str(tmp_path / "one.har")], capsys)
    assert code == 1
    assert "one.har:" in out and "step-times.csv:3 at /log/entries/0/request/url" in out


def test_a_long_base64_string_decoded_whole_gets_no_note_that_it_was_not(tmp_path):
    import os

    clip = os.urandom(7_500_000)  # 10 MB of base64: over the engine's own region bound
    doc, _ = build_set(values=SEALED_VALUES, files=[("clips/big.mp4", clip)],
                       tag="plimsoll-sealed/1")
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "body.json").write_text(json.dumps(
        {"upload": base64.b64encode(clip).decode()}))
    result = scan_requests(str(tmp_path / "r"), parse(doc))
    assert [(f.chain, f.entry, f.kind) for f in result.findings] == [
        ("/upload (base64)", "clips/big.mp4", "file")]
    assert result.notes == []


def test_sealed_info_lists_a_keyed_set_without_its_key(tmp_path, capsys):
    sealed = _sealed(tmp_path, key=b"k" * 32)
    code, out = _run(["sealed", "info", str(sealed)], capsys)
    assert code == 0, out
    assert "hmac-sha256" in out and "seeds.txt:2  value number" in out
    assert "clips/ref.mp4  file" in out and "3107713414" not in out


def test_sealed_info_still_refuses_a_wrong_key(tmp_path, capsys, monkeypatch):
    sealed = _sealed(tmp_path, key=b"k" * 32)
    monkeypatch.setenv("WRONG_KEY", "w" * 32)
    code, out = _run(["sealed", "info", str(sealed), "--key-env", "WRONG_KEY"], capsys)
    assert code == 2 and "wrong key" in out


def test_the_tripwires_key_errors_speak_of_a_sealed_set(tmp_path, capsys):
    sealed = _sealed(tmp_path, key=b"k" * 32)
    (tmp_path / "r").mkdir()
    code, out = _run(["tripwire", "--sealed", str(sealed), "--requests", str(tmp_path / "r")],
                     capsys)
    assert code == 2
    assert f"sealed set {sealed} is keyed" in out
    assert "withheld set" not in out and "plimsoll.yaml" not in out

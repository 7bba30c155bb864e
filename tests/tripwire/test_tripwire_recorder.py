"""The recording proxy: requests written exactly as sent, responses recorded, streams pass."""

from __future__ import annotations

import hashlib
import json
import socket

import httpx
import pytest

from plimsoll_ci.cli import main


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_proxy_records_the_request_bytes_exactly_as_sent_and_forwards_them(upstream, proxy):
    url, out = proxy
    body = {"model": "m", "messages": [{"role": "user", "content": "fly the drone"}]}
    with httpx.Client(base_url=url) as client:
        request = client.build_request("POST", "/v1/chat/completions", json=body,
                                       headers={"X-Trace": "t-1"})
        sent = request.read()
        response = client.send(request)
    assert response.status_code == 200
    assert response.json()["got_bytes"] == len(sent)
    meta = json.loads((out / "000001.request.json").read_text())
    assert meta["format"] == "plimsoll-record/1"
    assert (meta["method"], meta["target"]) == ("POST", "/v1/chat/completions")
    assert (out / "000001.request.body").read_bytes() == sent
    assert meta["body_sha256"] == hashlib.sha256(sent).hexdigest()
    assert ["X-Trace", "t-1"] in [[k, v] for k, v in meta["headers"]]
    # the upstream got the same bytes the client sent
    assert upstream.received[0][3] == sent
    assert upstream.received[0][1] == "/v1/chat/completions"


def test_proxy_records_the_response_before_the_client_sees_it(upstream, proxy):
    url, out = proxy
    response = httpx.post(url + "/v1/chat/completions", json={"messages": []})
    assert response.status_code == 200
    meta = json.loads((out / "000001.response.json").read_text())
    assert meta["status"] == 200 and meta["streamed"] is False
    assert (out / "000001.response.body").read_bytes() == response.content


def test_proxy_passes_a_streaming_response_through_as_it_arrives(upstream, proxy):
    url, out = proxy
    lines = []
    with httpx.stream("POST", url + "/v1/chat/completions",
                      json={"stream": True, "messages": []}, timeout=20) as response:
        assert response.headers["content-type"] == "text/event-stream"
        for line in response.iter_lines():
            if not line:
                continue
            lines.append(line)
            # the upstream holds back the rest until this first event has reached the client
            upstream.release.set()
    assert lines == ['data: {"delta": "one"}', 'data: {"delta": "two"}', "data: [DONE]"]
    assert upstream.released == [True]  # the first event reached the client mid-stream
    meta = json.loads((out / "000001.response.json").read_text())
    assert meta["streamed"] is True and meta["error"] == ""
    assert b"[DONE]" in (out / "000001.response.body").read_bytes()


def test_proxy_keeps_multipart_uploads_byte_for_byte(upstream, proxy):
    url, out = proxy
    with httpx.Client(base_url=url) as client:
        request = client.build_request(
            "POST", "/v1/files", data={"purpose": "assistants"},
            files={"file": ("clip-0007.mp4", b"\x00\x01not really a video\r\n--", "video/mp4")})
        sent = request.read()
        client.send(request)
    assert (out / "000001.request.body").read_bytes() == sent


def test_proxy_redacts_credentials_in_the_record_but_forwards_them(upstream, proxy):
    url, out = proxy
    httpx.post(url + "/v1/messages?key=sk-query-secret", json={"messages": []},
               headers={"Authorization": "Bearer sk-header-secret", "x-api-key": "sk-2"})
    recorded = (out / "000001.request.json").read_text()
    assert "sk-header-secret" not in recorded and "sk-2" not in recorded
    assert "sk-query-secret" not in recorded
    assert upstream.received[0][2]["Authorization"] == "Bearer sk-header-secret"
    assert "key=sk-query-secret" in upstream.received[0][1]


def test_proxy_records_a_request_even_when_the_upstream_is_down(tmp_path):
    from plimsoll_ci.tripwire.recorder import start_in_thread

    server, url = start_in_thread(f"http://127.0.0.1:{_free_port()}", str(tmp_path / "rec"))
    try:
        response = httpx.post(url + "/v1/chat/completions", json={"messages": ["hi"]})
    finally:
        server.shutdown()
        server.server_close()
    assert response.status_code == 502
    assert (tmp_path / "rec" / "000001.request.body").read_bytes() == b'{"messages":["hi"]}'
    assert "unreachable" in json.loads((tmp_path / "rec" / "000001.response.json").read_text())[
        "error"]


def test_proxy_binds_the_loopback_address_by_default(tmp_path):
    from plimsoll_ci.tripwire.recorder import make_server

    server = make_server("http://127.0.0.1:9", str(tmp_path / "r"))
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()


def test_numbering_continues_after_an_earlier_recording(upstream, tmp_path):
    from plimsoll_ci.tripwire.recorder import start_in_thread

    for _ in range(2):
        server, url = start_in_thread(upstream.url, str(tmp_path / "rec"))
        httpx.post(url + "/v1/chat/completions", json={})
        server.shutdown()
        server.server_close()
    assert sorted(p.name for p in (tmp_path / "rec").glob("*.request.json")) == [
        "000001.request.json", "000002.request.json"]


@pytest.mark.parametrize("argv", [
    ["record", "--upstream", "ftp://example.invalid", "--out", "{tmp}/o"],
    ["record", "--upstream", "not a url", "--out", "{tmp}/o"],
    ["record", "--upstream", "http://127.0.0.1:9", "--out", "{tmp}/file/o"],
    ["record", "--upstream", "http://127.0.0.1:9", "--out", "{tmp}/o", "--port", "70000"],
])
def test_record_refuses_bad_input_with_exit_2(tmp_path, capsys, argv):
    (tmp_path / "file").write_text("a file, not a folder")
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv]) == 2
    assert "error:" in capsys.readouterr().err


def test_a_chunked_request_body_is_recorded_whole(upstream, proxy):
    url, out = proxy

    def pieces():
        yield b'{"messages": [{"role": "user", '
        yield b'"content": "sent in chunks"}]}'

    response = httpx.post(url + "/v1/chat/completions", content=pieces(),
                          headers={"Content-Type": "application/json"})
    assert response.status_code == 200
    whole = b'{"messages": [{"role": "user", "content": "sent in chunks"}]}'
    assert (out / "000001.request.body").read_bytes() == whole
    assert upstream.received[0][3] == whole


def test_the_record_command_serves_until_interrupted(upstream, tmp_path):
    import os
    import re
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "plimsoll_ci", "record", "--upstream", upstream.url,
         "--out", str(tmp_path / "rec"), "--port", "0"],
        stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        m = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        assert m, line
        response = httpx.post(m.group(1) + "/v1/chat/completions", json={"messages": []})
        assert response.status_code == 200
    finally:
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    assert (tmp_path / "rec" / "000001.request.json").exists()


def test_a_request_that_cannot_be_recorded_is_not_forwarded(upstream, proxy):
    import shutil

    url, out = proxy
    shutil.rmtree(out)  # the recording folder is gone: nothing can be written
    response = httpx.post(url + "/v1/chat/completions", json={"messages": ["secret?"]})
    assert response.status_code == 500
    assert "not forwarded" in response.text
    assert upstream.received == []

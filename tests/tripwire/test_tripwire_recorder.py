"""The recording proxy: requests written exactly as sent, responses recorded, streams pass."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from pathlib import Path

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


def _raw(url: str, request: bytes, close_write: bool = True) -> tuple[int, bytes]:
    """Send raw bytes to the proxy; (status, body) of its answer."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=20) as s:
        s.sendall(request)
        if close_write:
            s.shutdown(socket.SHUT_WR)
        data = b""
        while True:
            got = s.recv(65536)
            if not got:
                break
            data += got
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


_POST = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
_BODY = b'{"messages": ["seed 3107713414"]}'


@pytest.mark.parametrize(("framing", "rest"), [
    (b"Content-Length: -1\r\n", _BODY),
    (b"Content-Length: abc\r\n", _BODY),
    (b"Content-Length: +33\r\n", _BODY),
    (b"Content-Length: 33, 33\r\n", _BODY),
    (b"Content-Length: 0x21\r\n", _BODY),
    (b"Content-Length: 33\r\nContent-Length: 33\r\n", _BODY),
    (b"Content-Length: 33\r\nContent-Length: 5\r\n", _BODY),
    (b"Content-Length: 33\r\nTransfer-Encoding: chunked\r\n", b"21\r\n" + _BODY + b"\r\n0\r\n\r\n"),
    (b"Transfer-Encoding: gzip, chunked\r\n", b"21\r\n" + _BODY + b"\r\n0\r\n\r\n"),
    (b"Transfer-Encoding: chunked\r\n", b"zz\r\n" + _BODY + b"\r\n0\r\n\r\n"),
    (b"Transfer-Encoding: chunked\r\n", b"5\r\n" + _BODY + b"\r\n0\r\n\r\n"),
    (b"Transfer-Encoding: chunked\r\n", b"21\r\n" + _BODY),
    (b"Content-Length: 99\r\n", _BODY),
], ids=["negative", "letters", "plus", "list", "hex", "twice-same", "twice-differing",
        "length-and-chunked", "other-coding", "bad-chunk-size", "chunk-longer-than-said",
        "chunked-cut", "body-shorter"])
def test_a_request_whose_length_is_not_exact_gets_400_and_is_never_forwarded(
        upstream, proxy, framing: bytes, rest: bytes) -> None:
    url, out = proxy
    status, body = _raw(url, _POST + framing + b"\r\n" + rest)
    assert status == 400
    assert "not forwarded" in json.loads(body)["error"]["message"]
    assert upstream.received == []
    assert not list(out.glob("*.request.*"))


def test_an_exact_request_after_the_refused_ones_still_goes_through(upstream, proxy) -> None:
    url, out = proxy
    status, _ = _raw(url, _POST + b"Content-Length: -1\r\n\r\n" + _BODY)
    assert status == 400
    status, body = _raw(url, _POST + b"Content-Length: 33\r\nConnection: close\r\n\r\n" + _BODY)
    assert status == 200, body
    assert upstream.received[0][3] == _BODY
    assert sorted(p.name for p in out.glob("*.request.json")) == ["000001.request.json"]


CREDENTIALS = {"Authorization": "Bearer sk-a1", "x-api-key": "sk-a2", "api-key": "sk-a3",
               "Ocp-Apim-Subscription-Key": "sk-a4", "X-Goog-Api-Key": "sk-a5",
               "X-Auth-Token": "sk-a6", "X-Client-Secret": "sk-a7", "Cookie": "session=sk-a8",
               "X-Amz-Security-Token": "sk-a9", "X-Vendor-Password": "sk-a10"}


def test_every_header_named_for_a_credential_is_recorded_redacted_and_forwarded(
        upstream, proxy) -> None:
    url, out = proxy
    httpx.post(url + "/v1/chat/completions?api_key=sk-q1&access_token=sk-q2&lap=3",
               json={"messages": []}, headers={**CREDENTIALS, "X-Trace": "t-1"})
    recorded = (out / "000001.request.json").read_text()
    assert "sk-" not in recorded
    meta = json.loads(recorded)
    assert sorted(meta["redacted"]) == sorted([*CREDENTIALS, "?api_key", "?access_token"])
    assert ["X-Trace", "t-1"] in meta["headers"]
    assert meta["target"].endswith("lap=3")
    got = {k.lower(): v for k, v in upstream.received[0][2].items()}
    for name, value in CREDENTIALS.items():
        assert got[name.lower()] == value
    assert "api_key=sk-q1&access_token=sk-q2" in upstream.received[0][1]


def test_proxy_authorization_is_for_the_recorder_recorded_redacted_and_not_forwarded(
        upstream, proxy) -> None:
    url, out = proxy
    httpx.post(url + "/v1/chat/completions", json={"messages": []},
               headers={"Proxy-Authorization": "Basic sk-proxy", "Authorization": "Bearer sk-1"})
    meta = json.loads((out / "000001.request.json").read_text())
    assert ["Proxy-Authorization", "[redacted]"] in meta["headers"]
    sent = {k.lower() for k in upstream.received[0][2]}
    assert "proxy-authorization" not in sent and "authorization" in sent


def test_the_docs_say_which_headers_are_not_forwarded() -> None:
    from plimsoll_ci.tripwire import recorder

    doc = (Path(__file__).resolve().parents[2] / "docs" / "tripwire.md").read_text()
    paragraphs = doc.split("\n\n")
    hop = next(p for p in map(str.lower, paragraphs) if "hop-by-hop headers" in p and
               "not forwarded" in p)
    for name in recorder._HOP_BY_HOP:
        assert f"`{name}`" in hop, name
    forwarded = next(p for p in paragraphs if "still forwarded" in p)
    assert "except the hop-by-hop\n`Proxy-Authorization`" in forwarded


def test_the_verbose_log_never_prints_a_query_key(upstream, tmp_path, capfd) -> None:
    from plimsoll_ci.tripwire.recorder import make_server

    server = make_server(upstream.url, str(tmp_path / "rec"), quiet=False)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    try:
        port = server.server_address[1]
        httpx.post(f"http://127.0.0.1:{port}/v1beta/models/g:generateContent?key=sk-query-9",
                   json={"contents": []})
    finally:
        server.shutdown()
        server.server_close()
    err = capfd.readouterr().err
    assert "generateContent" in err and "sk-query-9" not in err


def _down_url() -> str:
    return f"http://127.0.0.1:{_free_port()}"


@pytest.mark.parametrize("api", ["openai", "anthropic", "gemini"])
def test_the_sdks_show_the_recorders_own_errors(tmp_path, api: str) -> None:
    from plimsoll_ci.tripwire.recorder import start_in_thread

    server, url = start_in_thread(_down_url(), str(tmp_path / "rec"))
    try:
        with pytest.raises(Exception) as raised:
            if api == "openai":
                import openai

                openai.OpenAI(base_url=url + "/v1", api_key="sk-1", max_retries=0) \
                    .chat.completions.create(model="m", messages=[{"role": "user",
                                                                   "content": "hi"}])
            elif api == "anthropic":
                import anthropic

                anthropic.Anthropic(base_url=url, api_key="sk-1", max_retries=0) \
                    .messages.create(model="c", max_tokens=8, messages=[{"role": "user",
                                                                         "content": "hi"}])
            else:
                from google import genai
                from google.genai import types

                client = genai.Client(api_key="g-1", http_options=types.HttpOptions(
                    base_url=url, api_version="v1beta"))
                client.models.generate_content(model="g", contents="hi")
    finally:
        server.shutdown()
        server.server_close()
    message = str(raised.value)
    assert "plimsoll-ci record: the upstream never answered" in message, message
    assert "502" in message or getattr(raised.value, "status_code", 0) == 502


def test_retries_against_a_down_upstream_are_one_hit_that_says_it_was_never_answered(
        tmp_path, capsys) -> None:
    import openai

    from plimsoll_ci.tripwire.recorder import start_in_thread
    from plimsoll_ci.withheld import build_set, dumps

    server, url = start_in_thread(_down_url(), str(tmp_path / "rec"))
    try:
        with pytest.raises(openai.InternalServerError):
            openai.OpenAI(base_url=url + "/v1", api_key="sk-1", max_retries=2) \
                .chat.completions.create(model="m", messages=[
                    {"role": "user", "content": "seed 3107713414"}])
    finally:
        server.shutdown()
        server.server_close()
    assert len(list((tmp_path / "rec").glob("*.request.json"))) == 3
    doc, _ = build_set(values=[("seeds.txt:1", "3107713414")], tag="plimsoll-sealed/1")
    (tmp_path / "sealed.json").write_text(dumps(doc))
    code = main(["tripwire", "--sealed", str(tmp_path / "sealed.json"), "--requests",
                 str(tmp_path / "rec"), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1
    (hit,) = report["findings"]
    assert (hit["path"], hit["chain"], hit["entry"]) == (
        "000001.request.body", "/messages/0/content", "seeds.txt:1")
    assert hit["detail"] == ("sent 3 times with the same body: 000001, 000002, 000003; "
                             "the upstream never answered")

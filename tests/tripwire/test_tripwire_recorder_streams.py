"""A stream whose recording fails is ended at once with an error the real SDKs raise.

The disk is a real full one (a 256 KiB tmpfs, `small_disk`); the model endpoint streams 200
pieces of 2 KB, far more than the disk has room for.
"""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator

import pytest
from kit.model_endpoint import serve

from plimsoll_ci.tripwire.recorder import start_in_thread

DELTAS = 200


def _openai_chat(url: str) -> Iterator[str]:
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
    for chunk in client.chat.completions.create(model="m", stream=True, messages=[
            {"role": "user", "content": "fly"}]):
        if chunk.choices and chunk.choices[0].delta.content:
            yield chunk.choices[0].delta.content


def _openai_responses(url: str) -> Iterator[str]:
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
    for event in client.responses.create(model="m", input="fly", stream=True):
        if event.type == "response.output_text.delta":
            yield event.delta


def _anthropic(url: str) -> Iterator[str]:
    import anthropic

    client = anthropic.Anthropic(base_url=url, api_key="sk-test", max_retries=0)
    with client.messages.stream(model="c", max_tokens=64, messages=[
            {"role": "user", "content": "fly"}]) as stream:
        yield from stream.text_stream


def _gemini(url: str) -> Iterator[str]:
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="g-test", http_options=types.HttpOptions(
        base_url=url, api_version="v1beta"))
    for chunk in client.models.generate_content_stream(model="gemini-test", contents="fly"):
        yield chunk.text or ""


SDKS: dict[str, Callable[[str], Iterator[str]]] = {
    "openai-chat": _openai_chat, "openai-responses": _openai_responses,
    "anthropic": _anthropic, "gemini": _gemini}


def _drain(stream: Iterator[str], got: list[str]) -> None:
    for piece in stream:
        got.append(piece)


@pytest.mark.parametrize("sdk", SDKS)
def test_a_stream_whose_recording_fails_midway_ends_at_once_with_an_error_the_sdk_raises(
        small_disk, capfd, sdk: str) -> None:
    out = small_disk.path / "requests"
    got: list[str] = []
    with serve(deltas=DELTAS, delta_bytes=2000) as endpoint:
        server, url = start_in_thread(endpoint.url, str(out))
        try:
            small_disk.fill(leave=64 * 1024)
            with pytest.raises(Exception) as raised:
                _drain(SDKS[sdk](url), got)
        finally:
            server.shutdown()
            server.server_close()
    assert "cannot write the response recording" in str(raised.value), repr(raised.value)
    assert 0 < len(got) < DELTAS / 2  # ended where the disk filled, not after every piece
    err = capfd.readouterr().err
    assert "000001: cannot write the response recording (No space left on device); the stream " \
           "to the client was ended with an error" in err
    assert sorted(p.name for p in out.iterdir()) == [
        ".plimsoll-record.lock", "000001.request.body", "000001.request.json"]


class _FillsBeforeDone(http.server.BaseHTTPRequestHandler):
    """An OpenAI chat stream whose last event comes only after the disk is full."""

    protocol_version = "HTTP/1.1"
    disk: object
    seen_first: threading.Event  # the client has the first delta

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                 "choices": [{"index": 0, "delta": {"content": "every delta"},
                              "finish_reason": None}]}
        events = [f"data: {json.dumps(chunk)}\n\n".encode(), None, b"data: [DONE]\n\n"]
        for ev in events:
            if ev is None:
                self.seen_first.wait(20)
                self.disk.fill(leave=0)
                continue
            self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True


def test_a_stream_whose_recording_fails_at_its_end_does_not_end_cleanly(small_disk,
                                                                        capfd) -> None:
    import openai

    seen_first = threading.Event()
    up = http.server.ThreadingHTTPServer(("127.0.0.1", 0), type(
        "U", (_FillsBeforeDone,), {"disk": small_disk, "seen_first": seen_first}))
    threading.Thread(target=up.serve_forever, daemon=True).start()
    server, url = start_in_thread(f"http://127.0.0.1:{up.server_address[1]}",
                                  str(small_disk.path / "requests"))
    got: list[str] = []
    try:
        stream = _openai_chat(url)
        got.append(next(stream))
        seen_first.set()
        with pytest.raises(openai.APIError, match="cannot write the response recording"):
            _drain(stream, got)
    finally:
        server.shutdown()
        server.server_close()
        up.shutdown()
        up.server_close()
    assert got == ["every delta"]  # every delta came, and still no clean end: [DONE] was held
    assert "the stream to the client was ended with an error" in capfd.readouterr().err

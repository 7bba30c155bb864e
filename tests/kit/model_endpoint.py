"""A local model endpoint on 127.0.0.1 that answers in each API's own shape, streaming and not.

OpenAI chat completions (`/v1/chat/completions`), responses (`/v1/responses`) and files
(`/v1/files`); Anthropic messages (`/v1/messages`); Gemini `generateContent` and
`streamGenerateContent?alt=sse`. A streamed answer is `deltas` pieces of `delta_bytes` text each,
sent without a length (chunked), the way the real APIs stream. Every request is kept in
`received` (method, path, headers, body).
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple


class Endpoint(NamedTuple):
    url: str
    received: list  # (method, path, {header: value}, body bytes) per request
    settings: dict  # "deltas", "delta_bytes": the shape of the next streamed answers


def _openai_chat(model: str, text: str) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def _openai_response(model: str, text: str) -> dict:
    return {"id": "resp_1", "object": "response", "created_at": 1, "model": model,
            "status": "completed", "output": [{
                "type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}


def _anthropic_message(model: str, text: str) -> dict:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}


def _gemini(text: str, finish: bool = True) -> dict:
    cand: dict = {"content": {"role": "model", "parts": [{"text": text}]}, "index": 0}
    if finish:
        cand["finishReason"] = "STOP"
    return {"candidates": [cand], "modelVersion": "gemini-test",
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1,
                              "totalTokenCount": 2}}


def _sse(event: str | None, doc: dict | str, end: bytes = b"\n\n") -> bytes:
    data = doc if isinstance(doc, str) else json.dumps(doc)
    head = f"event: {event}\n" if event else ""
    return (head + f"data: {data}").encode() + end


def _stream_events(path: str, model: str, pieces: list[str]) -> Iterator[bytes]:
    if path.endswith("/chat/completions"):
        base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1,
                "model": model}
        yield _sse(None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant"},
                                               "finish_reason": None}]})
        for p in pieces:
            yield _sse(None, {**base, "choices": [{"index": 0, "delta": {"content": p},
                                                   "finish_reason": None}]})
        yield _sse(None, {**base, "choices": [{"index": 0, "delta": {},
                                               "finish_reason": "stop"}]})
        yield _sse(None, "[DONE]")
    elif path.endswith("/responses"):
        yield _sse("response.created", {"type": "response.created", "sequence_number": 0,
                                        "response": {**_openai_response(model, ""),
                                                     "status": "in_progress", "output": []}})
        for i, p in enumerate(pieces, 1):
            yield _sse("response.output_text.delta", {
                "type": "response.output_text.delta", "sequence_number": i, "item_id": "msg_1",
                "output_index": 0, "content_index": 0, "delta": p, "logprobs": []})
        yield _sse("response.completed", {"type": "response.completed",
                                          "sequence_number": len(pieces) + 1,
                                          "response": _openai_response(model, "".join(pieces))})
    elif path.endswith("/messages"):
        start = _anthropic_message(model, "")
        start["content"], start["stop_reason"] = [], None
        yield _sse("message_start", {"type": "message_start", "message": start})
        yield _sse("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}})
        for p in pieces:
            yield _sse("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": p}})
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        yield _sse("message_delta", {"type": "message_delta", "delta": {
            "stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 1}})
        yield _sse("message_stop", {"type": "message_stop"})
    else:  # Gemini streamGenerateContent?alt=sse
        for i, p in enumerate(pieces):
            yield _sse(None, _gemini(p, finish=i == len(pieces) - 1), end=b"\r\n\r\n")


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    received: list
    settings: dict

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, doc: dict) -> None:
        out = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.received.append((self.command, self.path, dict(self.headers), body))
        path = self.path.split("?", 1)[0]
        try:
            doc = json.loads(body) if body[:1] == b"{" else {}
        except ValueError:
            doc = {}
        model = str(doc.get("model", "test-model"))
        streamed = bool(doc.get("stream")) or ":streamGenerateContent" in path
        if streamed:
            n, size = self.settings["deltas"], self.settings["delta_bytes"]
            pieces = [f"piece {i} " + "x" * max(0, size - 10) for i in range(n)]
            ctype = "text/event-stream"
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for event in _stream_events(path, model, pieces):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass
            self.close_connection = True  # a proxy that cut the stream will not send another
            return
        if path.endswith("/chat/completions"):
            self._json(200, _openai_chat(model, "a guess"))
        elif path.endswith("/responses"):
            self._json(200, _openai_response(model, "a guess"))
        elif path.endswith("/files"):
            self._json(200, {"id": "file-1", "object": "file", "bytes": len(body),
                             "created_at": 1, "filename": "upload", "purpose": "user_data",
                             "status": "processed"})
        elif path.endswith("/messages"):
            self._json(200, _anthropic_message(model, "a guess"))
        elif ":generateContent" in path:
            self._json(200, _gemini("a guess"))
        else:
            self._json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextmanager
def serve(deltas: int = 3, delta_bytes: int = 16) -> Iterator[Endpoint]:
    """A model endpoint on a free port of 127.0.0.1, for the length of the `with` block."""
    received: list = []
    settings = {"deltas": deltas, "delta_bytes": delta_bytes}
    handler = type("H", (_Handler,), {"received": received, "settings": settings})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield Endpoint(f"http://127.0.0.1:{server.server_address[1]}", received, settings)
    finally:
        server.shutdown()
        server.server_close()

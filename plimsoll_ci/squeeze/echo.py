"""The canary run's built-in model endpoint: on 127.0.0.1, it answers a conversation's first request
with one `fly` call and every later one with a plain reply that ends the session.

A canary run checks what the harness sends, so what the model answers does not matter: this
endpoint costs nothing, needs no key, and reaches no network.

    with EchoEndpoint() as echo:
        config = ModelConfig(base_url=echo.url, model=ECHO_MODEL, max_tokens=...,
                             api_key_env=ECHO_KEY_ENV)
"""

from __future__ import annotations

import http.server
import json
import threading

ECHO_MODEL = "echo"
ECHO_KEY_ENV = "PLIMSOLL_ECHO_KEY"  # read from a mapping the canary run passes, never os.environ
MAX_BODY = 64 * 1024 * 1024


def answer(request: object) -> dict:
    """The chat completion for a request: `fly` first, then a plain reply."""
    messages = request.get("messages") if isinstance(request, dict) else None
    spoke = isinstance(messages, list) and any(
        isinstance(m, dict) and m.get("role") == "assistant" for m in messages)
    message: dict[str, object]
    if spoke:
        message = {"role": "assistant", "content": "done"}
        finish = "stop"
    else:
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_echo_fly", "type": "function",
             "function": {"name": "fly", "arguments": "{}"}}]}
        finish = "tool_calls"
    return {"id": "chatcmpl-echo", "object": "chat.completion", "created": 0,
            "model": ECHO_MODEL, "choices": [{"index": 0, "message": message,
                                              "finish_reason": finish}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1}}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib's name
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, MAX_BODY)) if length else b""
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": "the echo endpoint serves /v1/chat/completions"}})
            return
        try:
            request = json.loads(body)
        except ValueError:
            self._send(400, {"error": {"message": "not JSON"}})
            return
        self._send(200, answer(request))

    def _send(self, status: int, doc: dict) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


class EchoEndpoint:
    """The echo endpoint, serving on a free port of 127.0.0.1 until closed."""

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()

    def close(self) -> None:
        """Stop serving."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> EchoEndpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

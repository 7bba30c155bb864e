"""A real chat-completions endpoint on 127.0.0.1 that answers from a script, for tests.

    from kit.chat_server import ChatServer, text, tool_call

    with ChatServer([tool_call("write_file", {"path": "controller.py", "content": "..."}),
                     tool_call("fly", {}),
                     text("done")]) as server:
        config = ModelConfig(base_url=server.url, model="scripted", max_tokens=10_000)
        ...
    server.requests[1].json["messages"][-1]     # what the client sent on its second request

It speaks `POST /v1/chat/completions` and `GET /v1/models` over a real socket. Each POST takes
the next answer of the script: a reply (`text`, `tool_call`, `tool_calls`), an HTTP failure
(`rate_limited`, `server_error`), bytes that are not a chat completion (`raw`), any of them late
(`slow`) or chunked a byte at a time (`trickled`), or a function of the request for replies that
depend on what was sent (`reflect` gives the `Authorization` header it got, plain, JSON-escaped or
base64, as an echoing gateway would). A POST after the
script ran out gets a 500 saying so, so a test that sends one request too many fails loudly.
Every request is kept in `requests`, in order, with its headers, bytes and arrival time.

With `key=` set, a request whose `Authorization` is not `Bearer KEY` gets a 401 whose message
quotes the header it got (as careless servers do), to prove clients scrub what they echo.

A test folder's conftest.py offers the fixture by importing it:

    from kit.chat_server import ChatServer, chat_server  # noqa: F401 (the fixture, re-exported)
"""

from __future__ import annotations

import base64
import http.server
import itertools
import json
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import pytest


class Received(NamedTuple):
    """One request as the server read it."""

    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    body: bytes
    at: float  # time.monotonic() when it arrived

    @property
    def json(self) -> Any:
        return json.loads(self.body)


class Answer(NamedTuple):
    """One scripted answer."""

    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "application/json"),)
    delay: float = 0.0  # seconds before the status line
    stall: float = 0.0  # seconds between the headers and the body
    trickle: float = 0.0  # > 0: the body chunked, one byte every `trickle` seconds


Scripted = Answer | Callable[[Received], Answer]


def _completion(message: dict, usage: tuple[int, int] | None, finish: str) -> Answer:
    doc: dict[str, Any] = {
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        doc["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                        "total_tokens": usage[0] + usage[1]}
    return Answer(body=json.dumps(doc).encode())


def text(content: str, usage: tuple[int, int] | None = (20, 10), finish: str = "stop") -> Answer:
    """A plain assistant reply; `usage` is (prompt, completion) tokens, None for no `usage`."""
    return _completion({"role": "assistant", "content": content}, usage, finish)


_call_ids = itertools.count(1)


def tool_calls(calls: Sequence[tuple[str, dict | str]], content: str | None = None,
               usage: tuple[int, int] | None = (20, 10)) -> Answer:
    """A reply calling tools: (name, arguments) pairs; arguments given as a str are sent as
    written (for arguments that are not valid JSON)."""
    wire = [{"id": f"call_{next(_call_ids)}", "type": "function",
             "function": {"name": name,
                          "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for name, args in calls]
    return _completion({"role": "assistant", "content": content, "tool_calls": wire}, usage,
                       "tool_calls")


def tool_call(name: str, arguments: dict | str, content: str | None = None,
              usage: tuple[int, int] | None = (20, 10)) -> Answer:
    """A reply calling one tool."""
    return tool_calls([(name, arguments)], content, usage)


def rate_limited(retry_after: str | float | None = None) -> Answer:
    """A 429, with a `Retry-After` header when given (seconds, or an HTTP date as a str)."""
    body = json.dumps({"error": {"message": "Rate limit reached", "type": "rate_limit"}})
    return Answer(429, body.encode(), _headers(retry_after))


def _headers(retry_after: str | float | None) -> tuple[tuple[str, str], ...]:
    headers = [("Content-Type", "application/json")]
    if retry_after is not None:
        headers.append(("Retry-After", retry_after if isinstance(retry_after, str)
                        else f"{retry_after:g}"))
    return tuple(headers)


def server_error(status: int = 500, retry_after: str | float | None = None) -> Answer:
    """A 5xx with an OpenAI-style error body (and a `Retry-After` header when given)."""
    body = json.dumps({"error": {"message": "The server had an error", "type": "server_error"}})
    return Answer(status, body.encode(), _headers(retry_after))


def raw(body: bytes, status: int = 200, content_type: str = "application/json") -> Answer:
    """Exactly these bytes (a malformed reply, an HTML error page, ...)."""
    return Answer(status, body, (("Content-Type", content_type),))


def slow(answer: Answer, delay: float = 0.0, stall: float = 0.0) -> Answer:
    """`answer`, late: `delay` seconds before the status line, `stall` more before the body."""
    return answer._replace(delay=delay, stall=stall)


def trickled(answer: Answer, every: float = 1.0) -> Answer:
    """`answer` with its body chunked (no Content-Length), one byte every `every` seconds."""
    return answer._replace(trickle=every)


def reflect(got: Received, form: str = "plain") -> str:
    """The `Authorization` header of request `got` as an echoing endpoint writes it back:
    "plain"; "json", every character a `\\u` escape (as the text of a JSON string, so it goes
    into a reply's JSON undecoded); "base64", inside a longer encoded run."""
    header = got.headers.get("authorization", "")
    if form == "plain":
        return header
    if form == "json":
        return "".join(f"\\u{ord(c):04x}" for c in header)
    if form == "base64":
        return base64.b64encode(f"you sent: {header}!".encode()).decode()
    raise ValueError(form)


def completion_bytes(content: str | None = None, calls: Sequence[tuple[str, str]] = (),
                     usage: tuple[int, int] = (20, 10)) -> bytes:
    """A chat completion's JSON with `content` and `calls` ((name, arguments text)) written in
    as they are, unescaped: for text that already is JSON-escaped (`reflect(got, "json")`)."""
    wire = ",".join(f'{{"id":"call_r{n}","type":"function","function":{{"name":"{name}",'
                    f'"arguments":"{args}"}}}}' for n, (name, args) in enumerate(calls))
    message = ('{"role":"assistant","content":' +
               ("null" if content is None else f'"{content}"') +
               (f',"tool_calls":[{wire}]' if calls else "") + "}")
    return (f'{{"id":"chatcmpl-r","object":"chat.completion","created":0,"model":"scripted",'
            f'"choices":[{{"index":0,"message":{message},"finish_reason":"stop"}}],'
            f'"usage":{{"prompt_tokens":{usage[0]},"completion_tokens":{usage[1]},'
            f'"total_tokens":{usage[0] + usage[1]}}}}}').encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    owner: ChatServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib's name
        pass

    def _received(self) -> Received:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        got = Received(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                       body, time.monotonic())
        self.owner.requests.append(got)
        return got

    def _send(self, answer: Answer) -> None:
        if answer.delay and self.owner.closing.wait(answer.delay):
            return
        self.send_response(answer.status)
        for name, value in answer.headers:
            self.send_header(name, value)
        if answer.trickle:
            self._trickle(answer)
            return
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        self.wfile.flush()
        if answer.stall and self.owner.closing.wait(answer.stall):
            return
        self.wfile.write(answer.body)
        self.wfile.flush()

    def _trickle(self, answer: Answer) -> None:
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self.wfile.flush()
            for i in range(len(answer.body)):
                if self.owner.closing.wait(answer.trickle):
                    return
                self.wfile.write(b"1\r\n" + answer.body[i:i + 1] + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # the client gave up: part of the script

    def do_GET(self) -> None:
        self._received()
        if self.path.rstrip("/") != self.owner.prefix + "/models":
            self._send(raw(b'{"error": {"message": "not found"}}', 404))
            return
        models = [{"id": m, "object": "model", "owned_by": "chat_server"}
                  for m in self.owner.models]
        self._send(Answer(body=json.dumps({"object": "list", "data": models}).encode()))

    def do_POST(self) -> None:
        got = self._received()
        if got.path != self.owner.prefix + "/chat/completions":
            self._send(raw(b'{"error": {"message": "not found"}}', 404))
            return
        key = self.owner.key
        if key is not None and got.headers.get("authorization") != f"Bearer {key}":
            message = f"Incorrect API key provided: {got.headers.get('authorization')}"
            self._send(raw(json.dumps({"error": {"message": message}}).encode(), 401))
            return
        self._send(self.owner.next_answer(got))


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that gave up on a slow answer is part of the script, not an error


class ChatServer:
    """The scripted endpoint; `url` is its base URL (ending in /v1), `requests` what it got."""

    def __init__(self, script: Iterable[Scripted] = (), models: Sequence[str] = ("scripted",),
                 key: str | None = None, prefix: str = "/v1",
                 tls: tuple[str, str] | None = None) -> None:
        self.script: list[Scripted] = list(script)
        self.models = tuple(models)
        self.key = key
        self.prefix = prefix
        self.requests: list[Received] = []
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self._served = 0
        handler = type("ChatHandler", (_Handler,), {"owner": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        if tls is not None:  # (certificate file, key file): serve HTTPS
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self.origin = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.url = self.origin + prefix
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def push(self, *answers: Scripted) -> None:
        """Append answers to the script."""
        with self._lock:
            self.script.extend(answers)

    @property
    def chat_requests(self) -> list[Received]:
        """The POSTs to the chat-completions path, in order."""
        return [r for r in self.requests if r.method == "POST"
                and r.path == self.prefix + "/chat/completions"]

    @property
    def left(self) -> int:
        """Scripted answers not yet given."""
        with self._lock:
            return len(self.script) - self._served

    def next_answer(self, got: Received) -> Answer:
        with self._lock:
            if self._served >= len(self.script):
                body = json.dumps({"error": {"message": f"chat_server: script exhausted after "
                                                       f"{self._served} answer(s)"}})
                return Answer(500, body.encode())
            item = self.script[self._served]
            self._served += 1
        return item(got) if callable(item) else item

    def close(self) -> None:
        """Stop serving; late answers still waiting are dropped."""
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ChatServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@pytest.fixture
def chat_server() -> Iterator[ChatServer]:
    """A started ChatServer with an empty script; `push` answers onto it."""
    server = ChatServer()
    try:
        yield server
    finally:
        server.close()

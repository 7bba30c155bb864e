"""Which model API a request speaks, and errors in that API's own shape.

The recorder answers some requests itself (a body it refuses, a recording it cannot write, an
upstream that never answered). An SDK shows a reply's message only when the reply has its API's
error shape, so every such reply is JSON in that shape, and an error in the middle of a stream is
an event the SDK raises on:

- OpenAI (chat completions, responses, files, and anything else):
  `{"error": {"message", "type", "param", "code"}}`, and in a stream the same as an `error` event;
- Anthropic (`/v1/messages`, or an `anthropic-version` header):
  `{"type": "error", "error": {"type", "message"}}`, in a stream an `error` event;
- Gemini (`/v1beta/models/...:generateContent`, or an `x-goog-api-key` header):
  `{"error": {"code", "message", "status"}}`, in a stream a `data:` chunk of that shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

OPENAI, ANTHROPIC, GEMINI = "openai", "anthropic", "gemini"

_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 413: "INVALID_ARGUMENT", 500: "INTERNAL",
                  502: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
_ANTHROPIC_TYPE = {400: "invalid_request_error", 413: "request_too_large", 500: "api_error",
                   502: "api_error", 504: "timeout_error"}


def which_api(target: str, header_names: Iterable[str]) -> str:
    """The API a request speaks, from its target and its header names."""
    names = {n.lower() for n in header_names}
    path = target.split("?", 1)[0]
    if "anthropic-version" in names or path.endswith(("/messages", "/messages/count_tokens",
                                                      "/complete")):
        return ANTHROPIC
    if "x-goog-api-key" in names or ":generateContent" in path or \
            ":streamGenerateContent" in path or "/v1beta/" in path:
        return GEMINI
    return OPENAI


def _error_doc(api: str, status: int, message: str) -> dict:
    if api == ANTHROPIC:
        return {"type": "error", "error": {"type": _ANTHROPIC_TYPE.get(status, "api_error"),
                                           "message": message}}
    if api == GEMINI:
        return {"error": {"code": status, "message": message,
                          "status": _GEMINI_STATUS.get(status, "INTERNAL")}}
    return {"error": {"message": message,
                      "type": "invalid_request_error" if status < 500 else "server_error",
                      "param": None, "code": f"plimsoll_record_{status}"}}


def error_body(api: str, status: int, message: str) -> bytes:
    """A JSON error reply body in `api`'s shape."""
    return json.dumps(_error_doc(api, status, message)).encode() + b"\n"


def stream_error_event(api: str, message: str, status: int = 500) -> bytes:
    """A server-sent event that makes `api`'s SDK raise `message` in the middle of a stream.

    It starts with a blank line, so it is an event of its own whatever came before it.
    """
    data = json.dumps(_error_doc(api, status, message)).encode()
    if api == GEMINI:
        return b"\n\ndata: " + data + b"\n\n"
    return b"\n\nevent: error\ndata: " + data + b"\n\n"

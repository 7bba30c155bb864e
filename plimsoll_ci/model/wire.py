"""The chat-completions wire format: tools out, replies and usage in (no I/O here).

A reply is checked field by field and anything that is not a chat completion raises
`MalformedReply` naming the field. Tool-call arguments are the exception on purpose: arguments
that are not a JSON object reach the caller as they were written (`ToolCall.error` says why), so
the caller can answer the model with an error result and the session goes on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from plimsoll_ci.model.errors import MalformedReply

# JSON may escape half of a UTF-16 pair (`"\ud800"`): Python reads it as a lone surrogate, which no
# UTF-8 text and no RFC 8785 transcript can carry. Such halves become U+FFFD, as a UTF-8 reader
# does with a broken sequence; whole pairs are one character already.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _loads(text: str) -> Any:
    """`json.loads`, with every lone surrogate in a string (key or value) as U+FFFD."""
    if not _SURROGATE_ESCAPE.search(text):
        return json.loads(text)

    def fix(s: str) -> str:
        return _LONE_SURROGATE.sub("\ufffd", s)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        return {fix(k): fix(v) if isinstance(v, str) else v for k, v in items}

    value = json.loads(text, object_pairs_hook=pairs)
    if isinstance(value, str):
        return fix(value)
    stack = [value]
    while stack:  # strings inside lists (those inside objects are fixed by the hook)
        item = stack.pop()
        if isinstance(item, list):
            item[:] = [fix(x) if isinstance(x, str) else x for x in item]
            stack.extend(x for x in item if isinstance(x, list | dict))
        elif isinstance(item, dict):
            stack.extend(x for x in item.values() if isinstance(x, list | dict))
    return value

BYTES_PER_TOKEN = 3  # a response without `usage` is counted as 1 token per 3 bytes sent and received


class Tool(NamedTuple):
    """A function tool the model may call."""

    name: str
    description: str
    parameters: Mapping[str, Any]  # JSON Schema of the arguments object

    def wire(self) -> dict:
        return {"type": "function", "function": {
            "name": self.name, "description": self.description,
            "parameters": dict(self.parameters)}}


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for. `arguments` is None when `arguments_json` is not a JSON
    object; `error` then says why, in words fit to send back to the model."""

    id: str
    name: str
    arguments_json: str  # exactly as the model wrote it
    arguments: Mapping[str, Any] | None
    error: str = ""


@dataclass(frozen=True)
class Reply:
    """What the model answered on one turn, and what the turn cost."""

    content: str | None
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str | None
    tokens: int  # this turn's tokens: the response's `usage`, or an estimate (see `estimated`)
    estimated: bool  # True when the response carried no usable `usage`
    dropped: int = 0  # tool calls over a cap, answered with an error by the session itself


class Usage(NamedTuple):
    """Tokens one response says it used."""

    prompt: int
    completion: int
    total: int


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def usage_of(doc: object) -> Usage | None:
    """The response's `usage`, or None when it is missing or unusable.

    `total_tokens` counts when present; otherwise prompt + completion when both are present."""
    usage = doc.get("usage") if isinstance(doc, dict) else None
    if not isinstance(usage, dict):
        return None
    prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    total = _count(usage.get("total_tokens"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    if total is None:
        return None
    return Usage(prompt or 0, completion or 0, total)


def estimate_tokens(request_bytes: int, response_bytes: int) -> int:
    """Tokens charged for a response without `usage`: generous, so a budget is never overrun
    quietly by a server that does not report what it used."""
    return -(-(request_bytes + response_bytes) // BYTES_PER_TOKEN)


def payload(model: str, messages: list[dict], tools: tuple[Tool, ...]) -> bytes:
    """The request body: compact UTF-8 JSON."""
    doc: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        doc["tools"] = [t.wire() for t in tools]
    text = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "replace")  # a lone surrogate cannot go out as UTF-8


def load_json(body: bytes) -> Any:
    """The parsed body; MalformedReply when it is not UTF-8 JSON (RFC 8259 section 8.1)."""
    try:
        return _loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise MalformedReply("the reply is not UTF-8 JSON") from None
    except json.JSONDecodeError as e:
        raise MalformedReply(f"the reply is not JSON (line {e.lineno} column {e.colno}: "
                             f"{e.msg})") from None
    except RecursionError:
        raise MalformedReply("the reply is JSON nested too deeply to read") from None
    except ValueError:  # a number of more digits than Python converts (4300)
        raise MalformedReply("the reply has a number too long to read") from None


def _field(obj: object, key: str, where: str, kind: type | tuple[type, ...]) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise MalformedReply(f"the reply has no {where}")
    value = obj[key]
    if not isinstance(value, kind):
        raise MalformedReply(f"the reply's {where} is a {type(value).__name__}, not what a chat "
                             "completion carries")
    return value


def _arguments(text: str) -> tuple[Mapping[str, Any] | None, str]:
    try:
        value = _loads(text)
    except json.JSONDecodeError as e:
        return None, (f"the arguments are not valid JSON (line {e.lineno} column {e.colno}: "
                      f"{e.msg}); send one JSON object")
    except RecursionError:
        return None, "the arguments are JSON nested too deeply; send one flat JSON object"
    except ValueError:
        return None, "the arguments hold a number too long to read; send shorter numbers"
    if not isinstance(value, dict):
        return None, f"the arguments are a JSON {type(value).__name__}; send one JSON object"
    return value, ""


def parse_reply(doc: object) -> tuple[dict, tuple[ToolCall, ...], str | None]:
    """(the assistant message as it goes back into the conversation, its tool calls,
    finish_reason); MalformedReply naming the first field that is missing or mistyped."""
    if isinstance(doc, dict) and "choices" not in doc and isinstance(doc.get("error"), dict):
        raise MalformedReply("the endpoint answered 200 with an error object instead of a reply")
    choices = _field(doc, "choices", "choices", list)
    if not choices:
        raise MalformedReply("the reply's choices are empty")
    message = _field(choices[0], "message", "choices[0].message", dict)
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise MalformedReply("the reply's choices[0].message.content is not text")
    finish = choices[0].get("finish_reason")
    calls: list[ToolCall] = []
    wire_calls: list[dict] = []
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise MalformedReply("the reply's choices[0].message.tool_calls is not a list")
    for i, raw in enumerate(raw_calls):
        where = f"choices[0].message.tool_calls[{i}]"
        call_id = _field(raw, "id", f"{where}.id", str)
        function = _field(raw, "function", f"{where}.function", dict)
        name = _field(function, "name", f"{where}.function.name", str)
        args = _field(function, "arguments", f"{where}.function.arguments", (str, dict))
        # some servers send the arguments already parsed; the model's text is then their JSON
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        parsed, error = _arguments(text)
        calls.append(ToolCall(call_id, name, text, parsed, error))
        wire_calls.append({"id": call_id, "type": "function",
                           "function": {"name": name, "arguments": text}})
    assistant: dict[str, Any] = {"role": "assistant", "content": content}
    if wire_calls:
        assistant["tool_calls"] = wire_calls
    return assistant, tuple(calls), finish if isinstance(finish, str) else None

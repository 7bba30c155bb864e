"""A model client, its token budget, and sessions that keep their whole transcript.

    client = ModelClient(config)                    # BadInput (exit 2) without the key
    session = client.session(system=brief, tools=TOOLS)
    session.user(task)
    while (reply := session.ask()) is not None:     # None: stopped ("budget" or "rate_limit")
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            result = run_tool(call) if call.arguments is not None else f"error: {call.error}"
            session.tool_result(call, result)
    session.outcome()                               # stopped, requests, tokens
    session.digest()                                # SHA-256 of the transcript (RFC 8785 JSON)

The budget is checked before each request and charged from each answer's `usage` (an answer
without one is charged an estimate, see `wire.estimate_tokens`); the answer that crosses the line
is still returned (it was paid for), and the next `ask` sends nothing and returns None. Sessions of
one client share its budget unless given their own. A `usage` beyond what JSON carries exactly
(2**53 - 1) is charged as that bound, which spends any budget, and recorded as the endpoint wrote
it (`Exchange.reported_tokens`, a string): an absurd figure stops the session, never the run.

A session also stops (`stopped`) when its wall clock (`session_seconds`) runs out, a request in
flight included, and when its tool calls reach `calls_per_session`. A reply's tool calls beyond
`calls_per_reply` (or beyond what the session has left) are not handed to the caller: the session
answers each with an error result itself, and `Reply.dropped` counts them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from plimsoll_ci.model.config import MAX_COUNT, ModelConfig, endpoint, read_key
from plimsoll_ci.model.errors import MalformedReply
from plimsoll_ci.model.transport import Exchange, Line, Posted, post, shown_url
from plimsoll_ci.model.wire import (
    Reply,
    Tool,
    ToolCall,
    estimate_tokens,
    load_json,
    parse_reply,
    payload,
    usage_of,
)

TRANSCRIPT_FORMAT = "plimsoll-model-transcript/1"
Stop = Literal["budget", "rate_limit", "time_limit", "tool_calls"]


class Budget:
    """A token budget shared by any number of sessions and threads."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._spent = 0
        self._lock = threading.Lock()

    @property
    def spent(self) -> int:
        return self._spent

    @property
    def exhausted(self) -> bool:
        return self._spent >= self.total

    def charge(self, tokens: int) -> None:
        """Count `tokens` as spent."""
        with self._lock:  # saturates: a count beyond JSON's exact integers is never written
            self._spent = min(self._spent + tokens, MAX_COUNT)

    def __repr__(self) -> str:
        return f"Budget(spent={self._spent}, total={self.total})"


@dataclass(frozen=True)
class SessionOutcome:
    """How a session went, for reports that count stopped sessions apart."""

    stopped: Stop | None  # why the session could not go on, or None
    replies: int  # answers that came back as chat completions (malformed ones included)
    requests: int  # HTTP requests sent, retries included
    tokens: int  # tokens charged to the budget by this session
    estimated_tokens: int  # the part of `tokens` estimated from bytes (answers without `usage`)


class ModelClient:
    """An endpoint, a model, the key (read once from the environment) and a budget."""

    def __init__(self, config: ModelConfig, *, environ: Mapping[str, str] | None = None,
                 budget: Budget | None = None, via: str | None = None,
                 cancel: threading.Event | None = None) -> None:
        """`via`: the base URL of a recording proxy in front of `config.base_url` (requests go
        there; errors and transcripts still name `config.base_url`). `cancel`: set it to abandon
        every request in flight at once (Ctrl-C, SIGTERM)."""
        self.config = config
        self.endpoint = endpoint(via if via is not None else config.base_url)
        self._key = read_key(config.api_key_env, environ)
        self.budget = budget if budget is not None else Budget(config.max_tokens)
        self.cancel = cancel

    def session(self, *, system: str | None = None, tools: Sequence[Tool] = (),
                budget: Budget | None = None) -> Session:
        """A fresh conversation; it spends the client's budget unless given its own."""
        return Session(self, system=system, tools=tools, budget=budget)

    def _post(self, body: bytes, log: list[Exchange], turn: int, until: float) -> Posted:
        line = Line(self.endpoint, shown_url(self.config.base_url), self._key, self.config,
                    self.cancel, until)
        return post(line, body, log, turn)

    def __repr__(self) -> str:
        return f"ModelClient({self.config.model!r} at {self.config.base_url}, {self.budget})"


class Session:
    """One conversation: its messages, every request sent, and what each cost."""

    def __init__(self, client: ModelClient, *, system: str | None = None,
                 tools: Sequence[Tool] = (), budget: Budget | None = None) -> None:
        self.client = client
        self.tools = tuple(tools)
        self.budget = budget if budget is not None else client.budget
        self.messages: list[dict[str, Any]] = []
        self.exchanges: list[Exchange] = []
        self.stopped: Stop | None = None
        self._turns = 0
        self._replies = 0
        self._pending: list[str] = []  # tool-call ids not yet answered
        self._dropped: list[tuple[str, str]] = []  # (id, error) of calls over a cap
        self._calls = 0  # tool calls handed to the caller
        self._until = time.monotonic() + client.config.session_seconds
        if system is not None:
            self.messages.append({"role": "system", "content": system})

    def user(self, text: str) -> None:
        """Add a user message."""
        self.messages.append({"role": "user", "content": text})

    def tool_result(self, call: ToolCall | str, content: str) -> None:
        """Answer a tool call (by the call or its id); every call must be answered before `ask`."""
        call_id = call.id if isinstance(call, ToolCall) else call
        if call_id not in self._pending:
            raise ValueError(f"tool call {call_id!r} is not waiting for a result")
        self._pending.remove(call_id)
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})

    def ask(self) -> Reply | None:
        """Send the conversation; the model's reply, or None when the session has stopped
        (`stopped` says why: the budget was spent, or the endpoint kept rate-limiting).

        Raises MalformedReply (its tokens are counted; the session may go on) and EndpointError."""
        if self._pending:
            raise ValueError(f"answer tool call(s) {', '.join(self._pending)} before asking again")
        for call_id, error in self._dropped:
            self.messages.append({"role": "tool", "tool_call_id": call_id, "content": error})
        self._dropped = []
        config = self.client.config
        if self.stopped is None and self.budget.exhausted:
            self.stopped = "budget"
        if self.stopped is None and time.monotonic() >= self._until:
            self.stopped = "time_limit"
        if self.stopped is None and self._calls >= config.calls_per_session:
            self.stopped = "tool_calls"
        if self.stopped is not None:
            return None
        self._turns += 1
        body = payload(config.model, self.messages, self.tools)
        posted = self.client._post(body, self.exchanges, self._turns, self._until)
        if posted.body is None:
            self.stopped = posted.stopped  # type: ignore[assignment]  # (a Stop when no body)
            return None
        self._replies += 1
        try:
            doc = load_json(posted.body)
        except MalformedReply:
            self._charge(None, len(body), len(posted.body))
            raise
        tokens, estimated = self._charge(doc, len(body), len(posted.body))
        assistant, calls, finish = parse_reply(doc)
        self.messages.append(assistant)
        calls = self._cap(calls)
        self._pending = [c.id for c in calls]
        return Reply(assistant["content"], calls, finish, tokens, estimated,
                     len(self._dropped))

    def _cap(self, calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
        """The calls the caller runs; the others are answered with an error on the next ask."""
        config = self.client.config
        room = min(config.calls_per_reply, config.calls_per_session - self._calls)
        kept = calls[:max(room, 0)]
        for n, call in enumerate(calls[len(kept):], len(kept) + 1):
            why = (f"at most {config.calls_per_reply} tool calls of one reply are run (this was "
                   f"call {n} of {len(calls)})" if n > config.calls_per_reply else
                   f"this session's {config.calls_per_session} tool calls are used up")
            self._dropped.append((call.id, f"error: not run: {why}"))
        self._calls += len(kept)
        return kept

    def _charge(self, doc: object, sent: int, received: int) -> tuple[int, bool]:
        usage = usage_of(doc)
        tokens = usage.total if usage is not None else estimate_tokens(sent, received)
        reported = str(tokens) if tokens > MAX_COUNT else ""
        tokens = min(tokens, MAX_COUNT)  # still spends any budget (it is at most MAX_COUNT)
        self.budget.charge(tokens)
        self.exchanges[-1] = dataclasses.replace(self.exchanges[-1], tokens=tokens,
                                                 estimated=usage is None,
                                                 reported_tokens=reported)
        return tokens, usage is None

    def outcome(self) -> SessionOutcome:
        """How the session went so far."""
        return SessionOutcome(
            self.stopped, self._replies, len(self.exchanges),
            min(sum(e.tokens for e in self.exchanges), MAX_COUNT),
            min(sum(e.tokens for e in self.exchanges if e.estimated), MAX_COUNT))

    def transcript(self) -> dict[str, Any]:
        """Everything sent and spent, as JSON: messages, tools, every request, the outcome.

        Holds no key (the key is only ever in a request header) and no header at all."""
        config = self.client.config
        return {
            "format": TRANSCRIPT_FORMAT,
            "base_url": config.base_url,
            "model": config.model,
            "tools": [t.wire() for t in self.tools],
            "messages": [dict(m) for m in self.messages],
            "exchanges": [_exchange(e) for e in self.exchanges],
            "outcome": dataclasses.asdict(self.outcome()),
        }

    def digest(self) -> str:
        """SHA-256 (hex) of the transcript's RFC 8785 canonical JSON: what a record signs."""
        from plimsoll_ci.attest.canonical import dumps

        return hashlib.sha256(dumps(self.transcript())).hexdigest()


def _exchange(e: Exchange) -> dict[str, Any]:
    """An exchange as the transcript holds it (`reported_tokens` only when there is one)."""
    doc = dataclasses.asdict(e)
    if not doc["reported_tokens"]:
        del doc["reported_tokens"]
    return doc

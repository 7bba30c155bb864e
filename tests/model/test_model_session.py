"""Sessions against a real chat-completions server: tool calls, transcripts, malformed replies."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from kit.chat_server import raw, text, tool_call, tool_calls
from kit.model import KEY

from plimsoll_ci.attest.canonical import dumps
from plimsoll_ci.model import MalformedReply, Tool

TOOLS = (
    Tool("write_file", "write a file into the workspace", {
        "type": "object", "properties": {"path": {"type": "string"},
                                         "content": {"type": "string"}},
        "required": ["path", "content"]}),
    Tool("run_code", "run Python in a sandbox", {
        "type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}),
    Tool("fly", "fly controller.py on the smoke seeds", {"type": "object", "properties": {}}),
)


def _run(session, results: dict[str, str]) -> list:
    """Drive a session the way a rebuild does: answer every tool call until a plain reply."""
    replies = []
    while (reply := session.ask()) is not None:
        replies.append(reply)
        if not reply.tool_calls:
            break
        for call in reply.tool_calls:
            if call.arguments is None:
                session.tool_result(call, f"error: {call.error}")
            else:
                session.tool_result(call, results[call.name])
    return replies


def test_a_session_with_tool_calls_over_several_turns_sends_the_whole_conversation(
        chat_server, make_client):
    chat_server.push(
        tool_call("write_file", {"path": "controller.py", "content": "def act(o): return 0"}),
        tool_calls([("run_code", {"code": "print(1)"}), ("fly", {})], content="checking",
                   usage=(40, 12)),
        text("the controller lands", usage=(70, 5)))
    session = make_client().session(system="build a controller", tools=TOOLS)
    session.user("the course is hard")
    replies = _run(session, {"write_file": "wrote 20 bytes", "run_code": "1",
                             "fly": "landed 3 of 4"})

    assert [len(r.tool_calls) for r in replies] == [1, 2, 0]
    assert replies[0].tool_calls[0].arguments == {"path": "controller.py",
                                                  "content": "def act(o): return 0"}
    assert replies[1].content == "checking"
    assert replies[2].content == "the controller lands"
    assert replies[2].finish_reason == "stop"
    sent = [r.json for r in chat_server.chat_requests]
    assert len(sent) == 3
    assert all(doc["model"] == "scripted" for doc in sent)
    assert all(doc["tools"] == [t.wire() for t in TOOLS] for doc in sent)
    last = sent[2]["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "assistant",
                                         "tool", "tool"]
    calls = last[4]["tool_calls"]
    assert [m["tool_call_id"] for m in last[5:]] == [c["id"] for c in calls]
    assert [m["content"] for m in last[5:]] == ["1", "landed 3 of 4"]
    assert last[3]["tool_call_id"] == last[2]["tool_calls"][0]["id"]
    # the standard header, which the recording proxy redacts
    assert chat_server.chat_requests[0].headers["authorization"] == f"Bearer {KEY}"
    outcome = session.outcome()
    assert (outcome.stopped, outcome.replies, outcome.requests) == (None, 3, 3)
    assert outcome.tokens == 30 + 52 + 75 == session.budget.spent
    assert outcome.estimated_tokens == 0
    assert session.messages[:-1] == last
    assert session.messages[-1] == {"role": "assistant", "content": "the controller lands"}


def test_the_transcript_ties_every_request_to_the_bytes_the_server_received(
        chat_server, make_client):
    chat_server.push(tool_call("fly", {}), text("done"))
    session = make_client().session(tools=TOOLS)
    session.user("go")
    _run(session, {"fly": "landed"})
    doc = session.transcript()
    assert doc["format"] == "plimsoll-model-transcript/1"
    assert [e["request_sha256"] for e in doc["exchanges"]] == [
        hashlib.sha256(r.body).hexdigest() for r in chat_server.chat_requests]
    assert [e["tokens"] for e in doc["exchanges"]] == [30, 30]
    assert doc["messages"] == session.messages
    assert session.digest() == hashlib.sha256(dumps(doc)).hexdigest()


def test_the_digest_changes_when_any_message_changes(chat_server, make_client):
    chat_server.push(text("one"))
    session = make_client().session()
    session.user("hello")
    session.ask()
    before = session.digest()
    session.messages[0]["content"] = "hellO"
    assert session.digest() != before


@pytest.mark.parametrize("arguments, says", [
    ('{"path": "a.py", content: }', "not valid JSON"),
    ('{"path": "a.py"', "not valid JSON"),
    ("", "not valid JSON"),
    ('["a.py", "x"]', "JSON list"),
    ("42", "JSON int"),
])
def test_tool_call_arguments_that_are_not_a_json_object_reach_the_caller_and_the_session_goes_on(
        chat_server, make_client, arguments, says):
    chat_server.push(tool_call("write_file", arguments), text("sorry, retrying later"))
    session = make_client().session(tools=TOOLS)
    session.user("write it")
    replies = _run(session, {})
    call = replies[0].tool_calls[0]
    assert call.arguments is None and says in call.error
    assert call.arguments_json == arguments  # exactly as the model wrote it
    assert replies[1].content == "sorry, retrying later"
    second = chat_server.chat_requests[1].json["messages"]
    assert second[1]["tool_calls"][0]["function"]["arguments"] == arguments
    assert second[2] == {"role": "tool", "tool_call_id": call.id,
                         "content": f"error: {call.error}"}


def test_a_call_to_a_tool_that_was_not_offered_reaches_the_caller_by_its_name(
        chat_server, make_client):
    chat_server.push(tool_call("rm_rf", {"path": "/"}), text("ok"))
    session = make_client().session(tools=TOOLS)
    session.user("go")
    reply = session.ask()
    assert reply.tool_calls[0].name == "rm_rf"
    session.tool_result(reply.tool_calls[0], "error: no tool named rm_rf")
    assert session.ask().content == "ok"


@pytest.mark.parametrize("body, says", [
    (b"not json at all", "not JSON"),
    (b"<html><body>502 Bad Gateway</body></html>", "not JSON"),
    (b"", "not JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    (b"[" * 100_000, "too deeply"),
    (b"{}", "no choices"),
    (b'{"choices": []}', "choices are empty"),
    (b'{"choices": "none"}', "choices is a str"),
    (b'{"choices": [{"finish_reason": "stop"}]}', "no choices[0].message"),
    (b'{"choices": [{"message": {"content": 7}}]}', "content is not text"),
    (b'{"choices": [{"message": {"tool_calls": {"id": "x"}}}]}', "tool_calls is not a list"),
    (b'{"choices": [{"message": {"tool_calls": [{"function": {"name": "fly", "arguments": "{}"}}'
     b']}}]}', "no choices[0].message.tool_calls[0].id"),
    (b'{"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}}]}',
     "no choices[0].message.tool_calls[0].function.name"),
    (b'{"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"name": "fly"}}]}}]}',
     "no choices[0].message.tool_calls[0].function.arguments"),
    (b'{"error": {"message": "overloaded"}}', "error object"),
])
def test_a_reply_that_is_not_a_chat_completion_is_a_typed_error_and_is_not_retried(
        chat_server, make_client, body, says):
    chat_server.push(raw(body), text("a proper reply"))
    session = make_client().session()
    session.user("go")
    with pytest.raises(MalformedReply, match=re.escape(says)):
        session.ask()
    assert len(chat_server.chat_requests) == 1
    assert session.exchanges[0].tokens > 0  # the endpoint may have billed it: counted
    # the session goes on: the caller may ask again (or count the turn as proposing nothing)
    assert session.ask().content == "a proper reply"


def test_a_reply_without_usage_is_charged_an_estimate_from_the_bytes(chat_server, make_client):
    chat_server.push(text("no usage here", usage=None))
    session = make_client().session()
    session.user("x" * 300)
    reply = session.ask()
    exchange = session.exchanges[0]
    expected = -(-(exchange.request_bytes + exchange.response_bytes) // 3)
    assert (reply.tokens, reply.estimated) == (expected, True)
    assert exchange.estimated and session.outcome().estimated_tokens == expected
    assert session.budget.spent == expected


def test_usage_without_a_total_counts_prompt_plus_completion(chat_server, make_client):
    body = {"choices": [{"message": {"role": "assistant", "content": "hi"}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 4}}
    chat_server.push(raw(json.dumps(body).encode()))
    session = make_client().session()
    session.user("go")
    assert (session.ask().tokens, session.budget.spent) == (15, 15)


def test_asking_again_before_answering_every_tool_call_is_refused(chat_server, make_client):
    chat_server.push(tool_calls([("fly", {}), ("fly", {})]))
    session = make_client().session(tools=TOOLS)
    session.user("go")
    reply = session.ask()
    session.tool_result(reply.tool_calls[0], "landed")
    with pytest.raises(ValueError, match=reply.tool_calls[1].id):
        session.ask()
    with pytest.raises(ValueError, match="not waiting"):
        session.tool_result("call_nobody", "x")
    assert len(chat_server.chat_requests) == 1


def test_the_server_lists_its_models(chat_server):
    import urllib.request

    with urllib.request.urlopen(chat_server.url + "/models", timeout=5) as response:
        doc = json.load(response)
    assert [m["id"] for m in doc["data"]] == ["scripted"]


def test_every_public_name_of_the_package_resolves():
    import plimsoll_ci.model as model

    assert sorted(model.__all__) == sorted(model._WHERE)
    for name in model.__all__:
        assert getattr(model, name) is not None


def test_a_scripted_answer_can_depend_on_what_was_sent(chat_server, make_client):
    def echo_last_result(got):
        return text(f"you said: {got.json['messages'][-1]['content']}")

    chat_server.push(tool_call("fly", {}), echo_last_result)
    session = make_client().session(tools=TOOLS)
    session.user("go")
    reply = session.ask()
    session.tool_result(reply.tool_calls[0], "landed 2 of 4")
    assert session.ask().content == "you said: landed 2 of 4"


def test_a_lone_surrogate_in_a_reply_is_a_replacement_character_and_the_transcript_still_signs(
        chat_server, make_client):
    # JSON may escape half of a UTF-16 pair (`\ud800`): no UTF-8 and no RFC 8785 text carries it
    chat_server.push(
        tool_calls([("write_file", '{"path": "a.py", "content": "x\\udc00y"}')]),
        text("half \ud800 of a pair, a whole one \U0001f600"))
    session = make_client().session(system="build a controller", tools=TOOLS)
    session.user("go")
    replies = _run(session, {"write_file": "wrote 3 bytes"})
    assert replies[0].tool_calls[0].arguments == {"path": "a.py", "content": "x\ufffdy"}
    assert replies[1].content == "half \ufffd of a pair, a whole one \U0001f600"
    assert re.fullmatch(r"[0-9a-f]{64}", session.digest())

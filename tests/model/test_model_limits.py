"""The bounds of a session: the token budget, retries of 429 / 5xx, Retry-After, timeouts that
bound a whole request however it trickles, the stop, the reply bound, the session's wall clock
and tool-call caps, and absurd `usage` figures."""

from __future__ import annotations

import email.utils
import socket
import time

import pytest
from kit.chat_server import (
    rate_limited,
    raw,
    server_error,
    slow,
    text,
    tool_call,
    tool_calls,
    trickled,
)
from kit.model import KEY, config_for

from plimsoll_ci.model import Budget, EndpointError


def _asked(session, what: str = "go"):
    session.user(what)
    return session.ask()


# --- the budget -------------------------------------------------------------------------------

def test_the_budget_stops_a_session_mid_way_and_no_further_request_is_sent(
        chat_server, make_client):
    chat_server.push(tool_call("fly", {}, usage=(20, 10)), tool_call("fly", {}, usage=(20, 10)),
                     text("never sent"))
    session = make_client(max_tokens=50).session()
    session.user("go")
    first = session.ask()
    session.tool_result(first.tool_calls[0], "landed")
    second = session.ask()  # crosses the line: 60 of 50; returned, it was paid for
    assert second is not None and session.budget.exhausted
    session.tool_result(second.tool_calls[0], "landed")
    assert session.ask() is None
    assert session.stopped == "budget"
    assert session.ask() is None  # stays stopped
    assert len(chat_server.chat_requests) == 2 and chat_server.left == 1
    outcome = session.outcome()
    assert (outcome.stopped, outcome.requests, outcome.tokens) == ("budget", 2, 60)


def test_sessions_of_one_client_share_its_budget(chat_server, make_client):
    chat_server.push(text("one", usage=(40, 20)), text("two"))
    client = make_client(max_tokens=60)
    assert _asked(client.session()).content == "one"
    later = client.session()
    assert _asked(later) is None and later.stopped == "budget"
    assert later.outcome().requests == 0
    assert len(chat_server.chat_requests) == 1


def test_a_session_given_its_own_budget_spends_only_that(chat_server, make_client):
    chat_server.push(text("one", usage=(40, 20)), text("two"))
    client = make_client(max_tokens=1000)
    own = client.session(budget=Budget(10))
    assert _asked(own) is not None
    assert _asked(own) is None and own.stopped == "budget"
    assert client.budget.spent == 0
    assert _asked(client.session()).content == "two"


def test_replies_without_usage_spend_the_budget_by_their_estimate(chat_server, make_client):
    chat_server.push(*[text("x" * 600, usage=None)] * 3)
    session = make_client(max_tokens=300).session()
    assert _asked(session) is not None  # about 230 tokens estimated
    assert _asked(session) is not None  # crosses 300
    assert _asked(session) is None and session.stopped == "budget"
    assert len(chat_server.chat_requests) == 2
    assert session.outcome().estimated_tokens == session.outcome().tokens > 300


# --- rate limits ------------------------------------------------------------------------------

def test_a_429_then_success_is_retried_and_both_requests_are_counted(chat_server, make_client):
    chat_server.push(rate_limited(), text("ok"))
    session = make_client().session()
    assert _asked(session).content == "ok"
    assert [e.status for e in session.exchanges] == [429, 200]
    assert [e.attempt for e in session.exchanges] == [1, 2]
    assert "429" in session.exchanges[0].error
    outcome = session.outcome()
    assert (outcome.stopped, outcome.requests, outcome.replies) == (None, 2, 1)
    assert chat_server.chat_requests[0].body == chat_server.chat_requests[1].body


def test_429s_beyond_the_retry_bound_stop_the_session_as_rate_limited(chat_server, make_client):
    chat_server.push(*[rate_limited()] * 3, text("too late"))
    session = make_client(retries=2).session()
    assert _asked(session) is None
    assert session.stopped == "rate_limit"
    assert _asked(session) is None  # stopped: nothing more is sent
    assert len(chat_server.chat_requests) == 3 and chat_server.left == 1
    assert session.outcome().stopped == "rate_limit"
    assert session.outcome().tokens == 0


@pytest.mark.parametrize("retry_after", ["1", "http-date"])
def test_retry_after_is_honoured(chat_server, make_client, retry_after):
    if retry_after == "http-date":  # whole seconds: 2 s ahead is at least 1 s of waiting
        retry_after = email.utils.formatdate(time.time() + 2, usegmt=True)
    chat_server.push(rate_limited(retry_after), text("ok"))
    session = make_client(backoff=0.01).session()
    assert _asked(session).content == "ok"
    first, second = chat_server.chat_requests
    assert second.at - first.at >= 0.95


def test_a_retry_after_longer_than_the_bound_stops_at_once(chat_server, make_client):
    chat_server.push(rate_limited(3600), text("an hour later"))
    session = make_client(max_wait=5).session()
    start = time.monotonic()
    assert _asked(session) is None
    assert time.monotonic() - start < 3
    assert session.stopped == "rate_limit"
    assert len(chat_server.chat_requests) == 1
    assert "3600" in session.exchanges[0].error


def test_waits_between_retries_grow_and_stay_under_the_bound(chat_server, make_client):
    chat_server.push(*[server_error(503)] * 4, text("ok"))
    session = make_client(retries=4, backoff=0.2, max_wait=0.3).session()
    assert _asked(session).content == "ok"
    at = [r.at for r in chat_server.chat_requests]
    gaps = [b - a for a, b in zip(at, at[1:], strict=False)]
    # uncapped the waits would be 0.1-0.2, 0.2-0.4, 0.4-0.8, 0.8-1.6 s; capped at 0.3 s (jitter
    # keeps each above half) they are 0.1-0.2, then 0.15-0.3 three times
    assert gaps[0] >= 0.1
    assert all(g >= 0.15 for g in gaps[1:])
    assert gaps[3] < 0.7


# --- server errors and timeouts ---------------------------------------------------------------

def test_5xx_is_retried_up_to_the_bound_then_a_typed_failure(chat_server, make_client):
    chat_server.push(server_error(500), server_error(502), server_error(503), text("too late"))
    session = make_client(retries=2).session()
    with pytest.raises(EndpointError, match="gave up after 3 attempt") as caught:
        _asked(session)
    assert caught.value.status == 503
    assert caught.value.exit_code == 2
    assert len(chat_server.chat_requests) == 3 and chat_server.left == 1
    assert [e.status for e in session.exchanges] == [500, 502, 503]
    assert session.stopped is None  # a failure, not a stop: the caller decides


def test_5xx_then_success_is_retried(chat_server, make_client):
    chat_server.push(server_error(500), text("ok"))
    assert _asked(make_client().session()).content == "ok"


def test_a_5xx_asking_for_a_wait_beyond_the_bound_fails_at_once(chat_server, make_client):
    chat_server.push(server_error(503, retry_after=3600), text("later"))
    with pytest.raises(EndpointError, match="longer than the 5 s bound"):
        _asked(make_client(max_wait=5).session())
    assert len(chat_server.chat_requests) == 1


@pytest.mark.parametrize("status, hint", [(400, "not retried"), (401, "--api-key-env"),
                                          (404, "--base-url")])
def test_a_client_error_is_not_retried_and_says_what_to_check(
        chat_server, make_client, status, hint):
    chat_server.push(raw(b'{"error": {"message": "bad request"}}', status), text("never"))
    with pytest.raises(EndpointError, match=hint) as caught:
        _asked(make_client().session())
    assert caught.value.status == status and "bad request" in str(caught.value)
    assert len(chat_server.chat_requests) == 1


def test_a_reply_slower_than_the_timeout_is_abandoned_and_retried(chat_server, make_client):
    chat_server.push(slow(text("late"), delay=5), text("fast"))
    session = make_client(timeout=0.5).session()
    start = time.monotonic()
    assert _asked(session).content == "fast"
    assert time.monotonic() - start < 3
    assert session.exchanges[0].status is None
    assert "no answer within 0.5 s" in session.exchanges[0].error


def test_a_body_that_stalls_after_the_headers_times_out_too(chat_server, make_client):
    chat_server.push(slow(text("late"), stall=5), slow(text("late"), stall=5))
    session = make_client(timeout=0.5, retries=1).session()
    with pytest.raises(EndpointError, match="no answer within") as caught:
        _asked(session)
    assert caught.value.status is None
    assert len(chat_server.chat_requests) == 2


def test_a_refused_connection_is_retried_then_a_typed_failure(make_client):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    session = make_client(base_url=f"http://127.0.0.1:{port}/v1", retries=1).session()
    with pytest.raises(EndpointError, match="connection failed") as caught:
        _asked(session)
    assert caught.value.status is None
    assert len(session.exchanges) == 2
    assert KEY not in str(caught.value)


# --- whole-request deadlines, the stop, the reply bound ----------------------------------------

def test_a_chunked_reply_trickling_a_byte_at_a_time_is_cut_at_the_request_timeout(
        chat_server, make_client):
    # 40 bytes at 4 a second: each byte came well within any per-read timeout, and the whole
    # reply would take 10 s per attempt; the request timeout bounds the whole request
    slow_reply = trickled(text("x" * 40), every=0.25)
    chat_server.push(slow_reply, slow_reply)
    session = make_client(timeout=1.0, retries=1).session()
    start = time.monotonic()
    with pytest.raises(EndpointError, match="no answer within 1 s") as caught:
        _asked(session)
    assert time.monotonic() - start < 4.0  # two attempts of 1 s, a short wait between
    assert caught.value.status is None and len(chat_server.chat_requests) == 2


def test_stopping_the_run_abandons_a_trickling_request_at_once(chat_server):
    import threading

    from plimsoll_ci.model import ModelClient

    chat_server.push(trickled(text("x" * 400), every=0.25))
    stop = threading.Event()
    client = ModelClient(config_for(chat_server.url, timeout=60.0),
                         environ={"OPENAI_API_KEY": KEY}, cancel=stop)
    session = client.session()
    threading.Timer(0.5, stop.set).start()
    start = time.monotonic()
    with pytest.raises(EndpointError, match="abandoned"):
        _asked(session)
    assert time.monotonic() - start < 1.5
    assert len(chat_server.chat_requests) == 1  # not retried


def test_a_reply_over_the_size_bound_is_an_error_and_is_not_retried(
        chat_server, make_client, monkeypatch):
    from plimsoll_ci.model import transport

    monkeypatch.setattr(transport, "MAX_REPLY_BYTES", 4096)
    chat_server.push(text("x" * 10_000), text("x" * 10_000))
    with pytest.raises(EndpointError, match=r"over the bound of one reply \(4096 bytes\); not retried"):
        _asked(make_client(retries=2).session())
    assert len(chat_server.chat_requests) == 1


# --- a session's wall clock and tool-call caps --------------------------------------------------

def test_a_session_past_its_wall_clock_stops_and_a_request_in_flight_is_cut(
        chat_server, make_client):
    chat_server.push(text("first"), trickled(text("x" * 400), every=0.25))
    session = make_client(session_seconds=1.5, timeout=30.0).session()
    start = time.monotonic()
    assert _asked(session).content == "first"
    assert _asked(session) is None  # cut when the session's time ran out, mid-trickle
    assert session.stopped == "time_limit" and session.outcome().stopped == "time_limit"
    assert time.monotonic() - start < 2.5
    assert session.ask() is None and len(chat_server.chat_requests) == 2


def test_tool_calls_over_the_caps_are_answered_by_the_session_and_never_reach_the_caller(
        chat_server, make_client):
    chat_server.push(tool_calls([("fly", {})] * 5), tool_calls([("fly", {})] * 2),
                     text("never sent"))
    session = make_client(calls_per_reply=2, calls_per_session=3).session()
    first = _asked(session)
    assert (len(first.tool_calls), first.dropped) == (2, 3)
    for call in first.tool_calls:
        session.tool_result(call, "landed")
    second = session.ask()
    assert (len(second.tool_calls), second.dropped) == (1, 1)  # one call of the 3 left
    sent = chat_server.chat_requests[1].json["messages"]
    dropped = [m["content"] for m in sent if m["role"] == "tool"][2:]
    assert dropped == ["error: not run: at most 2 tool calls of one reply are run (this was "
                       f"call {n} of 5)" for n in (3, 4, 5)]
    session.tool_result(second.tool_calls[0], "landed")
    assert session.ask() is None and session.stopped == "tool_calls"
    assert len(chat_server.chat_requests) == 2


# --- absurd usage -------------------------------------------------------------------------------

@pytest.mark.parametrize("total", [2**60, 10**40])
def test_an_absurd_usage_is_recorded_as_given_spends_the_budget_and_still_signs(
        chat_server, make_client, total):
    from plimsoll_ci.attest.canonical import dumps

    chat_server.push(text("huge", usage=(total, 0)), text("never sent"))
    session = make_client().session()
    reply = _asked(session)
    assert reply.tokens == 2**53 - 1 and session.budget.exhausted
    assert session.ask() is None and session.stopped == "budget"
    doc = session.transcript()
    assert doc["exchanges"][0]["reported_tokens"] == str(total)
    assert doc["outcome"]["tokens"] == 2**53 - 1
    dumps(doc)  # RFC 8785 carries it: no ValueError
    assert len(session.digest()) == 64


def test_a_usage_number_too_long_to_read_is_a_malformed_reply(chat_server, make_client):
    from plimsoll_ci.model import MalformedReply

    body = b'{"choices": [{"message": {"content": "hi"}}], "usage": {"total_tokens": ' + \
        b"9" * 5000 + b"}}"
    chat_server.push(raw(body))
    with pytest.raises(MalformedReply, match="number too long"):
        _asked(make_client().session())

"""The bounds of a session: the token budget, retries of 429 / 5xx, Retry-After, timeouts."""

from __future__ import annotations

import email.utils
import socket
import time

import pytest
from chat_server import rate_limited, raw, server_error, slow, text, tool_call
from modelkit import KEY

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

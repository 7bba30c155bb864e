"""An endpoint (or a gateway) that echoes the `Authorization` header it got: the key is scrubbed
from every reply before anything else sees it, and from every error, transcript and recording,
however it is reflected (plain, JSON-escaped, base64)."""

from __future__ import annotations

import json
import signal

import pytest
from kit.chat_server import Answer, ChatServer, Received, completion_bytes, raw, reflect, text
from kit.model import KEY, carries_key, config_for, start_recorder

from plimsoll_ci.model import EndpointError, ModelClient
from plimsoll_ci.scrub import Scrubber

FORMS = ("plain", "json", "base64")


def echoing(form: str):
    """A reply whose text, tool name and tool arguments all carry the header it got."""
    def answer(got: Received) -> Answer:
        echo = reflect(got, form)
        args = '{\\"path\\":\\"controller.py\\",\\"content\\":\\"# ' + echo + '\\"}'
        return raw(completion_bytes(f"you sent {echo}", [(echo, args)]))
    return answer


@pytest.mark.parametrize("form", FORMS)
def test_a_key_the_endpoint_echoes_in_a_reply_reaches_no_caller_and_no_transcript(
        chat_server, make_client, form):
    chat_server.push(echoing(form), text("done"))
    session = make_client().session(system="s")
    session.user("go")
    reply = session.ask()
    assert "[redacted]" in reply.content
    call = reply.tool_calls[0]
    session.tool_result(call, "ok")
    assert session.ask().content == "done"
    seen = [reply.content, call.name, call.arguments_json, json.dumps(call.arguments),
            json.dumps(session.transcript()), repr(session.exchanges)]
    for shown in seen:
        assert carries_key(shown) == [], shown
    # what goes back to the endpoint on the next turn carries no key either (the header aside)
    assert carries_key(chat_server.chat_requests[1].body) == []


@pytest.mark.parametrize("form", FORMS)
def test_a_401_whose_body_names_the_key_is_an_error_without_it(chat_server, make_client, form):
    def refused(got: Received) -> Answer:
        body = ('{"error": {"message": "Incorrect API key provided: ' + reflect(got, form)
                + '"}}')
        return raw(body.encode(), 401)

    chat_server.push(refused)
    session = make_client().session()
    session.user("go")
    with pytest.raises(EndpointError) as caught:
        session.ask()
    assert caught.value.status == 401
    for shown in (str(caught.value), repr(session.exchanges), json.dumps(session.transcript())):
        assert carries_key(shown) == [], shown


def test_an_error_names_the_base_url_given_not_the_proxy_in_between(chat_server):
    chat_server.push(raw(b'{"error": {"message": "no"}}', 400))
    client = ModelClient(config_for("https://models.example.invalid/v1"),
                         environ={"OPENAI_API_KEY": KEY}, via=chat_server.url)
    session = client.session()
    session.user("go")
    with pytest.raises(EndpointError) as caught:
        session.ask()
    assert str(caught.value).startswith("https://models.example.invalid/v1/chat/completions: ")
    assert str(chat_server.port) not in str(caught.value)
    assert session.transcript()["base_url"] == "https://models.example.invalid/v1"


@pytest.mark.parametrize("form", FORMS)
def test_the_recording_proxy_scrubs_an_echoed_key_from_what_it_records(tmp_path, form):
    recorded = tmp_path / "recorded"
    with ChatServer([echoing(form), text("done")]) as server:
        proc, proxy = start_recorder(server.origin, recorded)
        try:
            client = ModelClient(config_for(proxy + "/v1"), environ={"OPENAI_API_KEY": KEY})
            session = client.session()
            session.user("go")
            reply = session.ask()
            session.tool_result(reply.tool_calls[0], "ok")
            session.ask()
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=20)
    bodies = sorted(recorded.glob("*.response.body"))
    assert len(bodies) == 2 and b"[redacted]" in bodies[0].read_bytes()
    for path in recorded.iterdir():
        assert carries_key(path.read_bytes()) == [], path.name
    # the client's digest of an answer is the recording's: both scrubbed alike
    meta = json.loads((recorded / "000001.response.json").read_text())
    assert meta["body_sha256"] == session.exchanges[0].response_sha256


@pytest.mark.parametrize("cut", [1, 7, 50])
def test_a_key_cut_across_the_pieces_of_a_stream_is_still_scrubbed(cut):
    from plimsoll_ci.scrub import streaming

    data = (b"data: {\"x\": \"" + reflect_bytes() + b"\"}\n\n") * 3
    out: list[bytes] = []
    feed = streaming(Scrubber([f"Bearer {KEY}"]), out.append)
    for i in range(0, len(data), cut):
        feed(data[i:i + cut])
    feed(None)
    assert carries_key(b"".join(out)) == [] and b"".join(out).count(b"[redacted]") == 6


def reflect_bytes() -> bytes:
    import base64

    return KEY.encode() + b" " + base64.b64encode(b"k=" + KEY.encode())


def test_a_value_too_short_to_be_an_issued_key_is_left_alone():
    assert Scrubber(["x"]).bytes(b"xx x") == b"xx x"
    assert Scrubber(["Bearer x"]).text("Bearer x") == "Bearer x"

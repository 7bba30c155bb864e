"""The flags every model command takes, and the key: never from argv, never shown, redacted when
recorded."""

from __future__ import annotations

import argparse
import json
import signal
from pathlib import Path

import pytest
from kit.chat_server import ChatServer, text, tool_call
from kit.model import KEY, config_for, start_recorder

from plimsoll_ci.commands._model import add_model_arguments, model_config_from, model_configs_from
from plimsoll_ci.errors import BadInput
from plimsoll_ci.model import EndpointError, ModelClient, ModelConfig

ROOT = Path(__file__).resolve().parents[2]


def _args(argv: list[str], compare: bool = False) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="plimsoll-ci demo-model")
    add_model_arguments(parser, compare=compare)
    return parser.parse_args(argv)


GOOD = ["--base-url", "http://127.0.0.1:8000/v1", "--model", "m", "--max-tokens", "1000"]


def test_the_flags_make_a_checked_config(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    config = model_config_from(_args(GOOD + ["--request-timeout", "30", "--max-retries", "1"]))
    assert config == ModelConfig(base_url="http://127.0.0.1:8000/v1", model="m",
                                 max_tokens=1000, timeout=30.0, retries=1)
    assert KEY not in repr(config)


def test_a_comparing_command_gets_one_config_per_model():
    args = _args(GOOD[:2] + ["--model", "a", "--model", "b", "--max-tokens", "9"], compare=True)
    configs = model_configs_from(args, environ={"OPENAI_API_KEY": KEY})
    assert [c.model for c in configs] == ["a", "b"]
    assert {c.max_tokens for c in configs} == {9}


@pytest.mark.parametrize("argv, environ, names", [
    (GOOD, {}, "environment variable OPENAI_API_KEY is not set"),
    (GOOD, {"OPENAI_API_KEY": "   "}, "OPENAI_API_KEY is not set or empty"),
    (GOOD + ["--api-key-env", "VENDOR_KEY"], {"OPENAI_API_KEY": KEY},
     "environment variable VENDOR_KEY is not set"),
    (GOOD[:4], {"OPENAI_API_KEY": KEY}, "--max-tokens is required"),
    (GOOD[:4] + ["--max-tokens", "0"], {"OPENAI_API_KEY": KEY}, "--max-tokens 0"),
    (GOOD[:4] + ["--max-tokens", "-5"], {"OPENAI_API_KEY": KEY}, "--max-tokens -5"),
    (GOOD[2:], {"OPENAI_API_KEY": KEY}, "--base-url is required"),
    (GOOD[:2] + GOOD[4:], {"OPENAI_API_KEY": KEY}, "--model is required"),
    (["--base-url", "ftp://h/v1"] + GOOD[2:], {"OPENAI_API_KEY": KEY}, "not an http"),
])
def test_a_command_refuses_to_start_without_the_key_or_the_budget_with_exit_2(
        argv, environ, names):
    with pytest.raises(BadInput) as caught:
        model_config_from(_args(argv), environ=environ)
    assert caught.value.exit_code == 2
    assert names in str(caught.value)


def test_the_client_itself_refuses_without_the_key():
    config = config_for("http://127.0.0.1:9/v1", api_key_env="NO_SUCH_KEY_VAR")
    with pytest.raises(BadInput, match="NO_SUCH_KEY_VAR"):
        ModelClient(config, environ={})


@pytest.mark.parametrize("argv", [
    GOOD + ["--api-key", KEY],
    GOOD + [f"--api-key={KEY}"],
    GOOD + ["--api-key-env", KEY],  # a key where the variable's name goes
    ["--base-url", f"http://user:{KEY}@127.0.0.1:8000/v1"] + GOOD[2:],
    ["--base-url", f"http://127.0.0.1:8000/v1?key={KEY}"] + GOOD[2:],
])
def test_a_key_on_the_command_line_is_refused_and_never_echoed(argv, capsys):
    with pytest.raises(BadInput) as caught:
        model_config_from(_args(argv), environ={"OPENAI_API_KEY": KEY})
    assert KEY not in str(caught.value)
    assert "--api-key-env" in str(caught.value)
    out, err = capsys.readouterr()
    assert KEY not in out + err


def test_a_key_a_header_cannot_carry_is_refused_without_showing_it():
    with pytest.raises(BadInput, match="cannot carry") as caught:
        model_config_from(_args(GOOD), environ={"OPENAI_API_KEY": KEY + "\nX-Evil: 1"})
    assert KEY not in str(caught.value)


def test_the_key_never_appears_in_output_exceptions_or_transcripts(capfd):
    # the server wants another key and echoes the header it got, as careless servers do
    with ChatServer([text("unused")], key="sk-the-right-one") as server:
        client = ModelClient(config_for(server.url), environ={"OPENAI_API_KEY": KEY})
        session = client.session(system="s")
        session.user("hello")
        with pytest.raises(EndpointError) as caught:
            session.ask()
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    assert caught.value.status == 401
    assert "[redacted]" in str(caught.value)
    seen = [str(caught.value), repr(caught.value), repr(client), repr(client.config),
            repr(client._key), str(client._key), json.dumps(session.transcript()),
            repr(session.exchanges), repr(session.outcome())]
    out, err = capfd.readouterr()
    for text_seen in seen + [out, err]:
        assert KEY not in text_seen


def test_a_session_through_the_recording_proxy_is_recorded_with_the_key_redacted(tmp_path):
    recorded = tmp_path / "recorded"
    with ChatServer([tool_call("fly", {}), text("landed")], key=KEY) as server:
        proc, proxy = start_recorder(server.origin, recorded)
        try:
            client = ModelClient(config_for(proxy + "/v1"), environ={"OPENAI_API_KEY": KEY})
            session = client.session(system="build a controller")
            session.user("fly it")
            reply = session.ask()
            session.tool_result(reply.tool_calls[0], "landed 4 of 4")
            assert session.ask().content == "landed"
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=20)
        # the proxy forwarded the key: the server, which checks it, answered both requests
        assert [r.headers["authorization"] for r in server.chat_requests] == [f"Bearer {KEY}"] * 2
    metas = [json.loads(p.read_text()) for p in sorted(recorded.glob("*.request.json"))]
    assert len(metas) == 2
    for meta in metas:
        headers = {name.lower(): value for name, value in meta["headers"]}
        assert headers["authorization"] == "[redacted]"
        assert "Authorization" in meta["redacted"]
    # the recording holds exactly the bodies the session sent, and the key nowhere
    assert [m["body_sha256"] for m in metas] == [e.request_sha256 for e in session.exchanges]
    for path in recorded.iterdir():
        assert KEY.encode() not in path.read_bytes(), path.name


def _self_signed(folder: Path) -> tuple[str, str]:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_file), str(key_file)


def test_an_https_server_whose_certificate_does_not_verify_never_gets_the_key(tmp_path):
    with ChatServer([text("unused")], tls=_self_signed(tmp_path)) as server:
        client = ModelClient(config_for(server.url), environ={"OPENAI_API_KEY": KEY})
        session = client.session()
        session.user("hello")
        with pytest.raises(EndpointError, match="certificate did not verify"):
            session.ask()
        assert server.requests == []  # no request, so no header, ever reached it
    assert len(session.exchanges) == 1  # not retried


def test_the_session_bounds_have_flags_with_defaults_and_refuse_nonsense():
    config = model_config_from(_args(GOOD), environ={"OPENAI_API_KEY": KEY})
    assert (config.session_seconds, config.calls_per_reply, config.calls_per_session) == (
        1800.0, 8, 120)
    config = model_config_from(_args(GOOD + ["--session-seconds", "60",
                                             "--max-tool-calls-per-reply", "2",
                                             "--max-tool-calls", "9"]),
                               environ={"OPENAI_API_KEY": KEY})
    assert (config.session_seconds, config.calls_per_reply, config.calls_per_session) == (
        60.0, 2, 9)
    for bad, says in ((["--session-seconds", "0"], "--session-seconds 0"),
                      (["--max-tool-calls", "0"], "--max-tool-calls 0"),
                      (["--max-tokens", str(2**53)], "at most 9007199254740991")):
        with pytest.raises(BadInput, match=says):
            model_config_from(_args(GOOD + bad), environ={"OPENAI_API_KEY": KEY})

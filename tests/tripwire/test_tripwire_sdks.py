"""The recorder and the tripwire under the real `openai`, `anthropic` and `google-genai` SDKs.

A harness session (`tests/kit/sdk_session.py`) talks to a local endpoint answering in each API's shape
(`tests/kit/model_endpoint.py`) through `plimsoll-ci record`, streaming and not. Every sealed value is found
at the place it rode in, no near miss is found, streams arrive unchanged, and no report format
prints a sealed value or an API key.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kit.model_endpoint import serve
from kit.sdk_session import KEYS, NEAR_MISSES, SEALED_FILE, SEALED_VALUES, run

from plimsoll_ci.cli import main
from plimsoll_ci.tripwire.recorder import start_in_thread
from plimsoll_ci.tripwire.requests import scan_requests
from plimsoll_ci.withheld import build_set, dumps, parse

FORMATS = ("text", "json", "sarif", "markdown")


class Session:
    def __init__(self, folder: Path, expect: list, streamed: list[str], received: list) -> None:
        self.folder, self.expect, self.streamed, self.received = folder, expect, streamed, received
        doc, _ = build_set(values=SEALED_VALUES, files=[SEALED_FILE], tag="plimsoll-sealed/1")
        self.sealed = folder.parent / "sealed.json"
        self.sealed.write_text(dumps(doc))
        self.result = scan_requests(str(folder), parse(doc))
        self.hits = {(int(f.path[:6]), f.chain, f.entry) for f in self.result.findings}


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    folder = tmp_path_factory.mktemp("sdks") / "requests"
    streamed: list[str] = []
    with serve() as endpoint:
        server, url = start_in_thread(endpoint.url, str(folder))
        try:
            expect = run(url, streamed)
        finally:
            server.shutdown()
            server.server_close()
    return Session(folder, expect, streamed, endpoint.received)


def test_every_request_of_the_session_was_recorded_once(session: Session) -> None:
    n = session.expect[-1].seq
    assert len(session.received) == n
    assert sorted(p.name for p in session.folder.glob("*.request.json")) == [
        f"{i:06d}.request.json" for i in range(1, n + 1)]


def test_every_sealed_value_is_found_at_the_place_the_sdk_put_it(session: Session) -> None:
    wanted = [(e.seq, e.chain, e.entry) for e in session.expect if e.chain]
    assert len(wanted) == 38  # system, user, tool, tool-call, enum, header, query, key, files...
    assert [w for w in wanted if w not in session.hits] == []


def test_nothing_else_is_found_and_near_misses_are_not_hits(session: Session) -> None:
    wanted = {(e.seq, e.chain, e.entry) for e in session.expect if e.chain}
    assert session.hits == wanted
    clean = {e.seq for e in session.expect if e.chain is None}
    assert len(clean) == 4
    for seq in clean:  # they did carry the near misses
        assert NEAR_MISSES[:20].encode() in (session.folder / f"{seq:06d}.request.body").read_bytes()


def test_streams_reach_the_sdks_unchanged(session: Session) -> None:
    assert session.streamed == ["piece 0 xxxxxxpiece 1 xxxxxxpiece 2 xxxxxx"] * 4


def test_api_keys_are_forwarded_but_never_recorded(session: Session) -> None:
    sent = "\n".join(json.dumps(h) for _m, _p, h, _b in session.received)
    recorded = "\n".join(p.read_text() for p in session.folder.glob("*.json"))
    for key in KEYS.values():
        assert key in sent
        assert key not in recorded
    assert "[redacted]" in recorded


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_report_format_prints_a_sealed_value_or_an_api_key(
        session: Session, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    code = main(["tripwire", "--sealed", str(session.sealed), "--requests", str(session.folder),
                 "--format", fmt])
    out = capsys.readouterr()
    printed = (out.out + out.err).lower()
    assert code == 1
    assert "seeds.txt:1" in printed and "[withheld]" in printed
    for _id, value in SEALED_VALUES:
        assert value.lower() not in printed, (fmt, value)
    for key in KEYS.values():
        assert key.lower() not in printed

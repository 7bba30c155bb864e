"""The recorder's folder: one recorder per folder, no recording overwritten, nothing half-written.

A full disk is a real one (a 256 KiB tmpfs); the tripwire reads only complete recordings and
notes what a failed or cut write left.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from plimsoll_ci.cli import main
from plimsoll_ci.errors import BadInput
from plimsoll_ci.tripwire.recorder import make_server, start_in_thread
from plimsoll_ci.withheld import build_set, dumps

LEAK = {"messages": [{"role": "user", "content": "the held-out seed is 3107713414"}]}


def _sealed(tmp_path: Path) -> Path:
    doc, _ = build_set(values=[("seeds.txt:1", "3107713414")], tag="plimsoll-sealed/1")
    path = tmp_path / "sealed.json"
    path.write_text(dumps(doc))
    return path


def _tripwire(sealed: Path, requests: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["tripwire", "--sealed", str(sealed), "--requests", str(requests)])
    out = capsys.readouterr()
    return code, out.out + out.err


def _leftovers(folder: Path) -> list[str]:
    """Files a write left behind: temporaries, or a body without its request.json."""
    names = {p.name for p in folder.iterdir()}
    return sorted(n for n in names if n.endswith((".tmp", ".part")) or (
        n.endswith(".request.body") and n.replace(".body", ".json") not in names))


def test_a_second_recorder_on_the_same_folder_refuses_to_start(upstream, tmp_path) -> None:
    out = tmp_path / "requests"
    first, url = start_in_thread(upstream.url, str(out))
    try:
        with pytest.raises(BadInput, match="another `plimsoll-ci record` is writing"):
            make_server(upstream.url, str(out))
        proc = subprocess.run([sys.executable, "-m", "plimsoll_ci", "record", "--upstream",
                               upstream.url, "--out", str(out), "--port", "0"],
                              capture_output=True, text=True, timeout=60, check=False)
        assert proc.returncode == 2, proc.stderr
        assert "give each recorder its own --out folder" in proc.stderr
        httpx.post(url + "/v1/chat/completions", json=LEAK).raise_for_status()
    finally:
        first.shutdown()
        first.server_close()
    # the first recorder's leak is there; once it stopped, the folder is free again
    assert b"3107713414" in (out / "000001.request.body").read_bytes()
    again = make_server(upstream.url, str(out))
    again.server_close()


def test_the_leak_two_recorders_would_have_overwritten_is_found(upstream, tmp_path,
                                                                capsys) -> None:
    out = tmp_path / "requests"
    leaky, url = start_in_thread(upstream.url, str(out))
    try:
        httpx.post(url + "/v1/chat/completions", json=LEAK).raise_for_status()
        with pytest.raises(BadInput):
            start_in_thread(upstream.url, str(out))  # its clean request never overwrites
    finally:
        leaky.shutdown()
        leaky.server_close()
    code, text = _tripwire(_sealed(tmp_path), out, capsys)
    assert code == 1 and "seeds.txt:1" in text


def test_a_number_already_taken_is_skipped_never_overwritten(upstream, tmp_path) -> None:
    out = tmp_path / "requests"
    server, url = start_in_thread(upstream.url, str(out))
    try:
        (out / "000001.request.body").write_bytes(b"written by someone else")
        httpx.post(url + "/v1/chat/completions", json=LEAK).raise_for_status()
    finally:
        server.shutdown()
        server.server_close()
    assert (out / "000001.request.body").read_bytes() == b"written by someone else"
    doc = json.loads((out / "000002.request.json").read_text())
    body = (out / "000002.request.body").read_bytes()
    assert doc["body_sha256"] == hashlib.sha256(body).hexdigest() and b"3107713414" in body


def test_a_request_the_full_disk_cannot_hold_leaves_nothing_and_the_next_one_fits(
        upstream, small_disk, capfd) -> None:
    out = small_disk.path / "requests"
    server, url = start_in_thread(upstream.url, str(out))
    try:
        small_disk.fill(leave=64 * 1024)
        big = {"messages": [{"role": "user", "content": "x" * 200_000 + " 3107713414"}]}
        response = httpx.post(url + "/v1/chat/completions", json=big, timeout=30)
        assert response.status_code == 500
        assert "not forwarded" in response.json()["error"]["message"]
        assert upstream.received == []
        assert _leftovers(out) == [] and not list(out.glob("*.request.*"))
        # nothing partial keeps the disk full: a small request still fits
        small = httpx.post(url + "/v1/chat/completions", json={"messages": ["hi"]}, timeout=30)
        assert small.status_code == 200, small.text
    finally:
        server.shutdown()
        server.server_close()
    assert "cannot write the recording" in capfd.readouterr().err
    # the number of the request that could not be recorded stays unused: the gap shows it
    assert sorted(p.name for p in out.glob("*.request.json")) == ["000002.request.json"]


class _FillingUpstream(http.server.BaseHTTPRequestHandler):
    """Fills the disk once the request is recorded and forwarded, then answers at length."""

    protocol_version = "HTTP/1.1"
    disk: object

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.disk.fill(leave=0)
        out = json.dumps({"choices": [{"message": {"content": "z" * 100_000}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def test_an_answer_the_full_disk_cannot_hold_is_not_passed_on(small_disk, capfd) -> None:
    up = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), type("U", (_FillingUpstream,), {"disk": small_disk}))
    threading.Thread(target=up.serve_forever, daemon=True).start()
    out = small_disk.path / "requests"
    server, url = start_in_thread(f"http://127.0.0.1:{up.server_address[1]}", str(out))
    try:
        response = httpx.post(url + "/v1/chat/completions", json=LEAK, timeout=30)
    finally:
        server.shutdown()
        server.server_close()
        up.shutdown()
        up.server_close()
    assert response.status_code == 500
    assert "z" * 100 not in response.text
    assert "not passed on" in response.json()["error"]["message"]
    assert "000001: cannot write the response recording" in capfd.readouterr().err
    assert _leftovers(out) == [] and not list(out.glob("*.response.*"))
    assert (out / "000001.request.json").exists()  # what was sent stays recorded


def test_the_tripwire_reads_only_complete_recordings_and_notes_the_rest(tmp_path,
                                                                       capsys) -> None:
    out = tmp_path / "requests"
    out.mkdir()
    (out / ".plimsoll-record.lock").write_bytes(b"")
    body = json.dumps({"messages": [{"role": "user", "content": "fly"}]}).encode()
    (out / "000001.request.body").write_bytes(body)
    (out / "000001.request.json").write_text(json.dumps({
        "format": "plimsoll-record/1", "seq": 1, "method": "POST", "target": "/v1/x",
        "headers": [["Content-Type", "application/json"]], "body": "000001.request.body",
        "body_bytes": len(body), "body_sha256": hashlib.sha256(body).hexdigest()}))
    # what failed writes left: never forwarded
    (out / "000002.request.body").write_bytes(json.dumps(LEAK).encode())
    (out / ".000003.request.body.4242.0.tmp").write_bytes(json.dumps(LEAK).encode())
    (out / "000004.request.json.part").write_bytes(b'{"format": "plimsoll-record/1", "tar')
    code, text = _tripwire(_sealed(tmp_path), out, capsys)
    assert code == 0, text
    assert "tripwire: 0 hits in 2 recorded files" in text
    assert re.search(r"note: 000002.request.body: no 000002.request.json beside it.*never "
                     r"forwarded it; not read", text)
    assert "note: .000003.request.body.4242.0.tmp: an unfinished write" in text
    assert "note: 000004.request.json.part: an unfinished write" in text


def test_a_body_file_outside_a_recorders_folder_is_still_read(tmp_path, capsys) -> None:
    out = tmp_path / "bodies"
    out.mkdir()
    (out / "000002.request.body").write_bytes(json.dumps(LEAK).encode())
    code, text = _tripwire(_sealed(tmp_path), out, capsys)
    assert code == 1 and "seeds.txt:1" in text


def test_the_recorder_releases_the_folder_when_it_stops(upstream, tmp_path) -> None:
    out = tmp_path / "requests"
    proc = subprocess.Popen([sys.executable, "-m", "plimsoll_ci", "record", "--upstream",
                             upstream.url, "--out", str(out), "--port", "0"],
                            stderr=subprocess.PIPE, text=True)
    try:
        assert "listening on" in proc.stderr.readline()
    finally:
        proc.kill()  # even killed, the lock goes with the process
        proc.wait(timeout=20)
    deadline = time.monotonic() + 10
    while True:
        try:
            make_server(upstream.url, str(out)).server_close()
            break
        except BadInput:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def test_concurrent_requests_are_recorded_one_to_one(upstream, proxy) -> None:
    from concurrent.futures import ThreadPoolExecutor

    url, out = proxy

    def send(i: int) -> int:
        return httpx.post(url + "/v1/chat/completions", json={"messages": [f"turn {i}"]},
                          timeout=60).status_code

    with ThreadPoolExecutor(20) as pool:
        assert list(pool.map(send, range(40))) == [200] * 40
    bodies = set()
    for meta_path in out.glob("*.request.json"):
        meta = json.loads(meta_path.read_text())
        body = (out / meta["body"]).read_bytes()
        assert meta["body_sha256"] == hashlib.sha256(body).hexdigest()
        bodies.add(body)
    assert len(bodies) == 40 and _leftovers(out) == []
    assert sorted(int(p.name[:6]) for p in out.glob("*.request.json")) == list(range(1, 41))

"""Fixtures for the tripwire tests: a local upstream model endpoint, a recording proxy, a small
disk that really fills up."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest


class Upstream(NamedTuple):
    url: str
    received: list  # (method, path, headers dict, body bytes) per request
    release: threading.Event  # a streaming answer waits on this before its last event
    released: list  # per streaming answer: True when the client released it in time


class _UpstreamHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    received: list
    release: threading.Event
    released: list

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.received.append((self.command, self.path, dict(self.headers), body))
        wants_stream = False
        if self.headers.get("Content-Type", "").startswith("application/json"):
            try:
                wants_stream = bool(json.loads(body).get("stream"))
            except ValueError:
                pass
        if wants_stream:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            events = [b'data: {"delta": "one"}\n\n', None, b'data: {"delta": "two"}\n\n',
                      b"data: [DONE]\n\n"]
            for ev in events:
                if ev is None:
                    # the client must have seen the first event before the rest is produced
                    self.released.append(self.release.wait(10))
                    continue
                self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            return
        out = json.dumps({"id": "chatcmpl-1", "choices": [{"message": {
            "role": "assistant", "content": "a guess"}}], "got_bytes": len(body)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_PUT = do_POST


class _Upstream(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    received: list = []
    released: list = []
    release = threading.Event()
    handler = type("H", (_UpstreamHandler,), {"received": received, "release": release,
                                              "released": released})
    # (a backlog for many requests at once, as the recorder has: socketserver's is 5)
    server = _Upstream(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                     daemon=True).start()
    try:
        yield Upstream(f"http://127.0.0.1:{server.server_address[1]}", received, release,
                       released)
    finally:
        release.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def proxy(upstream: Upstream, tmp_path):
    """(base URL of a recording proxy in front of `upstream`, the folder it records into)."""
    from plimsoll_ci.tripwire.recorder import start_in_thread

    out = tmp_path / "recorded"
    server, url = start_in_thread(upstream.url, str(out))
    try:
        yield url, out
    finally:
        server.shutdown()
        server.server_close()


class SmallDisk(NamedTuple):
    path: Path  # a 256 KiB tmpfs

    def fill(self, leave: int) -> None:
        """Fill the disk with one file until about `leave` bytes are free."""
        st = os.statvfs(self.path)
        free = st.f_bavail * st.f_frsize
        (self.path / "filler").write_bytes(b"\0" * max(0, free - leave))

    def empty(self) -> None:
        """Remove the filler: the disk has room again."""
        (self.path / "filler").unlink(missing_ok=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[SmallDisk]:
    """A 256 KiB tmpfs mounted for the test, so a write fails the way it does on a full disk.

    Mounting needs root (CI runs as root); elsewhere the test is skipped with the reason, and
    with CI=true it fails instead.
    """
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", str(mnt)],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        why = f"cannot mount a small tmpfs: {r.stderr.strip() or 'mount failed'}"
        if os.environ.get("CI") == "true":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    try:
        yield SmallDisk(mnt)
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)

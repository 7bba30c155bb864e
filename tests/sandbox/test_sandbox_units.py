"""Tiers, the protocol codec and the rootfs builder: no sandbox needed."""

from __future__ import annotations

import base64
import math
import struct

import pytest

from plimsoll_ci import tiers
from plimsoll_ci.errors import BadInput, SandboxError
from plimsoll_ci.sandbox.runner import PackError, pack, unpack

GVISOR_PROBES = {
    "gvisor_banner": True, "kernel_log_head": "<6>[0.0] Starting gVisor...",
    "interfaces": ["lo"], "root_readonly": True, "code_readonly": True,
    "writes": {"/": "refused (Read-only file system)"},
    "canary": "unreadable (No such file or directory)",
}


def test_tiers_are_ordered_weakest_first():
    assert [tiers.rank(t) for t in ("process", "container", "kernel", "vm")] == [0, 1, 2, 3]
    with pytest.raises(BadInput):
        tiers.rank("hypervisor")


@pytest.mark.parametrize("broken, expected", [
    ({}, "kernel"),
    ({"gvisor_banner": False}, "container"),
    ({"interfaces": ["lo", "eth0"]}, "process"),
    ({"root_readonly": False}, "process"),
    ({"code_readonly": False}, "process"),
    ({"writes": {"/controller": "writable"}}, "process"),
    ({"writes": {"/dev/shm": "writable"}}, "process"),
    ({"canary": "readable"}, "process"),
])
def test_a_failed_start_up_check_drops_the_tier(broken, expected):
    seen = tiers.checks({**GVISOR_PROBES, **broken})
    tier, notes = tiers.effective("kernel", seen)
    assert tier == expected
    assert bool(notes) == (expected != "kernel")


def test_min_tier_refuses_a_weaker_tier_and_never_falls_back():
    tiers.require("kernel", "kernel", "x")
    tiers.require("kernel", None, "x")
    with pytest.raises(SandboxError, match="weaker than --min-tier kernel"):
        tiers.require("process", "kernel", "provider process")


ROWS = [
    {"t": 0.01, "pos": [1.0, -0.0, 3.141592653589793], "gate": 0},
    {"t": 1e-300, "pos": [5e-324, 1.7976931348623157e308, 0.1 + 0.2], "gate": 3},
]


def test_pack_round_trips_floats_bit_for_bit():
    packed = pack(ROWS)
    assert "f64" in packed
    back = unpack(packed)
    assert back == ROWS
    assert [math.copysign(1, r["pos"][1]) for r in back] == [-1.0, 1.0]
    assert all(type(r["gate"]) is int for r in back)


@pytest.mark.parametrize("rows", [
    [{"thrust": True, "roll": 0.0}],  # a bool stays a bool (the simulator refuses it)
    [{"thrust": "5"}],
    [None, {"thrust": 1.0}],
    [{"thrust": 1.0}, {"thrust": 1}],  # mixed types
    [{"thrust": 1.0}, {"roll": 1.0}],  # mixed keys
    [{"thrust": 2**60}],
])
def test_anything_not_plain_numbers_goes_as_json_unchanged(rows):
    packed = pack(rows)
    assert "json" in packed
    assert unpack(packed) == rows


def test_nan_survives_packing_so_the_simulator_can_refuse_it():
    back = unpack(pack([{"thrust": float("nan")}]))
    assert math.isnan(back[0]["thrust"])


def _blob(n: int) -> str:
    return base64.b64encode(struct.pack(f"<{n}d", *([1.5] * n))).decode()


@pytest.mark.parametrize("packed, why", [
    ("x", "not an object"),
    ({"json": {"a": 1}}, "not a list"),
    ({"cols": [["a", 0, "float"]], "n": 2}, "missing"),
    ({"cols": [["a", 0, "float"]], "n": 2, "f64": _blob(3)}, "expected 16"),
    ({"cols": [["a", 0, "float"]], "n": 1, "f64": "!!!"}, "not base64"),
    ({"cols": [["a", 0, "weird"]], "n": 1, "f64": _blob(1)}, "column"),
    ({"cols": [["a", 0, "int"]], "n": 1, "f64": _blob(1)}, "non-integer"),
    ({"cols": [], "n": 1, "f64": ""}, "columns"),
    ({"cols": [["a", 0, "float"]], "n": -1, "f64": ""}, "row count"),
])
def test_unpack_refuses_malformed_batches(packed, why):
    with pytest.raises(PackError, match=why):
        unpack(packed)


def test_rootfs_is_built_once_and_reused(tmp_path, monkeypatch):
    from plimsoll_ci.sandbox import rootfs

    monkeypatch.setenv("PLIMSOLL_CACHE", str(tmp_path))
    first = rootfs.build()
    assert (first.path / "usr/local/bin/python3").exists()
    assert not (first.path / "bin/sh").exists()  # no shell for a controller
    assert first.tarball.stat().st_size > 1_000_000
    again = rootfs.build()
    assert again == first


def test_cpu_meters_count_a_busy_child_and_its_own_children():
    import os
    import subprocess
    import sys
    import time

    from plimsoll_ci.sandbox import cpu

    code = ("import os, time\n"
            "if os.fork() == 0:\n"
            "    t = time.process_time()\n"
            "    while time.process_time() - t < 0.4: pass\n"
            "    os._exit(0)\n"
            "os.wait()\n")
    group = cpu.own_cgroup(f"plimsoll-test-{os.getpid()}", 1 << 30, 64)
    try:
        child = subprocess.Popen([sys.executable, "-c", code],
                                 preexec_fn=group.enter if group else None)
        tree = cpu.ProcTreeMeter(child.pid, relist_every=0.0)
        seen = 0.0
        while child.poll() is None:
            seen = max(seen, tree.seconds())
            time.sleep(0.01)
        assert seen > 0.2  # the grandchild's spin, seen while it ran or once reaped
        if group is not None:
            assert group.meter.seconds() >= 0.4
    finally:
        if group is not None:
            group.remove()


def test_two_runs_writing_the_rootfs_tarball_at_once_both_finish_with_whole_bytes(
        tmp_path, monkeypatch):
    """Shards on one machine build the cache at the same moment: the second writer's rename must
    not find its file taken by the first (it did when both wrote the same `.tar.part`)."""
    from plimsoll_ci.sandbox import rootfs

    root = tmp_path / "root"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python3").write_text("#!/bin/sh\n")
    tarball = tmp_path / "abc.tar"
    real_replace = rootfs.os.replace
    nested = []

    def replace_after_another_writer(src, dst):
        if not nested:  # a second run writes and renames its tarball in between
            nested.append(True)
            rootfs._write_tarball(root, tarball)
        real_replace(src, dst)

    monkeypatch.setattr(rootfs.os, "replace", replace_after_another_writer)
    rootfs._write_tarball(root, tarball)
    monkeypatch.setattr(rootfs.os, "replace", real_replace)
    alone = tmp_path / "alone.tar"
    rootfs._write_tarball(root, alone)
    assert tarball.read_bytes() == alone.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abc.tar", "alone.tar", "root"]
    assert tarball.stat().st_mode & 0o777 == 0o644


_IMPORTER = r'''
import resource, sys
from pathlib import Path
from plimsoll_ci.sandbox import rootfs
tar = Path(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
tag = rootfs.docker_import(rootfs.Rootfs(tar.parent, tar, "f" * 64, "/usr/local/bin/python3"))
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(tag, (after - before) // 1024)
'''


def test_the_rootfs_tarball_is_streamed_to_docker_import_not_read_whole(tmp_path):
    """`docker import` of a 256 MiB tarball through the real docker client, against a small
    server on a unix socket that speaks the three calls it makes: the client's memory grows by
    far less than the tarball."""
    import json
    import os
    import socketserver
    import subprocess
    import sys
    import threading
    from http.server import BaseHTTPRequestHandler

    size = 256 << 20
    tar = tmp_path / "rootfs.tar"
    with open(tar, "wb") as fh:
        fh.truncate(size)  # sparse: costs no disk, reads as zeros
    received = []
    imported = []

    class Docker(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def address_string(self) -> str:
            return "docker"

        def log_message(self, *args) -> None:
            pass

        def _reply(self, code: int, doc: dict) -> None:
            body = json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path.endswith("/version"):
                self._reply(200, {"ApiVersion": "1.41", "Version": "24.0.0"})
            elif imported:
                self._reply(200, {"Id": "sha256:" + "0" * 64})
            else:
                self._reply(404, {"message": "No such image"})

        def do_POST(self) -> None:
            n = 0
            if self.headers.get("Transfer-Encoding") == "chunked":
                while (line := self.rfile.readline()) and (k := int(line.strip() or b"0", 16)):
                    n += len(self.rfile.read(k))
                    self.rfile.readline()
                self.rfile.readline()
            else:
                left = int(self.headers.get("Content-Length", 0))
                while left:
                    got = self.rfile.read(min(left, 1 << 20))
                    n, left = n + len(got), left - len(got)
            received.append(n)
            imported.append(self.path)
            self._reply(200, {"status": "sha256:" + "0" * 64})

    class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
        daemon_threads = True

    sock = tmp_path / "docker.sock"
    server = Server(str(sock), Docker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc = subprocess.run([sys.executable, "-c", _IMPORTER, str(tar)], capture_output=True,
                              text=True, timeout=300,
                              env={**os.environ, "DOCKER_HOST": f"unix://{sock}"})
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    tag, grew_mib = proc.stdout.split()
    assert tag == "plimsoll-python:" + "f" * 16
    assert received == [size] and "/images/create" in imported[0]
    assert int(grew_mib) < 64, f"the import grew the client by {grew_mib} MiB"

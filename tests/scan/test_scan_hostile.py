"""Hostile inputs complete within their bounds, and every bound that is hit is a note."""

from __future__ import annotations

import gzip
import os
import socket
import struct
import threading
import time
import zlib

import pytest
from kit.scan import SEED, make_set, scan_checked, zip_bomb, zip_bytes

from plimsoll_ci.shipscan.scan import Limits, scan_paths

S = SEED.encode()
SEED_ID = "seeds.txt:2"


@pytest.fixture(scope="module")
def wset():
    return make_set()


def _paths_checked(paths, wset, guard, limits=None):
    from plimsoll_ci.shipscan import report

    result = scan_paths([str(p) for p in paths], wset, limits)
    for fmt in report.FORMATS:
        guard.text(report.render(result, fmt), f"the {fmt} report")
    return result


def test_a_zip_bomb_of_a_gigabyte_stops_at_the_bound_with_a_note(wset, leak):
    bomb = zip_bomb(1024)
    assert len(bomb) < 2 * 1024 * 1024  # 1 GiB of zeros in ~1 MB
    limits = Limits(max_decompressed=8 << 20)
    result = scan_checked([("bomb.zip", bomb)], wset, leak, limits)
    assert result.findings == []
    assert any("zeros.bin" in n and "bound" in n for n in result.notes), result.notes


def _gzip_bomb(megabytes: int) -> bytes:
    chunk = bytes(1 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(chunk) + c.flush(zlib.Z_FULL_FLUSH)
    body = block * megabytes + c.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(megabytes):
        crc = zlib.crc32(chunk, crc)
    head = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return head + body + struct.pack("<II", crc, (megabytes << 20) & 0xFFFFFFFF)


def test_a_gzip_bomb_stops_at_the_bound_with_a_note(wset, leak):
    bomb = _gzip_bomb(512)
    assert gzip.decompress(bomb[:0] or gzip.compress(b"")) == b""  # the builder's format is gzip
    result = scan_checked([("bomb.gz", bomb)], wset, leak, Limits(max_decompressed=4 << 20))
    assert result.findings == []
    assert any("gzip" in n and "bound" in n for n in result.notes), result.notes


def test_a_value_past_the_decompression_bound_is_not_claimed_but_the_bound_is_noted(wset, leak):
    data = gzip.compress(b"0" * (2 << 20) + b" " + S)
    result = scan_checked([("late.gz", data)], wset, leak, Limits(max_decompressed=1 << 20))
    assert result.findings == []
    assert any("bound" in n for n in result.notes)


def test_a_zip_of_ten_thousand_members_stops_at_the_member_bound_with_a_note(wset, leak):
    members = [(f"seed-{SEED}.json", b"{}")] + [(f"m/{i}.txt", b"x") for i in range(10_000)]
    result = scan_checked([("many.zip", zip_bytes(members))], wset, leak)
    assert any("10001 members" in n and "1000-member bound" in n for n in result.notes)
    # The first member is inside the bound: its name is still checked.
    assert any(f.chain.startswith("zip member seed-") for f in result.findings)


def test_the_member_bound_is_configurable(wset, leak):
    members = [(f"m/{i}.txt", b"x") for i in range(20)] + [("late.txt", b"seed " + S)]
    result = scan_checked([("a.zip", zip_bytes(members))], wset, leak, Limits(max_members=10))
    assert not [f for f in result.findings if "late.txt" in f.chain]
    assert any("21 members" in n for n in result.notes)


def test_an_archive_inside_an_archive_is_not_opened(wset, leak):
    # One layer of disguise is undone; a zip in a zip is two (documented in docs/matching.md).
    inner = zip_bytes([("deep.txt", b"seed " + S)])
    result = scan_checked([("outer.zip", zip_bytes([("inner.zip", inner)]))], wset, leak)
    assert [f for f in result.findings if "deep.txt" in f.chain] == []


def test_the_name_of_an_archive_inside_an_archive_is_checked(wset, leak):
    inner = zip_bytes([("a.txt", b"x")])
    result = scan_checked([("outer.zip", zip_bytes([(f"seed-{SEED}.zip", inner)]))], wset, leak)
    assert any(f.where == "name" and f.entry == SEED_ID for f in result.findings)


def test_an_archive_inside_an_archive_is_noted_as_not_opened(wset, leak):
    inner = zip_bytes([("deep.txt", b"seed " + S)])
    result = scan_checked([("outer.zip", zip_bytes([("inner.zip", inner)]))], wset, leak)
    assert any("inner.zip" in n for n in result.notes), result.notes


def test_a_file_over_the_file_bound_is_scanned_up_to_it_with_a_note(wset, leak):
    data = b"x" * 5000 + b" seed " + S
    result = scan_checked([("big.txt", data)], wset, leak, Limits(max_file_bytes=1000))
    assert result.findings == []
    assert any("big.txt" in n and "1000-byte file bound" in n for n in result.notes)


def test_an_encoded_region_over_the_region_bound_is_noted(wset, leak):
    import base64

    blob = base64.b64encode(os.urandom(3000) + b" " + S)
    result = scan_checked([("a.txt", b"data: " + blob)], wset, leak, Limits(max_region=1000))
    assert any("base64" in n and "bound" in n for n in result.notes), result.notes


@pytest.mark.slow  # a 200 MB line: ~21-26 s on a loaded 2-core machine
def test_a_200_megabyte_single_line_completes_and_finds_the_value_at_its_end(wset, leak):
    line = b"alpha 12345 beta=0.5 x_y " * (200 * 1024 * 1024 // 25) + b" " + S + b"\n"
    result = scan_checked([("one-line.txt", line)], wset, leak)
    assert [(f.entry, f.line) for f in result.findings] == [(SEED_ID, 1)]


def test_a_long_single_line_completes_and_finds_the_value_at_its_end(wset, leak):
    line = b"alpha 12345 beta=0.5 x_y MzEuNQ== " * (8 * 1024 * 1024 // 34) + b" " + S + b"\n"
    result = scan_checked([("one-line.txt", line)], wset, leak, Limits(max_regions=100))
    assert (SEED_ID, 1, "") in [(f.entry, f.line, f.chain) for f in result.findings]
    assert any("100 encoded regions" in n for n in result.notes), result.notes


_ESCAPE_LINE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from kit.scan import make_set
from plimsoll_ci.shipscan.scan import scan_items
line = b"alpha 12345 beta=0.5 x_y &amp; " * (4 * 1024 * 1024 // 31) + b"\\n"
scan_items([("one-line.txt", line)], make_set())
"""


def test_a_long_line_full_of_escapes_is_scanned_in_linear_time():
    import subprocess
    import sys
    from pathlib import Path

    # Linear: ~0.5 s on a loaded 2-core machine. Quadratic: ~10 s. The guard is 5 s.
    try:
        subprocess.run([sys.executable, "-c", _ESCAPE_LINE, str(Path(__file__).parents[1])],
                       check=True, timeout=5, capture_output=True)
    except subprocess.TimeoutExpired:
        pytest.fail("a 4 MB line of escapes took more than 5 s")


def test_a_long_run_without_white_space_after_an_escape_completes(wset, leak):
    # A regex that backtracks over the run from every position would take hours here.
    data = b"&amp;" + b"a" * 2_000_000 + b" " + S
    t = time.monotonic()
    result = scan_checked([("run.txt", data)], wset, leak)
    assert {f.entry for f in result.findings} == {SEED_ID}
    assert time.monotonic() - t < 60  # a hang guard, not a benchmark


@pytest.mark.parametrize("data", [
    b"\xff\xfe seed " + S + b" \xc3\x28 \xed\xa0\x80",
    b"\xc0\xaf" * 5000 + b"\n" + S + b"\n" + b"\x80" * 5000,
], ids=["short", "large"])
def test_invalid_utf8_content_is_scanned(wset, leak, data):
    result = scan_checked([("bad.txt", data)], wset, leak)
    assert SEED_ID in [f.entry for f in result.findings]


def test_a_file_name_that_is_not_utf8_is_scanned_and_reported(tmp_path, wset, leak):
    root = tmp_path / "ship"
    root.mkdir()
    (root / os.fsdecode(b"seed-" + S + b"-\xff.txt")).write_bytes(b"ok")
    result = _paths_checked([root], wset, leak)
    assert [(f.entry, f.where) for f in result.findings] == [(SEED_ID, "name")]


def test_a_symlink_loop_completes_with_a_note(tmp_path, wset, leak):
    root = tmp_path / "ship"
    root.mkdir()
    os.symlink("b", root / "a")
    os.symlink("a", root / "b")
    os.symlink(".", root / "self")
    (root / "ok.txt").write_bytes(b"seed " + S)
    result = _paths_checked([root], wset, leak)
    assert [f.entry for f in result.findings] == [SEED_ID]
    assert any("loop" in n for n in result.notes), result.notes
    assert any("self" in n and "not followed" in n for n in result.notes), result.notes


def test_a_symlink_out_of_the_root_is_not_followed_but_its_name_ships(tmp_path, wset, leak):
    outside = tmp_path / "trusted"
    outside.mkdir()
    (outside / "seeds.txt").write_bytes(S + b"\n")
    root = tmp_path / "ship"
    root.mkdir()
    os.symlink(outside / "seeds.txt", root / "data.txt")
    os.symlink(outside, root / "trusted-dir")
    os.symlink(outside / "seeds.txt", root / f"seed-{SEED}")
    result = _paths_checked([root], wset, leak)
    assert [(f.where, f.entry) for f in result.findings] == [("name", SEED_ID)]
    notes = " | ".join(result.notes)
    assert "data.txt: symbolic link out of the scanned root, not followed" in notes
    assert "trusted-dir: symbolic link to a folder, not followed" in notes


def test_a_file_that_cannot_be_opened_is_noted_and_the_rest_is_scanned(tmp_path, wset, leak,
                                                                       monkeypatch):
    # chmod 000 does not stop root (CI runs as root); a socket cannot be open()ed by anyone.
    root = tmp_path / "ship"
    root.mkdir()
    (root / "ok.txt").write_bytes(b"seed " + S)
    monkeypatch.chdir(root)  # a socket path must be short
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind("control.sock")
        result = _paths_checked([root], wset, leak)
    finally:
        sock.close()
    assert [f.entry for f in result.findings] == [SEED_ID]
    assert any("control.sock: cannot read" in n or "control.sock: not a regular file" in n
               for n in result.notes), result.notes


def test_a_fifo_in_the_tree_does_not_hang_the_scan(tmp_path, wset, leak):
    root = tmp_path / "ship"
    root.mkdir()
    fifo = root / "pipe"
    os.mkfifo(fifo)
    (root / "ok.txt").write_bytes(b"seed " + S)
    done: list = []
    t = threading.Thread(target=lambda: done.append(scan_paths([str(root)], wset)), daemon=True)
    t.start()
    t.join(3)
    if t.is_alive():  # unblock the reader so the thread ends, then fail
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        t.join(10)
    assert done and not t.is_alive() and done[0].findings
    assert any("pipe" in n for n in done[0].notes)


def test_a_line_over_the_line_bound_is_not_unescaped_and_the_bound_is_noted(wset, leak):
    line = b"x " * 3000 + b"%33%31%30%37%37%31%33%34%31%34\n"
    result = scan_checked([("a.txt", line)], wset, leak, Limits(max_line=1000))
    assert result.findings == []
    assert any("1000-byte line bound" in n for n in result.notes), result.notes
    found = scan_checked([("a.txt", line)], wset, leak, Limits(max_line=10_000))
    assert [f.chain for f in found.findings] == ["percent-encoding"]


def test_a_line_of_escapes_never_runs_into_the_next_file_of_a_batch():
    from plimsoll_ci.shipscan.scan import Scanner

    wset = make_set([("t.txt:1", "31.5")])
    # "%33%31%2e%35" decodes to "31.5"; the batch joins files, and the line must end at the join
    found, _ = Scanner(wset).scan_contents([("a.txt", b"x=%33%31%2e%35"), ("b.txt", b"y")])
    assert [(f.path, f.chain) for f in found] == [("a.txt", "percent-encoding")]
    found, _ = Scanner(wset).scan_contents([("a.txt", b"%33%31%2e%3531.5"), ("b.txt", b"31.5")])
    assert [f.path for f in found] == ["b.txt"]


def test_names_scanned_in_one_joined_pass_find_what_one_by_one_finds():
    import base64

    from plimsoll_ci.shipscan.scan import Redactor, Scanner, scan_items

    wset = make_set([("seeds.txt:2", SEED), ("t.txt:1", "31.5"), ("l.txt:1", "skip step 3")])
    names = [f"tracks/seed-{SEED}.json", "a/t=31.50s.txt", "b/Skip Step 3.mp4",
             f"c/{base64.b64encode(SEED.encode()).decode()}.bin", "d/131.5.txt",
             f"e/{SEED}1.txt", "f/skip%20step%203.html", "g/plain.txt", "h/0x1f.txt",
             "i/j/k/notes.md"]
    items = [(n, b"x") for n in names]
    batched = scan_items(items, wset)  # ten names: primed in one joined pass
    one = Scanner(wset)
    expected = sorted({(f.path, f.entry) for n in names for f in one.scan_name(n)})
    assert sorted({(f.path, f.entry) for f in batched.findings}) == [
        (Redactor(one).text(p), e) for p, e in expected]
    assert len(expected) == 5


def test_folder_names_judged_once_per_folder_give_each_path_its_own_places():
    # A folder path's findings are kept for the next file in it: every path still gets each of
    # its folders' findings at that folder's place, and its file name's at its own path, however
    # the path is spelled (backslashes, `.` and empty parts, a trailing separator).
    from plimsoll_ci.shipscan.scan import Scanner

    wset = make_set([("seeds.txt:2", SEED), ("t.txt:1", "31.5")])
    paths = [f"a/{SEED}/x.txt", f"a/{SEED}/y-{SEED}.txt", f"a\\{SEED}\\z.txt", f"./a/{SEED}/./w",
             f"a//{SEED}//v", f"b/c/{SEED}/", "b/c/31.5/31.50", "31.5", f"{SEED}", "/", "",
             "plain/file.txt", "plain/other.txt"]
    cached, fresh = Scanner(wset), Scanner(wset)
    for p in paths * 2:  # (the second round comes from the cache)
        got = sorted((f.path, f.entry, f.chain) for f in cached.scan_name(p))
        parts = [x for x in p.replace("\\", "/").split("/") if x not in ("", ".")]
        want = sorted(
            (p if i == len(parts) - 1 else "/".join(parts[: i + 1]) + "/", f.entry, f.chain)
            for i, part in enumerate(parts)
            for f in fresh._name(part, "", "file name" if i == len(parts) - 1 else "folder name"))
        assert got == want, p
    assert ("a/" + SEED + "/", "seeds.txt:2", "folder name") in {
        (f.path, f.entry, f.chain) for f in cached.scan_name(f"a/{SEED}/x.txt")}

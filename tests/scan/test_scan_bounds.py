"""The engine on hostile input (issue 18): deeply nested JSON is checked, not a crash; every
bound counts per file and its note names the file; long contents are read in windows that
overlap, so a value at a window's edge is found once; peak memory stays within the budget; the
decode time bound holds throughout; the file-bound note gives the true size."""

from __future__ import annotations

import base64
import gzip
import json
import random
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
from kit.cli import run_cli
from kit.scan import SEED, VALUES, make_set, scan_checked, zip_bytes

from plimsoll_ci.engine import Scanner, Windowing, windowing
from plimsoll_ci.engine.records import CONTEXT
from plimsoll_ci.errors import BadInput, ConfigError
from plimsoll_ci.shipscan.scan import Limits, make_limits, scan_paths
from plimsoll_ci.withheld import FORMAT, build_set, dumps

S = SEED.encode()
SEED_ID, DEC_ID, TEXT_ID = "seeds.txt:2", "times.txt:1", "labels.txt:1"


@pytest.fixture(scope="module")
def wset():
    return make_set()


# --- deeply nested JSON ----------------------------------------------------------------------

DEEP = b'{"format": "' + FORMAT.encode() + b'", "entries": ' + b"[" * 100_000 \
    + b"]" * 100_000 + b"}"


@pytest.mark.parametrize("data", [
    DEEP,
    zip_bytes([("data/set.json", DEEP)]),
    gzip.compress(DEEP),
    DEEP[: len(DEEP) // 2],  # never closed
    b"\xef\xbb\xbf  " + DEEP,  # a byte-order mark and white space first
], ids=["shipped file", "zip member", "gzip stream", "unclosed", "after a mark"])
def test_deeply_nested_json_with_the_set_tag_is_a_shipped_set_not_a_crash(wset, leak, data):
    result = scan_checked([("deep.json", data)], wset, leak)
    assert [(f.kind, f.entry) for f in result.findings] == [("withheld-set", FORMAT)]


def test_deeply_nested_json_whose_tag_is_not_at_its_top_is_no_set(wset, leak):
    data = b'{"x": ' + b"[" * 100_000 + b'{"format": "' + FORMAT.encode() + b'"}' \
        + b"]" * 100_000 + b"}"
    result = scan_checked([("deep.json", data)], wset, leak)
    assert result.findings == []


def test_a_shipped_set_longer_than_a_window_is_found(wset):
    doc, _ = build_set([(f"seeds.txt:{i}", str(10**9 + 7 * i)) for i in range(3000)])
    text = dumps(doc).encode()  # sorted keys: the tag comes after all the entries
    scanner = Scanner(wset, Limits(max_region=4096, max_line=4096))
    scanner.windowing = Windowing(100_000, CONTEXT, 4096 + CONTEXT, 30_000, 10**6)
    assert len(text) > 3 * scanner.windowing.size
    found, _ = scanner.scan_content(text, "withheld.json")
    assert [(f.kind, f.entry) for f in found] == [("withheld-set", FORMAT)]


def test_a_deeply_nested_set_in_a_git_blob_is_found_by_scan_rev(tmp_path, leak):
    from kit.harness_repo import commit, git, make_harness, repo_cli

    repo = make_harness(tmp_path)
    (repo / "viewer" / "deep.json").write_bytes(DEEP)
    git(repo, "add", "-A")
    commit(repo, "viewer: a deep file")
    p = repo_cli(repo, "scan", "--rev", "HEAD", "--format", "json")
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    kinds = {(f["path"], f["kind"]) for f in json.loads(p.stdout)["findings"]}
    assert ("viewer/deep.json", "withheld-set") in kinds


# --- every bound per file, every note names its file -------------------------------------------

def _vendored_js(lines: int = 3000) -> bytes:
    """Vendored DOM code: five mixed-case identifiers of 12+ letters a line (each one reads as
    an unpadded base64 region)."""
    return b"".join(
        b'document.getElementById("navBarContainer%d").addEventListener("clickHandler", '
        b"onClickHandler); // wire the navigation bar's handler\n" % i for i in range(lines))


@pytest.mark.parametrize("window", ["whole", "windows"])
def test_a_busy_vendored_file_does_not_use_up_the_region_bound_of_a_file_beside_it(wset, leak,
                                                                                    window):
    js = _vendored_js()
    assert 300_000 < len(js) < 500_000
    config = json.dumps({"seed": base64.b64encode(b"seed " + S).decode()}).encode()
    items = [("vendor/app.js", js), ("config.json", config)]
    if window == "whole":
        result = scan_checked(items, wset, leak)
        found, notes = result.findings, result.notes
    else:
        scanner = Scanner(wset)
        scanner.windowing = Windowing(100_000, CONTEXT, scanner.windowing.after, 30_000, 10**8)
        found, notes = scanner.scan_contents(items)
    assert [(f.path, f.entry, f.chain) for f in found] == [("config.json", SEED_ID, "base64")]
    assert notes == ["vendor/app.js: more than 10000 encoded regions: the rest not decoded"]


def test_each_archive_member_has_its_own_region_bound(wset, leak):
    config = json.dumps({"seed": base64.b64encode(b"seed " + S).decode()}).encode()
    data = zip_bytes([("vendor/app.js", _vendored_js()), ("config.json", config)])
    result = scan_checked([("bundle.zip", data)], wset, leak)
    assert [(f.entry, f.chain) for f in result.findings] == [
        (SEED_ID, "zip member config.json > base64")]
    assert result.notes == ["bundle.zip: zip member vendor/app.js: more than 10000 encoded "
                            "regions: the rest not decoded"]


def test_the_findings_listed_per_file_are_bounded_with_a_note(wset, leak):
    data = (b"seed " + S + b"\n") * 5000
    result = scan_checked([("seeds.log", data), ("b.txt", b"seed " + S)], wset, leak,
                          Limits(max_findings=100))
    assert len([f for f in result.findings if f.path == "seeds.log"]) == 100
    assert [f.path for f in result.findings if f.path != "seeds.log"] == ["b.txt"]
    assert result.notes == ["seeds.log: more than 100 findings: the rest are not listed and the "
                            "file is not scanned further"]


# --- windows over long contents ---------------------------------------------------------------

def _windowed(wset, size: int = 20_000, **limits) -> Scanner:
    lim = Limits(**{"max_region": 2048, "max_line": 2048, "max_findings": 10**6, **limits})
    scanner = Scanner(wset, lim)
    # windows of `size` bytes, values searched a third of a window at a time
    scanner.windowing = Windowing(size, CONTEXT, windowing(lim).after, size // 3, 10**8)
    return scanner


def _places(found) -> list[tuple]:
    return sorted((f.entry, f.line, f.column, f.chain, f.kind) for f in found)


# (case, the value's spelling, its entry, chain): each is put across a window's edge
EDGE_CASES = [
    ("plain number", b"seed " + S + b" ", SEED_ID, ""),
    ("number in a longer token run", b"seed-" + S + b".json ", SEED_ID, ""),
    ("decimal", b"t=31.50s ", DEC_ID, ""),
    ("clock", b"at 0:31.5 ", DEC_ID, ""),
    ("separated digits", b"3_107_713_414 ", SEED_ID, ""),
    ("text over white space", b"the drone \t answer   key! ", TEXT_ID, ""),
    ("base64", b'"' + base64.b64encode(b"seed " + S + b" " * 40) + b'" ', SEED_ID, "base64"),
    ("hex", b"h=" + (b"seed " + S).hex().encode() + b" ", SEED_ID, "hex"),
    ("percent-encoding", b"\nq=" + "".join(f"%{c:02x}" for c in S).encode() + b"\n", SEED_ID,
     "percent-encoding"),
    ("wrapped base64", ("\n" + "\n".join(textwrap.wrap(base64.b64encode(
        b"w" * 50 + b" seed " + S + b" " * 100).decode(), 76)) + "\n").encode(), SEED_ID,
     "base64"),
]


@pytest.mark.parametrize(("spelling", "entry", "chain"), [c[1:] for c in EDGE_CASES],
                         ids=[c[0] for c in EDGE_CASES])
def test_a_value_across_a_window_edge_is_found_once_where_it_is(wset, spelling, entry, chain):
    scanner = _windowed(wset)
    size = scanner.windowing.size
    filler = b"filler words 17 " * (3 * size // 16)  # no line break: windows end at their size
    for shift in range(-len(spelling) - 2, 3):
        at = size + shift
        data = filler[:at] + b" " + spelling + b" " + filler[: size // 2]
        found, notes = scanner.scan_content(data, "a.txt")
        whole, _ = Scanner(wset, scanner.limits).scan_content(data, "a.txt")
        assert _places(found) == _places(whole), shift
        assert [(f.entry, f.chain) for f in found] == [(entry, chain)], shift
        assert notes == [], shift


def test_lines_and_columns_are_counted_across_windows(wset):
    rng = random.Random(5)
    lines = [b"x" * rng.randrange(0, 300) for _ in range(4000)]
    for k in (17, 900, 1901, 3999):
        lines[k] += b" seed " + S
    data = b"\n".join(lines) + b"\n"
    found, _ = _windowed(wset).scan_content(data, "a.txt")
    whole, _ = Scanner(wset).scan_content(data, "a.txt")
    assert len(data) > 10 * 20_000
    assert _places(found) == _places(whole)
    assert [f.line for f in found] == [18, 901, 1902, 4000]


def test_windows_find_what_one_whole_buffer_finds_on_random_tricky_text(wset):
    from kit.tricky import randbuf

    rng = random.Random(11)
    values = [*VALUES, ("p:1", "8080"), ("g:1", "4820193756"), ("u:1", "_attrs_to_script")]
    wset2 = make_set(values)
    for _ in range(6):
        data = b"\n".join(randbuf(rng) for _ in range(40))
        found, notes = _windowed(wset2, size=8_000).scan_content(data, "a.txt")
        whole, whole_notes = Scanner(wset2, Limits(max_region=2048, max_line=2048,
                                                   max_findings=10**6)).scan_content(data, "a.txt")
        assert _places(found) == _places(whole)
        assert sorted(notes) == sorted(whole_notes)


def test_a_long_line_of_escapes_over_the_line_bound_is_noted_once(wset, leak):
    line = b"%41" * 40_000  # one line of 120,000 bytes, over the 2048-byte line bound
    found, notes = _windowed(wset).scan_content(line + b"\n%33%31%2e%35\n", "a.txt")
    assert notes == ["a.txt: line with escapes at byte 0 is over the 2048-byte line bound: "
                     "not decoded"]
    assert [(f.entry, f.line, f.chain) for f in found] == [(DEC_ID, 2, "percent-encoding")]


def _random_text(rng: random.Random, n: int) -> bytes:
    return bytes(rng.choice(b"abcdefghij klmnopqrstuvwxyz\n") for _ in range(n))


def test_an_archive_longer_than_a_window_is_opened_a_member_at_a_time(wset):
    rng = random.Random(7)
    members = [(f"m{k}.txt", _random_text(rng, 60_000)) for k in range(4)]
    members.append(("last/seed.txt", b"x\n" * 30_000 + b"seed " + S + b"\n"))
    data = zip_bytes(members)
    scanner = _windowed(wset)
    assert len(data) > scanner.windowing.size
    found, notes = scanner.scan_content(data, "bundle.zip")
    assert [(f.entry, f.line, f.chain) for f in found] == [
        (SEED_ID, 30_001, "zip member last/seed.txt")]
    assert notes == []


def test_an_archive_over_the_archive_bound_is_scanned_as_its_bytes_with_a_note(wset):
    rng = random.Random(8)
    data = zip_bytes([("a.txt", _random_text(rng, 200_000) + b" seed " + S)], zipfile.ZIP_STORED)
    scanner = _windowed(wset)
    scanner.windowing = scanner.windowing._replace(archive=100_000)
    found, notes = scanner.scan_content(data, "bundle.zip")
    assert [(f.entry, f.chain) for f in found] == [(SEED_ID, "")]  # in the stored bytes
    assert len(notes) == 1 and notes[0].startswith(
        "bundle.zip: archive or compressed stream over the 100000-byte archive bound"), notes


# --- peak memory within the budget ----------------------------------------------------------

# The child's peak is VmHWM, its own address space's high-water mark. (Not ru_maxrss: Linux keeps
# that across execve, so a child forked from a large pytest process reports the parent's size.)
_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from kit.scan import make_set
from plimsoll_ci.shipscan.scan import make_limits, scan_paths
result = scan_paths([sys.argv[2]], make_set(), make_limits(overrides={"max_memory": int(sys.argv[3])}))
with open("/proc/self/status") as fh:
    kib = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
print(len(result.findings), len(result.notes), kib)
"""

BUDGET = 320 * 1024 * 1024  # (the smallest budget the default bounds allow is about 313 MiB)


def _peak(path: Path) -> tuple[int, int, int]:
    p = subprocess.run([sys.executable, "-c", _CHILD, str(Path(__file__).parents[1]), str(path),
                        str(BUDGET)], capture_output=True, text=True, timeout=600, check=True)
    found, notes, kib = (int(x) for x in p.stdout.split())
    return found, notes, kib * 1024


def _numbers(path: Path, mb: int) -> None:
    """`mb` blocks of 95,000 random 10-digit numbers, one a line (digits made by numpy: 6 million
    numbers formatted one by one took 4 s), then the withheld value."""
    rng = np.random.default_rng(3)
    with open(path, "wb") as fh:
        for _ in range(mb):
            numbers = rng.integers(10**9, 10**10, size=95_000, dtype=np.int64)
            rows = np.full((95_000, 11), ord("\n"), dtype=np.uint8)
            for column in range(9, -1, -1):
                rows[:, column] = ord("0") + numbers % 10
                numbers //= 10
            fh.write(rows.tobytes())
        fh.write(b"seed " + S + b"\n")


def _zip_of_big_members(path: Path, members: int, mib: int) -> None:
    block = b"".join(b"row %d MzEwNzcxMzQxNA %%41 0x1f\n" % i for i in range(1000))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for k in range(members):
            with zf.open(f"m{k}.txt", "w") as fh:
                for _ in range(mib * 1024 * 1024 // len(block)):
                    fh.write(block)
                fh.write(b"seed " + S + b"\n")


@pytest.mark.parametrize("case", ["numbers", "zip"])
def test_peak_memory_of_a_scan_stays_within_max_memory(tmp_path, case):
    path = tmp_path / f"{case}.bin"
    if case == "numbers":
        _numbers(path, 64)  # 64 MB of 10-digit numbers
    else:
        _zip_of_big_members(path, 2, 48)  # two 48 MiB members, a few MB zipped
    found, _notes, peak = _peak(path)
    assert found >= 1  # the value after all of it is found
    assert peak <= BUDGET, f"peak {peak / 2**20:.0f} MiB over the {BUDGET / 2**20:.0f} MiB budget"


def test_max_memory_is_a_bound_of_the_command_line_and_of_plimsoll_yaml():
    assert make_limits(overrides={"max_memory": 400 << 20}).max_memory == 400 << 20
    assert make_limits({"max_memory": 1 << 30}, "plimsoll.yaml").max_memory == 1 << 30
    with pytest.raises(BadInput, match=r"--max-memory 1000: .* at least \d+ bytes"):
        make_limits(overrides={"max_memory": 1000})
    with pytest.raises(ConfigError, match=r"plimsoll.yaml: limits: max_memory 1000"):
        make_limits({"max_memory": 1000}, "plimsoll.yaml")
    # smaller region and line bounds let a smaller budget through
    with pytest.raises(BadInput):
        make_limits(overrides={"max_memory": 256 << 20})
    assert make_limits(overrides={"max_memory": 256 << 20, "max_region": 1 << 20,
                                  "max_line": 1 << 20})


def test_the_max_memory_flag_takes_sizes_with_units(tmp_path, leak):
    (tmp_path / "seeds.txt").write_text(SEED + "\n")
    (tmp_path / "a.txt").write_text("seed " + SEED + "\n")
    assert run_cli("withheld", "build", "--values", "seeds.txt", "-o", "w.json", cwd=tmp_path,
                   guard=leak).returncode == 0
    assert run_cli("scan", "--set", "w.json", "--max-memory", "400M", "a.txt", cwd=tmp_path,
                   guard=leak).returncode == 1
    bad = run_cli("scan", "--set", "w.json", "--max-memory", "10M", "a.txt", cwd=tmp_path,
                  guard=leak)
    assert bad.returncode == 2 and "--max-memory 10485760" in bad.stderr
    assert run_cli("scan", "--set", "w.json", "--max-memory", "lots", "a.txt", cwd=tmp_path,
                   guard=leak).returncode == 2


# --- the decode time bound ------------------------------------------------------------------

class _Clock:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now


@pytest.mark.parametrize("window", ["whole", "windows"])
def test_the_decode_time_bound_holds_throughout_decoding_with_a_note(wset, monkeypatch, window):
    from plimsoll_ci.engine import contents

    regions = b"".join(b"k%d = %s\n" % (i, base64.b64encode(b"region number %d" % i))
                       for i in range(3000))
    data = regions + b"last = " + base64.b64encode(b"seed " + S) + b"\n"
    monkeypatch.setattr(contents, "time", _Clock())
    scanner = _windowed(wset, decode_seconds=20) if window == "windows" else \
        Scanner(wset, Limits(decode_seconds=20))
    found, notes = scanner.scan_content(data, "slow.txt")
    assert found == []  # the last region is past the bound
    assert len(notes) == 1 and notes[0].startswith(
        "slow.txt: decode time bound (20 s) reached at byte "), notes
    assert notes[0].endswith(": encoded regions from there on not decoded")


# --- the file bound's note ------------------------------------------------------------------

def test_the_file_bound_note_gives_the_true_size_and_the_total_counts_what_was_read(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 5000 + b" seed " + S)
    result = scan_paths([str(path)], make_set(), Limits(max_file_bytes=1000))
    assert result.notes == [f"{path}: 5016 bytes, over the 1000-byte file bound: scanned up to "
                            "the bound"]
    assert (result.files, result.bytes, result.findings) == (1, 1000, [])


@pytest.mark.slow  # scans 256 MiB
def test_a_sparse_file_over_the_default_file_bound_is_noted_with_its_true_size(tmp_path):
    path = tmp_path / "sparse.bin"
    with open(path, "wb") as fh:
        fh.truncate(300 * 1024 * 1024)
    result = scan_paths([str(path)], make_set())
    assert result.notes == [f"{path}: 314572800 bytes, over the 268435456-byte file bound: "
                            "scanned up to the bound"]
    assert result.bytes == 268435456

"""A large buffer scanned by the compiled passes gives what the pure-Python passes (the fallback
without a C compiler, run here explicitly) give: the same values, decoded regions (in layers or
in bulk) and notes, and a whole scan's findings, in both builds of the compiled part (SSE2 and
portable); the base64 regions' bounds and bulk (`_b64.c`) are what a plain loop makes of the
runs. The engine never imports numpy, with the compiled part or without it."""

from __future__ import annotations

import array
import base64
import json
import random
import subprocess
import sys

import pytest
from kit.native import need

from plimsoll_ci.engine import Limits
from plimsoll_ci.match import b64, classes, decode, extract
from plimsoll_ci.match.classes import C_B64, C_LOWER, C_UPPER
from plimsoll_ci.shipscan.scan import Scanner
from plimsoll_ci.withheld import build_set, parse

NUMBERS = [("n", "3107713414"), ("d", "31.5"), ("c", "7:05.5"), ("g", "4820193756"),
           ("p", "8080"), ("z", "0042")]
TEXTS = [("t", "stall drift-12"), ("u", "_attrs_to_script"), ("a", "alpha gamma"),
         ("s", "oauthlib")]
SETS = [(NUMBERS, None), (TEXTS, None), (NUMBERS + TEXTS, b"k" * 32), (NUMBERS[:1], b"k" * 32)]


def _legacy(values: list[tuple[str, str]]) -> Scanner:
    """A set written before texts had run lengths: the looser first-word prefilter."""
    doc, _ = build_set(values=values)
    for e in doc["entries"]:
        e.get("shape", {}).pop("runs", None)
        e.get("shape", {}).pop("tag", None)
    return Scanner(parse(doc))


@pytest.fixture(scope="module")
def scanners() -> list[Scanner]:
    out = [Scanner(parse(build_set(values=v, key=k)[0], key=k)) for v, k in SETS]
    out.append(_legacy(TEXTS + NUMBERS[:2]))
    assert out[-1].index.text_shapes
    return out


def piece(rng: random.Random) -> bytes:
    """One piece of a varied corpus: the sets' values as they are and disguised, and the
    look-alikes around them."""
    v = rng.choice(NUMBERS + TEXTS)[1]
    kind = rng.randrange(17)
    if kind == 0:
        return v.encode()
    if kind == 1:  # clocks, grouped numbers, decimals, near misses
        return rng.choice([b"0:31.5", b"1:02:03", b"4,820,193,756", b"14,820,193,756",
                           b"3.15e1", b"31.50", b"0x1f", b"3_107_713_414", b"8080:80",
                           b"131.5", b"seed3107713414", b"3107713414.000", b"00042"])
    if kind == 2:  # texts with other white space and case
        return v.upper().replace(" ", rng.choice(["  ", "\t", "\xa0", "\n"])).encode()
    if kind == 3:
        return base64.b64encode(v.encode())
    if kind == 4:
        return base64.urlsafe_b64encode(v.encode()).rstrip(b"=")
    if kind == 5:  # a wrapped block (GNU base64 or PEM width), maybe indented
        indent = rng.choice(["", "    "])
        body = base64.b64encode((f"x {v} " * rng.randint(8, 40)).encode()).decode()
        width = rng.choice([64, 76])
        return ("\n" + "\n".join(indent + body[i : i + width]
                                 for i in range(0, len(body), width)) + "\n").encode()
    if kind == 6:
        return v.encode().hex().encode()
    if kind == 7:
        return v.encode().hex().upper().encode()
    if kind == 8:
        return "".join(f"%{c:02x}" for c in v.encode()).encode()
    if kind == 9:
        return "".join(f"\\x{c:02x}" for c in v.encode()).encode()
    if kind == 10:
        return "".join(f"\\u{c:04x}" for c in v.encode()).encode()
    if kind == 11:
        return "".join(f"&#{c};" for c in v.encode()).encode() + b" &amp; &lt;"
    if kind == 12:  # JSON with the value under a tag
        return json.dumps({"seed": v, "name": "run", "steps": [1, 2]}).encode()
    if kind == 13:
        return rng.randbytes(rng.randint(1, 64))
    if kind == 14:  # source code: CamelCase names, `%s`, `\n`
        return rng.choice([b"NotImplementedError", b"getResponseHeaders()", b'"%s\\n" % x',
                           b"deadbeefcafe0123", b"MzEuNQ==", b"aGVsbG8gd29ybGQ", b"=="])
    if kind == 15:
        return "caf\u00e9 \u00a0 na\u00efve".encode()
    return rng.choice([b"gate drone thrust", b"1_000", b"x86_64", b"v1.2.3", b"4:2"])


def corpus(rng: random.Random, size: int) -> bytes:
    parts, n = [], 0
    while n < size:
        p = piece(rng) + rng.choice([b" ", b"\n", b"", b", ", b"\r\n", b"\t", b"="])
        parts.append(p)
        n += len(p)
    return b"".join(parts)


def _matches(ms: list) -> list[tuple]:
    return sorted((m.start, m.end, m.kind, tuple(m.entries)) for m in ms)


def _decoded(dec: decode.Decoded) -> tuple:
    """Its regions, whether in layers or in bulk (only the compiled passes make a bulk), and its
    notes, each in order."""
    bulk = [dec.bulk.layer(i) for i in range(len(dec.bulk.offsets))] if dec.bulk else []
    return (sorted(tuple(x) for x in [*dec.layers, *bulk]), sorted(dec.notes), dec.stopped)


def _everything(buf: bytes, sc: Scanner) -> tuple:
    """All a large buffer gives: values (with and without a stop), regions in every form."""
    ix, bounds = sc.index, sc.bounds
    half = len(buf) // 2
    tight = decode.Bounds(max_region=200, max_regions=40)
    win = decode.Window(1000, half, 0, False)
    return (
        _matches(extract.find_values(buf, ix)),
        _matches(extract.find_values(buf, ix, stop=half)),
        # (which places come first differs: the compiled passes check kind by kind)
        len(extract.find_values(buf, ix, stop=half, limit=50)),
        _decoded(decode.text_regions(buf, bounds)),
        _decoded(decode.text_regions(buf, tight)),
        _decoded(decode.text_regions(buf, bounds, window=win)),
        _decoded(decode.regions_in_bulk(buf, bounds, None, decode.RegionBudget(10**6), None)),
        _decoded(decode.regions_in_bulk(buf, bounds, None, decode.RegionBudget(5), None)),
    )


@pytest.mark.parametrize("seed", range(3))
def test_a_large_buffer_gives_the_same_by_the_compiled_and_the_pure_python_passes(
        scanners: list[Scanner], seed: int, module: object,
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    found = 0
    for _ in range(3):
        buf = corpus(rng, rng.choice([70_000, 200_000]))
        for sc in scanners:
            monkeypatch.setattr(classes, "native", module)
            compiled = _everything(buf, sc)
            monkeypatch.setattr(classes, "native", None)
            assert _everything(buf, sc) == compiled
            found += len(compiled[0]) + len(compiled[3][0])
    assert found  # (values and regions were there to find)


def _finding(f: object) -> tuple:
    """A finding, its decodings as a set: a value that two decodings of one place give (base64
    and hex) is one finding naming both, the one found first as its chain."""
    return (f.path, f.line, f.column, f.entry, f.kind, f.where, f.detail,  # type: ignore[attr-defined]
            tuple(sorted({f.chain, *f.via})))  # type: ignore[attr-defined]


@pytest.mark.parametrize("seed", range(2))
def test_a_scan_of_many_files_finds_the_same_by_the_compiled_and_the_pure_python_passes(
        scanners: list[Scanner], seed: int, module: object,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Small files joined into batches past the pure-Python size, and one long file.
    rng = random.Random(seed)
    files = [(f"f{i}.txt", corpus(rng, rng.randint(10, 3000))) for i in range(300)]
    files.append(("long.txt", corpus(rng, 300_000)))
    for sc in scanners:
        # (no cap on the findings of a file: which come first differs, the compiled passes
        # check kind by kind)
        sc = Scanner(sc.wset, Limits(max_findings=10**6))  # noqa: PLW2901
        monkeypatch.setattr(classes, "native", module)
        compiled = sc.scan_contents(files)
        monkeypatch.setattr(classes, "native", None)
        found, notes = sc.scan_contents(files)
        assert sorted(map(_finding, found)) == sorted(map(_finding, compiled[0]))
        assert sorted(notes) == sorted(compiled[1])
        assert compiled[0]


def bounds_the_plain_way(buf: bytes, runs: list[tuple[int, int, int]], max_region: int,
                        at_end: bool) -> tuple[list[int], list[int]]:
    """For base64 runs (start, end without padding, the length of the run of 6+ after it), their
    ends with up to two `=` and whether each is decoded alone: it ends its line and may start a
    wrapped block (12+ long, no `=` at its end, a width 16..1024 and a multiple of 4: its own, or
    the next run's when that is no shorter), it is over `max_region`, or it runs to the end of
    a buffer that is not the content's end."""
    lo, hi = b64.WRAP_WIDTHS
    ends, slow = [], []
    for s, e, second in runs:
        for _ in range(2):
            e += buf[e : e + 1] == b"="
        one = False
        if buf[e : e + 1] in (b"\n", b"\r"):
            first = e - s
            own = first % 4 == 0 and lo <= first <= hi
            by_second = second > 0 and second % 4 == 0 and second >= first and lo <= second <= hi
            one = first >= 12 and buf[e - 1 : e] != b"=" and (own or by_second)
        ends.append(e)
        slow.append(int(one or e - s > max_region or (not at_end and e >= len(buf))))
    return ends, slow


def test_base64_bounds_are_the_plain_ones(module: object) -> None:
    # Each kept run's end with its padding, and which are decoded alone, for a window in the
    # middle of a content (a run to the buffer's end is cut) and at its end.
    rng = random.Random(5)
    for _ in range(30):
        buf = corpus(rng, rng.randint(1, 20_000))
        pairs, nexts = module.base64_kept(buf.translate(classes._cls_lut_bytes()), buf, C_B64,
                                          C_UPPER | C_LOWER)
        t, nx = array.array("i", pairs).tolist(), array.array("i", nexts).tolist()
        runs = list(zip(t[0::2], t[1::2], nx, strict=True))
        for max_region, at_end in ((4 * 1024 * 1024, True), (40, False), (1, True)):
            ends, slow = bounds_the_plain_way(buf, runs, max_region, at_end)
            s_b, r_b, e_b, slow_b = module.base64_bounds(buf, pairs, nexts, max_region, at_end,
                                                         *b64.WRAP_WIDTHS)
            assert array.array("i", s_b).tolist() == t[0::2]
            assert array.array("i", r_b).tolist() == t[1::2]
            assert (array.array("i", e_b).tolist(), list(slow_b)) == (ends, slow)
    i32 = array.array("i", [0, 9]).tobytes()
    with pytest.raises(ValueError):  # a run past the text, a next length missing, lo > hi
        module.base64_bounds(b"QUJD", i32, bytes(4), 9, True, 16, 1024)
    with pytest.raises(ValueError):
        module.base64_bounds(b"QUJD", array.array("i", [0, 4]).tobytes(), b"", 9, True, 16, 1024)
    with pytest.raises(ValueError):
        module.base64_bounds(b"QUJD", b"", b"", 9, True, 17, 16)


def test_runs_joined_in_bulk_are_their_decoded_bytes_joined(module: object) -> None:
    # The decoded bytes of the runs taken, joined with a separator (as `sep.join`), and where
    # each starts.
    rng = random.Random(6)
    alpha = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    for _ in range(100):
        toks = [bytes(rng.choice(alpha) for _ in range(rng.randint(6, 80)))
                for _ in range(rng.randint(0, 40))]
        buf = b" ".join(toks)
        starts = [sum(len(x) + 1 for x in toks[:i]) for i in range(len(toks))]
        ends = [s + len(x) for s, x in zip(starts, toks, strict=True)]
        take = bytes(rng.random() < 0.7 for _ in toks)
        sep = rng.choice([decode.BULK_SEP, b"", b"|"])
        s_b, e_b = array.array("i", starts).tobytes(), array.array("i", ends).tobytes()
        data, good = module.b64_runs(buf, s_b, e_b)
        # (a short last quad filled with zeros, `A`, as the compiled decoding fills it)
        pieces = [base64.b64decode(x + b"A" * (-len(x) % 4))[: len(x) * 3 // 4] for x in toks]
        taken = [i for i in range(len(toks)) if take[i]]
        joined, offsets, places = module.b64_join(data, s_b, e_b, take, sep)
        assert joined == sep.join(pieces[i] for i in taken)
        assert array.array("i", offsets).tolist() == [starts[i] for i in taken]
        at = [sum(len(toks[j]) * 3 // 4 + len(sep) for j in taken[:k]) for k in range(len(taken))]
        assert array.array("q", places).tolist() == at
    four = array.array("i", [0]).tobytes()
    for args in ((b"", four, array.array("i", [8]).tobytes(), b"\x01", b""),  # no data
                 (b"abc", four, four, b"", b""),  # a flag missing
                 (b"abcdef", array.array("i", [4]).tobytes(), four, b"\x01", b"")):
        with pytest.raises(ValueError):
            module.b64_join(*args)


PROBE = """
import json, random, sys
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/match"]  # tests/ for the kit, match/ for this file
from test_match_compiled_scan import NUMBERS, TEXTS, corpus
from plimsoll_ci import withheld
from plimsoll_ci.match import classes
if sys.argv[2] == "pure-python":  # (as installed without a C compiler)
    classes.native = None
from plimsoll_ci.shipscan.scan import Scanner
doc, _ = withheld.build_set(values=NUMBERS + TEXTS)
scanner = Scanner(withheld.parse(doc))
scanner.load()
rng = random.Random(1)
files = [(f"f{i}.txt", corpus(rng, 2000)) for i in range(100)] + [("big.txt", corpus(rng, 300_000))]
found, _ = scanner.scan_contents(files)
print(json.dumps([len(found) > 0, "numpy" in sys.modules]))
"""


@pytest.mark.parametrize("passes", ["compiled", "pure-python"])
def test_a_large_scan_never_imports_numpy(passes: str) -> None:
    # (a hook's cold run joins a thousand files into buffers past the pure-Python size; numpy's
    # import, 60-90 ms, was most of what it cost; its passes were a third implementation)
    if passes == "compiled":
        need(classes.native, "the compiled part (plimsoll_ci.match._passes)")
    from pathlib import Path

    out = subprocess.run([sys.executable, "-c", PROBE, str(Path(__file__).parents[1]), passes],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [True, False]

"""The compiled passes find exactly what the pure-Python passes (`re`, their one fallback) find,
on random tricky buffers.

Values: `_numbers_compiled`/`_texts_compiled` against `_numbers_small`/`_texts_small`, and
`find_values` with either forced, with and without shared byte classes; regions: `text_regions`
with either forced; and the claims about regions made with each (`passes`: the compiled passes,
and the fallback run explicitly, as a machine without a C compiler runs it). Sets with and
without decimals, text entries, and keyed (HMAC) sets. `.ci/sanitize` runs these against a build
with AddressSanitizer and UndefinedBehaviorSanitizer.
"""

from __future__ import annotations

import array
import base64
import random

import pytest
from kit.native import need
from kit.tricky import randbuf

from plimsoll_ci.match import b64, classes, decode, extract
from plimsoll_ci.shipscan.scan import Scanner
from plimsoll_ci.withheld import build_set, parse

SETS = [
    [("a", "3107713414"), ("b", "2718281828")],
    [("a", "3107713414"), ("c", "31.5"), ("d", "0.0625"), ("e", "1000.25")],
    [("a", "3107713414"), ("t1", "stall drift-12"), ("t2", "left right"), ("t3", "skip-step up-3")],
    [("c", "31.5"), ("t1", "stall drift-12"), ("t4", "alpha gamma"), ("x", "0042")],
    [("p", "8080"), ("q", "80"), ("r", "22"), ("g", "4820193756"), ("u", "_attrs_to_script"),
     ("v", "__init__"), ("w", "skip_"), ("c", "31.5")],
    [("big", "30000000"), ("e", "315000000000"), ("g", "23456789"), ("h", "2200000")],
]

def _key(m):
    return (m.start, m.end, m.kind, tuple(m.entries))


@pytest.fixture(params=["compiled", "pure-python"])
def passes(request, monkeypatch):
    """The matching passes a large buffer takes: the compiled ones, or the pure-Python fallback
    (as without a C compiler: the compiled part taken away)."""
    if request.param == "pure-python":
        monkeypatch.setattr(classes, "native", None)
    else:
        need(classes.native, "the compiled part (plimsoll_ci.match._passes)")
    return request.param


@pytest.fixture(scope="module")
def scanners():
    out = []
    for vals in SETS:
        for key in (None, b"k" * 32):
            doc, _ = build_set(values=vals, key=key)
            out.append(Scanner(parse(doc, key=key)))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_the_compiled_passes_find_what_the_pure_python_passes_find(scanners, seed, monkeypatch):
    need(classes.native, "the compiled part (plimsoll_ci.match._passes)")
    rng = random.Random(seed)
    for _ in range(15):
        buf = randbuf(rng)
        flat = buf.replace(b"\xc2\xa0", b"  ")
        for sc in scanners:
            ix = sc.index
            small, big = [], []
            cl = classes.byte_classes(flat)
            if ix.has_numbers:
                extract._numbers_small(flat, ix, small)
                extract._numbers_compiled(flat, ix, cl, big)
            if ix.has_texts:
                extract._texts_small(flat, ix, small)
                extract._texts_compiled(flat, ix, cl, big)
            cl.release()
            want = sorted(map(_key, small))
            assert sorted(map(_key, big)) == want, buf[:300]
            monkeypatch.setattr(classes, "COMPILED_FROM", 1 << 40)
            assert sorted(map(_key, extract.find_values(buf, ix))) == want
            monkeypatch.setattr(classes, "COMPILED_FROM", 1)  # (an empty buffer has nothing)
            assert sorted(map(_key, extract.find_values(buf, ix))) == want
            assert sorted(map(_key, extract.find_values(buf, ix, extract.byte_classes(buf)))) == want
            monkeypatch.setattr(classes, "COMPILED_FROM", 4 * 1024)
        bounds = scanners[0].bounds
        monkeypatch.setattr(classes, "COMPILED_FROM", 1 << 40)
        slow = decode.text_regions(buf, bounds)
        monkeypatch.setattr(classes, "COMPILED_FROM", 0)
        assert decode.text_regions(buf, bounds) == slow
        assert decode.text_regions(buf, bounds, extract.byte_classes(buf)) == slow
        monkeypatch.setattr(classes, "COMPILED_FROM", 4 * 1024)


def test_runs_decoded_all_at_once_are_what_each_decodes_to_alone(module: object) -> None:
    # Source code brings thousands of base64-looking runs per megabyte; a large buffer's are
    # decoded in one compiled pass, which must give what `b64.decode_run` gives each (or nothing).
    rng = random.Random(7)
    alphabets = ["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                 "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                 "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_"]
    toks = [b"NotImplementedError", b"MzEuNQ", b"aGVsbG8gd29ybGQ", b"a-b+c/d_e", b"AAAAA",
            base64.b64encode(bytes(range(256))).rstrip(b"="),
            base64.urlsafe_b64encode(b"\xff\xfe\xfd" * 9).rstrip(b"=")]
    for _ in range(3000):
        alpha = rng.choice(alphabets)
        toks.append("".join(rng.choice(alpha) for _ in range(rng.randint(6, 90))).encode())
    buf = b" ".join(toks)
    starts, pos = [], 0
    for t in toks:
        starts.append(pos)
        pos += len(t) + 1
    ends = [s + len(t) for s, t in zip(starts, toks, strict=True)]
    data, good = module.b64_runs(buf, array.array("i", starts).tobytes(),
                                 array.array("i", ends).tobytes())
    first = 0  # (each run's bytes from 3 * the quads of the runs before it)
    for i, t in enumerate(toks):
        want = b64.decode_run(t)
        assert (data[first : first + len(t) * 3 // 4] if good[i] else None) == want, t
        first += (len(t) + 3) // 4 * 3


def _layers_key(dec: decode.Decoded) -> list[tuple]:
    bulk = [dec.bulk.layer(i) for i in range(len(dec.bulk.offsets))] if dec.bulk else []
    return sorted((x.offset, x.chain, x.data, x.lines) for x in [*dec.layers, *bulk])


@pytest.mark.parametrize("seed", range(3))
def test_regions_in_bulk_are_the_regions_text_regions_gives(seed: int, passes: str) -> None:
    # A batch's plain base64 regions come in bulk (no layer each); with their layers made,
    # they are what `text_regions` gives, notes and all, and the budget counts them alike.
    rng = random.Random(seed)
    camel = " ".join(rng.choice(["NotImplementedError", "DeprecationWarning", "HTTPAdapterFoo",
                                 "getResponseHeaders"]) for _ in range(3000))
    wrapped = base64.encodebytes(b"seed 3107713414 " * 40).decode()
    for _ in range(6):
        buf = (randbuf(rng) + camel.encode() + b"\n" + wrapped.encode()) * rng.randint(1, 3)
        bounds = decode.Bounds()
        want = decode.text_regions(buf, bounds)
        budget = decode.RegionBudget(bounds.max_regions)
        got = decode.regions_in_bulk(buf, bounds, None, budget, None)
        assert got.notes == want.notes and got.stopped == want.stopped
        assert _layers_key(got) == _layers_key(want)
        assert budget.left == bounds.max_regions - len(_layers_key(want))
        for n in (len(_layers_key(want)) - 1, len(want.layers) // 3):  # the bound is hit
            tight = decode.Bounds(max_regions=n)
            short = decode.regions_in_bulk(buf, tight, None, decode.RegionBudget(n), None)
            alone = decode.text_regions(buf, tight)
            assert short.notes == alone.notes and short.notes
            assert _layers_key(short) == _layers_key(alone)


def test_a_set_whose_texts_have_no_run_lengths_is_searched_up_to_a_stop() -> None:
    # A set written before texts had run lengths (shape: `first` and `len` only) takes the
    # looser first-word prefilter. With a `stop` (a window of a long file, a slice of a large
    # batch) before the end of a large buffer, the vectorized pass indexed all word runs with a
    # mask of the candidates only: IndexError, so such a file could not be scanned at all.
    from plimsoll_ci.engine import Limits

    doc, _ = build_set(values=[("w", "oauthlib")])
    for e in doc["entries"]:
        e.get("shape", {}).pop("runs", None)
        e.get("shape", {}).pop("tag", None)
    sc = Scanner(parse(doc))
    assert sc.index.text_shapes and not sc.index.text_runs
    buf = b"oauthlib word " * 6000
    half = len(buf) // 2
    got = extract.find_values(buf, sc.index, stop=half)
    assert [m.start for m in got] == list(range(0, half, 14))
    windowed = Scanner(parse(doc), Limits(max_memory=100 * 2**20))
    found, notes = windowed.scan_contents([("a.txt", b"oauthlib word " * 200_000)])
    assert len(found) == windowed.limits.max_findings and notes


@pytest.mark.parametrize("tail", [b"", b"%3", b"%", b"\\u004", b"\\x4", b"&", b"&#", b"\\"])
def test_escape_lines_are_found_from_the_leads_that_could_start_one(tail: bytes, passes: str,
                                                                     monkeypatch) -> None:
    # Source code is full of `%s`, `%d` and `\n`: only a lead that the bytes after it could make
    # an escape or an entity starts the search of its line, in the compiled pass as in `re`'s.
    rng = random.Random(len(tail))
    parts = ["print('%s' % x)\n", "s = 'a\\nb'\n", "x = y & z\n", "%d%%\n", "url = '%33%31'\n",
             "'\\x33\\x31' '\\u0033'\n", "&amp; &#51; &lt;\n", "%2d %ZZ \\xZZ \\u12G4\n", "&&\n",
             "%%33 &&amp; \\\\x33 %&\\u0033\n"]  # (leads in a row: each one counts)
    buf = "".join(rng.choice(parts) for _ in range(9000)).encode() + tail
    bounds = decode.Bounds()
    monkeypatch.setattr(classes, "COMPILED_FROM", 1 << 40)
    slow = decode.text_regions(buf, bounds)
    monkeypatch.setattr(classes, "COMPILED_FROM", 0)
    assert decode.text_regions(buf, bounds) == slow
    if passes == "compiled":  # (from classes)
        assert decode.text_regions(buf, bounds, extract.byte_classes(buf)) == slow
    assert any(x.chain.startswith(("percent", "escapes", "html")) for x in slow.layers)

"""The compiled number candidates (`match/_numbers.c`) find exactly the values the pure-Python
passes (`re`, their fallback) find, on buffers dense with numbers.

Sets: integers only (where the compiled filters drop short prefixed and underscored integers and
fractions), decimals, clockable entries, comma-grouped lengths, and lengths and significant
digit counts past 255; keyed and public. Buffers: digits glued with every byte that continues,
ends or starts a number token, and the tokens of the shared equivalence test.
"""

from __future__ import annotations

import random

import pytest
from kit.native import need

from plimsoll_ci.match import classes, extract
from plimsoll_ci.shipscan.scan import Scanner
from plimsoll_ci.withheld import build_set, parse

LONG = "9" * 300  # a 300-digit integer: its length and significant digits clip to 255
SETS = [
    [("a", "3107713414"), ("b", "2718281828")],
    [("a", "3107713414"), ("c", "31.5"), ("d", "0.0625"), ("e", "1000.25")],
    [("p", "8080"), ("q", "80"), ("r", "22"), ("g", "4820193756"), ("c", "31.5")],
    [("k", "7:05.5"), ("m", "42"), ("n", "1234567"), ("t", "6000"), ("u", "64")],  # 6000 s: `100:00`
    [("big", "30000000"), ("e", "315000000000"), ("h", "2200000"), ("z", "0042")],
    [("l", LONG), ("s", "1" + "0" * 260), ("f", "1.5")],
    [("l", LONG), ("s", "1" + "0" * 260)],  # integers only, and longer than 64 short runs
    [("x", "3735928559"), ("o", "123456789012")],  # 0xdeadbeef; long underscored chains
]
TOK = ["31.50", "0:31.5", "3.15e1", "0x1f", "3_107_713_414", "131.5", "13107713414", "0.0625",
       "6.25e-2", "625E-4", "1_000.25", "0.", ".5", "00", "0", "007", "1e+5", "1E-3", "0b1", "0x",
       "4:2", "8080:80", "80:443", "8080:5", "10.0.0.1:22", "1:22:33", "1:23:4", "1:23:45:67",
       "0:31.5.5", "8080:31.5", "14,820,193,756", "4,820,193,7560", "4,820", "4,820,193",
       "1,234,567,890,123,456,789", "1:23,456,789", "4,820,193,756.5", "0,820,193",
       "0:30_000_000", "0:31.5e10", "1:22e+5", "0:31.5_5", "seed3107713414", "x86_64"]
GLUE = [".", ":", ",", "_", "e", "E", "e+", "E-", "x", "X", "o", "b", "B", " ", "\n", "-", "+",
        "0x", "0o", "0b", "0.", ".0", "::", ",,", "__", "a", "="]


def dense(rng: random.Random) -> bytes:
    parts = []
    for _ in range(rng.choice([50, 400, 3000])):
        r = rng.random()
        if r < 0.45:
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 13))).zfill(rng.choice([0, 0, 4])))
        elif r < 0.6:
            parts.append(rng.choice(TOK))
        elif r < 0.7:
            parts.append(rng.choice(["3107713414", "31.5", "7:05.5", "0:425.5", "4,820,193,756",
                                     "1,234,567", "0xb93c8a86", "0xdeadbeef", "0xDEAD_BEEF",
                                     "123_456_789_012", "12_3456_789012", "3107713414.00",
                                     "3.107713414e9", "0042", "000042", LONG, LONG + ".0",
                                     "1" + "0" * 260, "1:02:03.5", "12:34:56", "99:59", "100:00",
                                     "100:00:00", "099:60", "6000", "1:40:00", "0:6000", "1:02:64"]))
        elif r < 0.75:
            parts.append("_".join(str(rng.randint(0, 99)) for _ in range(rng.randint(2, 70))))
        parts.append(rng.choice(GLUE))
    return "".join(parts).encode()


def _key(m: extract.Match) -> tuple:
    return (m.start, m.end, m.kind, tuple(m.entries))


@pytest.fixture(scope="module")
def indexes() -> list:
    out = []
    for vals in SETS:
        for key in (None, b"k" * 32):
            doc, _ = build_set(values=vals, key=key)
            out.append(Scanner(parse(doc, key=key)).index)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_compiled_candidates_find_what_the_pure_python_passes_find(indexes: list,
                                                                   seed: int) -> None:
    need(classes.native, "the compiled part (plimsoll_ci.match._passes)")
    rng = random.Random(seed)
    found = 0
    for _ in range(12):
        buf = dense(rng)
        for index in indexes:
            for stop in (len(buf), rng.randrange(len(buf) + 1)):
                compiled = extract._Capped(None, stop)
                cl = classes.byte_classes(buf)
                extract._numbers_compiled(buf, index, cl, compiled)
                cl.release()
                small = extract._Capped(None, stop)
                extract._numbers_small(buf, index, small)
                assert sorted(map(_key, compiled)) == sorted(map(_key, small)), buf[:200]
                found += len(compiled)
    assert found  # (the buffers hold the entries' values: something was there to find)


def test_short_prefixed_and_underscored_integers_are_not_candidates() -> None:
    # With only 10-digit integer entries, `0x1D` (at most 3 decimal digits) and `x86_64` (4
    # digits) can equal none: they are not handed to the exact check. `0xb93c8a86` (8 hex
    # digits, up to 10 decimal ones) and `3_107_713_414` are.
    if classes.native is None:
        pytest.skip("the compiled part is not built here")
    from plimsoll_ci.match.digitruns import TOKEN, compiled_candidates

    doc, _ = build_set(values=[("a", "3107713414")])
    index = Scanner(parse(doc)).index
    buf = b"0x1D x86_64 0xb93c8a86 3_107_713_414 1.5 3107713414.00 3.107713414e9"
    cl = classes.byte_classes(buf)
    rows = compiled_candidates(buf, cl.cls, len(buf), index, extract.GROUPED_MIN_DIGITS)
    cl.release()
    tokens = {buf[s:].split(b" ")[0] for k, s in zip(rows[0::3], rows[1::3], strict=True)
              if k == TOKEN}
    assert tokens == {b"0xb93c8a86", b"3_107_713_414", b"3107713414.00", b"3.107713414e9"}

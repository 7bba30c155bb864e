"""The cheap filters in front of the exact checks drop only what the exact check would drop.

Each is compared with the pure-Python (`re`) path, which has none of them:
- a prefixed integer (`0x1D`, `0o17`, `0b1`) is looked at only when it has digits enough to
  reach some integer entry's length (a source file's tables of short hex literals are not);
- so is an integer grouped by underscores (`x86_64`, `manylinux2_17` in a lock file), unless a
  fraction or an exponent follows it;
- a base64 run that ends its line is tried as a wrapped block's first line only when its length,
  or the next run's, could be the block's width;
- a number token whose significant digits are no entry's is never made canonical (a decimal
  one) nor hashed (any: `ValueIndex.number_ids`); here the same search without that check is
  the reference, on both paths.
"""

from __future__ import annotations

import base64
import random
from decimal import Decimal

import pytest

from plimsoll_ci.match import classes, decode, extract
from plimsoll_ci.shipscan.scan import Scanner
from plimsoll_ci.withheld import build_set, parse

INTS = ["3107713414", "1000000000", "4294967295", "42", "100000", "18446744073709551615"]


def prefixed(rng: random.Random, v: int) -> str:
    """`v` as a prefixed literal, in any case, with or without underscores and leading zeros."""
    base, letter = rng.choice([(16, "x"), (8, "o"), (2, "b")])
    digits = {16: f"{v:x}", 8: f"{v:o}", 2: f"{v:b}"}[base]
    digits = "0" * rng.choice([0, 0, 1, 3]) + digits
    if rng.random() < 0.3:
        digits = "_".join(digits[i : i + 4] for i in range(0, len(digits), 4))
    if rng.random() < 0.5:
        digits = digits.upper()
    return "0" + (letter.upper() if rng.random() < 0.3 else letter) + digits


def matches(buf: bytes, index: object, small: bool) -> list[tuple]:
    out: list = []
    if small or classes.native is None:
        extract._numbers_small(buf, index, out)
    else:
        cl = classes.byte_classes(buf)
        extract._numbers_compiled(buf, index, cl, out)
        cl.release()
    return sorted((m.start, m.end, tuple(m.entries)) for m in out)


@pytest.mark.parametrize("values", [INTS[:1], INTS[:3], INTS[3:5], INTS, ["3107713414", "31.5"]])
def test_prefixed_integers_are_found_as_the_exact_path_finds_them(values: list[str]) -> None:
    rng = random.Random(len(values))
    doc, _ = build_set(values=[(f"v{i}", v) for i, v in enumerate(values)])
    index = Scanner(parse(doc)).index
    ints = [int(v) for v in values if "." not in v]
    parts = []
    for _ in range(6000):  # entries, their neighbours, and the short literals of a table
        r = rng.random()
        v = rng.choice(ints) if r < 0.2 else rng.choice(ints) + rng.choice([-1, 1]) if r < 0.3 \
            else rng.randrange(2 ** rng.randint(1, 70))
        parts.append(prefixed(rng, max(v, 0)) + rng.choice([",", " ", "\n", ")", "", "_", "."]))
    buf = "".join(parts).encode()
    tail = prefixed(rng, ints[0]).encode()  # an entry that runs to the buffer's last byte
    for b in (buf, buf + b" " + tail):
        want = matches(b, index, small=True)
        assert matches(b, index, small=False) == want
        assert want  # (the set's entries are there: the filter had something to keep)
    assert matches(buf + b" " + tail, index, small=False)[-1][1] == len(buf) + 1 + len(tail)


def block(rng: random.Random, width: int, lines: int) -> str:
    data = bytes(rng.randrange(256) for _ in range(width * lines * 3 // 4 + rng.randint(0, 5)))
    text = base64.b64encode(data).decode()
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


def near_blocks(rng: random.Random) -> bytes:
    """Lines ending in base64-looking runs of every length near a block's width, followed by
    lines of other widths, indentation, padding and CR LF: blocks, near blocks and code."""
    parts = []
    for _ in range(400):
        r = rng.random()
        indent = rng.choice(["", "    ", "\t"])
        if r < 0.3:
            width = rng.choice([12, 15, 16, 17, 20, 64, 76, 1024, 1028])
            parts.append(indent + block(rng, width, rng.randint(1, 4)).replace("\n", "\n" + indent))
        elif r < 0.6:
            first = "".join(rng.choice("AbCdEfGh0123+/") for _ in range(rng.randint(10, 80)))
            second = "".join(rng.choice("AbCdEfGh0123+/") for _ in range(rng.randint(1, 90)))
            parts.append(f"{indent}x = {first}\n{indent}{second}{rng.choice(['', '=', '=='])}")
        else:
            parts.append(rng.choice(["    return NotImplementedError", "class HTTPAdapterFoo:",
                                     "getResponseHeaders", "x = 1"]))
        parts.append(rng.choice(["\n", "\r\n", "\n\n", " "]))
    return "".join(parts).encode()


@pytest.mark.parametrize("seed", range(4))
def test_runs_that_end_their_line_are_taken_as_the_exact_path_takes_them(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    buf = near_blocks(rng)
    bounds = decode.Bounds()
    monkeypatch.setattr(classes, "COMPILED_FROM", 1 << 40)
    exact = decode.text_regions(buf, bounds)
    monkeypatch.setattr(classes, "COMPILED_FROM", 0)
    assert decode.text_regions(buf, bounds) == exact
    assert any(layer.lines for layer in exact.layers)  # (blocks were there to be found)
    budget = decode.RegionBudget(bounds.max_regions)
    bulk = decode.regions_in_bulk(buf, bounds, None, budget, None)
    got = [*bulk.layers, *(bulk.bulk.layer(i) for i in range(len(bulk.bulk.offsets)))] \
        if bulk.bulk else bulk.layers
    assert sorted((x.offset, x.data, x.lines) for x in got) == \
        sorted((x.offset, x.data, x.lines) for x in exact.layers)


def underscored(rng: random.Random, v: int) -> str:
    """`v` with underscores between some digits, sometimes with a fraction or an exponent that
    keeps its value (`3_1.07713414e8`)."""
    digits = str(v)
    out = "".join(d + ("_" if i < len(digits) - 1 and rng.random() < 0.4 else "")
                  for i, d in enumerate(digits))
    r = rng.random()
    if r < 0.15 and len(digits) > 2:
        k = rng.randint(1, len(digits) - 1)  # a decimal point moved, put back by the exponent
        out = f"{digits[:k]}_{digits[k:k + 1]}.{digits[k + 1:] or '0'}e{len(digits) - k - 1}"
    elif r < 0.25:
        out += ".000"
    return out


@pytest.mark.parametrize("values", [INTS[:1], INTS[:3], INTS[3:5], INTS])
def test_underscored_integers_are_found_as_the_exact_path_finds_them(values: list[str]) -> None:
    # x86_64, manylinux2_17, 1_000: a lock file's digit groups are short of any entry's length
    rng = random.Random(7 + len(values))
    doc, _ = build_set(values=[(f"v{i}", v) for i, v in enumerate(values)])
    index = Scanner(parse(doc)).index
    ints = [int(v) for v in values]
    parts = []
    for _ in range(6000):
        r = rng.random()
        v = rng.choice(ints) if r < 0.25 else rng.randrange(10 ** rng.randint(1, 21))
        word = rng.choice(["x86_64", "manylinux2_17", "py3_", "_1_2", "1__2", ""])
        parts.append(word + underscored(rng, v) + rng.choice([",", " ", "\n", "_", ".", "e"]))
    buf = "".join(parts).encode()
    tail = underscored(rng, ints[0]).encode()
    for b in (buf, buf + b" " + tail):
        want = matches(b, index, small=True)
        assert matches(b, index, small=False) == want
        assert want


def spelled(rng: random.Random, value: str) -> str:
    """`value` as content may write it: trailing zeros, an exponent, underscores, a leading
    zero or a sign (`31.5` -> `31.50`, `315e-1`, `+0031.5`), or a number next to it."""
    d = Decimal(value)
    if rng.random() < 0.3:
        d += Decimal(rng.choice([1, -1])) * Decimal(10) ** d.as_tuple().exponent
    digits = "".join(map(str, d.as_tuple().digits))
    exp = d.as_tuple().exponent
    r = rng.random()
    if r < 0.25:
        out = f"{digits[0]}.{digits[1:] or '0'}e{len(digits) - 1 + exp}"
    elif r < 0.4:
        out = f"{digits}e{exp}"
    elif r < 0.55 and "." not in str(d) and len(digits) > 3:
        out = "_".join(digits[i : i + 3] for i in range(0, len(digits), 3))
    else:
        out = format(d, "f") + ("0" * rng.randint(1, 2) if "." in format(d, "f") else "")
    return rng.choice(["", "", "+", "00"]) + out


@pytest.mark.parametrize("values", [["3107713414"], ["31.5", "0.0015", "3107713414"],
                                    ["1000000000", "42"], ["602.214076", "100000", "7", "0"]])
def test_number_tokens_are_found_whether_their_significant_digits_are_checked_first_or_not(
        values: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(len("".join(values)))
    doc, _ = build_set(values=[(f"v{i}", v) for i, v in enumerate(values)])
    index = Scanner(parse(doc)).index
    assert index.sigs_known
    parts = []
    for _ in range(4000):  # the values spelled many ways, and a lock file's numbers around them
        r = rng.random()
        v = rng.choice(values)
        tok = spelled(rng, v) if r < 0.35 else prefixed(rng, int(Decimal(v))) if r < 0.45 \
            else prefixed(rng, rng.randrange(2 ** 40)) if r < 0.5 else rng.choice(
                ["x86_64", "2024-05-10T11:23:10.216Z", "size = 1377899", "0b0f028d", "3e6"])
        parts.append(tok + rng.choice([",", " ", "\n", ")", "s", ";"]))
    buf = "".join(parts).encode()
    canon_calls = []
    real = extract.number_canon
    monkeypatch.setattr(extract, "number_canon", lambda t: canon_calls.append(t) or real(t))
    for small in (True, False):
        index.sigs_known = False  # the reference: every candidate canonical and hashed
        want = matches(buf, index, small)
        unchecked = len(canon_calls)
        index.sigs_known = True
        assert matches(buf, index, small) == want
        assert len(canon_calls) - unchecked < unchecked  # (the check spared some)
        canon_calls.clear()
        assert len(want) > 400  # (the values were there to be found)

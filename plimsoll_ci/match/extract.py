"""Candidate extraction: find withheld values in a buffer as whole token runs.

Vectorized with numpy: digit runs and word runs are found with array operations, the shape
prefilter from the index drops every run that cannot be an entry's spelling, and only the
survivors are canonicalized and hashed in Python.

Boundaries: a number is a maximal numeric token, so `3107713414` is found in `seed3107713414`
and `seed-3107713414.json` but never inside `13107713414`, and `31.5` is never in `131.5`.
A text value must start and end at word boundaries (letters, digits, bytes >= 0x80).
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from plimsoll_ci.match.canonical import CLOCK_RE, NUMBER_RE, clock_canon, number_canon
from plimsoll_ci.match.index import ValueIndex

_DIGIT = np.zeros(256, dtype=bool)
_DIGIT[48:58] = True
_WORD = np.zeros(256, dtype=bool)
_WORD[48:58] = True
_WORD[65:91] = True
_WORD[97:123] = True
_WORD[128:] = True
_LOWER = bytes.maketrans(bytes(range(65, 91)), bytes(range(97, 123)))
_WS = re.compile(rb"(?:\s|\xc2\xa0)+")
_DOT, _COLON, _UNDER, _ZERO = 46, 58, 95, 48
_CONT = np.zeros(256, dtype=bool)  # bytes after a digit run that continue a number token
for _c in b"eE_xXoObB":
    _CONT[_c] = True
_HEXPFX = np.zeros(256, dtype=bool)
for _c in b"xXoObB":
    _HEXPFX[_c] = True


class Match(NamedTuple):
    start: int
    end: int
    entries: list[str]
    kind: str  # "number" | "text"


def _runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    d = np.diff(mask.view(np.int8), prepend=np.int8(0), append=np.int8(0))
    return np.flatnonzero(d == 1), np.flatnonzero(d == -1)


def find_values(buf: bytes, index: ValueIndex) -> list[Match]:
    """Every place in `buf` where a withheld value occurs, with the ids of its entries."""
    if not buf:
        return []
    out: list[Match] = []
    a = np.frombuffer(buf, dtype=np.uint8)
    if index.has_numbers:
        out.extend(_numbers(buf, a, index))
    if index.text_shapes:
        out.extend(_texts(buf, a, index))
    return out


def _numbers(buf: bytes, a: np.ndarray, index: ValueIndex) -> list[Match]:
    isd = _DIGIT[a]
    starts, ends = _runs(isd)
    if not len(starts):
        return []
    n = len(a)
    ap = np.empty(n + 4, dtype=np.uint8)
    ap[:2] = 32
    ap[2:-2] = a
    ap[-2:] = 32
    lens = ends - starts
    prev = ap[starts + 1]
    prev2 = ap[starts]
    nxt = ap[ends + 2]
    nxt2 = ap[ends + 3]
    # A run right after "digit." / "digit_" / "digit:" continues an earlier token.
    # ("1_000" groups and "m:ss" parts are short, so a long run after "_" or ":" starts anew.)
    inner = ((prev == _DOT) | ((prev == _UNDER) & (lens <= 4)) | ((prev == _COLON) & (lens == 2))) \
        & _DIGIT[prev2]
    nxt2_digit = _DIGIT[nxt2]
    dot_cont = (nxt == _DOT) & nxt2_digit
    cont = dot_cont | (_CONT[nxt] & (nxt2_digit | _DIGIT[nxt2] | _HEXPFX[nxt]))
    plain = ~inner & ~cont & ~((nxt == _COLON) & nxt2_digit)
    lens_ok = np.isin(lens, np.fromiter(index.int_lengths, dtype=np.int64)) if index.has_ints \
        else np.zeros(len(lens), dtype=bool)
    leading_zero = (ap[starts + 2] == _ZERO) & (lens > 1)
    pick_plain = plain & (lens_ok | leading_zero) if index.has_ints else plain & False
    # Decimals, exponents and separators: the mantissa must hold enough digits for some entry.
    next_len = np.zeros(len(lens), dtype=np.int64)
    next_len[:-1] = lens[1:] * (starts[1:] == ends[:-1] + 1)
    total = lens + np.where(dot_cont, next_len, 0)
    pick_cont = ~inner & cont & (total >= index.min_sig)
    if index.has_ints:
        pick_cont |= ~inner & (lens == 1) & (ap[starts + 2] == _ZERO) & _HEXPFX[nxt]
        pick_cont |= ~inner & (nxt == _UNDER) & nxt2_digit
    pick_clock = (~inner & (nxt == _COLON) & nxt2_digit) if index.clockable \
        else np.zeros(len(lens), dtype=bool)
    out: list[Match] = []
    for s, e in zip(starts[pick_plain].tolist(), ends[pick_plain].tolist(), strict=True):
        tok = buf[s:e]
        canon = number_canon(tok) if tok[0] == _ZERO else tok
        if canon is None:
            continue
        ids = index.number_ids(canon)
        if ids:
            out.append(Match(s, e, ids, "number"))
    for s in starts[pick_cont].tolist():
        m = NUMBER_RE.match(buf, s)
        if m is None or (m.end() < len(buf) and _DIGIT[buf[m.end()]]):
            continue
        canon = number_canon(m.group())
        ids = index.number_ids(canon) if canon is not None else []
        if ids:
            out.append(Match(s, m.end(), ids, "number"))
    for s in starts[pick_clock].tolist():
        m = CLOCK_RE.match(buf, s)
        if m is None or (m.end() < len(buf) and _DIGIT[buf[m.end()]]):
            continue
        canon = clock_canon(m)
        ids = index.number_ids(canon) if canon is not None else []
        if ids:
            out.append(Match(s, m.end(), ids, "number"))
    return out


def _texts(buf: bytes, a: np.ndarray, index: ValueIndex) -> list[Match]:
    isw = _WORD[a]
    starts, ends = _runs(isw)
    if not len(starts):
        return []
    lens = ends - starts
    firsts = np.fromiter(index.text_shapes, dtype=np.int64)
    sel = np.isin(lens, firsts)
    out: list[Match] = []
    lower = None
    for s, ln in zip(starts[sel].tolist(), lens[sel].tolist(), strict=True):
        for total in index.text_shapes[ln]:
            if lower is None:
                lower = buf.translate(_LOWER)
            if total == ln:
                cand, end = lower[s : s + ln], s + ln
            else:
                raw = lower[s : s + 4 * total + 64]
                flat = _WS.sub(b" ", raw)
                if len(flat) < total:
                    continue
                if len(flat) > total and _WORD[flat[total]]:
                    continue
                cand = flat[:total]
                end = s + total
            ids = index.text_ids(cand)
            if ids:
                out.append(Match(s, end, ids, "text"))
    return out

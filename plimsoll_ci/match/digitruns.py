"""Vectorized checks over the digit runs of a large buffer (numpy), for `extract`: which runs
start a clock and which are its parts, where a comma-grouped integer starts, and how many
significant digits a number token has."""

from __future__ import annotations

from typing import Any, NamedTuple

from plimsoll_ci.match.ascii import (
    COLON,
    COMMA,
    DOT,
    FIVE,
    LOWER_E,
    MINUS,
    PLUS,
    UNDERSCORE,
    UPPER_E,
    ZERO,
)
from plimsoll_ci.match.classes import mask_runs, run_positions


def clock_runs(ap, r_starts, r_ends, r_lens, r_nxt, digit):  # noqa: ANN001, ANN202
    """(heads, parts): per digit run, whether a clock starts at it (`0:31.5`, `1:02:03`, as
    `_clock_end` decides) and whether it is a later part of one; (None, None) when no run is
    followed by a colon. `ap` is the buffer with two bytes of padding before it."""
    import numpy as np

    nr = len(r_starts)
    h = run_positions(r_nxt[: nr - 1] == COLON)
    h = h[r_lens[h] <= 3]
    if not len(h):
        return None, None
    s0, e0 = r_starts[h], r_ends[h]
    prev, prev2 = ap[s0 + 1], ap[s0]
    mm = h + 1
    ok = (r_starts[mm] == e0 + 1) & (r_lens[mm] == 2) & (ap[r_starts[mm] + 2] <= FIVE)
    ok &= ~(((prev == DOT) | (prev == UNDERSCORE) | (prev == COLON)) & digit[prev2])
    last = mm.copy()

    def after(idx):  # noqa: ANN001, ANN202  (the two bytes after a run, by run index)
        e = r_ends[np.minimum(idx, nr - 1)]
        return ap[e + 2], digit[ap[e + 3]]

    def exponent(idx):  # noqa: ANN001, ANN202  (an exponent right after a run)
        e = r_ends[np.minimum(idx, nr - 1)]
        b1, b2 = ap[e + 2], ap[e + 3]
        return ((b1 == LOWER_E) | (b1 == UPPER_E)) & (
            digit[b2] | (((b2 == PLUS) | (b2 == MINUS)) & digit[ap[e + 4]]))

    b1, d2 = after(last)
    has_ss = ok & (b1 == COLON) & d2
    ss = np.minimum(last + 1, nr - 1)
    ss_ok = (last + 1 < nr) & (r_starts[ss] == r_ends[last] + 1) & (r_lens[ss] == 2) \
        & (ap[r_starts[ss] + 2] <= FIVE)
    ok &= ~has_ss | ss_ok
    last = np.where(has_ss, ss, last)
    b1, d2 = after(last)
    has_frac = ok & (b1 == DOT) & d2  # the fraction's digits start the next run
    last = np.where(has_frac, np.minimum(last + 1, nr - 1), last)
    b1, d2 = after(last)
    ok &= ~(((b1 == COLON) | (b1 == DOT) | (b1 == UNDERSCORE)) & d2) & ~exponent(last)
    heads = np.zeros(nr, dtype=bool)
    heads[h[ok]] = True
    parts = np.zeros(nr, dtype=bool)
    parts[mm[ok]] = True
    parts[ss[ok & has_ss]] = True
    parts[last[ok & has_frac]] = True
    return heads, parts


class DigitRuns(NamedTuple):
    """The runs of digits in a padded buffer: their starts and ends (exclusive), lengths, and
    the byte after each run."""

    starts: Any
    ends: Any
    lens: Any
    nxt: Any


def grouped_heads(ap, runs: DigitRuns, digit, int_lengths):  # noqa: ANN001, ANN202
    """Starts of the comma-grouped integers (`4,820,193,756`) whose digit count is one of
    `int_lengths` (the integer entries'): a 1-3 digit run not after `digit,`, then 2-6 groups of
    3, and no `,digit` or `.digit` after them (`_grouped` checks each one exactly)."""
    import numpy as np

    r_starts, r_ends, r_lens, r_nxt = runs
    nr = len(r_starts)

    def link(i):  # noqa: ANN001, ANN202  (run i, a comma, and run i + 1 right after it)
        j = np.minimum(i + 1, nr - 1)
        return (i + 1 < nr) & (r_nxt[i] == COMMA) & (r_starts[j] == r_ends[i] + 1)

    h = run_positions(r_nxt == COMMA)
    h = h[link(h) & (r_lens[h] <= 3) & (ap[r_starts[h] + 2] != ZERO)]
    if not len(h):
        return h
    prev, prev2 = ap[r_starts[h] + 1], ap[r_starts[h]]
    h = h[~(((prev == COMMA) | (prev == COLON) | (prev == DOT)
             | ((prev == UNDERSCORE) & (r_lens[h] <= 4))) & digit[prev2])]
    groups = np.zeros(len(h), dtype=np.int64)
    alive = np.ones(len(h), dtype=bool)
    for g in range(1, 8):
        j = np.minimum(h + g, nr - 1)
        alive &= (h + g < nr) & link(np.minimum(h + g - 1, nr - 1)) & (r_lens[j] == 3)
        groups += alive
    last = np.minimum(h + groups, nr - 1)
    # the chain must end with its last group: no longer group, no further link, no fraction
    chain_end = ~link(last) & ~((r_nxt[last] == DOT) & digit[ap[r_ends[last] + 3]])
    ok = (groups >= 2) & (groups <= 6) & chain_end
    digits = r_lens[h] + 3 * groups
    ok &= np.isin(digits, np.fromiter(int_lengths, dtype=np.int64))
    return r_starts[h[ok]]


def sig_digits(a, starts, ends, lens, dot_cont, pick):  # noqa: ANN001, ANN202
    """Significant digits of the number tokens starting at the picked runs (vectorized).

    A token is a run, or a run, a dot and the next run; its significant digits are its digits
    without leading and trailing zeros. This count is the same for every decimal spelling of a
    value (`31.5`, `31.50`, `3.15e1`), so it prefilters tokens before any Python work.
    """
    import numpy as np

    zs, ze = mask_runs(a == ZERO)
    idx = np.flatnonzero(pick)
    nxt = np.minimum(idx + 1, len(starts) - 1)

    def lead_trail(i):  # noqa: ANN001, ANN202
        s, e = starts[i], ends[i]
        if not len(zs):
            z = np.zeros(len(i), dtype=np.int64)
            return z, z
        j = np.minimum(np.searchsorted(zs, s), len(zs) - 1)
        lead = np.where(zs[j] == s, np.minimum(ze[j], e) - s, 0)
        k = np.minimum(np.searchsorted(ze, e), len(ze) - 1)
        trail = np.where(ze[k] == e, e - np.maximum(zs[k], s), 0)
        return lead, trail

    li, ti = lead_trail(idx)
    lj, tj = lead_trail(nxt)
    n_i, n_j = lens[idx], lens[nxt]
    zero_i, zero_j = li == n_i, lj == n_j
    plain_sig = np.where(zero_i, 0, n_i - li - ti)
    # With a fraction: leading zeros run on into it when the integer part is all zeros, and
    # trailing zeros run back into the integer part when the fraction is all zeros.
    frac_sig = np.where(
        zero_i,
        np.where(zero_j, 0, n_j - lj - tj),
        np.where(zero_j, n_i - li - ti, (n_i - li) + n_j - tj),
    )
    return np.where(dot_cont[idx], frac_sig, plain_sig)


_HEX_OR_UNDERSCORE = bytes(1 if c in b"0123456789abcdefABCDEF_" else 0 for c in range(256))


def _prefixed_min_digits(base: int, length: int) -> int:
    """The fewest digits in `base` that can write an integer of `length` decimal digits."""
    h = 1
    while len(str(base**h - 1)) < length:
        h += 1
    return h


def prefixed_long_enough(ap, starts, nxt, length: int):  # noqa: ANN001, ANN202
    """Which prefixed integers (`0x1f`, `0o17`, `0b1`, at `starts`; `ap` the buffer with two
    bytes before it) have digits enough to reach `length` decimal digits: h digits in base b
    write less than b**h. Only when every number entry is an integer (its canonical form has
    `digits` in its shape): a prefixed integer's canonical form is one, so it can equal only an
    entry of as many digits. Most are short (`0x1D`, flags and tables) and skip the exact check."""
    import numpy as np

    ok = np.ones(len(starts), dtype=bool)
    table = np.frombuffer(_HEX_OR_UNDERSCORE, dtype=np.uint8).astype(bool)
    lower = nxt | 0x20
    for base, letter in ((16, ord("x")), (8, ord("o")), (2, ord("b"))):
        mine = lower == letter
        if not mine.any():
            continue
        need = min(_prefixed_min_digits(base, length), 64)  # (fewer checked: more kept)
        at = starts[mine].astype(np.int64) + 4  # the first digit: ap[s + 2] is the "0"
        fine = np.ones(len(at), dtype=bool)
        for j in range(need):  # digits and underscores enough in a row after the prefix
            fine &= table[ap[np.minimum(at + j, len(ap) - 1)]]
        ok[mine] = fine
    return ok


def underscored_long_enough(ap, runs: DigitRuns, idx, length: int):  # noqa: ANN001, ANN201
    """Which integers grouped by underscores (`1_000`, and `x86_64`'s `86_64`), starting at the
    digit runs `idx` of `runs` (`ap` the buffer with two bytes before it), have digits enough to
    reach `length` decimal digits: the chain of runs joined by single underscores, as the number
    pattern reads it. A chain that goes on with a fraction or an exponent (`1_2.5e9`) is kept:
    its value is not bounded by its digits. Only when every number entry is an integer (see
    `prefixed_long_enough`)."""
    import numpy as np

    r_starts, r_ends, r_lens, r_nxt = runs
    nr = len(r_starts)
    total = r_lens[idx].astype(np.int64)
    cur = np.asarray(idx, dtype=np.int64).copy()
    going = np.ones(len(cur), dtype=bool)
    for _ in range(64):  # (a longer chain is kept)
        nxt = np.minimum(cur + 1, nr - 1)
        step = going & (cur + 1 < nr) & (r_nxt[cur] == UNDERSCORE)
        step &= r_starts[nxt] == r_ends[cur] + 1  # a digit right after the underscore
        going = step
        if not step.any():
            break
        total[step] += r_lens[nxt[step]]
        cur[step] = nxt[step]
    after = r_nxt[cur]
    more = (after == DOT) | (after == LOWER_E) | (after == UPPER_E)
    return (total >= length) | more | going


# The compiled part's kinds of candidate (`_runs.number_candidates`, in _numbers.c).
GROUPED, PLAIN, TOKEN, CLOCK = 1, 2, 3, 4
_INTS, _DECIMALS, _CLOCKABLE, _GROUPED = 1, 2, 4, 8


def compiled_candidates(buf: bytes, cls, stop: int, index, grouped_from: int):  # noqa: ANN001, ANN201
    """With the compiled part: the number candidates of `buf` (`cls` its class bytes) that start
    before `stop`, as an int32 memoryview, (kind, start, end) after each other in buffer order:
    the runs `_numbers_small` would check, less those the vectorized filters above drop.
    Comma-grouped integers are looked for when an integer entry has `grouped_from` digits or
    more."""
    from plimsoll_ci.match.classes import C_DIGIT, native

    luts, params = _compiled_rules(index, grouped_from, C_DIGIT)
    return memoryview(native.number_candidates(buf, cls, stop, luts, params)).cast("i")


def _compiled_rules(index, grouped_from: int, digit_bit: int) -> tuple[bytes, tuple]:  # noqa: ANN001
    """The tables and numbers the compiled candidates read for `index`, made once per index."""
    cached = getattr(index, "_number_rules", None)
    if cached is not None:
        return cached
    int_lut, sig_lut = bytearray(256), bytearray(256)
    for n in index.int_lengths:
        int_lut[min(n, 255)] = 1
    for n in index.sigs:
        sig_lut[min(n, 255)] = 1
    flags = (_INTS if index.has_ints else 0) | (_DECIMALS if index.has_decimals else 0) \
        | (_CLOCKABLE if index.clockable else 0) \
        | (_GROUPED if index.has_ints and max(index.int_lengths) >= grouped_from else 0)
    need = tuple(min(_prefixed_min_digits(b, index.min_int_length), 64) if index.has_ints else 0
                 for b in (16, 8, 2))
    rules = (bytes(int_lut + sig_lut),
             (digit_bit, flags, index.min_int_length, min(index.min_sig, 2**31), *need))
    index._number_rules = rules
    return rules

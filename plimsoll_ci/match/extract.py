"""Candidate extraction: find withheld values in a buffer as whole token runs.

Large buffers are vectorized with numpy: digit runs and word runs are found with array operations,
the shape prefilter from the index drops every run that cannot be an entry's spelling, and only the
survivors are canonicalized and hashed in Python. Small buffers take the same steps with `re`, so
a scan of a few files never pays numpy's import (cold start).

Boundaries: a number is a maximal numeric token, so `3107713414` is found in `seed3107713414`
and `seed-3107713414.json` but never inside `13107713414`, and `31.5` is never in `131.5`.
A clock (`0:31.5`, `1:02:03`) is one token and claims its parts; numbers beside a colon that do
not make a clock (`8080:80`, `80:443`) stay whole tokens. A comma-grouped integer of three to
seven groups (`4,820,193,756`) is also read as one number; its groups stay tokens of their own.
A text value must start and end at word boundaries (letters, digits, bytes >= 0x80); underscores
at a value's ends (`_private`) must be there too.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from plimsoll_ci.match import classes as _classes
from plimsoll_ci.match.ascii import (
    COLON,
    COMMA,
    DOT,
    LOWER_A,
    LOWER_E,
    LOWER_Z,
    MINUS,
    NBSP,
    NBSP_LEAD,
    NINE,
    NON_ASCII,
    PLUS,
    SPACE,
    UNDERSCORE,
    UPPER_A,
    UPPER_E,
    UPPER_Z,
    ZERO,
    lazy_re,
)
from plimsoll_ci.match.canonical import clock_canon, clock_re, number_canon, number_re
from plimsoll_ci.match.classes import (  # noqa: F401  (byte_classes: callers import it here)
    C_B64,
    C_DIGIT,
    C_HEX,
    C_LOWER,
    C_UPPER,
    C_WORD,
    NATIVE_MAX,
    ByteClasses,
    byte_classes,
    no_nbsp,
    pure_python,
    run_positions,
)
from plimsoll_ci.match.digitruns import (
    CLOCK,
    GROUPED,
    PLAIN,
    TOKEN,
    DigitRuns,
    clock_runs,
    compiled_candidates,
    grouped_heads,
    prefixed_long_enough,
    sig_digits,
    underscored_long_enough,
)
from plimsoll_ci.match.index import ValueIndex, word_tag
from plimsoll_ci.match.wordruns import WordRuns, shaped_runs, text_candidates, word_windows
from plimsoll_ci.match.workspace import work_array

SMALL = 64 * 1024  # below this many bytes the pure-Python path costs less than importing numpy
# ... but once something has imported numpy, its passes cost less from this many bytes on (a
# 64 KiB buffer of source: 1.7 ms against 19 ms; the decoded layers of a history session, the
# pieces of a batch decoded alone, are such buffers)
NUMPY_FROM = 4 * 1024


def small_buffer(n: int) -> bool:
    """Whether a buffer of `n` bytes takes the pure-Python (`re`) path rather than numpy's."""
    return pure_python(n, SMALL, NUMPY_FROM)


_ws = lazy_re(rb"(?:\s|" + NBSP + rb")+")  # (each pattern compiled on first use)
_digit_run = lazy_re(rb"[0-9]+")
_odd_ws = lazy_re(rb"[\t\n\r\x0b\x0c]|  ")  # white space that is not one plain space
_word_run = lazy_re(rb"[0-9A-Za-z\x80-\xff]+")


_IS_DIGIT = bytes(1 if ZERO <= c <= NINE else 0 for c in range(256))
_IS_WORD = bytes(1 if (ZERO <= c <= NINE or UPPER_A <= c <= UPPER_Z or LOWER_A <= c <= LOWER_Z
                       or c >= NON_ASCII) else 0 for c in range(256))
_EXPONENT = (LOWER_E, UPPER_E)
_SIGNS = (PLUS, MINUS)
_CONT = bytes(1 if c in b"eE_xXoObB" else 0 for c in range(256))  # continue a number token


_grouped_re = lazy_re(rb"[1-9][0-9]{0,2}(?:,[0-9]{3}){2,6}")  # 4,820,193,756


GROUPED_MIN_DIGITS = 7  # three groups at least: `4,820` is as likely a list as a number
_HEXPFX = bytes(1 if c in b"xXoObB" else 0 for c in range(256))


class Match(NamedTuple):
    start: int
    end: int
    entries: list[str]
    kind: str  # "number" | "text"


def find_values(buf: bytes, index: ValueIndex, classes=None,  # noqa: ANN001
                limit: int | None = None, stop: int | None = None) -> list[Match]:
    """Every place in `buf` where a withheld value occurs, with the ids of its entries.

    `classes`: optionally, `byte_classes(buf)` computed once by the caller and shared with
    `decode.text_regions` (large buffers only; it is ignored for small ones). `limit`: stop once
    more than this many places are found (a buffer full of one value stays small in memory).
    `stop`: only places that start before it (the rest of `buf` is context a value may run into).
    """
    if not buf:
        return []
    out = _Capped(limit, len(buf) if stop is None else stop)
    given = classes
    small = small_buffer(len(buf))
    if small:
        if NBSP in buf:  # a no-break space is white space; two spaces keep every offset
            buf = buf.replace(NBSP, b"  ")
    elif bytes([NBSP_LEAD]) in buf:  # (a one-byte search is many times quicker than a two-byte one)
        buf, classes = no_nbsp(buf, classes)
    if not small and classes is None and (index.has_numbers or index.has_texts):
        classes = byte_classes(buf)
    try:
        if index.has_numbers:
            if small:
                _numbers_small(buf, index, out)
            else:
                _numbers_np(buf, index, classes, out)
        if index.has_texts:
            if small:
                _texts_small(buf, index, out)
            else:
                _texts_np(buf, index, classes, out)
    except _Full:
        pass
    finally:
        if classes is not None and classes is not given:
            classes.release()  # made here (or patched here): no one else reads it
    return list(out)


class _Full(Exception):
    """More places than the caller's limit: the search stops."""


class _Capped(list):
    """The places found before `stop`; appending past the limit stops the search (`_Full`)."""

    def __init__(self, limit: int | None, stop: int) -> None:
        super().__init__()
        self.limit = limit
        self.stop = stop

    def append(self, m: Match) -> None:
        if m.start >= self.stop:
            return
        super().append(m)
        if self.limit is not None and len(self) > self.limit:
            raise _Full


# --- the checks every surviving candidate goes through ---------------------------------------


def _plain(buf: bytes, s: int, e: int, index: ValueIndex, out: list[Match]) -> None:
    tok = buf[s:e]
    canon = number_canon(tok) if tok[0] == ZERO else tok
    if canon is not None:
        ids = index.number_ids(canon)
        if ids:
            out.append(Match(s, e, ids, "number"))


def _token(buf: bytes, s: int, index: ValueIndex, out: list[Match]) -> None:
    m = number_re().match(buf, s)
    if m is None or (m.end() < len(buf) and _IS_DIGIT[buf[m.end()]]):
        return
    tok = m.group()
    if index.sigs_known and tok[1:2] not in _PREFIXES:  # a decimal token: its canonical form
        e = tok.find(b"e") if b"e" in tok else tok.find(b"E")  # has the significant digits
        mantissa = tok if e < 0 else tok[:e]  # of its mantissa (`number_ids`' prefilter)
        if (len(mantissa.replace(b"_", b"").replace(b".", b"").strip(b"0")) or 1) \
                not in index.sigs:
            return
    canon = number_canon(tok)
    ids = index.number_ids(canon) if canon is not None else []
    if ids:
        out.append(Match(s, m.end(), ids, "number"))


_PREFIXES = (b"x", b"X", b"o", b"O", b"b", b"B")  # the second byte of `0x`, `0o`, `0b` integers


def _clock_end(buf: bytes, s: int) -> int | None:
    """The end of the clock that starts at `s` (`0:31.5`, `1:02:03`), or None when the digits
    there make no clock: more digits, another `:`, `.` or `_` and a digit, or an exponent right
    after it (a longer token)."""
    m = clock_re().match(buf, s)
    if m is None:
        return None
    e, n = m.end(), len(buf)
    nx = buf[e] if e < n else SPACE
    nx2 = buf[e + 1] if e + 1 < n else SPACE
    nx3 = buf[e + 2] if e + 2 < n else SPACE
    if _IS_DIGIT[nx] or (nx in (COLON, DOT, UNDERSCORE) and _IS_DIGIT[nx2]) or (
            nx in _EXPONENT and (_IS_DIGIT[nx2] or (nx2 in _SIGNS and _IS_DIGIT[nx3]))):
        return None
    return e


def _clock(buf: bytes, s: int, index: ValueIndex, out: list[Match]) -> None:
    m = clock_re().match(buf, s)
    if m is None or _clock_end(buf, s) is None:
        return
    canon = clock_canon(m)
    ids = index.number_ids(canon) if canon is not None else []
    if ids:
        out.append(Match(s, m.end(), ids, "number"))


def _grouped(buf: bytes, s: int, index: ValueIndex, out: list[Match]) -> None:
    """A comma-grouped integer at `s` (`4,820,193,756`): the whole comma chain, or nothing."""
    m = _grouped_re().match(buf, s)
    if m is None:
        return
    e, n = m.end(), len(buf)
    if e < n and (_IS_DIGIT[buf[e]] or (buf[e] in (COMMA, DOT) and e + 1 < n
                                        and _IS_DIGIT[buf[e + 1]])):
        return  # a longer chain, a longer group, or a fraction: not a grouped integer
    digits = m.group().replace(b",", b"")
    if len(digits) in index.int_lengths:
        ids = index.number_ids(digits)
        if ids:
            out.append(Match(s, e, ids, "number"))


def _text(buf: bytes, s: int, ln: int, index: ValueIndex,
          out: list[Match]) -> None:
    for total in index.text_shapes[ln]:
        if total == ln:
            cand, end = buf[s : s + ln].lower(), s + ln
        else:
            w = buf[s : s + total + 1].lower()
            if _odd_ws().search(w) is None and NBSP_LEAD not in w:
                flat = w  # nothing to collapse: the canonical window is the bytes themselves
            else:
                flat = _ws().sub(b" ", buf[s : s + 4 * total + 64].lower())
            if len(flat) < total or (len(flat) > total and _IS_WORD[flat[total]]):
                continue
            cand, end = flat[:total], s + total
        ids = index.text_ids(cand)
        if ids:
            out.append(Match(s, end, ids, "text"))


def _text_runs(buf: bytes, s: int, lens: tuple[int, ...], ends: list[int], index: ValueIndex,
               out: list[Match]) -> None:
    """Word runs from `s` (their lengths `lens`, their ends `ends`) against the entries' runs."""
    groups = []
    for n in index.key_lengths:
        g = index.runs_by_key.get(lens[:n])
        if g:
            groups.extend(g)
    for runs, totals, under in groups:
        k = len(runs)
        if k > 3 and lens[:k] != runs:
            continue
        end = ends[k - 1]
        cand = buf[s:end].lower()  # bytes.lower() is ASCII-only, as the canonical form is
        if len(cand) in totals and _odd_ws().search(cand) is None:
            flat = cand  # one plain space between words already: canonical as it stands
        else:
            flat = _ws().sub(b" ", cand)
        for total in totals:
            if len(flat) != total:
                continue
            if under is None:
                ids = index.text_ids(flat)
                if ids:
                    out.append(Match(s, end, ids, "text"))
                continue
            for lead, trail in under[total]:  # underscores at a value's ends must be there too
                if lead and (s < lead or buf[s - lead : s] != b"_" * lead):
                    continue
                if trail and buf[end : end + trail] != b"_" * trail:
                    continue
                ids = index.text_ids(b"_" * lead + flat + b"_" * trail)
                if ids:
                    out.append(Match(s - lead, end + trail, ids, "text"))


def _sig_ok(buf: bytes, s: int, e: int, index: ValueIndex) -> bool:
    """Significant digits of the mantissa at buf[s:e] equal some entry's (spelling-invariant)."""
    return len(buf[s:e].replace(b".", b"").replace(b"_", b"").strip(b"0")) in index.sigs


# --- small buffers: re ------------------------------------------------------------------------


def _numbers_small(buf: bytes, index: ValueIndex, out: list[Match]) -> None:
    n = len(buf)
    runs = [(m.start(), m.end()) for m in _digit_run().finditer(buf)]
    claimed = -1  # the end of the last clock: the runs before it are its parts
    grouped = index.has_ints and max(index.int_lengths) >= GROUPED_MIN_DIGITS
    for i, (s, e) in enumerate(runs):
        if s < claimed:
            continue
        ln = e - s
        p = buf[s - 1] if s > 0 else SPACE
        p2 = buf[s - 2] if s > 1 else SPACE
        if _IS_DIGIT[p2] and (p == DOT or (p == UNDERSCORE and ln <= 4)):
            continue  # continues an earlier token
        nx = buf[e] if e < n else SPACE
        nx2d = e + 1 < n and _IS_DIGIT[buf[e + 1]]
        if nx == COLON and nx2d and ln <= 3 and not (p == COLON and _IS_DIGIT[p2]):
            end = _clock_end(buf, s)
            if end is not None:  # a clock is one token; anything else beside a colon is not
                claimed = end
                if index.clockable:
                    _clock(buf, s, index, out)
                continue
        if grouped and nx == COMMA and nx2d and not (p in (COMMA, COLON) and _IS_DIGIT[p2]):
            _grouped(buf, s, index, out)
        dot_cont = nx == DOT and nx2d
        cont = dot_cont or (_CONT[nx] and (nx2d or _HEXPFX[nx])) or (
            nx in _EXPONENT and e + 2 < n and buf[e + 1] in _SIGNS and _IS_DIGIT[buf[e + 2]])
        if not cont:
            if index.has_ints and (ln in index.int_lengths
                                   or (buf[s] == ZERO and ln > index.min_int_length)):
                _plain(buf, s, e, index, out)
            continue
        total = ln
        if dot_cont and i + 1 < len(runs) and runs[i + 1][0] == e + 1:
            total += runs[i + 1][1] - runs[i + 1][0]
        if index.has_ints and ((ln == 1 and buf[s] == ZERO and _HEXPFX[nx])
                               or (nx == UNDERSCORE and nx2d)):
            _token(buf, s, index, out)
        elif total >= index.min_sig and _sig_ok(buf, s, s + total + dot_cont, index):
            _token(buf, s, index, out)


def _texts_small(buf: bytes, index: ValueIndex, out: list[Match]) -> None:
    shapes = index.text_shapes
    spans = [(m.start(), m.end()) for m in _word_run().finditer(buf)]
    starts = [a for a, _ in spans]
    ends = [b for _, b in spans]
    lens = [b - a for a, b in spans]
    firsts = index.first_runs
    k = index.max_runs
    lens_p = lens + [-1] * k  # padded so a window past the end never matches a shorter key
    ends_p = ends + [len(buf)] * k
    tags, mult, check_tag = index.tags, index.mult, not index.untagged
    for i, ln in enumerate(lens):
        if ln in firsts and (not check_tag
                             or word_tag(buf[starts[i] : ends[i]].lower(), mult) in tags):
            _text_runs(buf, starts[i], tuple(lens_p[i : i + k]), ends_p[i : i + k], index, out)
        if ln in shapes:
            _text(buf, starts[i], ln, index, out)


# --- large buffers: numpy ---------------------------------------------------------------------


def _luts():  # noqa: ANN202  (numpy arrays; imported lazily)
    import numpy as np

    global _NP
    if _NP is None:
        _NP = tuple(np.frombuffer(t, dtype=np.uint8).astype(bool)
                    for t in (_IS_DIGIT, _IS_WORD, _CONT, _HEXPFX))
    return _NP


_NP: tuple[Any, ...] | None = None  # numpy arrays, made on first use


_NEXT_LUT = None


def _numbers_np(buf: bytes, index: ValueIndex, classes: ByteClasses | None,
                out: list[Match]) -> None:
    """The number candidates of a large buffer: found by the compiled part when it is built
    (`_numbers_compiled`); numpy's passes below are the fallback without it."""
    if classes is None:
        classes = byte_classes(buf)
    if _classes.compiled(len(buf)):  # one pass, compiled
        _numbers_compiled(buf, index, classes, out)
        return
    import numpy as np

    global _NEXT_LUT
    digit, _, contl, hexpfx = _luts()
    if _NEXT_LUT is None:  # a byte after a run that can continue its token ("." ":" e E _ x ...)
        _NEXT_LUT = contl.copy()
        _NEXT_LUT[[DOT, COLON]] = True
    a = np.frombuffer(buf, dtype=np.uint8)
    r_starts, r_ends = classes.runs(C_DIGIT)
    nr = len(r_starts)
    if not nr:
        return
    ap = work_array("ap", len(a) + 5, np.uint8)
    ap[:2] = SPACE
    ap[2:-3] = a
    ap[-3:] = SPACE
    r_lens = r_ends - r_starts
    r_nxt = ap[r_ends + 2]
    # Clocks claim only what no entry but a clockable one (under 360000) could match: without
    # one, a clock's head and parts are never picked anyway, and looking for clocks is skipped.
    clock_head, claimed = clock_runs(ap, r_starts, r_ends, r_lens, r_nxt, digit) \
        if index.clockable else (None, None)
    if index.has_ints and max(index.int_lengths) >= GROUPED_MIN_DIGITS:
        heads = grouped_heads(ap, DigitRuns(r_starts, r_ends, r_lens, r_nxt), digit,
                              index.int_lengths)
        for s in heads[heads < getattr(out, "stop", len(buf))].tolist():
            _grouped(buf, s, index, out)
    # Candidates: a run can be picked only when the byte after it continues a token, or (plain
    # integers) when its length is some integer entry's or it has a leading zero.
    cand = _NEXT_LUT[r_nxt]
    if index.has_ints:
        top = max(index.int_lengths) + 1
        len_lut = np.zeros(top + 1, dtype=bool)
        len_lut[list(index.int_lengths)] = True
        lens_ok_all = len_lut[np.minimum(r_lens, top)]
        cand |= lens_ok_all
        # (a leading zero: it can equal only an entry with fewer digits than it has)
        cand |= (ap[r_starts + 2] == ZERO) & (r_lens > index.min_int_length)
    if claimed is not None:
        cand &= ~claimed  # the parts of a clock are no tokens of their own
    stop = getattr(out, "stop", len(buf))
    if stop < len(buf):
        cand &= r_starts < stop  # the rest is context
    c = run_positions(cand)
    if not len(c):
        return
    starts, ends, lens, nxt = r_starts[c], r_ends[c], r_lens[c], r_nxt[c]
    prev, prev2 = ap[starts + 1], ap[starts]
    nxt2 = ap[ends + 3]
    inner = ((prev == DOT) | ((prev == UNDERSCORE) & (lens <= 4))) & digit[prev2]
    nxt2d = digit[nxt2]
    dot_cont = (nxt == DOT) & nxt2d
    cont = dot_cont | (contl[nxt] & (nxt2d | hexpfx[nxt]))
    # "315e-1": an exponent with a sign continues the token too
    cont |= np.isin(nxt, _EXPONENT) & np.isin(nxt2, _SIGNS) & digit[ap[ends + 4]]
    clock = clock_head[c] if clock_head is not None else np.zeros(len(c), dtype=bool)
    live = ~inner
    none = np.zeros(len(lens), dtype=bool)
    first0 = ap[starts + 2] == ZERO
    if index.has_ints:
        lens_ok = lens_ok_all[c]
        lead0 = first0 & (lens > index.min_int_length)
        pick_plain = live & ~cont & ~clock & (lens_ok | lead0)
    else:
        pick_plain = none
    # the length of the run right after a dot ("31.5": the "5"), 0 when there is none
    j = c + 1
    has_next = j < nr
    j[~has_next] = nr - 1
    next_len = np.where(has_next & (r_starts[j] == ends + 1), r_lens[j], 0)
    total = lens + np.where(dot_cont, next_len, 0)
    pick_cont = live & cont & (total >= index.min_sig)
    pick_sep = np.zeros(len(lens), dtype=bool)
    if index.has_ints:
        prefixed = live & (lens == 1) & first0 & hexpfx[nxt]  # 0x.., 0o.., 0b..
        pick_sep = prefixed | (live & (nxt == UNDERSCORE) & nxt2d)
        pick_cont &= ~pick_sep
        if not index.has_decimals:  # (only integer entries: too few digits can equal none)
            under = pick_sep & ~prefixed  # 1_000, x86_64, manylinux2_17
            if prefixed.any():
                pick_sep[prefixed] = prefixed_long_enough(ap, starts[prefixed], nxt[prefixed],
                                                          index.min_int_length)
            if under.any():
                pick_sep[under] = underscored_long_enough(
                    ap, DigitRuns(r_starts, r_ends, r_lens, r_nxt), c[under],
                    index.min_int_length)
    if pick_cont.any() and not index.has_decimals:
        # Integers only: a token with a fraction equals one only when it has an exponent
        # ("3.107713414e9") or its fraction is all zeros ("3107713414.00"); most floats have
        # neither, and a fraction that starts with a nonzero digit is never all zeros.
        frac_end = ends + np.where(dot_cont, next_len + 1, 0)
        after = ap[frac_end + 2]
        exp = np.isin(after, _EXPONENT)
        # an all-zero fraction starts and ends with "0" (the exact test follows, per token)
        frac0 = (ap[ends + 3] == ZERO) & (ap[ends + next_len + 2] == ZERO)
        pick_cont &= ~dot_cont | exp | frac0
    n_cont = int(pick_cont.sum())
    if 0 < n_cont <= 4096:  # few: exact per-token check beats a pass over the buffer
        spans = (total + dot_cont)[pick_cont].tolist()
        pick_cont[pick_cont] = [_sig_ok(buf, s, s + ln, index)
                                for s, ln in zip(starts[pick_cont].tolist(), spans, strict=True)]
    elif n_cont:
        pick_full = np.zeros(nr, dtype=bool)
        pick_full[c[pick_cont]] = True
        dot_full = np.zeros(nr, dtype=bool)
        dot_full[c] = dot_cont
        pick_cont[pick_cont] = np.isin(
            sig_digits(a, r_starts, r_ends, r_lens, dot_full, pick_full),
            np.fromiter(index.sigs, dtype=np.int64))
    pick_clock = live & clock if index.clockable else none
    for s, e in _pairs(starts[pick_plain], ends[pick_plain]):
        _plain(buf, s, e, index, out)
    for s, _ in _pairs(starts[pick_sep | pick_cont]):
        _token(buf, s, index, out)
    for s, _ in _pairs(starts[pick_clock]):
        _clock(buf, s, index, out)


def _numbers_compiled(buf: bytes, index: ValueIndex, classes: ByteClasses,
                      out: list[Match]) -> None:
    """`_numbers_np` with the compiled part: its candidates, checked kind by kind in the order
    `_numbers_np` checks them (comma-grouped integers, plain runs, tokens, clocks)."""
    picks = compiled_candidates(buf, classes.cls, getattr(out, "stop", len(buf)), index,
                                GROUPED_MIN_DIGITS)
    at = {GROUPED: _grouped, TOKEN: _token, CLOCK: _clock}  # (the checks from a start)
    whole = picks.tolist() if len(picks) <= 3 * _BATCH else None  # (else a batch at a time)
    for want in (GROUPED, PLAIN, TOKEN, CLOCK):
        for i in range(0, len(picks), 3 * _BATCH):
            part = whole if whole is not None else picks[i : i + 3 * _BATCH].tolist()
            for kind, s, e in zip(part[0::3], part[1::3], part[2::3], strict=True):
                if kind == want == PLAIN:
                    _plain(buf, s, e, index, out)
                elif kind == want:
                    at[kind](buf, s, index, out)


_BATCH = 1 << 16  # candidates turned into Python ints at a time (a few MB, whatever the buffer)


def _pairs(a, b=None) -> Iterator[tuple[int, int]]:  # noqa: ANN001
    """(a[i], b[i]) as Python ints, a slice at a time, so no list of millions is ever built."""
    for i in range(0, len(a), _BATCH):
        xs = a[i : i + _BATCH].tolist()
        yield from zip(xs, b[i : i + _BATCH].tolist() if b is not None else xs, strict=True)


def _texts_np(buf: bytes, index: ValueIndex, classes: ByteClasses | None,
              out: list[Match]) -> None:
    """The text candidates of a large buffer: found by the compiled part when it is built
    (`_texts_compiled`); numpy's passes below are the fallback without it."""
    if classes is None:
        classes = byte_classes(buf)
    if _classes.compiled(len(buf)):  # the runs and their candidates in compiled calls
        _texts_compiled(buf, index, classes, out)
        return
    import numpy as np

    starts, ends = classes.runs(C_WORD)
    if not len(starts):
        return
    lens = ends - starts
    # runs that start past `stop` are context (a value may run into them), no candidates (a
    # value that starts with underscores starts before its first word run)
    n_cand = int(np.searchsorted(starts, getattr(out, "stop", len(buf)) + index.max_lead))
    if index.text_shapes:
        sel = np.isin(lens[:n_cand], np.fromiter(index.text_shapes, dtype=np.int64))
        if sel.any():  # (`sel` covers the candidates only: the runs that start before `stop`)
            for s, ln in _pairs(starts[:n_cand][sel], lens[:n_cand][sel]):
                _text(buf, s, ln, index, out)
    if not index.text_runs:
        return
    idx = text_candidates(buf, WordRuns(starts, lens, n_cand), index)
    if not len(idx):
        return
    k = index.max_runs
    for i in range(0, len(idx), _BATCH):
        part = idx[i : i + _BATCH]
        win = np.minimum(part[:, None] + np.arange(k), len(lens) - 1)
        past = (part[:, None] + np.arange(k)) >= len(lens)
        lens_w = np.where(past, -1, lens[win]).tolist()
        ends_w = ends[win].tolist()
        for s, lw, ew in zip(starts[part].tolist(), lens_w, ends_w, strict=True):
            _text_runs(buf, s, tuple(lw), ew, index, out)


def _texts_compiled(buf: bytes, index: ValueIndex, classes: ByteClasses,
                    out: list[Match]) -> None:
    """`_texts_np` with the compiled part: the word runs as long as a set's first-word shapes
    (`_text`; sets without run lengths), then the candidate runs with their windows of runs
    (`wordruns.word_windows`), checked in order as `_texts_np` checks them."""
    limit = getattr(out, "stop", len(buf)) + index.max_lead
    for s, ln in shaped_runs(classes.cls, index.text_shapes, limit) if index.text_shapes else ():
        _text(buf, s, ln, index, out)
    if index.text_runs:
        for s, lens_w, ends_w in word_windows(buf, classes.cls, limit, index):
            _text_runs(buf, s, lens_w, ends_w, index, out)

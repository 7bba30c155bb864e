"""Candidate extraction: find withheld values in a buffer as whole token runs.

Two implementations find the candidates (`classes.compiled` says which takes a buffer): the
compiled passes (`_passes`, `digitruns.compiled_candidates`, `wordruns.word_windows`) find the
digit and word runs and drop, with the index's shape prefilter, every run that cannot be an
entry's spelling; the pure-Python passes (`_numbers_small`, `_texts_small`, with `re`) take the
same steps, and are the fallback of an install without a C compiler. Either way only the
survivors are canonicalized and hashed in Python, by the same checks.

Boundaries: a number is a maximal numeric token, so `3107713414` is found in `seed3107713414`
and `seed-3107713414.json` but never inside `13107713414`, and `31.5` is never in `131.5`.
A clock (`0:31.5`, `1:02:03`) is one token and claims its parts; numbers beside a colon that do
not make a clock (`8080:80`, `80:443`) stay whole tokens. A comma-grouped integer of three to
seven groups (`4,820,193,756`) is also read as one number; its groups stay tokens of their own.
A text value must start and end at word boundaries (letters, digits, bytes >= 0x80); underscores
at a value's ends (`_private`) must be there too.
"""

from __future__ import annotations

from typing import NamedTuple

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
    ByteClasses,
    byte_classes,
    compiled,
    no_nbsp,
)
from plimsoll_ci.match.digitruns import CLOCK, GROUPED, PLAIN, TOKEN, compiled_candidates
from plimsoll_ci.match.index import ValueIndex, word_tag
from plimsoll_ci.match.wordruns import shaped_runs, word_windows

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
    `decode.text_regions` (for a buffer that takes the compiled passes only: `compiled`). `limit`: stop once
    more than this many places are found (a buffer full of one value stays small in memory).
    `stop`: only places that start before it (the rest of `buf` is context a value may run into).
    """
    if not buf:
        return []
    out = _Capped(limit, len(buf) if stop is None else stop)
    given = classes
    small = not compiled(len(buf))  # (the one choice: the pure-Python passes, or the compiled)
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
                _numbers_compiled(buf, index, classes, out)
        if index.has_texts:
            if small:
                _texts_small(buf, index, out)
            else:
                _texts_compiled(buf, index, classes, out)
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


# --- the pure-Python passes (small buffers; every buffer without the compiled part): re ---------------------------------------------------------------------


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


# --- the compiled passes -------------------------------------------------------------------


def _numbers_compiled(buf: bytes, index: ValueIndex, classes: ByteClasses,
                      out: list[Match]) -> None:
    """The number candidates of `buf` from the compiled passes, checked kind by kind
    (comma-grouped integers, plain runs, tokens, clocks) by the checks `_numbers_small` uses."""
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


def _texts_compiled(buf: bytes, index: ValueIndex, classes: ByteClasses,
                    out: list[Match]) -> None:
    """The text candidates of `buf` from the compiled passes: the word runs as long as a set's
    first-word shapes (`_text`; sets without run lengths), then the candidate runs with their
    windows of runs (`wordruns.word_windows`), checked by the checks `_texts_small` uses."""
    limit = getattr(out, "stop", len(buf)) + index.max_lead
    for s, ln in shaped_runs(classes.cls, index.text_shapes, limit) if index.text_shapes else ():
        _text(buf, s, ln, index, out)
    if index.text_runs:
        for s, lens_w, ends_w in word_windows(buf, classes.cls, limit, index):
            _text_runs(buf, s, lens_w, ends_w, index, out)

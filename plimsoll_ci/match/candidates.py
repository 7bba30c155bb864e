"""Runs of a buffer that may hold an encoded value, for `decode`: the base64 candidates (6+
bytes of either alphabet, decoded when padded or when 12+ mix both cases), the hex candidates
(8+ even, mostly printable when decoded), and which base64 runs could start a wrapped block.
A large buffer's runs are found from its byte classes, by the compiled part when it is built
(`_runs.base64_kept`, `_runs.hex_runs`: their results read without numpy), else by numpy's
passes."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from plimsoll_ci.match import classes as _classes
from plimsoll_ci.match.ascii import CARRIAGE_RETURN, EQUALS, NEWLINE, SEVEN, TWO
from plimsoll_ci.match.b64 import WRAP_WIDTHS
from plimsoll_ci.match.classes import (
    C_B64,
    C_DIGIT,
    C_HEX,
    C_LOWER,
    C_UPPER,
    ByteClasses,
    run_positions,
)
from plimsoll_ci.match.workspace import work_array


def runs(buf: bytes, rx: re.Pattern[bytes], pad: bool,
          classes: ByteClasses | None) -> list[tuple[int, int]]:
    """Maximal runs of a byte class (base64: 6+ bytes and up to two `=`; hex: 8+ bytes)."""
    if classes is None:
        return [(m.start(), m.end()) for m in rx.finditer(buf)]
    if _classes.compiled(len(buf)):  # one pass, compiled: the runs and which are kept
        pairs, keep = _compiled_runs(buf, pad, classes)
        t = memoryview(pairs).cast("i")
        pairs_kept = [(t[2 * i], t[2 * i + 1]) for i in flagged(keep)]
    else:
        starts, ends = runs_np(buf, pad, classes)
        pairs_kept = list(zip(starts.tolist(), ends.tolist(), strict=True))
    out = []
    for a0, b in pairs_kept:
        if pad and buf[b : b + 1] == b"=":
            b += 2 if buf[b + 1 : b + 2] == b"=" else 1
        out.append((a0, b))
    return out


def runs_np(buf: bytes, pad: bool, classes: ByteClasses) -> tuple[Any, Any]:
    """(starts, ends) of the runs `runs` keeps, as arrays; a base64 run's padding not in it."""
    return kept_runs(buf, pad, classes, long_runs(buf, pad, classes))


class LongRuns(NamedTuple):
    """The maximal runs of the base64 alphabet (6+ bytes) or of hex characters (8+) of a buffer,
    before `kept_runs` picks those that look encoded (`picked`: that pick, made already by the
    compiled part)."""

    starts: Any
    ends: Any
    picked: Any = None


def long_runs(buf: bytes, pad: bool, classes: ByteClasses) -> LongRuns:
    """The `LongRuns` of `buf`: base64 runs with `pad`, else hex runs (numpy's passes, the
    fallback where the compiled part is not built: with it, `_compiled_runs`)."""
    n = len(buf)
    cls = classes.padded[1:]  # n + 1: the last 0 ends every run
    k = 6 if pad else 8
    bit = C_B64 if pad else C_HEX
    return LongRuns(*eroded_runs(cls, n, bit, k))


def _compiled_runs(buf: bytes, pad: bool, classes: ByteClasses) -> tuple[bytes, bytes]:
    """With the compiled part: the base64 runs (`pad`) or the hex runs of `buf`, as int32
    (start, end) pairs, and a byte for each, 1 when `kept_runs` keeps it."""
    cls = classes.padded[1 : len(buf) + 1]
    if pad:
        return _classes.native.base64_runs(cls, buf, C_B64, C_UPPER | C_LOWER)
    return _classes.native.hex_runs(cls, buf, C_HEX, C_UPPER | C_LOWER, C_DIGIT)


def kept_runs(buf: bytes, pad: bool, classes: ByteClasses, runs: LongRuns) -> tuple[Any, Any]:
    """The `long_runs` that look encoded (see `runs`)."""
    import numpy as np

    n = len(buf)
    cls = np.asarray(classes.padded)[1:]
    starts, ends, picked = runs
    if picked is not None:  # picked by the compiled part
        return starts[picked], ends[picked]
    lens = ends - starts
    if not pad:
        keep = lens % 2 == 0
        starts, ends, lens = starts[keep], ends[keep], lens[keep]
    if not len(starts):
        return starts, ends
    a = np.frombuffer(buf, dtype=np.uint8)
    if pad:  # base64: runs that end in padding, or long runs that mix cases or letters and digits
        idx = np.empty(2 * len(starts), dtype=np.int64)  # the OR of each run's class bits
        idx[0::2], idx[1::2] = starts, ends
        bits = np.bitwise_or.reduceat(cls, idx)[0::2]
        both = C_UPPER | C_LOWER  # base64 of 12+ characters almost always has both cases
        mixed = (bits & both) == both
        padded = ends < n
        padded[padded] = a[ends[padded]] == EQUALS
        keep = ((lens >= 6) & padded) | ((lens >= 12) & mixed)
    else:  # hex: even runs whose high nibbles (every other byte) are mostly '2'..'7'
        # The runs' bytes gathered into one array (hex runs cover a small part of a buffer):
        # their class bits, and their high-nibble bytes (even offsets: every run is even).
        off = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=off[1:])
        pos = np.arange(int(off[-1]), dtype=np.int64)
        pos += np.repeat(starts - off[:-1], lens)
        bits = np.bitwise_or.reduceat(cls[pos], off[:-1])
        digits_only = (bits & (C_UPPER | C_LOWER | C_DIGIT)) == C_DIGIT  # no letters
        high = a[pos[0::2]]
        high -= TWO
        bad = (high > SEVEN - TWO).view(np.uint8)
        high_bad = np.add.reduceat(bad, off[:-1] // 2, dtype=np.int64)
        keep = ~digits_only | (lens >= 16)  # short digit strings are ids and numbers
        # digits only: every high nibble must be '2'..'7' (hex-encoded digits are "3x3x...")
        keep &= np.where(digits_only, high_bad == 0, high_bad * 5 <= lens // 2)
    return starts[keep], ends[keep]


def base64_kept(buf: bytes, classes: ByteClasses) -> tuple[bytes, bytes]:
    """With the compiled part: the base64 runs `kept_runs` keeps, as int32 (start, end) pairs,
    and the length of the run of 6+ after each, int32, found in one call that hands back no
    other run."""
    cls = classes.padded[1 : len(buf) + 1]
    return _classes.native.base64_kept(cls, buf, C_B64, C_UPPER | C_LOWER)


def following(ends: Any, every: LongRuns) -> Any:  # noqa: ANN401
    """For runs of `every` that end at `ends`, the length of the run of `every` after each (0
    when there is none)."""
    import numpy as np

    j = np.searchsorted(every.starts, ends)
    has = j < len(every.starts)
    second = np.zeros(len(ends), dtype=np.int64)
    second[has] = every.ends[j[has]] - every.starts[j[has]]
    return second


def may_wrap(a: Any, starts: Any, ends: Any, second: Any) -> Any:  # noqa: ANN401
    """Which runs `a[s:e]` that end their line could be a wrapped block's first line: for the
    others `b64.wrapped` says None, and they are plain runs. A block's width (a multiple of 4,
    16-1024) is its first line's length, or its second line's when that is full and no shorter;
    the second line's run is the first of the alphabet after the line break. `second` holds the
    length of the next run of 6+ bytes (`following`; 0 for none): when the next one is shorter,
    the one after it stands in, which can only keep a run here that `wrapped` then declines."""
    first = ends - starts
    lo, hi = WRAP_WIDTHS
    own = (first % 4 == 0) & (first >= lo) & (first <= hi)
    by_second = (second > 0) & (second % 4 == 0) & (second >= first) & (second >= lo) \
        & (second <= hi)
    return (first >= 12) & (a[ends - 1] != EQUALS) & (own | by_second)


def base64_bounds_np(buf: bytes, runs: tuple[Any, Any, Any], max_region: int,
                     at_end: bool) -> tuple[Any, Any]:
    """For the kept base64 runs (`runs`: their starts, their ends, the length of the run of 6+
    after each), their ends with the padding (up to two `=`) and which must be decoded alone
    (`slow`): those that end their line and may start a wrapped block, those over `max_region`,
    and, unless `at_end`, those that run to the end of `buf`. numpy's passes, the fallback
    where the compiled part is not built (with it, `_runs.base64_bounds`)."""
    import numpy as np

    starts, run_ends, second = runs
    n = len(buf)
    a = np.frombuffer(buf, dtype=np.uint8)
    ends = run_ends.astype(np.int64)  # with the padding (up to two `=`)
    for _ in range(2):
        ends += (ends < n) & (a[np.minimum(ends, n - 1)] == EQUALS)
    after = a[np.minimum(ends, n - 1)]
    # a run that ends its line may start a wrapped block
    slow = (ends < n) & ((after == NEWLINE) | (after == CARRIAGE_RETURN))
    slow[slow] = may_wrap(a, starts[slow], ends[slow], second[slow])
    slow |= ends - starts > max_region
    if not at_end:
        slow |= ends >= n
    return ends, slow


def flagged(flags: bytes) -> list[int]:
    """The indexes of the nonzero bytes of `flags` (0 or 1 each; few are 1)."""
    out, i = [], flags.find(1)
    while i >= 0:
        out.append(i)
        i = flags.find(1, i + 1)
    return out


def eroded_runs(cls: Any, n: int, bit: int, k: int) -> tuple[Any, Any]:  # noqa: ANN401
    """(starts, ends) of the maximal runs of class `bit`, `k` or more bytes long, in numpy: the
    mask is eroded so only runs of k+ bytes remain (e[i] is true when m[i:i+k] all are), and
    short runs (most words) never reach the run bookkeeping. The work arrays keep a 0 before the
    mask, so every run starts and ends inside them."""
    import numpy as np

    bufs = (work_array("e0", n + 3, np.uint8), work_array("e1", n + 3, np.uint8))
    cur = bufs[0]
    cur[0] = 0
    np.bitwise_and(cls, bit, out=cur[1 : n + 2])
    ln, width, flip = n + 1, 1, 1
    while width * 2 <= k:
        nxt = bufs[flip]
        nxt[0] = 0
        np.bitwise_and(cur[1 : 1 + ln - width], cur[1 + width : 1 + ln], out=nxt[1 : 1 + ln - width])
        cur, ln, flip, width = nxt, ln - width, 1 - flip, width * 2
    if width < k:
        w = k - width
        nxt = bufs[flip]
        nxt[0] = 0
        np.bitwise_and(cur[1 : 1 + ln - w], cur[1 + w : 1 + ln], out=nxt[1 : 1 + ln - w])
        cur, ln = nxt, ln - w
    cur[1 + ln] = 0
    d = work_array("d", ln + 1, bool)
    np.not_equal(cur[1 : ln + 2], cur[: ln + 1], out=d)
    t = run_positions(d)
    return t[0::2], t[1::2] + (k - 1)


def high_bad(tok: bytes) -> int:
    """High nibbles outside '2'..'7': hex-encoded text has almost none."""
    return len(tok[0::2].translate(None, b"234567"))

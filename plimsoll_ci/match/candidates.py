"""Runs of a buffer that may hold an encoded value, for `decode`: the base64 candidates (6+
bytes of either alphabet, decoded when padded or when 12+ mix both cases), the hex candidates
(8+ even, mostly printable when decoded), and which base64 runs could start a wrapped block.
A buffer that takes the compiled passes has its runs found from its byte classes
(`_passes.base64_kept`, `_passes.hex_runs`); any other, by `re`."""

from __future__ import annotations

import re

from plimsoll_ci.match import classes as _classes
from plimsoll_ci.match.classes import C_B64, C_DIGIT, C_HEX, C_LOWER, C_UPPER, ByteClasses


def runs(buf: bytes, rx: re.Pattern[bytes], pad: bool,
          classes: ByteClasses | None) -> list[tuple[int, int]]:
    """Maximal runs of a byte class (base64: 6+ bytes and up to two `=`; hex: 8+ bytes): all of
    them from `rx` (the pure-Python passes: `classes` None), or, from the compiled passes (given
    the buffer's `classes`), only those the checks after this would keep."""
    if classes is None:
        return [(m.start(), m.end()) for m in rx.finditer(buf)]
    pairs, keep = _compiled_runs(buf, pad, classes)
    t = memoryview(pairs).cast("i")
    pairs_kept = [(t[2 * i], t[2 * i + 1]) for i in flagged(keep)]
    out = []
    for a0, b in pairs_kept:
        if pad and buf[b : b + 1] == b"=":
            b += 2 if buf[b + 1 : b + 2] == b"=" else 1
        out.append((a0, b))
    return out


def _compiled_runs(buf: bytes, pad: bool, classes: ByteClasses) -> tuple[bytes, bytes]:
    """With the compiled part: the base64 runs (`pad`) or the hex runs of `buf`, as int32
    (start, end) pairs, and a byte for each, 1 when it may be encoded: a base64 run padded, or
    12+ long mixing both cases (`b64.looks_base64`); a hex run of even length whose high
    nibbles are mostly '2'..'7' (all of them, and 16+ long, for digits only)."""
    cls = classes.padded[1 : len(buf) + 1]
    if pad:
        return _classes.native.base64_runs(cls, buf, C_B64, C_UPPER | C_LOWER)
    return _classes.native.hex_runs(cls, buf, C_HEX, C_UPPER | C_LOWER, C_DIGIT)


def base64_kept(buf: bytes, classes: ByteClasses) -> tuple[bytes, bytes]:
    """With the compiled part: the base64 runs `_compiled_runs` keeps, as int32 (start, end) pairs,
    and the length of the run of 6+ after each, int32, found in one call that hands back no
    other run."""
    cls = classes.padded[1 : len(buf) + 1]
    return _classes.native.base64_kept(cls, buf, C_B64, C_UPPER | C_LOWER)


def flagged(flags: bytes) -> list[int]:
    """The indexes of the nonzero bytes of `flags` (0 or 1 each; few are 1)."""
    out, i = [], flags.find(1)
    while i >= 0:
        out.append(i)
        i = flags.find(1, i + 1)
    return out


def high_bad(tok: bytes) -> int:
    """High nibbles outside '2'..'7': hex-encoded text has almost none."""
    return len(tok[0::2].translate(None, b"234567"))

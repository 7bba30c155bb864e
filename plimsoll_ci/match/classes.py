"""Which implementation runs the matching passes over a buffer, and the byte classes the compiled
one shares between them.

Each pass (number candidates, text candidates, base64 and hex runs, escape lines, wrapped base64
blocks) has two implementations: the compiled module `plimsoll_ci.match._passes`, built when the
package is installed with a C compiler, and the pure-Python one (`re` and loops), its one
fallback. `compiled(n)` is the one place that says which takes a buffer of n bytes; a buffer
that takes the compiled passes gets its `ByteClasses` (one compiled pass), and each pass takes
the compiled road when it is given them, the pure-Python one when it is given None. Tests hold
the two equal (tests/match/test_match_compiled_equality.py).
"""

from __future__ import annotations

from typing import Any

from plimsoll_ci.match.ascii import (
    LOWER_A,
    LOWER_F,
    LOWER_Z,
    NBSP,
    NBSP_LEAD,
    NBSP_TAIL,
    NINE,
    NON_ASCII,
    SPACE,
    UPPER_A,
    UPPER_F,
    UPPER_Z,
    ZERO,
)
from plimsoll_ci.match.workspace import give_back_bytes, pooled_bytes

try:  # the one compiled part, optional (built when the package is installed with a C compiler)
    import plimsoll_ci.match._passes as native
except ImportError:  # pragma: no cover - installed without a compiler: the pure-Python passes
    native = None

# From this many bytes on, the compiled passes (a 64 KiB buffer of source: 1.7 ms against 19 in
# the pure-Python ones). A file name (31 bytes: 10.6 us in Python, 29 us compiled, the compiled
# calls' set-up) stays in Python; a 2 KB file would be quicker compiled (42 us against 666), but
# the bound is where it was when numpy's passes took these buffers (docs/performance.md).
COMPILED_FROM = 4 * 1024

# Byte classes, one gather per buffer shared by the number, word and encoded-region finders.
C_UPPER, C_LOWER, C_DIGIT, C_HEX, C_B64P, C_WORD, C_B64, C_ESC = 1, 2, 4, 8, 16, 32, 64, 128
_CLS_BYTES = None


def _cls_lut_bytes() -> bytes:
    """byte -> bits: upper, lower, digit, hex character (digit or a-f/A-F), base64 punctuation
    (+/_-), word byte (letter, digit, >= 0x80), base64 alphabet (letter, digit, +/_-), the
    lead of an escape or entity (`%`, `\\`, `&`); as bytes (the compiled `classify` reads it)."""
    global _CLS_BYTES
    if _CLS_BYTES is None:
        table = bytearray(256)
        for c in range(256):
            v = 0
            if UPPER_A <= c <= UPPER_Z:
                v |= C_UPPER | C_WORD | C_B64 | (C_HEX if c <= UPPER_F else 0)
            elif LOWER_A <= c <= LOWER_Z:
                v |= C_LOWER | C_WORD | C_B64 | (C_HEX if c <= LOWER_F else 0)
            elif ZERO <= c <= NINE:
                v |= C_DIGIT | C_WORD | C_B64 | C_HEX
            elif c in b"+/_-":
                v |= C_B64P | C_B64
            elif c >= NON_ASCII:
                v |= C_WORD
            elif c in b"%\\&":
                v |= C_ESC
            table[c] = v
        _CLS_BYTES = bytes(table)
    return _CLS_BYTES


def compiled(n: int) -> bool:
    """Whether a buffer of `n` bytes takes the compiled passes: they are built, the buffer is
    `COMPILED_FROM` bytes or more, and their int32 places reach its end (`MAX_LEN`); else the
    pure-Python passes take it."""
    return native is not None and COMPILED_FROM <= n <= native.MAX_LEN


class ByteClasses:
    """`padded[1:-1]` holds the class bits of every byte of a buffer that takes the compiled
    passes (`compiled`), found in one compiled pass into a reused bytearray; `padded[0]` and
    `padded[-1]` are 0, so every run of a class starts and ends inside it."""

    __slots__ = ("n", "padded")
    # a memoryview of the pooled bytes, None once released: read by index
    padded: Any

    def __init__(self, buf: bytes) -> None:
        n = self.n = len(buf)
        self.padded = pooled_bytes(n + 2)
        native.classify(buf, _cls_lut_bytes(), self.padded[1 : n + 1])

    def release(self) -> None:
        """Hand the array back for the next buffer's classes (fresh memory costs page faults);
        the owner calls this when nothing reads these classes any more."""
        if self.padded is not None:
            give_back_bytes(self.padded)
            self.padded = None

    def copy(self) -> ByteClasses:
        other = ByteClasses.__new__(ByteClasses)
        other.n = self.n
        other.padded = memoryview(bytearray(self.padded))
        return other

    @property
    def cls(self) -> memoryview:
        return self.padded[1:-1]


def byte_classes(buf: bytes) -> ByteClasses:
    """The byte classes of a buffer that takes the compiled passes (`compiled`)."""
    return ByteClasses(buf)


def no_nbsp(buf: bytes, classes: ByteClasses | None) -> tuple[bytes, ByteClasses | None]:
    """`buf` with every no-break space made two spaces (as `bytes.replace`), and its classes."""
    few = _nbsp_places(buf)
    if few is None:  # lead bytes everywhere: replaced in one pass, classes made anew
        buf = buf.replace(NBSP, b"  ")
        return buf, (ByteClasses(buf) if classes is not None else None)
    if not few:
        return buf, classes
    ba = bytearray(buf)
    if classes is not None:  # a space is in no class
        classes = classes.copy()
    for p in few:
        ba[p] = ba[p + 1] = SPACE
        if classes is not None:
            classes.padded[p + 1] = classes.padded[p + 2] = 0
    return bytes(ba), classes


_FEW_LEADS = 256  # lead bytes looked at one by one before a pass over the whole buffer


def _nbsp_places(buf: bytes) -> list[int] | None:
    """Where the no-break spaces of `buf` start, found from its lead bytes one by one, or None
    when it has more than `_FEW_LEADS` of them. Most buffers that have the lead byte have it a
    few times (`©`, `°`) and no no-break space; a two-byte search or a numpy pass costs a pass
    over the whole buffer, a one-byte search almost nothing."""
    out: list[int] = []
    lead, tail = bytes([NBSP_LEAD]), NBSP_TAIL
    i = buf.find(lead)
    for _ in range(_FEW_LEADS):
        if i < 0:
            return out
        if i + 1 < len(buf) and buf[i + 1] == tail:
            out.append(i)
        i = buf.find(lead, i + 1)
    return None if i >= 0 else out

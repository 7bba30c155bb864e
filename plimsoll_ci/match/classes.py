"""Byte classes of a buffer: one gather per buffer (two bytes at a time), shared by the value
finders and the encoded-region finders, and the runs of a class."""

from __future__ import annotations

import sys
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
from plimsoll_ci.match.workspace import give_back, give_back_bytes, pooled, pooled_bytes, work_array

try:  # the one compiled part, optional (built when the package is installed with a C compiler)
    import plimsoll_ci.match._runs as native
except ImportError:  # pragma: no cover - installed without a compiler: numpy finds the same runs
    native = None

NATIVE_MAX = 2**31 - 16  # the compiled runs are int32 pairs: a larger buffer takes numpy's

# Byte classes, one gather per buffer shared by the number, word and encoded-region finders.
C_UPPER, C_LOWER, C_DIGIT, C_HEX, C_B64P, C_WORD, C_B64, C_ESC = 1, 2, 4, 8, 16, 32, 64, 128
_CLS_LUT = None


def _cls_lut():  # noqa: ANN202
    """`_cls_lut_bytes` as a numpy array (the passes without the compiled part read it)."""
    import numpy as np

    global _CLS_LUT
    if _CLS_LUT is None:
        _CLS_LUT = np.frombuffer(_cls_lut_bytes(), dtype=np.uint8)
    return _CLS_LUT


_CLS_LUT16 = None
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


def _cls_lut16():  # noqa: ANN202
    """(a byte pair read as a uint16) -> the pair of their class bytes, read as a uint16."""
    import numpy as np

    global _CLS_LUT16
    if _CLS_LUT16 is None:  # byte order: whatever the machine's, both ways alike
        pairs = np.arange(65536, dtype=np.uint16).view(np.uint8)
        _CLS_LUT16 = np.ascontiguousarray(_cls_lut()[pairs]).view(np.uint16)
    return _CLS_LUT16


def compiled(n: int) -> bool:
    """Whether a buffer of `n` bytes takes the compiled part's passes (built, and its int32
    places fit): then nothing on the way imports numpy (its passes are the fallback)."""
    return native is not None and n < NATIVE_MAX


class ByteClasses:
    """`padded[1:-1]` holds the class bits of every byte of a buffer; `padded[0]` and
    `padded[-1]` are 0, so every run of a class starts and ends inside the array. With the
    compiled part (`compiled`) a memoryview of bytes; else a numpy array."""

    __slots__ = ("n", "padded")
    # a memoryview (compiled) or a numpy array, None once released: read by index either way
    padded: Any

    def __init__(self, buf: bytes) -> None:
        n = self.n = len(buf)
        if compiled(n):  # one pass, compiled, into a reused bytearray
            self.padded = pooled_bytes(n + 2)
            native.classify(buf, _cls_lut_bytes(), self.padded[1 : n + 1])
            return
        import numpy as np

        a = np.frombuffer(buf, dtype=np.uint8)
        # Gathered two bytes at a time from a table of byte pairs (twice as fast as one byte at
        # a time): the classes sit at offset 2 of an even-sized array, 0 before and after.
        arr = pooled(n + 4 + n % 2)
        arr[:2] = 0
        arr[2 + n - n % 2 :] = 0
        half = n // 2
        if half:
            np.take(_cls_lut16(), a[: 2 * half].view(np.uint16),
                    out=arr.view(np.uint16)[1 : 1 + half], mode="clip")
        if n % 2:
            arr[1 + n] = _cls_lut()[a[-1]]
        self.padded = arr[1 : n + 3]

    def release(self) -> None:
        """Hand the array back for the next buffer's classes (fresh memory costs page faults);
        the owner calls this when nothing reads these classes any more."""
        if self.padded is not None:
            if isinstance(self.padded, memoryview):
                give_back_bytes(self.padded)
            else:
                give_back(self.padded, self.n)
            self.padded = None

    def copy(self) -> ByteClasses:
        other = ByteClasses.__new__(ByteClasses)
        other.n = self.n
        other.padded = memoryview(bytearray(self.padded)) \
            if isinstance(self.padded, memoryview) else self.padded.copy()
        return other

    @property
    def cls(self):  # noqa: ANN201
        return self.padded[1:-1]

    def runs(self, bit: int):  # noqa: ANN201
        """(starts, ends) of the maximal runs of bytes that have class `bit` (one bit)."""
        import numpy as np

        if compiled(self.n):
            starts, ends, _ = compiled_runs(self.cls, bit, 1, False)
            return starts, ends
        m = work_array("m", self.n + 2, np.uint8)
        np.bitwise_and(np.asarray(self.padded), bit, out=m)
        d = work_array("d", self.n + 1, bool)
        np.not_equal(m[1:], m[:-1], out=d)
        t = run_positions(d)
        return t[0::2], t[1::2]


def compiled_runs(cls, bit: int, minimum: int, with_bits: bool):  # noqa: ANN001, ANN201
    """With the compiled part: (starts, ends, bits) of the maximal runs of class `bit` in the
    class array `cls`, `minimum` bytes or longer (int32 arrays; `bits`, with `with_bits`, the OR
    of each run's class bytes, else None), found in one pass."""
    import numpy as np

    pairs, ors = native.runs(cls, bit, minimum, with_bits)
    t = np.frombuffer(pairs, dtype=np.int32)
    return t[0::2], t[1::2], (np.frombuffer(ors, dtype=np.uint8) if with_bits else None)


def run_positions(mask):  # noqa: ANN001, ANN202
    """`np.flatnonzero(mask)`, as int32 when the positions fit (half the memory per run)."""
    import numpy as np

    t = np.flatnonzero(mask)
    return t.astype(np.int32) if len(mask) < 2**31 - 16 else t


def pure_python(n: int, small: int, numpy_from: int) -> bool:
    """Whether a buffer of `n` bytes takes the pure-Python (`re`) path: under `numpy_from`
    bytes, or under `small` bytes when the passes for large buffers would first import numpy
    (the compiled part is not built and nothing has imported numpy yet: its import costs more)."""
    return n < small and (n < numpy_from or (native is None and "numpy" not in sys.modules))


def byte_classes(buf: bytes) -> ByteClasses:
    return ByteClasses(buf)


def mask_runs(mask):  # noqa: ANN001, ANN202
    """(starts, ends) of the True runs of a bool array: one compare and one nonzero pass."""
    import numpy as np

    m = np.empty(len(mask) + 2, dtype=bool)
    m[0] = m[-1] = False
    m[1:-1] = mask
    t = np.flatnonzero(m[1:] != m[:-1])
    return t[0::2], t[1::2]


def no_nbsp(buf: bytes, classes: ByteClasses | None) -> tuple[bytes, ByteClasses | None]:
    """`buf` with every no-break space made two spaces (as `bytes.replace`), and its classes."""
    few = _nbsp_places(buf)
    if compiled(len(buf)):
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
    import numpy as np

    a = np.frombuffer(buf, dtype=np.uint8)
    if few is None:  # lead bytes everywhere (text in another script): one vectorized pass
        at = np.flatnonzero(a[:-1] == NBSP_LEAD)
        at = at[a[at + 1] == NBSP_TAIL]
    else:
        at = np.array(few, dtype=np.int64)
    if not len(at):
        return buf, classes
    ba = bytearray(buf)
    arr = np.frombuffer(ba, dtype=np.uint8)
    arr[at] = SPACE
    arr[at + 1] = SPACE
    if classes is not None:  # a space is in no class
        classes = classes.copy()
        classes.padded[at + 1] = 0
        classes.padded[at + 2] = 0
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

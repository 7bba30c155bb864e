"""Base64 runs: which are decoded, a line-wrapped block as one region, and the decoding itself,
one run at a time (a large buffer's runs are decoded all at once by the compiled passes:
`_passes.b64_runs`), for `decode`."""

from __future__ import annotations

import binascii

from plimsoll_ci.match import classes as _classes
from plimsoll_ci.match.ascii import EQUALS, lazy_re

# Maximal runs of the alphabet (standard or URL-safe) of 6+ characters, decoded when they end in
# padding ("MzEuNQ==" is `31.5`) or, unpadded, when 12+ characters mix both cases
# (`looks_base64`): identifiers in code are mostly shorter, unpadded, or of one case.
# The runs above, compiled on first use.
run_re = lazy_re(rb"[A-Za-z0-9+/_-]{6,}={0,2}")
# The next line of a line-wrapped base64 block: a line break, the block's indentation, a run.
_wrap_next = lazy_re(rb"\r?\n([ \t]*)([A-Za-z0-9+/_-]+)(={0,2})")


WRAP_WIDTHS = (16, 1024)  # line widths of a wrapped block (GNU base64: 76, PEM: 64)

_URLSAFE = bytes.maketrans(b"-_", b"+/")
_PADS = (b"", b"=", b"==", b"===")
LINE_BREAKS = (b"\n", b"\r")  # a run that ends its line may start a wrapped block


def decode_run(tok: bytes) -> bytes | None:
    """A base64 run (its padding stripped and put back right) decoded, or None: a length of
    4k+1, both alphabets in one run, or not base64 after all."""
    # (binascii itself: `base64.b64decode` wraps the same call, at twice the cost per region)
    t = tok.rstrip(b"=")
    if len(t) % 4 == 1:
        return None
    pad = _PADS[-len(t) % 4]
    try:
        if b"-" in t or b"_" in t:
            if b"+" in t or b"/" in t:
                return None
            return binascii.a2b_base64(t.translate(_URLSAFE) + pad)  # (urlsafe_b64decode)
        return binascii.a2b_base64(t + pad, strict_mode=True)  # (b64decode, validate=True)
    except (binascii.Error, ValueError):
        return None


def looks_base64(tok: bytes) -> bool:
    """Whether a run of 6+ alphabet bytes is decoded: padded, or 12+ mixing both cases."""
    # Plain words and numbers decode to noise; a base64 run mixes cases or digits with letters.
    if tok.endswith(b"="):
        return True
    # Unpadded: 12+ characters with both cases (base64 of 12+ characters almost always has both;
    # snake_case identifiers and numbers never do).
    return len(tok) >= 12 and tok != tok.lower() and tok != tok.upper()


def wrapped(buf: bytes, a: int, b: int, limit: int) -> list[tuple[int, int]] | None:
    """The lines (start, end) of a line-wrapped base64 block whose first line is `buf[a:b]`, or
    None. Its lines after the first have the same indentation; every line but the last is as long
    as the second one (the width: a multiple of 4 from 16 to 1024, as base64 tools wrap); the
    last is no longer, and ends its line (or is padded, or closed by punctuation); the first is
    as long as the width, or shorter when other text comes before it on its line. The compiled
    part follows the block when it is built (`_passes.wrapped_lines`), else `wrapped_py`."""
    native = _classes.native
    if native is None:
        return wrapped_py(buf, a, b, limit)
    pairs = native.wrapped_lines(buf, a, b, limit)
    if pairs is None:
        return None
    t = memoryview(pairs).cast("i").tolist()
    return list(zip(t[0::2], t[1::2], strict=True))


def wrapped_py(buf: bytes, a: int, b: int,  # noqa: PLR0911
               limit: int) -> list[tuple[int, int]] | None:
    """`wrapped`, in Python (with `_wrap_next`, a line at a time)."""
    if buf[b : b + 1] not in (b"\n", b"\r") or b - a < 12 or buf[b - 1] == EQUALS:
        return None  # (padding ends a block: it is never on its first line)
    first = b - a
    lines = [(a, b)]
    width = indent = None
    pos = b
    while pos - a <= limit:  # (a block past the region bound is noted, not decoded)
        m = _wrap_next().match(buf, pos)
        if m is None:
            break
        n = m.end(2) - m.start(2)
        if indent is None:
            indent = m.group(1)
        elif m.group(1) != indent:
            break
        after = buf[m.end(3) : m.end(3) + 1]
        full = not m.group(3) and after in (b"\n", b"\r")
        if width is None:
            width = n if full and n >= first else first
        if n > width or (n < width and not m.group(3) and after in (b" ", b"\t")):
            break  # longer, or a word that begins a line of text: not this block's line
        lines.append((m.start(2), m.end(3)))
        if n < width or not full:
            break
        pos = m.end(3)
    if len(lines) < 2 or width is None or width % 4 \
            or not WRAP_WIDTHS[0] <= width <= WRAP_WIDTHS[1]:
        return None
    if first < width and not buf[buf.rfind(b"\n", 0, a) + 1 : a].strip():
        return None  # a short first line with nothing before it: not where a block starts
    return lines


def unwrap(buf: bytes, lines: list[tuple[int, int]]) -> tuple[bytes, tuple[tuple[int, int], ...]]:
    """A wrapped block's base64 as one token, and (decoded offset, offset) of each line."""
    parts, places, chars = [], [], 0
    for start, end in lines:
        places.append((chars * 3 // 4, start))
        parts.append(buf[start:end])
        chars += end - start
    return b"".join(parts), tuple(places)

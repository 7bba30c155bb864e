"""Base64 runs: which are decoded, a line-wrapped block as one region, and the decoding itself,
one run at a time or a large buffer's runs all at once (the compiled part, else numpy), for
`decode`."""

from __future__ import annotations

import binascii
from typing import Any

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


_TABLES: tuple[Any, Any] | None = None


def _tables() -> tuple[Any, Any]:
    """byte -> its 6-bit value in either alphabet; byte -> 1 for `-_`, 2 for `+/`."""
    import numpy as np

    global _TABLES
    if _TABLES is None:
        value = np.zeros(256, dtype=np.uint8)
        value[list(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")] = \
            np.arange(64)
        value[list(b"-_")] = (62, 63)
        kind = np.zeros(256, dtype=np.uint8)
        kind[list(b"-_")] = 1
        kind[list(b"+/")] = 2
        _TABLES = value, kind
    return _TABLES


def decode_many(buf: bytes, starts: Any,  # noqa: ANN401
                ends: Any) -> tuple[bytes, list[int], list[int], list[bool]]:  # noqa: ANN401
    """Each run `buf[s:e]` of the base64 alphabets (its padding left out) decoded as `decode_run`
    decodes it, all at once: the decoded bytes joined, where each run's bytes start and end in
    them, and whether `decode_run` gives any (not for a length of 4k+1, nor for both alphabets)."""
    out, first, last, good = decode_arrays(buf, starts, ends)
    return out.tobytes(), first.tolist(), last.tolist(), good.tolist()


def decode_arrays(buf: bytes, starts: Any, ends: Any) -> tuple[Any, Any, Any, Any]:  # noqa: ANN401
    """`decode_many`, as numpy arrays: numpy's passes, the fallback where the compiled part is
    not built (with it, `decode` has `_passes.b64_runs` decode the runs and `b64_join` join
    them)."""
    import numpy as np

    value, kind = _tables()
    a = np.frombuffer(buf, dtype=np.uint8)
    lens = (ends - starts).astype(np.int64)
    coff = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(lens, out=coff[1:])
    quads = (lens + 3) // 4
    qoff = np.zeros(len(lens) + 1, dtype=np.int64)
    np.cumsum(quads, out=qoff[1:])
    run = np.repeat(np.arange(len(lens)), lens)
    within = np.arange(int(coff[-1]), dtype=np.int64) - coff[:-1][run]
    chars = a[starts[run] + within]
    both = np.bitwise_or.reduceat(kind[chars], coff[:-1]) == 3
    vals = np.zeros((int(qoff[-1]), 4), dtype=np.uint8)  # a short last quad: zeros after it
    vals.reshape(-1)[4 * qoff[:-1][run] + within] = value[chars]
    out = np.empty((len(vals), 3), dtype=np.uint8)
    v0, v1, v2, v3 = vals[:, 0], vals[:, 1], vals[:, 2], vals[:, 3]
    out[:, 0] = (v0 << 2) | (v1 >> 4)  # (uint8: the shifts drop the high bits, as wanted)
    out[:, 1] = (v1 << 4) | (v2 >> 2)
    out[:, 2] = (v2 << 6) | v3
    first = 3 * qoff[:-1]
    return out.reshape(-1), first, first + lens * 3 // 4, (lens % 4 != 1) & ~both


def join_decoded(out: Any, first: Any, last: Any,  # noqa: ANN401
                 sep: bytes) -> tuple[bytes, list[int]]:
    """The decoded runs `out[first[i]:last[i]]` joined with `sep` between them (as
    `sep.join`), and where each starts in the result: numpy's passes, the fallback where the
    compiled part is not built (with it, `_passes.b64_join`)."""
    import numpy as np

    lens = last - first
    k, gap = len(lens), len(sep)
    places = np.zeros(k, dtype=np.int64)
    if k > 1:
        np.cumsum(lens[:-1] + gap, out=places[1:])
    total = int(lens.sum()) + gap * max(k - 1, 0)
    joined = np.empty(total, dtype=np.uint8)
    before = np.cumsum(lens) - lens  # data bytes of the runs before each
    n = int(lens.sum())
    at = np.arange(n, dtype=np.int64)
    joined[np.repeat(places - before, lens) + at] = out[np.repeat(first - before, lens) + at]
    for j, byte in enumerate(sep):
        joined[places[1:] - gap + j] = byte
    return joined.tobytes(), places.tolist()

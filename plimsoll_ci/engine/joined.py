"""A batch's joined buffer: pieces joined with a separator no value spans, the piece each offset
falls in, where a value found in a decoded layer is placed, and the values of a long buffer
searched a slice at a time (`contents`)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from plimsoll_ci.engine.records import Windowing
from plimsoll_ci.match.decode import BULK_SEP, Layer
from plimsoll_ci.match.escapes import trace, unescape_mapped
from plimsoll_ci.match.extract import Match, find_values
from plimsoll_ci.match.index import ValueIndex

SEP = BULK_SEP  # no value spans it; its line break ends a line of escapes too
VALUE_BEFORE = 4096  # context before a slice searched for values: where a token starts
VALUE_AFTER = 256 * 1024  # context after it: a value that starts in the slice ends in it


def layer_at(layer: Layer, offset: int) -> int:
    """The buffer position of a value found at `offset` in a decoded layer: the layer's start,
    or in a wrapped base64 block the start of the line its encoding starts on."""
    if not layer.lines:
        return layer.offset
    k = bisect.bisect_right([d for d, _ in layer.lines], offset) - 1
    return layer.lines[max(k, 0)][1]


def layer_span(layer: Layer, buf: bytes, start: int, end: int,
               traced: dict[int, tuple] | None = None) -> tuple[int, int]:
    """The span in `buf` of a value found at `start:end` of a layer decoded from it: for a line
    of escapes the encoded text's own (its tokens traced once per line, remembered in `traced`
    by the layer's offset), so it is placed where the value is and overlaps the same value found
    as written; else its place (`layer_at`) alone."""
    if not layer.escapes:
        at = layer_at(layer, start)
        return at, at + 1
    rel, n = layer.escapes
    base = layer.offset - rel
    passes = traced.get(layer.offset) if traced is not None else None
    if passes is None:
        passes = unescape_mapped(buf[base : base + n])[1]
        if traced is not None:
            traced[layer.offset] = passes
    a, b = trace(passes, start, end)
    return base + a, base + b


def values_in(index: ValueIndex, buf: bytes, within: range, limit: int, w: Windowing,
            classes: object | None = None) -> list[Match]:
    """The values that start in `buf[within.start:within.stop]`, searched `w.values` bytes at a
    time (each slice with context before and after it), so the search's work arrays stay small;
    at most about `limit` of them. `classes` (of all of `buf`) is used when `buf` is searched in
    one go."""
    lo, hi = within.start, within.stop
    if lo == 0 and len(buf) <= w.values + VALUE_AFTER:
        return find_values(buf, index, classes, limit=limit, stop=hi)
    out: list[Match] = []
    for a in range(lo, hi, w.values):
        b = min(a + w.values, hi)
        s0, e0 = max(0, a - VALUE_BEFORE), min(len(buf), b + VALUE_AFTER)
        found = find_values(buf[s0:e0], index, None, limit=limit - len(out) + VALUE_BEFORE,
                            stop=b - s0)
        out += [m._replace(start=m.start + s0, end=m.end + s0) for m in found
                if m.start + s0 >= a]
        if len(out) > limit:
            break
    return out


def pieces_of(starts: list[int], offsets: Sequence[int]) -> list[int]:
    """For each offset into a joined buffer, the piece it is in (`starts`: where each begins)."""
    return [bisect.bisect_right(starts, o) - 1 for o in offsets]


def pieces_of_sorted(starts: list[int], offsets: Sequence[int]) -> list[int]:
    """`pieces_of` for offsets in ascending order (a bulk of base64 regions: thousands a
    megabyte of source), a piece at a time: one search per piece, not per offset."""
    out: list[int] = []
    n = len(offsets)
    for k in range(len(starts)):
        if len(out) >= n:
            break
        nxt = starts[k + 1] if k + 1 < len(starts) else None
        j = n if nxt is None else bisect.bisect_left(offsets, nxt, len(out))
        out += [k] * (j - len(out))
    return out


def join(datas: list[bytes]) -> tuple[bytes, list[int]]:
    """The pieces joined with `SEP` between them, and where each starts."""
    starts, pos = [], 0
    for d in datas:
        starts.append(pos)
        pos += len(d) + len(SEP)
    return SEP.join(datas), starts

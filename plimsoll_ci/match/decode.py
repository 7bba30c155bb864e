"""One layer of disguise on text, undone: base64 (a line-wrapped block as one region), hex,
percent-encoding, `\\u`/`\\x` escapes and HTML entities, each region decoded once.

Every decoder is bounded by the caller's `Bounds` (sizes and counts); a bound that is hit is
returned as a note, never skipped in silence. Nothing here reads a clock or a file: a time bound
comes in as the caller's `expired` callable, and a long content is decoded a window at a time by
the caller (`Window`). A line of escapes and entities is undone by `escapes` (which also traces
a value back to its own text). Compression streams and archives are `containers`; UTF-16 and
UTF-32 text is `charsets`. Deeper nesting (base64 inside base64) is out of scope.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, NoReturn

from plimsoll_ci.match import candidates as _c
from plimsoll_ci.match import classes as _classes
from plimsoll_ci.match.ascii import (
    DEL,
    SPACE,
    lazy_re,
)
from plimsoll_ci.match.b64 import LINE_BREAKS as _LINE_BREAKS
from plimsoll_ci.match.b64 import WRAP_WIDTHS as _WRAP_WIDTHS
from plimsoll_ci.match.b64 import decode_run as _b64
from plimsoll_ci.match.b64 import looks_base64 as _looks_base64
from plimsoll_ci.match.b64 import run_re as _b64_run
from plimsoll_ci.match.b64 import unwrap as _unwrap
from plimsoll_ci.match.b64 import wrapped as _wrapped
from plimsoll_ci.match.classes import C_ESC, ByteClasses, byte_classes, compiled
from plimsoll_ci.match.escapes import escape_kind, unescape


class Bounds(NamedTuple):
    max_decompressed: int = 64 * 1024 * 1024  # bytes out of one stream or member
    max_members: int = 1000  # archive members read per archive
    max_region: int = 4 * 1024 * 1024  # bytes of one encoded text region
    max_regions: int = 10000  # encoded regions decoded per file
    max_line: int = 1024 * 1024  # bytes of one line decoded for escapes and entities


class Layer(NamedTuple):
    chain: str  # e.g. "zip member data/a.json", "base64"
    offset: int  # where the layer starts in its parent (for places in text)
    data: bytes
    name: str | None = None  # a member's name, scanned like a file name
    # a wrapped base64 block: (offset in `data`, offset in the parent) of each of its lines, so a
    # value is placed at the line its encoding starts on
    lines: tuple[tuple[int, int], ...] = ()
    # a line of escapes and entities: (its first escape's offset from the line's start, the
    # line's length), so a value found in it is placed where its own text is (`engine.joined.layer_span`)
    escapes: tuple[int, int] | tuple[()] = ()


_new_layer = tuple.__new__  # (Layer(...) without its Python-level __new__: one per region)


class Bulk(NamedTuple):
    """Base64 regions decoded all at once and handed over in bulk, not one layer each (most of
    a source file's: its CamelCase names): where each starts in the buffer, and their decoded
    bytes joined with `BULK_SEP` between them, each region's starting at `places[i]`."""

    offsets: Any  # an int array (a buffer of source has thousands: none made a Python int)
    data: bytes
    places: list[int]

    def layer(self, i: int) -> Layer:
        """Region `i` as the layer `text_regions` would have made of it."""
        end = self.places[i + 1] - len(BULK_SEP) if i + 1 < len(self.places) else len(self.data)
        return Layer("base64", int(self.offsets[i]), self.data[self.places[i] : end])


BULK_SEP = b"\x00\n\x00"  # between the regions of a bulk: no value spans it


class Decoded(NamedTuple):
    layers: list[Layer]
    notes: list[str]
    stopped: int | None = None  # where decoding stopped because `expired` said so
    bulk: Bulk | None = None  # (`regions_in_bulk` only) base64 regions that are no layers


class Window(NamedTuple):
    """Where a buffer sits in a longer content that is decoded a window at a time.

    Only regions that start in `buf[lo:hi]` are this window's (the buffer holds context before
    and after them); `origin` is the content offset of `buf[0]`, `at_end` whether the buffer
    ends where the content does, and `line_start` the content offset where the line that holds
    `buf[0]` starts (notes about a line name its start, whichever window sees it).
    """

    lo: int
    hi: int
    origin: int = 0
    at_end: bool = True
    line_start: int = 0


class RegionBudget:
    """The encoded regions one file may still have decoded: the region bound counts per file,
    however the file's content is cut into windows or joined with other files."""

    __slots__ = ("left", "spent", "total")

    def __init__(self, total: int) -> None:
        self.total = total
        self.left = total
        self.spent = False  # more regions came than the bound: noted, nothing more decoded


# --- encoded text regions ---------------------------------------------------------------------

# Base64: maximal runs of the alphabet (standard or URL-safe) of 6+ characters, decoded when they
# end in padding ("MzEuNQ==" is `31.5`) or, unpadded, when 12+ characters mix both cases
# (`_looks_base64`): identifiers in code are mostly shorter, unpadded, or of one case.
_hex_run = lazy_re(rb"[0-9A-Fa-f]{8,}")  # (each pattern compiled on first use)

# Escapes and entities: every line that holds one is decoded as a whole.
_esc_hit = lazy_re(rb"%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|&#?[A-Za-z0-9]{1,10};")


_PRINTABLE = bytes(range(SPACE, DEL)) + b"\t\n\r"
_TICK = 64  # `expired` is asked once per this many regions or lines


def text_regions(buf: bytes, bounds: Bounds, classes: ByteClasses | None = None,  # noqa: PLR0913
                 window: Window | None = None, budget: RegionBudget | None = None,
                 expired: Callable[[], bool] | None = None) -> Decoded:
    """Encoded regions of a text buffer, each decoded once: base64 (a line-wrapped block as one
    region), hex, escapes, entities.

    `classes`: optionally `extract.byte_classes(buf)`, shared with `extract.find_values`.
    `window`: decode only the regions that start in its part of `buf` (see `Window`).
    `budget`: the regions the file may still have decoded (default: `bounds.max_regions`).
    `expired`: asked now and then (the caller's clock: this module reads none); once it says
    True, decoding stops and `Decoded.stopped` says where.
    """
    if not compiled(len(buf)):  # the pure-Python passes
        return _Regions(buf, bounds, window, budget, expired).run(None)
    if classes is not None:
        return _Regions(buf, bounds, window, budget, expired).run(classes)
    classes = byte_classes(buf)
    try:
        return _Regions(buf, bounds, window, budget, expired).run(classes)
    finally:
        classes.release()


def regions_in_bulk(buf: bytes, bounds: Bounds, classes: ByteClasses | None,
                    budget: RegionBudget, expired: Callable[[], bool] | None) -> Decoded:
    """`text_regions` of a whole buffer, where the plain base64 regions (that start no wrapped
    block and pass no bound) come back together in `Decoded.bulk` rather than as layers, when
    that changes nothing: the budget holds every region and the clock has not run out before."""
    if not compiled(len(buf)):  # the pure-Python passes
        return _Regions(buf, bounds, None, budget, expired).run(None)
    own = byte_classes(buf) if classes is None else None
    try:
        return _Regions(buf, bounds, None, budget, expired, bulk=True).run(
            classes if classes is not None else own)
    finally:
        if own is not None:
            own.release()


class _Stop(Exception):
    """A bound (regions, time) stops the decoding of this buffer."""


class _Regions:
    """One `text_regions` pass: the regions found, the notes, the bounds that stop it."""

    def __init__(self, buf: bytes, bounds: Bounds, window: Window | None,  # noqa: PLR0913
                 budget: RegionBudget | None, expired: Callable[[], bool] | None,
                 bulk: bool = False) -> None:
        self.buf = buf
        self.want_bulk = bulk
        self.bulk: Bulk | None = None
        self.bounds = bounds
        self.win = window if window is not None else Window(0, len(buf))
        self.budget = budget if budget is not None else RegionBudget(bounds.max_regions)
        self.expired = expired
        self.layers: list[Layer] = []
        self.notes: list[str] = []
        self.stopped: int | None = None
        self.ticks = 0

    def run(self, classes: ByteClasses | None) -> Decoded:
        """Every region: with the buffer's byte `classes` by the compiled passes, with None by
        the pure-Python ones (`classes.compiled` chose)."""
        try:
            self._base64(classes)
            self._hex(classes)
            self._escapes(classes)
        except _Stop:
            pass
        return Decoded(self.layers, self.notes, self.stopped, self.bulk)

    def tick(self, pos: int) -> None:
        self.ticks += 1
        if self.expired is not None and self.ticks % _TICK == 0 and self.expired():
            self.stopped = pos
            raise _Stop

    def add(self, name: str, start: int, data: bytes | None,
            lines: tuple[tuple[int, int], ...] = (), escapes: tuple = ()) -> None:
        if not data:
            return
        if self.budget.left <= 0:
            self.spent()
        self.budget.left -= 1
        self.layers.append(_new_layer(Layer, (name, start, data, None, lines, escapes)))
        self.tick(start)

    def spent(self) -> NoReturn:
        """The file's region bound is reached: noted once, and decoding stops."""
        if not self.budget.spent:
            self.notes.append(f"more than {self.budget.total} encoded regions: "
                              "the rest not decoded")
        self.budget.spent = True
        raise _Stop

    def too_long(self, name: str, start: int, end: int) -> bool:
        cut = end >= len(self.buf) and not self.win.at_end  # it runs on past this buffer
        n = end - start
        if n <= self.bounds.max_region and not cut:
            return False
        size = f"more than {n}" if cut else f"{n}"
        self.notes.append(f"{name} region at byte {self.win.origin + start} is {size} bytes, over "
                          f"the {self.bounds.max_region}-byte region bound: not decoded")
        return True

    def _base64(self, classes: ByteClasses | None) -> None:
        if classes is not None:
            self._base64_compiled(classes)
            return
        buf, hi = self.buf, self.win.hi
        block_end = -1
        for a, b in _c.runs(buf, _b64_run(), True, None):
            if a < block_end:
                continue  # a line of the wrapped block just decoded
            if a >= hi:
                break
            if _looks_base64(buf[a:b]):
                block_end = self._one_base64(a, b, block_end)

    def _base64_compiled(self, classes: ByteClasses) -> None:
        """`_base64` with the compiled passes: the runs that can neither start a wrapped block
        (they end their line) nor pass the region bound are kept and bounded
        (`_passes.base64_kept`, `base64_bounds`), decoded all at once (`b64_runs`), and only
        added one by one, in order, as the budget and the clock allow; those that come in bulk
        are joined there too (`b64_join`)."""
        buf, lo, hi = self.buf, self.win.lo, self.win.hi
        native = _classes.native
        pairs, nexts = _c.base64_kept(buf, classes)
        if not nexts:
            return
        lo_w, hi_w = _WRAP_WIDTHS
        s_b, r_b, e_b, slow = native.base64_bounds(buf, pairs, nexts, self.bounds.max_region,
                                                   self.win.at_end, lo_w, hi_w)
        data, good = native.b64_runs(buf, s_b, r_b)
        starts, ends = memoryview(s_b).cast("i"), memoryview(e_b).cast("i")
        if self.want_bulk and self._in_bulk_compiled((s_b, r_b, slow), starts, ends, data, good):
            return
        run_ends = memoryview(r_b).cast("i")
        block_end, q = -1, 0
        budget, append, expired = self.budget, self.layers.append, self.expired
        for i in range(len(starts)):
            s, e = starts[i], ends[i]
            first, n = 3 * q, run_ends[i] - s
            q += (n + 3) // 4
            if s < block_end:
                continue  # a line of the wrapped block just decoded
            if s >= hi:
                break
            if slow[i]:
                block_end = self._one_base64(s, e, block_end)
            elif s >= lo and good[i]:
                if budget.left <= 0:  # (`add`, inlined: one call per region costs here)
                    self.spent()
                budget.left -= 1
                append(_new_layer(Layer, ("base64", s, data[first : first + n * 3 // 4], None,
                                          (), ())))
                self.ticks += 1
                if expired is not None and self.ticks % _TICK == 0 and expired():
                    self.stopped = s
                    raise _Stop

    def _in_bulk_compiled(self, runs: tuple[bytes, bytes, bytes], starts: memoryview,
                          ends: memoryview, data: bytes, good: bytes) -> bool:
        """The base64 runs of a whole buffer with the plain ones in `self.bulk`; False (nothing
        done) when the budget might not hold them all or the clock has run out: then they are
        taken one by one. The runs that may start a wrapped block go first, as the loop takes
        them, since a block swallows the runs in it. `runs`: the int32 starts and ends (padding
        left out) and the slow flags `base64_bounds` gives; `starts` and `ends` (with the
        padding) as int32 views; `data` and `good` as `b64_runs` gives them."""
        s_b, r_b, slow = runs
        one = _c.flagged(slow)
        n_plain = good.count(1) - sum(good[i] for i in one)
        if len(one) + n_plain > self.budget.left or (
                self.expired is not None and self.expired()):
            return False
        take = bytearray(good)
        block_end = -1
        for i in one:
            take[i] = 0
            s = starts[i]
            if s < block_end:
                continue  # a line of the wrapped block just decoded
            end = self._one_base64(s, ends[i], block_end)
            if end != block_end:  # a run after a block's first line and before its end is one
                block_end = end  # of its lines
                j = bisect.bisect_right(starts, s)
                while j < len(starts) and starts[j] < end:
                    take[j] = 0
                    j += 1
        if take.count(1):
            # (bytes: the compiled pass takes the flags it follows immutable)
            joined, offsets, places = _classes.native.b64_join(data, s_b, r_b, bytes(take),
                                                                BULK_SEP)
            places = memoryview(places).cast("q").tolist()
            self.bulk = Bulk(memoryview(offsets).cast("i"), joined, places)
            self.budget.left -= len(places)
            self.ticks += len(places)
        return True

    def _one_base64(self, a: int, b: int, block_end: int) -> int:
        """One base64 run `buf[a:b]` that looks like base64 (a wrapped block's first line, or a
        region of its own): decoded and added; the end of the block it starts, if any."""
        buf, lo = self.buf, self.win.lo
        lines = _wrapped(buf, a, b, self.bounds.max_region) \
            if buf[b : b + 1] in _LINE_BREAKS else None
        if lines is not None:  # one region, even when it starts before this window
            end = lines[-1][1]
            if end - a > self.bounds.max_region or (end >= len(buf) and not self.win.at_end):
                if a >= lo:
                    self.too_long("base64", a, end)
                return end
            token, places = _unwrap(buf, lines)
            data = _b64(token)
            if data is not None:  # (else: no block after all; its lines are runs of their own)
                if a >= lo:
                    self.add("base64", a, data, places)
                return end
        if a >= lo and not self.too_long("base64", a, b):
            self.add("base64", a, _b64(buf[a:b]))
        return block_end

    def _hex(self, classes: ByteClasses | None) -> None:
        buf, lo, hi = self.buf, self.win.lo, self.win.hi
        for a, b in _c.runs(buf, _hex_run(), False, classes):
            if a < lo:
                continue
            if a >= hi:
                break
            tok = buf[a:b]
            bad = _c.high_bad(tok)
            if (b - a) % 2 or bad * 5 > (b - a) // 2 or self.too_long("hex", a, b):
                continue
            if tok.isdigit() and (b - a < 16 or bad):
                continue  # digit strings are ids and numbers unless they read as hex-encoded text
            data = bytes.fromhex(tok.decode("ascii"))
            if len(data.translate(None, _PRINTABLE)) * 5 > len(data):
                continue  # not hex-encoded text (ids, hashes, digit strings): nothing to find in it
            self.add("hex", a, data)

    def _escapes(self, classes: ByteClasses | None) -> None:
        """Each line that holds an escape or entity, decoded whole (the region is placed at its
        first one): a line is looked at once, from its first `%`, `\\` or `&`, so a long line
        costs one pass."""
        buf, win = self.buf, self.win
        if b"%" not in buf and b"\\" not in buf and b"&" not in buf:
            return
        n = len(buf)
        for ls, le, hit in escape_lines(buf, classes):
            if hit < win.lo:
                continue  # the line's first escape is in the window before: decoded there
            if hit >= win.hi:
                return
            self.tick(hit)
            start = win.origin + ls if ls or not win.origin else win.line_start
            cut = le == n and not win.at_end
            if cut or win.origin + le - start > self.bounds.max_line:
                self.notes.append(f"line with escapes at byte {start} is over the "
                                  f"{self.bounds.max_line}-byte line bound: not decoded")
                continue
            line = buf[ls:le]
            data = unescape(line)
            if data != line:
                self.add(escape_kind(line), hit, data, (), (hit - ls, le - ls))


def escape_lines(buf: bytes, classes: ByteClasses | None) -> Iterator[tuple[int, int, int]]:
    """(start, end, first hit) of each line of `buf` that holds an escape or an entity, in
    order: where the line starts, where its line break is (or the buffer's end), and where its
    first escape or entity starts. The compiled passes find them in one pass from the byte
    `classes` (given when the buffer takes them); else from the first lead of each line
    (`_line_firsts`)."""
    if classes is not None:
        rows = memoryview(_classes.native.escape_lines(classes.cls, buf, C_ESC)).cast("i")
        for i in range(0, len(rows), 3 << 16):
            t = rows[i : i + (3 << 16)].tolist()
            yield from zip(t[0::3], t[1::3], t[2::3], strict=True)
        return
    n = len(buf)
    for first in _line_firsts(buf):
        ls = buf.rfind(b"\n", 0, first) + 1
        le = buf.find(b"\n", first)
        le = n if le < 0 else le
        m = _esc_hit().search(buf, first, le)
        if m is not None:
            yield ls, le, m.start()


_esc_lead = lazy_re(rb"[%\\&]")


def _line_firsts(buf: bytes) -> Iterator[int]:
    """The first `%`, `\\` or `&` of each line that has one, in order."""
    pos = 0
    while True:
        m = _esc_lead().search(buf, pos)
        if m is None:
            return
        yield m.start()
        le = buf.find(b"\n", m.start())
        if le < 0:
            return
        pos = le + 1

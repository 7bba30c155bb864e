"""How the engine reads contents within its bounds, whatever they are.

Small contents (up to the window size, `records.windowing`) are joined into one buffer per
batch, so the vectorized passes run over megabytes rather than paying their fixed cost per file.
A longer content is read a piece at a time and scanned a window at a time (`_Windows`): each
window's buffer holds context before and after it, and only what starts in the window is its
own, so a value, an encoded region or a line that crosses a window's edge is found once. An
archive or compressed stream is opened one member at a time. Every bound (encoded regions,
decode time, findings listed) counts per shipped file (`_File`), across its windows, members
and batches, and every note names the file.
"""

from __future__ import annotations

import bisect
import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from plimsoll_ci.engine.joined import SEP as _SEP
from plimsoll_ci.engine.joined import join as _join
from plimsoll_ci.engine.joined import layer_span as _layer_span
from plimsoll_ci.engine.joined import pieces_of as _pieces_of
from plimsoll_ci.engine.joined import pieces_of_sorted as _pieces_of_sorted
from plimsoll_ci.engine.joined import values_in as _values
from plimsoll_ci.engine.merge import Hit
from plimsoll_ci.engine.merge import merged as _merged
from plimsoll_ci.engine.records import Finding, Limits, windowing
from plimsoll_ci.match.charsets import Transcoder, text_encoding
from plimsoll_ci.match.classes import ByteClasses, compiled
from plimsoll_ci.match.containers import Container, is_container
from plimsoll_ci.match.decode import (
    Bounds,
    Bulk,
    Decoded,
    Layer,
    RegionBudget,
    Window,
    regions_in_bulk,
    text_regions,
)
from plimsoll_ci.match.extract import Match, byte_classes
from plimsoll_ci.match.jsontag import TopLevelKey
from plimsoll_ci.withheld import FORMATS

if TYPE_CHECKING:
    from plimsoll_ci.engine import Scanner

Read = Callable[[int], bytes]  # read(n): the next bytes of a content, at most n; b"" at its end

_HEAD = 8192  # the first bytes, that tell binary content, UTF-16 text and containers
_TAGS = (b'"plimsoll-withheld/', b'"plimsoll-sealed/')
_LEAD = b" \t\r\n\xef\xbb\xbf"  # white space (and a UTF-8 byte-order mark) before a JSON text
_CHUNK = 1024 * 1024  # bytes read at a time from a long content
_PRINT_CONTEXT = 4096  # context around a window for its source fingerprints


def bytes_reader(data: bytes) -> Read:
    """A `Read` of bytes in memory (no copy when the whole is asked for at once)."""
    view = memoryview(data)
    pos = 0

    def read(n: int) -> bytes:
        nonlocal pos
        if pos == 0 and n >= len(data):
            pos = len(data)
            return data
        chunk = bytes(view[pos : pos + n])
        pos += len(chunk)
        return chunk

    return read


def read_upto(read: Read, n: int) -> bytes:
    """Up to `n` bytes of `read` (fewer only at its end)."""
    parts: list[bytes] = []
    got = 0
    while got < n:
        chunk = read(n - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _slices(data: bytes | bytearray) -> Iterator[bytes]:
    view = memoryview(data)
    for i in range(0, len(data), _CHUNK):
        yield bytes(view[i : i + _CHUNK])


def _sub(chain: str, layer: str) -> str:
    return f"{chain} > {layer}" if chain else layer


class _File:
    """One shipped file being scanned: its bounds, counted across all its pieces and windows
    (decode time, findings listed; encoded regions for its own content, each archive member
    having its own), and its notes (without its path)."""

    def __init__(self, path: str, limits: Limits) -> None:
        self.path = path
        self.limits = limits
        self.budget = RegionBudget(limits.max_regions)
        self.spent = 0.0  # seconds spent decoding its regions so far
        self.since = 0.0  # when the decoding under way began
        self.found = 0
        self.full = False  # more findings than the bound: not scanned any further
        self.stopped = False  # the decode time bound was reached
        self.notes: list[str] = []

    def decode(self, buf: bytes, bounds: Bounds, classes: ByteClasses | None,  # noqa: PLR0913
               window: Window | None, budget: RegionBudget) -> Decoded:
        """`text_regions` of a piece of this file, its time counted to the file's decode time
        (asked throughout the decoding: `expired`)."""
        self.since = time.monotonic()
        try:
            return text_regions(buf, bounds, classes, window, budget, self.expired)
        finally:
            self.spent += time.monotonic() - self.since

    def expired(self) -> bool:
        """Whether the file's decode time is up (the time spent decoding its regions)."""
        return self.spent + time.monotonic() - self.since > self.limits.decode_seconds

    def decodable(self, chain: str, binary: bool, budget: RegionBudget) -> bool:
        """Whether encoded regions of a piece are still looked for: text (or an archive
        member), within its region bound and the file's decode time."""
        return (not binary or bool(chain)) and not self.stopped and not budget.spent

    def note(self, chain: str, notes: Iterable[str]) -> None:
        self.notes += [f"{chain}: {n}" if chain else n for n in notes]

    def stop(self, chain: str, at: int) -> None:
        """The decode time bound was reached at content offset `at` of the piece `chain`."""
        self.stopped = True
        where = f" of {chain}" if chain else ""
        self.notes.append(f"decode time bound ({self.limits.decode_seconds:g} s) reached at byte "
                          f"{at}{where}: encoded regions from there on not decoded")

    def left(self) -> int:
        return self.limits.max_findings - self.found

    def take(self, found: list[Finding], out: list[Finding]) -> None:
        """Add findings to `out`, up to the file's bound (then a note, and no further scan)."""
        left = self.left()
        if len(found) > left:
            found = found[:left]
            self.full = True
            self.notes.append(f"more than {self.limits.max_findings} findings: the rest are not "
                              "listed and the file is not scanned further")
        self.found += len(found)
        out += found


class _Seg(NamedTuple):
    """Where one piece of content sits in a buffer, and what comes before it in the piece."""

    file: _File
    chain: str
    binary: bool
    start: int  # offset in the buffer
    origin: int  # offset in the piece of buffer offset `start`
    lines: int  # line breaks in the piece before `origin`
    last_nl: int  # piece offset of the last line break before `origin` (-1: none)


class _Piece(NamedTuple):
    file: _File
    chain: str
    data: bytes
    binary: bool
    budget: RegionBudget


def _places(buf: bytes, seg: _Seg, positions: Iterable[int]) -> dict[int, tuple[int, int]]:
    """(line, column) of each buffer position of a segment: line:column in text (counted once
    through the buffer, in order), line 0 and the byte offset in binary content."""
    if seg.binary:
        return {p: (0, seg.origin + p - seg.start) for p in positions}
    out: dict[int, tuple[int, int]] = {}
    cur, lines, last = seg.start, seg.lines, seg.last_nl
    for p in sorted(set(positions)):
        lines += buf.count(b"\n", cur, p)
        k = buf.rfind(b"\n", cur, p)
        if k >= 0:
            last = seg.origin + k - seg.start
        cur = p
        out[p] = (lines + 1, seg.origin + p - seg.start - last)
    return out


class ContentRun:
    """The contents of many files through one scanner: `add` each, then `finish`."""

    def __init__(self, scanner: Scanner) -> None:
        self.sc = scanner
        self.limits = scanner.limits
        self.w = scanner.windowing  # (smaller while an archive is held: `_container`)
        self.batch: list[_Piece] = []
        self.batch_bytes = 0
        # the joined batch's base64 regions that came in bulk, and the piece of each (-1: one
        # whose regions are not decoded)
        self.bulk: tuple[Bulk, list[int]] | None = None
        self.findings: list[Finding] = []
        self.files: list[_File] = []

    def add(self, path: str, read: Read) -> None:
        """Scan the content of one file, read a piece at a time."""
        f = _File(path, self.limits)
        self.files.append(f)
        self._content(f, "", read, top=True)

    def finish(self) -> tuple[list[Finding], list[str]]:
        """Everything found, and the notes (each starting with its file's path)."""
        self._flush()
        notes = [f"{f.path}: {n}" for f in self.files for n in dict.fromkeys(f.notes)]
        return self.findings, notes

    # -- what a content is --------------------------------------------------------------------

    def _content(self, f: _File, chain: str, read: Read, top: bool) -> None:
        budget = f.budget if top else RegionBudget(self.limits.max_regions)  # a member's own
        head = read_upto(read, self.w.size + 1)
        if is_container(head[:_HEAD]):
            if top:
                self._container(f, head, read)
                return
            f.notes.append(f"{chain} is an archive or compressed stream inside an archive: not "
                           "opened (one layer of disguise)")
        binary = b"\0" in head[:_HEAD]
        enc = text_encoding(head[:_HEAD])
        if len(head) <= self.w.size:
            self._small(f, chain, head, binary, budget)
            if enc is not None:
                self._small(f, _sub(chain, enc), Transcoder(enc).feed(head, True), False, budget)
            return
        rest = iter(lambda: read(_CHUNK), b"")
        self._long(f, chain, itertools.chain([head], rest), binary, enc, budget)

    def _container(self, f: _File, head: bytes, read: Read) -> None:
        """A compression stream or archive: its bytes as they are, then each member (held whole
        in memory up to the archive bound, the windows smaller by as much while it is; a larger
        one is only scanned as its bytes)."""
        binary = b"\0" in head[:_HEAD]
        outer = self.w
        if len(head) <= self.w.size:
            data: bytes | bytearray = head
            self._small(f, "", head, binary, f.budget)
        else:
            acc = bytearray(head)
            del head
            while len(acc) <= outer.archive:
                chunk = read(min(_CHUNK, outer.archive + 1 - len(acc)))
                if not chunk:
                    break
                acc += chunk
            self._flush()
            self.w = windowing(self.limits, held=len(acc))
            if len(acc) > outer.archive:
                f.notes.append(f"archive or compressed stream over the {outer.archive}-byte "
                               "archive bound of the memory budget (--max-memory / 4): its "
                               "members were not opened, its bytes were scanned as they are")
                chunks = itertools.chain(_slices(acc), iter(lambda: read(_CHUNK), b""))
                del acc
                try:
                    self._long(f, "", chunks, binary, None, f.budget)
                finally:
                    self.w = outer
                return
            data = acc
            self._long(f, "", _slices(acc), binary, None, f.budget)
        box = Container(data, self.sc.bounds)
        try:
            for m in box.members():
                if f.full:
                    break
                if m.name is not None:
                    self.findings += [x._replace(path=f.path, chain=f"{m.chain} ({x.chain})")
                                      for x in self.sc.scan_name(m.name)]
                if m.read is not None:
                    self._content(f, m.chain, m.read, top=False)
        finally:
            if self.w is not outer:
                self._flush()  # (its pieces were cut for the smaller windows)
                self.w = outer
        f.notes += box.notes

    # -- small contents: joined --------------------------------------------------------------

    def _small(self, f: _File, chain: str, data: bytes, binary: bool,
               budget: RegionBudget) -> None:
        if f.full or not data:
            return
        sc = self.sc
        if data.lstrip(_LEAD)[:1] == b"{" and any(t in data for t in _TAGS):
            self._tag(f, chain, [data])
        for eid in sc.index.file_ids(data):
            self.findings.append(Finding(f.path, 0, 0, chain, eid, "file"))
        if sc.sources and not binary:
            self.findings += sc.source_findings(sc.source_prints(data), f.path, chain)
        if self.batch_bytes + len(data) > self.w.size:
            self._flush()
        self.batch.append(_Piece(f, chain, data, binary, budget))
        self.batch_bytes += len(data) + len(_SEP)

    def _tag(self, f: _File, chain: str, pieces: Iterable[bytes]) -> None:
        reader = TopLevelKey("format")
        for piece in pieces:
            reader.feed(piece)
            if reader.done:
                break
        self._tag_found(f, chain, reader.values)

    def _tag_found(self, f: _File, chain: str, values: list[str]) -> None:
        for tag in values:
            if tag in FORMATS:
                self.findings.append(Finding(f.path, 1, 1, chain, tag, "withheld-set",
                                             detail="a withheld or sealed set must never ship"))
                return

    def _flush(self) -> None:
        pieces, self.batch, self.batch_bytes = self.batch, [], 0
        if not pieces:
            return
        joined, starts = _join([p.data for p in pieces])
        segs = [_Seg(p.file, p.chain, p.binary, s, 0, 0, -1)
                for p, s in zip(pieces, starts, strict=True)]
        cap = self.limits.max_findings * 4
        todo = [k for k, p in enumerate(pieces) if p.file.decodable(p.chain, p.binary, p.budget)]
        matches: list[list[Match]] | None = [[] for _ in pieces]
        layers: list[list[Layer]] = [[] for _ in pieces]
        alone = False
        self.bulk = None
        classes = byte_classes(joined) if compiled(len(joined)) else None
        try:
            found = _values(self.sc.index, joined, range(len(joined)), cap, self.w, classes)
            if len(found) > cap:
                matches = None  # a file full of values: each piece alone, under its own bound
            else:
                for m in found:
                    # (`matches` is a list here: None only past the cap, just above)
                    matches[bisect.bisect_right(starts, m.start) - 1].append(m)  # type: ignore[index]
            if todo:
                alone = self._regions_joined(joined, starts, classes, pieces, todo, layers)
        finally:
            if classes is not None:
                classes.release()
        if matches is None:
            matches = [[m._replace(start=m.start + s, end=m.end + s) for m in _values(
                self.sc.index, p.data, range(len(p.data)), p.file.left() + 1, self.w)]
                for p, s in zip(pieces, starts, strict=True)]
        if alone:  # a bound was hit in the joined pass: decode each piece alone (bounds per file)
            self.bulk = None
            layers = [[] for _ in pieces]
            for k in todo:
                p = pieces[k]
                if not p.file.decodable(p.chain, p.binary, p.budget):
                    continue
                own = p.file.decode(p.data, self.sc.bounds, None, None, p.budget)
                p.file.note(p.chain, own.notes)
                if own.stopped is not None:
                    p.file.stop(p.chain, own.stopped)
                s = starts[k]
                layers[k] = [x._replace(offset=x.offset + s,
                                        lines=tuple((d, o + s) for d, o in x.lines))
                             for x in own.layers]
        decoded = self._decoded_joined(layers, cap)
        if decoded is None and self.bulk is not None:  # each piece's layers searched alone: all
            bulk, where = self.bulk
            for i, k in enumerate(where):
                if k >= 0:
                    layers[k].append(bulk.layer(i))
            layers = [sorted(xs, key=lambda x: x.offset) for xs in layers]
        for k, seg in enumerate(segs):
            if not seg.file.full:
                self._emit(joined, seg, matches[k], layers[k],
                           decoded[k] if decoded is not None else None)

    def _decoded_joined(self, layers: list[list[Layer]],
                        cap: int) -> list[list[tuple[Layer, Match]]] | None:
        """Values in the decoded layers of a batch, searched in one go, by piece (None when
        more than `cap` are found: each piece is then searched alone, under its own bound)."""
        flat = [(k, x) for k, xs in enumerate(layers) for x in xs]
        out: list[list[tuple[Layer, Match]]] = [[] for _ in layers]
        found: list[Match] = []
        if flat:
            dec_joined, dec_starts = _join([x.data for _, x in flat])
            found = _values(self.sc.index, dec_joined, range(len(dec_joined)), cap, self.w)
            for m in found:
                i = bisect.bisect_right(dec_starts, m.start) - 1
                k, x = flat[i]
                out[k].append((x, m._replace(start=m.start - dec_starts[i],
                                              end=m.end - dec_starts[i])))
        if self.bulk is not None:  # (its regions are joined as `_join` joins them)
            bulk, where = self.bulk
            more = _values(self.sc.index, bulk.data, range(len(bulk.data)), cap, self.w)
            found += more
            for m in more:
                i = bisect.bisect_right(bulk.places, m.start) - 1
                if where[i] >= 0:
                    at = m._replace(start=m.start - bulk.places[i], end=m.end - bulk.places[i])
                    out[where[i]].append((bulk.layer(i), at))
        return None if len(found) > cap else out

    def _regions_joined(self, joined: bytes, starts: list[int], classes: ByteClasses | None,
                        pieces: list[_Piece], todo: list[int], layers: list[list[Layer]]) -> bool:
        """Encoded regions of a joined batch, into `layers` by piece; True when a bound was hit
        (or a file's own budget would be), so that each piece must be decoded alone."""
        # Each file's bound counts per file: the joined pass may decode as many regions as the
        # files have left between them, and each file's share is checked below.
        left = {id(pieces[k].budget): pieces[k].budget.left for k in todo}
        budget = RegionBudget(max(1, sum(left.values())))
        deadline = time.monotonic() + self.limits.decode_seconds
        expired = lambda: time.monotonic() > deadline  # noqa: E731
        # Source code brings thousands of base64-looking runs per megabyte (CamelCase names):
        # unless the set has whole-file entries (which every layer is hashed for), the plain
        # ones come in bulk, and only those a value is found in become layers (`_decoded_joined`).
        dec = text_regions(joined, self.sc.bounds, classes, None, budget, expired) \
            if self.sc.index.files else regions_in_bulk(joined, self.sc.bounds, classes, budget,
                                                        expired)
        if dec.notes or dec.stopped is not None:
            return True
        wanted = set(todo)
        need: dict[int, int] = {}
        piece_of = _pieces_of(starts, [x.offset for x in dec.layers])
        for layer, k in zip(dec.layers, piece_of, strict=True):
            if k in wanted:
                layers[k].append(layer)
                need[id(pieces[k].budget)] = need.get(id(pieces[k].budget), 0) + 1
        if dec.bulk is not None:
            bulk_pieces = _pieces_of_sorted(starts, dec.bulk.offsets)
            for k, n in Counter(bulk_pieces).items():
                if k in wanted:
                    need[id(pieces[k].budget)] = need.get(id(pieces[k].budget), 0) + n
            self.bulk = (dec.bulk, [k if k in wanted else -1 for k in bulk_pieces])
        budgets = {id(p.budget): p.budget for p in pieces}
        if any(n > budgets[i].left for i, n in need.items()):
            return True
        for i, n in need.items():
            budgets[i].left -= n
        return False

    # -- findings ------------------------------------------------------------------------------

    def _emit(self, buf: bytes, seg: _Seg, matches: list[Match], layers: list[Layer],  # noqa: PLR0913
              decoded: list[tuple[Layer, Match]] | None = None) -> None:
        """The findings of one segment of a buffer: values in it, and in its decoded layers
        (`decoded`: the values found in them already; else they are searched here)."""
        f, sc = seg.file, self.sc
        if decoded is None and layers:
            decoded = []
            dec_joined, dec_starts = _join([x.data for x in layers])
            for m in _values(sc.index, dec_joined, range(len(dec_joined)), f.left() + 1, self.w):
                k = bisect.bisect_right(dec_starts, m.start) - 1
                decoded.append((layers[k], m._replace(start=m.start - dec_starts[k],
                                                      end=m.end - dec_starts[k])))
        hits = [Hit(eid, m.start, m.end, seg.chain) for m in matches for eid in m.entries]
        traced: dict = {}  # a line of escapes a value is found in is traced once
        for x, m in decoded or ():
            a, b = _layer_span(x, buf, m.start, m.end, traced)
            hits += [Hit(eid, a, b, _sub(seg.chain, x.chain)) for eid in m.entries]
        one = _merged(hits)  # one finding per leak: overlapping spans of one entry are one
        files = [(x, eid) for x in layers for eid in sc.index.file_ids(x.data)] \
            if sc.index.files else []
        places = _places(buf, seg, [h.start for h, _ in one] + [x.offset for x, _ in files])
        out = [Finding(f.path, *places[h.start], h.chain, h.entry, "value", via=via)
               for h, via in one]
        out += [Finding(f.path, *places[x.offset], _sub(seg.chain, x.chain), eid, "file")
                for x, eid in files]
        f.take(out, self.findings)

    # -- long contents: windows ----------------------------------------------------------------

    def _long(self, f: _File, chain: str, chunks: Iterator[bytes], binary: bool,  # noqa: PLR0913
              enc: str | None, budget: RegionBudget) -> None:
        """A content longer than a window, scanned as it is read (with its UTF-16 or UTF-32
        text decoded beside it), and its whole-content checks fed the same pieces."""
        raw = _Windows(self, f, chain, binary, budget)
        text = _Windows(self, f, _sub(chain, enc), False, budget) if enc is not None else None
        tc = Transcoder(enc) if enc is not None else None
        hasher = self.sc.index.file_hasher() if self.sc.index.files else None
        tag: TopLevelKey | None = None
        for i, chunk in enumerate(chunks):
            if f.full:
                break
            if i == 0 and chunk.lstrip(_LEAD)[:1] == b"{":
                tag = TopLevelKey("format")
            if hasher is not None:
                hasher.update(chunk)
            if tag is not None and not tag.done:
                tag.feed(chunk)
            raw.feed(chunk)
            if text is not None and tc is not None:
                text.feed(tc.feed(chunk))
            del chunk
        if text is not None and tc is not None:
            text.feed(tc.feed(b"", True))
            text.close()
        raw.close()
        if f.full:
            return  # not read to its end: no whole-content check
        if hasher is not None:
            for eid in self.sc.index.file_ids_of(hasher.digest()):
                self.findings.append(Finding(f.path, 0, 0, chain, eid, "file"))
        if tag is not None:
            self._tag_found(f, chain, tag.values)


class _Windows:
    """One long content, fed a piece at a time as it is read, scanned a window at a time.

    A window's buffer holds `before` bytes of context before it (where a token that reaches into
    it starts) and `after` bytes after it (so a region or a line that starts in the window ends
    in the buffer); a window ends at a line break when there is one within the line bound before
    its size, so a line of escapes short enough to decode is never cut. What starts in the
    window is its own: found once, whichever windows hold it.
    """

    def __init__(self, run: ContentRun, f: _File, chain: str, binary: bool,
                 budget: RegionBudget) -> None:
        self.run, self.f, self.chain, self.binary, self.budget = run, f, chain, binary, budget
        self.w = run.w
        self.parts: list[bytes] = []
        self.have = 0  # bytes in `parts`, from content offset `base`
        self.base = 0
        self.own = 0  # content offset where the next window starts
        self.lines = 0  # line breaks before `base`
        self.last_nl = -1  # content offset of the last one
        self.prints: set[int] = set()

    def feed(self, chunk: bytes) -> None:
        """The next piece of the content; full windows are scanned at once."""
        if not chunk or self.f.full:
            return
        self.parts.append(chunk)
        self.have += len(chunk)
        w = self.w
        while not self.f.full and self.have - (self.own - self.base) >= w.size + w.after:
            self._window(at_end=False)

    def close(self) -> None:
        """The content has ended: scan what is left, then the whole-text checks."""
        while not self.f.full and self.own < self.base + self.have:
            self._window(at_end=True)
        self.parts = []
        sc = self.run.sc
        if sc.sources and not self.binary and not self.f.full:
            self.run.findings += sc.source_findings(self.prints, self.f.path, self.chain)

    def _window(self, at_end: bool) -> None:
        buf = self.parts[0] if len(self.parts) == 1 else b"".join(self.parts)
        self.parts = [buf]
        run, f, w = self.run, self.f, self.w
        lo, n = self.own - self.base, len(buf)
        if at_end and n - lo <= w.size:
            hi = n
        else:
            target = lo + w.size
            nl = buf.rfind(b"\n", max(lo, target - run.limits.max_line), target)
            hi = nl + 1 if nl >= lo else target
        matches: list[Match] = []
        layers: list[Layer] = []
        matches = _values(run.sc.index, buf, range(lo, hi), f.left() + 1, w)
        classes = byte_classes(buf) if compiled(n) else None
        try:
            if f.decodable(self.chain, self.binary, self.budget):
                dec = f.decode(buf, run.sc.bounds, classes,
                               Window(lo, hi, self.base, at_end, self.last_nl + 1), self.budget)
                f.note(self.chain, dec.notes)
                if dec.stopped is not None:
                    f.stop(self.chain, self.base + dec.stopped)
                layers = dec.layers
        finally:
            if classes is not None:
                classes.release()
        run._emit(buf, _Seg(f, self.chain, self.binary, 0, self.base, self.lines, self.last_nl),
                  matches, layers)
        if run.sc.sources and not self.binary:
            self.prints |= run.sc.source_prints(
                buf[max(0, lo - _PRINT_CONTEXT) : hi + _PRINT_CONTEXT])
        # the next window starts at `hi`; keep `before` bytes of context ahead of it
        keep = max(0, hi - w.before)
        self.lines += buf.count(b"\n", 0, keep)
        k = buf.rfind(b"\n", 0, keep)
        if k >= 0:
            self.last_nl = self.base + k
        self.own = self.base + hi
        self.parts = [buf[keep:]] if keep < n else []
        self.have = n - keep
        self.base += keep

"""The matching engine: names and contents of shipped files x one withheld set -> findings.

`Scanner` is pure (bytes in, findings out; no files, no processes): callers go through the ship
scan's front end (`plimsoll_ci.scan.ShipScan`), which batches, caches, places and redacts. Its
source, with `match/`, is part of every cache key (`plimsoll_ci.scan.engine_files`).
"""

from __future__ import annotations

import bisect
import json
import time
from collections.abc import Iterable
from typing import NamedTuple

from plimsoll_ci.match.decode import Bounds, containers, is_container, text_regions
from plimsoll_ci.match.extract import SMALL, byte_classes, find_values
from plimsoll_ci.match.fingerprint import fingerprints, overlap
from plimsoll_ci.match.index import ValueEntry, ValueIndex
from plimsoll_ci.withheld import FORMATS, WithheldSet

_SEP = b"\x00\n\x00"  # no value spans it; its line break ends a line of escapes too


class Finding(NamedTuple):
    """One withheld entry found in a shipped file: where, how, which entry (never its value)."""

    path: str
    line: int
    column: int
    chain: str
    entry: str
    kind: str  # "value" | "file" | "source" | "withheld-set"
    where: str = "content"  # "content" | "name"
    detail: str = ""


class Limits(NamedTuple):
    """Bounds of one scan; a bound that is hit becomes a note, never a silent skip."""

    max_file_bytes: int = 256 * 1024 * 1024
    max_decompressed: int = 64 * 1024 * 1024
    max_members: int = 1000
    max_region: int = 4 * 1024 * 1024
    max_regions: int = 10000
    max_line: int = 1024 * 1024
    decode_seconds: float = 30.0


def _place(data: bytes, pos: int, binary: bool) -> tuple[int, int]:
    if binary:
        return 0, pos
    line = data.count(b"\n", 0, pos) + 1
    return line, pos - data.rfind(b"\n", 0, pos)


def _is_binary(data: bytes) -> bool:
    return b"\0" in data[:8192]


class Scanner:
    """Scans names and contents against one withheld set."""

    def __init__(self, wset: WithheldSet, limits: Limits | None = None) -> None:
        self.wset = wset
        self.limits = limits or Limits()
        self.bounds = Bounds(self.limits.max_decompressed, self.limits.max_members,
                             self.limits.max_region, self.limits.max_regions,
                             self.limits.max_line)
        values = [ValueEntry(e.id, e.vtype, bytes.fromhex(e.digest), e.shape)
                  for e in wset.entries if e.kind == "value"]
        self.index = ValueIndex(values, wset.key)
        for e in wset.entries:
            if e.kind == "file":
                self.index.add_file(e.id, bytes.fromhex(e.digest))
        self.sources = [e for e in wset.entries if e.kind == "source"]
        self._names: dict[tuple[str, str], list[Finding]] = {}
        self.redact_tokens: set[str] = set()

    # -- names --------------------------------------------------------------------------------

    def scan_text(self, text: str | bytes, path: str, chain: str = "") -> list[Finding]:
        """Values in one string (no decoding layers); places are byte offsets."""
        data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
        return [Finding(path, 0, m.start, chain, eid, "value", "name")
                for m in find_values(data, self.index) for eid in m.entries]

    def _name(self, name: str, path: str, chain: str) -> list[Finding]:
        data = name.encode("utf-8", "surrogateescape")
        out = []
        for m in find_values(data, self.index):
            # A name that carries a value would print it wherever the path is shown: remember
            # the token so every path, chain and note of the report shows it redacted.
            self.redact_tokens.add(data[m.start : m.end].decode("utf-8", "surrogateescape"))
            out += [Finding(path, 0, m.start, chain, eid, "value", "name") for eid in m.entries]
        for layer in text_regions(data, self.bounds).layers:
            found = self.scan_text(layer.data, path, f"{chain} > {layer.chain}")
            if found:
                self.redact_tokens.add(name)  # the encoded form gives the value away too
            out += found
        return out

    def prime_names(self, paths: Iterable[str]) -> None:
        """Scan the not-yet-seen name parts of many paths in one joined pass (then cached)."""
        parts = sorted({p for path in paths for p in path.replace("\\", "/").split("/")
                        if p not in ("", ".") and (p, "file name") not in self._names})
        if len(parts) < 8 or len(self._names) > 100_000:
            return  # one by one is as quick
        datas = [p.encode("utf-8", "surrogateescape") for p in parts]
        joined, starts = _join(datas)
        hits: list[list[tuple[int, str, str]]] = [[] for _ in parts]
        for m in find_values(joined, self.index):
            k = bisect.bisect_right(starts, m.start) - 1
            rel = m.start - starts[k]
            self.redact_tokens.add(datas[k][rel : rel + m.end - m.start].decode(
                "utf-8", "surrogateescape"))
            hits[k] += [(rel, eid, "") for eid in m.entries]
        for layer in text_regions(joined, self.bounds).layers:
            k = bisect.bisect_right(starts, layer.offset) - 1
            found = [(m.start, eid, f" > {layer.chain}")
                     for m in find_values(layer.data, self.index) for eid in m.entries]
            if found:
                self.redact_tokens.add(parts[k])  # the encoded form gives the value away too
                hits[k] += found
        for part, found in zip(parts, hits, strict=True):
            for kind in ("file name", "folder name"):
                self._names[(part, kind)] = [Finding("", 0, col, kind + sub, eid, "value", "name")
                                             for col, eid, sub in found]

    def scan_name(self, path: str) -> list[Finding]:
        """Every folder name and the file name of a shipped path."""
        parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
        out: list[Finding] = []
        for i, part in enumerate(parts):
            is_file = i == len(parts) - 1
            where = path if is_file else "/".join(parts[: i + 1]) + "/"
            kind = "file name" if is_file else "folder name"
            hits = self._names.get((part, kind))
            if hits is None:  # folder names repeat across files: scan each name once
                hits = self._name(part, "", kind)
                if len(self._names) < 100_000:
                    self._names[(part, kind)] = hits
            out += [f._replace(path=where) for f in hits]
        return out

    # -- contents -----------------------------------------------------------------------------

    def scan_content(self, data: bytes, path: str) -> tuple[list[Finding], list[str]]:
        """Contents, one decode layer deep, and archive members (names and contents)."""
        return self.scan_contents([(path, data)])

    def scan_contents(self, files: list[tuple[str, bytes]]) -> tuple[list[Finding], list[str]]:
        """Contents of many files at once: small files are scanned as one joined buffer, so the
        vectorized passes run over megabytes rather than paying their fixed cost per file."""
        notes: list[str] = []
        deadline = time.monotonic() + self.limits.decode_seconds * max(1, len(files))
        pieces: list[_Piece] = []
        out: list[Finding] = []
        for path, data in files:
            pieces.append(_Piece(path, data, "", _is_binary(data)))
            if not is_container(data):
                continue
            dec = containers(data, self.bounds)
            notes += [f"{path}: {n}" for n in dec.notes]
            for layer in dec.layers:
                if is_container(layer.data):
                    notes.append(f"{path}: {layer.chain} is an archive or compressed stream "
                                 "inside an archive: not opened (one layer of disguise)")
                if layer.name is not None:
                    out += [f._replace(path=path, chain=f"{layer.chain} ({f.chain})")
                            for f in self.scan_name(layer.name)]
                pieces.append(_Piece(path, layer.data, layer.chain, _is_binary(layer.data)))
        out += self._pieces(pieces, notes, deadline)
        return dedupe(out), notes

    def _pieces(self, pieces: list[_Piece], notes: list[str], deadline: float) -> list[Finding]:
        out: list[Finding] = []
        for p in pieces:  # whole-piece checks
            if not p.data:
                continue
            if p.data.lstrip()[:1] == b"{" and (b'"plimsoll-withheld/' in p.data
                                                or b'"plimsoll-sealed/' in p.data):
                out += self._withheld_file(p.data, p.path, p.chain)
            for eid in self.index.file_ids(p.data):
                out.append(Finding(p.path, 0, 0, p.chain, eid, "file"))
            if self.sources and not p.binary:
                out += self._source(p.data, p.path, p.chain)
        joined, starts = _join([p.data for p in pieces])
        # one pass of byte classes over a large batch, shared by the value and region finders
        classes = byte_classes(joined) if len(joined) >= SMALL else None
        for m in find_values(joined, self.index, classes):
            k = bisect.bisect_right(starts, m.start) - 1
            p = pieces[k]
            line, col = _place(p.data, m.start - starts[k], p.binary)
            out += [Finding(p.path, line, col, p.chain, eid, "value") for eid in m.entries]
        if time.monotonic() > deadline:
            notes += [f"{path}: decode time bound reached: encoded regions not decoded"
                      for path in dict.fromkeys(p.path for p in pieces)]
            if classes is not None:
                classes.release()
            return out
        regions = text_regions(joined, self.bounds, classes)
        if classes is not None:
            classes.release()
        placed = []
        if regions.notes and len(pieces) > 1:
            # A bound was hit in the joined buffer: decode each piece alone, so that a bound
            # counts per file (as it does for a file scanned alone) and each note names its own.
            for p in pieces:
                if p.binary and not p.chain:
                    continue
                own = text_regions(p.data, self.bounds)
                where = f"{p.path}: {p.chain}: " if p.chain else f"{p.path}: "
                notes += [where + n for n in own.notes]
                placed += [(p, layer, layer.offset) for layer in own.layers]
        else:
            for n in regions.notes:
                p = pieces[0]
                notes.append(f"{p.path}: {p.chain}: {n}" if p.chain else f"{p.path}: {n}")
            for layer in regions.layers:
                k = bisect.bisect_right(starts, layer.offset) - 1
                p = pieces[k]
                if p.binary and not p.chain:
                    continue  # encodings are looked for in text, and in archive members
                placed.append((p, layer, layer.offset - starts[k]))
        if not placed:
            return out
        # One pass over all decoded regions, joined by a separator no value can span.
        dec_joined, dec_starts = _join([layer.data for _, layer, _ in placed])
        for m in find_values(dec_joined, self.index):
            p, layer, off = placed[bisect.bisect_right(dec_starts, m.start) - 1]
            line, col = _place(p.data, off, p.binary)
            sub = f"{p.chain} > {layer.chain}" if p.chain else layer.chain
            out += [Finding(p.path, line, col, sub, eid, "value") for eid in m.entries]
        if self.index.files:
            for p, layer, off in placed:
                sub = f"{p.chain} > {layer.chain}" if p.chain else layer.chain
                for eid in self.index.file_ids(layer.data):
                    line, col = _place(p.data, off, p.binary)
                    out.append(Finding(p.path, line, col, sub, eid, "file"))
        return out

    def _withheld_file(self, data: bytes, path: str, chain: str) -> list[Finding]:
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            return []
        if isinstance(doc, dict) and doc.get("format") in FORMATS:
            return [Finding(path, 1, 1, chain, doc["format"], "withheld-set",
                            detail="a withheld or sealed set must never ship")]
        return []

    def _source(self, data: bytes, path: str, chain: str) -> list[Finding]:
        prints = fingerprints(data, self.wset.key)
        out = []
        for e in self.sources:
            share = overlap(set(e.fingerprints), prints)
            if share >= e.threshold:
                out.append(Finding(path, 0, 0, chain, e.id, "source",
                                   detail=f"overlap {share * 100:.0f}%"))
        return out

    def scan_file(self, data: bytes, path: str) -> tuple[list[Finding], list[str]]:
        """Name and contents of one shipped file."""
        found, notes = self.scan_content(data, path)
        return self.scan_name(path) + found, notes


class _Piece(NamedTuple):
    path: str
    data: bytes
    chain: str
    binary: bool


def _join(datas: list[bytes]) -> tuple[bytes, list[int]]:
    starts, pos = [], 0
    for d in datas:
        starts.append(pos)
        pos += len(d) + len(_SEP)
    return _SEP.join(datas), starts


def dedupe(findings: list[Finding]) -> list[Finding]:
    """`findings` with repeats dropped (first kept): the same entry at the same place and chain."""
    seen = set()
    out = []
    for f in findings:
        k = (f.path, f.line, f.column, f.chain, f.entry, f.kind, f.where)
        if k not in seen:
            seen.add(k)
            out.append(f)
    return out




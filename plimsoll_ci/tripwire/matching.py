"""Pieces of recorded requests -> findings, through the one matching engine.

The only module of the tripwire that scans pieces with the engine (`plimsoll_ci.engine.Scanner`);
its surface is `find`, so moving it onto the ship scan's front end (`plimsoll_ci.scan.ShipScan`)
happens here alone. A finding's `path` is the piece's recorded file and its `chain` is the piece's place
followed by the engine's decode chain; `line` and `column` count inside the piece. Paths and places
are not redacted here (`plimsoll_ci.tripwire.redact` does that for printing).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from plimsoll_ci.engine import Finding, Limits, Scanner
from plimsoll_ci.tripwire.reader import Piece, join_place
from plimsoll_ci.withheld import WithheldSet

# Pieces are handed to the engine many at a time (`Scanner.scan_contents`): its cost is mostly per
# call, and a request breaks into dozens of strings. Each piece keeps its own whole-piece checks
# (file digests, a pasted set, archives) and its own line:column.
_BATCH_BYTES = 256 * 1024
_BATCH_PIECES = 4096
_ALONE_BYTES = 1024 * 1024  # a piece this large is scanned on its own
_CACHE_PIECE = 4 * 1024 * 1024  # pieces up to this size are remembered by digest
_CACHE_ENTRIES = 200_000
_BASE64_BOUND = re.compile(r"base64 region at byte \d+ is \d+ bytes, over the")


def find(pieces: Iterable[Piece], wset: WithheldSet,
         limits: Limits | None = None) -> tuple[list[Finding], list[str]]:
    """Findings (path = recorded file, chain = place > decode chain) and notes for `pieces`.

    Batching and the cache never change what is found (a fuzzed test holds this).
    """
    scan = _PieceScan(wset, limits)
    for piece in pieces:
        scan.add(piece)
    scan.finish()
    return scan.findings, scan.notes


class _PieceScan:
    """Collects findings for pieces, batching them, never changing what matches.

    Findings are first made relative to their piece (no path; the chain is the engine's decode
    chain only) and then placed: the relative findings of a piece are remembered by the piece's
    digest, because recorded requests repeat themselves -- an agent loop re-sends its system
    prompt, task and history with every turn -- and a repeat needs no second scan.
    """

    def __init__(self, wset: WithheldSet, limits: Limits | None) -> None:
        sources = [e for e in wset.entries if e.kind == "source"]
        # sources are fingerprinted over a whole request (a pasted copy spans many strings)
        self.scanner = Scanner(wset._replace(entries=[e for e in wset.entries
                                                      if e.kind != "source"]), limits) \
            if sources else Scanner(wset, limits)
        self.source_scanner = Scanner(wset._replace(entries=sources), limits) if sources \
            else None
        self.findings: list[Finding] = []
        self.notes: list[str] = []
        self.seen: set = set()
        self.batch: list[tuple[Piece, bytes]] = []
        self.batch_bytes = 0
        self.cache: dict[bytes, tuple[list[Finding], list[str]]] = {}
        self.waiting: dict[bytes, list[Piece]] = {}  # repeats of a piece still in the batch
        self.request_source = ""
        self.request_text: list[bytes] = []

    def add(self, piece: Piece) -> None:
        if self.source_scanner is not None and piece.kind != "name":
            if piece.source != self.request_source:
                self._sources()
                self.request_source = piece.source
            if b"\0" not in piece.data[:8192]:
                self.request_text.append(piece.data)
        key = b""
        if len(piece.data) <= _CACHE_PIECE:
            key = hashlib.blake2b(piece.data, digest_size=16,
                                  person=piece.kind.encode()[:16]).digest()
            cached = self.cache.get(key)
            if cached is not None:
                self._place_all(piece, *cached)
                return
            if key in self.waiting:
                self.waiting[key].append(piece)
                return
        if piece.kind == "name" or len(piece.data) > _ALONE_BYTES:
            rels, notes = self._one(piece)
            self._remember(key, rels, notes)
            self._place_all(piece, rels, notes)
            return
        if key:
            self.waiting[key] = []
        self.batch.append((piece, key))
        self.batch_bytes += len(piece.data)
        if self.batch_bytes >= _BATCH_BYTES or len(self.batch) >= _BATCH_PIECES:
            self._flush()

    def finish(self) -> None:
        self._flush()
        self._sources()

    def _remember(self, key: bytes, rels: list[Finding], notes: list[str]) -> None:
        if not key:
            return
        if len(self.cache) >= _CACHE_ENTRIES:
            self.cache.clear()
        self.cache[key] = (rels, notes)

    def _place_all(self, piece: Piece, rels: list[Finding], notes: list[str]) -> None:
        if notes and piece.covered:
            # the reader decoded this base64 whole: the engine's note that it did not is moot
            notes = [n for n in notes if not _BASE64_BOUND.match(n)]
        self.notes += [f"{piece.source} {piece.place}: {n}" if piece.place else
                       f"{piece.source}: {n}" for n in notes]
        for rel in rels:
            f = rel._replace(path=piece.source, chain=join_place(piece.place, rel.chain))
            # the same value at the same place may be found twice (as a decoded base64 file and
            # by the engine's own base64 layer); say it once
            k = (f.path, piece.place.split(" (base64", 1)[0], f.entry, f.where, f.kind)
            if k in self.seen:
                continue
            self.seen.add(k)
            self.findings.append(f)

    def _one(self, piece: Piece) -> tuple[list[Finding], list[str]]:
        """Relative findings and notes of one piece scanned on its own."""
        if piece.kind == "name":
            # scan_name calls a lone name a "file name"; the piece's place says what it is
            return [f._replace(path="", chain=f.chain.split(" > ", 1)[1]
                               if " > " in f.chain else "")
                    for f in self.scanner.scan_name(piece.data.decode("utf-8", "replace"))], []
        got, notes = self.scanner.scan_content(piece.data, piece.source)
        prefix = f"{piece.source}: "
        notes = [n[len(prefix):] if n.startswith(prefix) else n for n in notes]
        return [f._replace(path="") for f in got], notes

    def _flush(self) -> None:
        batch, self.batch, self.batch_bytes = self.batch, [], 0
        if not batch:
            return
        got, notes = self.scanner.scan_contents([(str(i), p.data)
                                                 for i, (p, _k) in enumerate(batch)])
        if notes:
            # a bound was hit; scan each piece alone so that every note names its own recorded
            # file and place
            results = [self._one(p) for p, _k in batch]
        else:
            results = [([], []) for _ in batch]
            for f in got:
                results[int(f.path)][0].append(f._replace(path=""))
        for (piece, key), (rels, pnotes) in zip(batch, results, strict=True):
            self._remember(key, rels, pnotes)
            for same in [piece, *self.waiting.pop(key, [])]:
                self._place_all(same, rels, pnotes)

    def _sources(self) -> None:
        if self.source_scanner is None or not self.request_text:
            self.request_text = []
            return
        got, _notes = self.source_scanner.scan_content(b"\n".join(self.request_text),
                                                       self.request_source)
        for f in got:
            if f.kind == "source":
                self.findings.append(f._replace(path=self.request_source))
        self.request_text = []

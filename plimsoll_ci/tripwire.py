"""The answer-key tripwire: find sealed values in what a harness sent a model.

A sealed set is a withheld set with the tag `plimsoll-sealed/1` (digests only; keyed or plain).
`scan_requests` reads every recorded request under a folder (`plimsoll_ci.requests_reader`) and
hands each piece to the one matching engine (`plimsoll_ci.scan.Scanner`), so the rules are the
ship scan's: whole token runs in any capitalization, numbers however written, files by SHA-256,
names of files and folders, one layer of encoding undone.

A finding's `path` is the recorded file, its `chain` starts with the place inside it (a JSON
pointer, `part NAME`, `header NAME`, `target`) followed by the engine's decode chain; `line` and
`column` count inside that piece. Its `entry` is the sealed id. It never holds the value.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable

from plimsoll_ci.errors import BadInput
from plimsoll_ci.requests_reader import Piece, ReadLimits, RequestReader

SEALED_TAG = "plimsoll-sealed/1"


def load_sealed(path: str, key: bytes | None = None):
    """A sealed set from a sealed-set file, a withheld-set file, or a canary file."""
    from plimsoll_ci import canary, withheld

    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as e:
        raise BadInput(f"--sealed {path}: cannot read ({e.strerror}); "
                       "make one with `plimsoll-ci sealed build`") from None
    if canary.FORMAT.encode() in head:
        try:
            with open(path, "rb") as fh:
                is_canary = json.loads(fh.read()).get("format") == canary.FORMAT
        except (OSError, ValueError, AttributeError, UnicodeDecodeError):
            is_canary = False
        if is_canary:
            return canary.marker_set(canary.load(path))
    return withheld.load(path, key=key)


def _join(place: str, chain: str) -> str:
    if place and chain:
        return f"{place} > {chain}"
    return place or chain


# Pieces are handed to the engine many at a time (`Scanner.scan_contents`): its cost is mostly per
# call, and a request breaks into dozens of strings. Each piece keeps its own whole-piece checks
# (file digests, a pasted set, archives) and its own line:column.
_BATCH_BYTES = 256 * 1024
_BATCH_PIECES = 4096
_ALONE_BYTES = 1024 * 1024  # a piece this large is scanned on its own
_CACHE_PIECE = 4 * 1024 * 1024  # pieces up to this size are remembered by digest
_CACHE_ENTRIES = 200_000


class _Scan:
    """Collects findings for pieces, batching them, never changing what matches.

    Findings are first made relative to their piece (no path; the chain is the engine's decode
    chain only) and then placed: the relative findings of a piece are remembered by the piece's
    digest, because recorded requests repeat themselves -- an agent loop re-sends its system
    prompt, task and history with every turn -- and a repeat needs no second scan.
    """

    def __init__(self, wset, limits) -> None:
        from plimsoll_ci.scan import Scanner

        sources = [e for e in wset.entries if e.kind == "source"]
        # sources are fingerprinted over a whole request (a pasted copy spans many strings)
        self.scanner = Scanner(wset._replace(entries=[e for e in wset.entries
                                                      if e.kind != "source"]), limits) \
            if sources else Scanner(wset, limits)
        self.source_scanner = Scanner(wset._replace(entries=sources), limits) if sources \
            else None
        self.findings: list = []
        self.notes: list[str] = []
        self.seen: set = set()
        self.batch: list[tuple[Piece, bytes]] = []
        self.batch_bytes = 0
        self.cache: dict[bytes, tuple[list, list[str]]] = {}
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

    def _remember(self, key: bytes, rels: list, notes: list[str]) -> None:
        if not key:
            return
        if len(self.cache) >= _CACHE_ENTRIES:
            self.cache.clear()
        self.cache[key] = (rels, notes)

    def _place_all(self, piece: Piece, rels: list, notes: list[str]) -> None:
        self.notes += [f"{piece.source} {piece.place}: {n}" if piece.place else
                       f"{piece.source}: {n}" for n in notes]
        for rel in rels:
            f = rel._replace(path=piece.source, chain=_join(piece.place, rel.chain))
            # the same value at the same place may be found twice (as a decoded base64 file and
            # by the engine's own base64 layer); say it once
            k = (f.path, piece.place.split(" (base64", 1)[0], f.entry, f.where, f.kind)
            if k in self.seen:
                continue
            self.seen.add(k)
            self.findings.append(f)

    def _one(self, piece: Piece) -> tuple[list, list[str]]:
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


REDACTED = "[withheld]"  # what the ship scan prints in place of a name that carries a value
_PRINTED_SEPARATORS = re.compile(r"(/| > |: | \(|\))")


def redactor(wset, limits=None):
    """A function that redacts, in a string to be printed (a path, a place, a note), every
    segment that carries a sealed value -- a file or folder name, a JSON key in a pointer, a part
    or header name -- as `[withheld]`, so that no report prints a value."""
    from plimsoll_ci.scan import Scanner

    scanner = Scanner(wset, limits)
    clean: dict[str, bool] = {}

    def is_clean(segment: str) -> bool:
        if segment not in clean:
            # scan_name undoes one layer of encoding as well: an encoded value is redacted too
            clean[segment] = not segment.strip() or not scanner.scan_name(segment)
        return clean[segment]

    def redact(text: str) -> str:
        parts = _PRINTED_SEPARATORS.split(text)
        return "".join(p if i % 2 or is_clean(p) else REDACTED for i, p in enumerate(parts))

    return redact


def redact_all(findings: list, notes: list[str], wset, limits=None) -> tuple[list, list[str]]:
    """Findings and notes with every value-carrying segment of their paths and places redacted."""
    redact = redactor(wset, limits)
    return ([f._replace(path=redact(f.path), chain=redact(f.chain)) for f in findings],
            [redact(n) for n in notes])


def scan_pieces(pieces: Iterable[Piece], wset, limits=None) -> tuple[list, list[str]]:
    """Findings (path = recorded file, chain = place > decode chain) and notes for `pieces`."""
    findings, notes = _scan_all(pieces, wset, limits)
    findings = sorted(findings, key=lambda f: (f.path, f.chain, f.line, f.column, f.entry))
    return redact_all(findings, notes, wset, limits)


def _scan_files(root: str, files: list[str], wset, limits, read_limits) -> tuple:
    """One worker's share: the names and contents of `files` -> (findings, notes, files, bytes)."""
    import itertools

    reader = RequestReader(read_limits)
    pieces = itertools.chain(reader.names([], files), reader.read_files(root, files))
    findings, notes = _scan_all(pieces, wset, limits)
    return findings, reader.notes + notes, reader.files, reader.bytes


def _scan_all(pieces: Iterable[Piece], wset, limits) -> tuple[list, list[str]]:
    scan = _Scan(wset, limits)
    for piece in pieces:
        scan.add(piece)
    scan.finish()
    return scan.findings, scan.notes


def default_jobs() -> int:
    """Worker processes to use: the CPUs this process may run on (at most 8)."""
    import os

    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


_PARALLEL_FROM = 400  # files; below this, starting workers costs more than it saves


def scan_requests(root: str, wset, limits=None, read_limits: ReadLimits | None = None,
                  jobs: int | None = None):
    """Scan every recorded request under `root` against a sealed set -> `ScanResult`.

    Large folders are split into `jobs` runs of consecutive files (a session's turns stay
    together, so its repeats stay cached) scanned by forked worker processes.
    """
    import multiprocessing
    import threading

    from plimsoll_ci.scan import ScanResult

    reader = RequestReader(read_limits)
    folders, files = reader.listing(root)
    findings, notes = _scan_all(reader.names(folders, []), wset, limits)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    # fork only from a single-threaded process (forking a threaded one can deadlock)
    if jobs > 1 and len(files) >= _PARALLEL_FROM and threading.active_count() == 1 and \
            "fork" in multiprocessing.get_all_start_methods():
        from concurrent.futures import ProcessPoolExecutor

        size = -(-len(files) // jobs)
        chunks = [files[i:i + size] for i in range(0, len(files), size)]
        with ProcessPoolExecutor(len(chunks), mp_context=multiprocessing.get_context("fork")) \
                as pool:
            parts = list(pool.map(_scan_files, [root] * len(chunks), chunks,
                                  [wset] * len(chunks), [limits] * len(chunks),
                                  [read_limits] * len(chunks)))
    else:
        parts = [_scan_files(root, files, wset, limits, read_limits)]
    n_files = n_bytes = 0
    for f, n, nf, nb in parts:
        findings += f
        notes += n
        n_files += nf
        n_bytes += nb
    findings = sorted(findings, key=lambda f: (f.path, f.chain, f.line, f.column, f.entry))
    findings, notes = redact_all(findings, reader.notes + notes, wset, limits)
    return ScanResult(findings, notes, n_files, n_bytes)


def render_text(result, requests: str) -> str:
    """Plain text for a terminal: one line per hit (recorded file, place, sealed id), no values."""
    from plimsoll_ci.report import place

    lines = []
    for f in result.findings:
        what = {"value": "sealed value", "file": "sealed file", "source": "copy of sealed source",
                "withheld-set": "a sealed/withheld set file"}.get(f.kind, f.kind)
        at = f" at {f.chain}" if f.chain else ""
        detail = f" ({f.detail})" if f.detail else ""
        lines.append(f"{f.path}:{place(f)}: {what} {f.entry}{at}{detail}")
    lines += [f"note: {n}" for n in result.notes]
    n = len(result.findings)
    lines.append(f"tripwire: {n} hit{'s' if n != 1 else ''} in {result.files} recorded file"
                 f"{'s' if result.files != 1 else ''} under {requests} "
                 f"({result.bytes:,} bytes read)")
    if n:
        lines.append("A sealed value reached a model: the run's scores are not evidence. Find "
                     "where the harness put it in the prompt or upload, remove it, and draw "
                     "fresh values (see docs/tripwire.md)")
    return "\n".join(lines) + "\n"

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

import json
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
            is_canary = json.loads(open(path, "rb").read()).get("format") == canary.FORMAT
        except (ValueError, AttributeError, UnicodeDecodeError):
            is_canary = False
        if is_canary:
            return canary.marker_set(canary.load(path))
    return withheld.load(path, key=key)


def _join(place: str, chain: str) -> str:
    if place and chain:
        return f"{place} > {chain}"
    return place or chain


# Pieces of text are scanned many at a time: the engine's cost is mostly per call, and a request
# breaks into dozens of strings. The separator is neither white space nor a word, number, base64,
# hex or escape character, so no match and no encoded region runs across two pieces.
_SEP = b"\n\x1e\n"
_BATCH_BYTES = 256 * 1024
_CACHE_PIECE = 512  # pieces up to this many bytes are remembered
_CACHE_ENTRIES = 200_000


class _Batch:
    def __init__(self) -> None:
        self.pieces: list[Piece] = []
        self.starts: list[int] = []  # first line of each piece in the joined buffer
        self.parts: list[bytes] = []
        self.lines = 1
        self.size = 0

    def add(self, piece: Piece) -> None:
        self.pieces.append(piece)
        self.starts.append(self.lines)
        self.parts.append(piece.data)
        self.lines += piece.data.count(b"\n") + 2
        self.size += len(piece.data) + len(_SEP)


def _batchable(piece: Piece) -> bool:
    if piece.kind not in ("text", "name") or b"\0" in piece.data:
        return False
    # a whole withheld or sealed set pasted into a prompt is recognised only at the start of a
    # buffer; such a piece gets a scan of its own
    return not (piece.data.lstrip()[:1] == b"{" and b"plimsoll-" in piece.data)


class _Scan:
    """Collects findings for pieces, batching small text pieces, never changing what matches."""

    def __init__(self, wset, limits) -> None:
        from plimsoll_ci.scan import Scanner

        self.scanner = Scanner(wset, limits)
        sources = [e for e in wset.entries if e.kind == "source"]
        # sources are fingerprinted over a whole request (a pasted copy spans many strings)
        self.batch_scanner = Scanner(wset._replace(entries=[e for e in wset.entries
                                                            if e.kind != "source"]), limits) \
            if sources else self.scanner
        self.source_scanner = Scanner(wset._replace(entries=sources), limits) if sources \
            else None
        self.has_files = any(e.kind == "file" for e in wset.entries)
        self.findings: list = []
        self.notes: list[str] = []
        self.seen: set = set()
        self.batch = _Batch()
        # Recorded requests repeat themselves (headers, keys, roles, model names): a short piece
        # seen before gets the findings it got then, relative to itself, without a second scan.
        self.cache: dict[bytes, list] = {}
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
        if _batchable(piece):
            if self.has_files and piece.kind == "text":
                for eid in self.batch_scanner.index.file_ids(piece.data):
                    self._emit(piece, _file_finding(piece, eid))
            if len(piece.data) <= _CACHE_PIECE:
                cached = self.cache.get(piece.data)
                if cached is not None:
                    for rel in cached:
                        self._emit(piece, _placed(piece, rel))
                    return
                if piece.data in self.waiting:
                    self.waiting[piece.data].append(piece)
                    return
                self.waiting[piece.data] = []
            self.batch.add(piece)
            if self.batch.size >= _BATCH_BYTES:
                self._flush()
        else:
            self._one(piece)

    def finish(self) -> None:
        self._flush()
        self._sources()

    def _emit(self, piece: Piece, f) -> None:
        # the same value at the same place may be found twice (as a decoded base64 file and by
        # the engine's own base64 layer); say it once
        key = (f.path, piece.place.split(" (base64", 1)[0], f.entry, f.where, f.kind)
        if key in self.seen:
            return
        self.seen.add(key)
        self.findings.append(f)

    def _one(self, piece: Piece) -> None:
        if piece.kind == "name":
            got = self.batch_scanner.scan_name(piece.data.decode("utf-8", "replace"))
            notes: list[str] = []
        else:
            got, notes = self.batch_scanner.scan_content(piece.data, piece.source)
        self.notes += [f"{piece.source} {piece.place}: {n}" if piece.place else n for n in notes]
        for f in got:
            if piece.kind == "name":
                # scan_name calls a lone name a "file name"; the piece knows what it is
                rest = f.chain.split(" > ", 1)[1] if " > " in f.chain else ""
                f = f._replace(path=piece.source, chain=_join(piece.place, rest))
            else:
                f = f._replace(path=piece.source, chain=_join(piece.place, f.chain))
            self._emit(piece, f)

    def _flush(self) -> None:
        import bisect

        batch, self.batch = self.batch, _Batch()
        if not batch.pieces:
            return
        got, notes = self.batch_scanner.scan_content(_SEP.join(batch.parts), "<batch>")
        if notes:
            # a bound was hit over the joined buffer; scan each piece alone so that every note
            # names its own recorded file and place
            for piece in batch.pieces:
                self._one(piece)
            return
        found: list[list] = [[] for _ in batch.pieces]
        for f in got:
            if f.line < 1:
                continue  # whole-buffer findings (a digest of the joined buffer) mean nothing
            i = bisect.bisect_right(batch.starts, f.line) - 1
            # relative to the piece: its own line, the engine's column and decode chain
            found[i].append(f._replace(path="", line=f.line - batch.starts[i] + 1))
        if len(self.cache) > _CACHE_ENTRIES:
            self.cache.clear()
        for piece, rels in zip(batch.pieces, found, strict=True):
            repeats = self.waiting.pop(piece.data, []) if len(piece.data) <= _CACHE_PIECE else []
            if len(piece.data) <= _CACHE_PIECE:
                self.cache[piece.data] = rels
            for same in [piece, *repeats]:
                for rel in rels:
                    self._emit(same, _placed(same, rel))

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


def _placed(piece: Piece, rel):
    """A finding relative to a batched piece, placed in its recorded file."""
    if piece.kind == "name":
        return rel._replace(path=piece.source, line=0, column=rel.column - 1, where="name",
                            chain=_join(piece.place, rel.chain))
    return rel._replace(path=piece.source, chain=_join(piece.place, rel.chain))


def _file_finding(piece: Piece, eid: str):
    from plimsoll_ci.scan import Finding

    return Finding(piece.source, 0, 0, piece.place, eid, "file", "content")


HIDDEN = "[name hidden]"


def hide_names(findings: list) -> list:
    """Findings whose paths no longer spell a file or folder name that matched a sealed value.

    A hit on a name would otherwise print the value as part of the path.
    """
    hit = set()
    for f in findings:
        if f.where == "name" and f.chain.split(" > ", 1)[0] in ("file name", "folder name"):
            hit.add(f.path.rstrip("/"))
    if not hit:
        return findings
    out = []
    for f in findings:
        parts = f.path.split("/")
        shown = []
        for i, part in enumerate(parts):
            shown.append(HIDDEN if part and "/".join(parts[: i + 1]) in hit else part)
        out.append(f._replace(path="/".join(shown)))
    return out


def scan_pieces(pieces: Iterable[Piece], wset, limits=None) -> tuple[list, list[str]]:
    """Findings (path = recorded file, chain = place > decode chain) and notes for `pieces`."""
    scan = _Scan(wset, limits)
    for piece in pieces:
        scan.add(piece)
    scan.finish()
    findings = sorted(scan.findings, key=lambda f: (f.path, f.chain, f.line, f.column, f.entry))
    return hide_names(findings), scan.notes


def scan_requests(root: str, wset, limits=None, read_limits: ReadLimits | None = None):
    """Scan every recorded request under `root` against a sealed set -> `ScanResult`."""
    from plimsoll_ci.scan import ScanResult

    reader = RequestReader(read_limits)
    findings, notes = scan_pieces(reader.read(root), wset, limits)
    return ScanResult(findings, reader.notes + notes, reader.files, reader.bytes)


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

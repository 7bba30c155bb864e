"""The ship scan: shipped files x a withheld set -> findings (never values).

A finding names the file, the place (line:column for text; line 0 and the byte offset as column
for binary content and names), the decode chain and the entry id.
"""

from __future__ import annotations

import bisect
import json
import os
import stat
import time
from collections.abc import Iterable
from typing import NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.withheld import FORMATS, WithheldSet

REDACTED = "[withheld]"
_SEP = b"\x00\n\x00"  # no value spans it; its line break ends a line of escapes too


class Finding(NamedTuple):
    path: str
    line: int
    column: int
    chain: str
    entry: str
    kind: str  # "value" | "file" | "source" | "withheld-set"
    where: str = "content"  # "content" | "name"
    detail: str = ""


class ScanResult(NamedTuple):
    findings: list[Finding]
    notes: list[str]
    files: int
    bytes: int


class Limits(NamedTuple):
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
        from plimsoll_ci.match.decode import Bounds
        from plimsoll_ci.match.index import ValueEntry, ValueIndex

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
        from plimsoll_ci.match.extract import find_values

        data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
        return [Finding(path, 0, m.start, chain, eid, "value", "name")
                for m in find_values(data, self.index) for eid in m.entries]

    def _name(self, name: str, path: str, chain: str) -> list[Finding]:
        from plimsoll_ci.match.decode import text_regions
        from plimsoll_ci.match.extract import find_values

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

    def redact(self, text: str) -> str:
        """`text` with every value-carrying name token replaced by `[withheld]`."""
        for tok in sorted(self.redact_tokens, key=len, reverse=True):
            if tok in text:
                text = text.replace(tok, REDACTED)
        return text

    def prime_names(self, paths: Iterable[str]) -> None:
        """Scan the not-yet-seen name parts of many paths in one joined pass (then cached)."""
        from plimsoll_ci.match.decode import text_regions
        from plimsoll_ci.match.extract import find_values

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
        from plimsoll_ci.match.decode import containers, stream_kind

        notes: list[str] = []
        deadline = time.monotonic() + self.limits.decode_seconds * max(1, len(files))
        pieces: list[_Piece] = []
        out: list[Finding] = []
        for path, data in files:
            pieces.append(_Piece(path, data, "", _is_binary(data)))
            if stream_kind(data) is None and data[:2] != b"PK" and not (
                    len(data) >= 512 and data[257:262] == b"ustar"):
                continue
            dec = containers(data, self.bounds)
            notes += [f"{path}: {n}" for n in dec.notes]
            for layer in dec.layers:
                if stream_kind(layer.data) is not None or layer.data[:4] in (
                        b"PK\x03\x04", b"PK\x05\x06") or (
                        len(layer.data) >= 512 and layer.data[257:262] == b"ustar"):
                    notes.append(f"{path}: {layer.chain} is an archive or compressed stream "
                                 "inside an archive: not opened (one layer of disguise)")
                if layer.name is not None:
                    out += [f._replace(path=path, chain=f"{layer.chain} ({f.chain})")
                            for f in self.scan_name(layer.name)]
                pieces.append(_Piece(path, layer.data, layer.chain, _is_binary(layer.data)))
        out += self._pieces(pieces, notes, deadline)
        return _dedupe(out), notes

    def _pieces(self, pieces: list[_Piece], notes: list[str], deadline: float) -> list[Finding]:
        from plimsoll_ci.match.decode import text_regions
        from plimsoll_ci.match.extract import SMALL, byte_classes, find_values

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
            notes.append(f"{pieces[0].path}: decode time bound reached: encoded regions not "
                         "decoded")
            if classes is not None:
                classes.release()
            return out
        regions = text_regions(joined, self.bounds, classes)
        if classes is not None:
            classes.release()
        notes += [f"{pieces[0].path if len(pieces) == 1 else 'scan'}: {n}" for n in regions.notes]
        placed = []
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
        from plimsoll_ci.match.fingerprint import fingerprints, overlap

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


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen = set()
    out = []
    for f in findings:
        k = (f.path, f.line, f.column, f.chain, f.entry, f.kind, f.where)
        if k not in seen:
            seen.add(k)
            out.append(f)
    return out


BATCH_BYTES = 4 * 1024 * 1024  # files are scanned in joined batches of about this size


def scan_items(items: Iterable[tuple[str, bytes] | tuple[str, str, bytes]], wset: WithheldSet,
               limits: Limits | None = None, walk_notes: list[str] | None = None) -> ScanResult:
    """Scan (path, bytes) pairs: what a ship set, the index or a commit ships.

    An item may also be (label, shipped path, bytes): findings name the file by its label (its
    repository path, say) while names are checked as they ship. `walk_notes` are notes the caller
    gathers while producing `items` (reported first, redacted like the rest)."""
    scanner = Scanner(wset, limits)
    findings: list[Finding] = []
    notes: list[str] = []
    files = nbytes = 0
    folders_seen: set[tuple[str, str]] = set()
    order: dict[str, int] = {}
    batch: list[tuple[str, bytes]] = []
    names: list[tuple[str, str]] = []  # (label, shipped path) of the batch
    batch_bytes = 0

    def flush() -> None:
        nonlocal batch, names, batch_bytes
        scanner.prime_names(shipped for _, shipped in names)
        for path, shipped in names:
            for f in scanner.scan_name(shipped):
                if shipped != path:  # place the finding in the labelled tree: file or folder
                    if not f.path.endswith("/"):
                        f = f._replace(path=path)
                    elif path.endswith(shipped):
                        f = f._replace(path=path[: len(path) - len(shipped)] + f.path)
                if f.path.endswith("/"):
                    if (f.path, f.entry) in folders_seen:
                        continue
                    folders_seen.add((f.path, f.entry))
                findings.append(f)
        if batch:
            found, n = scanner.scan_contents(batch)
            findings.extend(found)
            notes.extend(n)
        batch, names, batch_bytes = [], [], 0

    for item in items:
        if len(item) == 3:
            path, shipped, data = item  # type: ignore[misc]
        else:
            path, data = item  # type: ignore[misc]
            shipped = path
        files += 1
        nbytes += len(data)
        order.setdefault(path, len(order))
        if len(data) > scanner.limits.max_file_bytes:
            notes.append(f"{path}: {len(data)} bytes, over the {scanner.limits.max_file_bytes}-byte "
                         "file bound: scanned up to the bound")
            data = data[: scanner.limits.max_file_bytes]
        names.append((path, shipped))
        batch.append((path, data))
        batch_bytes += len(data)
        if batch_bytes >= BATCH_BYTES or len(names) >= 20_000:
            flush()
    flush()
    findings = _dedupe(findings)
    findings.sort(key=lambda f: (order.get(f.path, -1), f.where != "name", f.line, f.column,
                                 f.chain, f.entry))
    notes = list(walk_notes or []) + notes
    if scanner.redact_tokens:
        findings = [f._replace(path=scanner.redact(f.path), chain=scanner.redact(f.chain))
                    for f in findings]
        notes = [scanner.redact(n) for n in notes]
    return ScanResult(findings, notes, files, nbytes)


def _walk(root: str, label: str, notes: list[str]) -> Iterable[tuple[str, str, bool]]:
    """(shown path, path to read or "" for the name only, whether it is known to be a regular
    file) for every file under `root`, top-down, sorted by name: files before sub-folders."""
    real_root = os.path.realpath(root)
    stack = [(root, "" if label == "/" else label)]
    while stack:
        folder, shown_folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            notes.append(f"{shown_folder or '/'}: cannot list ({e.strerror})")
            continue
        subfolders = []
        for e in entries:
            shown = f"{shown_folder}/{e.name}"
            try:
                if e.is_dir(follow_symlinks=False):
                    subfolders.append((e.path, shown))
                    continue
                if e.is_file(follow_symlinks=False):
                    yield shown, e.path, True
                    continue
                if not e.is_symlink():
                    yield shown, e.path, False  # a pipe, socket or device: checked when read
                    continue
            except OSError:
                yield shown, e.path, False
                continue
            target = os.path.realpath(e.path)
            if os.path.isdir(target):
                notes.append(f"{shown}: symbolic link to a folder, not followed")
                continue
            inside = target == real_root or target.startswith(real_root + os.sep)
            if not inside:
                notes.append(f"{shown}: symbolic link out of the scanned root, not followed")
                yield shown, "", False  # the name still ships
            elif not os.path.isfile(target):
                notes.append(f"{shown}: symbolic link to nothing or a loop, not followed")
                yield shown, "", False
            else:
                yield shown, e.path, False
        stack.extend(reversed(subfolders))


def scan_paths(paths: list[str], wset: WithheldSet, limits: Limits | None = None) -> ScanResult:
    """Scan folders and files on disk. Missing paths are bad input (exit 2) before any scan."""
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        raise BadInput("; ".join(f"path {p}: no such file or folder" for p in missing))
    lim = limits or Limits()
    notes: list[str] = []

    def items() -> Iterable[tuple[str, bytes]]:
        for p in paths:
            if os.path.isdir(p):  # (a link to a folder named on the command line is followed)
                entries = _walk(p, p.rstrip("/") or "/", notes)
            else:
                entries = iter([(p, p, False)])
            for shown, full, regular in entries:
                if not full:
                    yield shown, b""
                    continue
                try:
                    if not regular and not stat.S_ISREG(os.stat(full).st_mode):
                        notes.append(f"{shown}: not a regular file (a pipe, socket or device): "
                                     "its name was scanned, its contents not read")
                        yield shown, b""
                        continue
                    with open(full, "rb") as fh:
                        data = fh.read(lim.max_file_bytes + 1)
                except OSError as e:
                    notes.append(f"{shown}: cannot read ({e.strerror}): its contents were not "
                                 "scanned")
                    yield shown, b""
                    continue
                yield shown, data

    return scan_items(items(), wset, lim, walk_notes=notes)

"""The ship scan: shipped files x a withheld set -> findings (never values).

A finding names the file, the place (line:column for text; line 0 and the byte offset as column
for binary content and names), the decode chain and the entry id.
"""

from __future__ import annotations

import bisect
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.withheld import FORMATS, WithheldSet

_SEP = b"\x00\x01\x00"  # not a digit, word or space: no value spans two decoded regions


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
                             self.limits.max_region, self.limits.max_regions)
        values = [ValueEntry(e.id, e.vtype, bytes.fromhex(e.digest), e.shape)
                  for e in wset.entries if e.kind == "value"]
        self.index = ValueIndex(values, wset.key)
        for e in wset.entries:
            if e.kind == "file":
                self.index.add_file(e.id, bytes.fromhex(e.digest))
        self.sources = [e for e in wset.entries if e.kind == "source"]

    # -- names --------------------------------------------------------------------------------

    def scan_text(self, text: str | bytes, path: str, chain: str = "") -> list[Finding]:
        """Values in one string (no decoding layers); places are byte offsets."""
        from plimsoll_ci.match.extract import find_values

        data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
        return [Finding(path, 0, m.start, chain, eid, "value", "name")
                for m in find_values(data, self.index) for eid in m.entries]

    def _name(self, name: str, path: str, chain: str) -> list[Finding]:
        from plimsoll_ci.match.decode import text_regions

        data = name.encode("utf-8", "surrogateescape")
        out = self.scan_text(data, path, chain)
        for layer in text_regions(data, self.bounds).layers:
            out += self.scan_text(layer.data, path, f"{chain} > {layer.chain}")
        return out

    def scan_name(self, path: str) -> list[Finding]:
        """Every folder name and the file name of a shipped path."""
        parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
        out: list[Finding] = []
        for i, part in enumerate(parts):
            is_file = i == len(parts) - 1
            where = path if is_file else "/".join(parts[: i + 1]) + "/"
            out += self._name(part, where, "file name" if is_file else "folder name")
        return out

    # -- contents -----------------------------------------------------------------------------

    def scan_content(self, data: bytes, path: str) -> tuple[list[Finding], list[str]]:
        """Contents, one decode layer deep, and archive members (names and contents)."""
        from plimsoll_ci.match.decode import containers

        notes: list[str] = []
        deadline = time.monotonic() + self.limits.decode_seconds
        out = self._plain(data, path, "", notes, deadline)
        dec = containers(data, self.bounds)
        notes += [f"{path}: {n}" for n in dec.notes]
        for layer in dec.layers:
            if layer.name is not None:
                out += [f._replace(chain=f"{layer.chain} ({f.chain})")
                        for f in self._name_of_member(layer.name, path)]
            out += self._plain(layer.data, path, layer.chain, notes, deadline)
        return _dedupe(out), notes

    def _name_of_member(self, name: str, path: str) -> list[Finding]:
        found = []
        for f in self.scan_name(name):
            found.append(f._replace(path=path))
        return found

    def _plain(self, data: bytes, path: str, chain: str, notes: list[str],
               deadline: float) -> list[Finding]:
        from plimsoll_ci.match.decode import text_regions
        from plimsoll_ci.match.extract import find_values

        out: list[Finding] = []
        if not data:
            return out
        binary = _is_binary(data)
        if data.lstrip()[:1] == b"{" and b"plimsoll-" in data[:4096]:
            out += self._withheld_file(data, path, chain)
        for eid in self.index.file_ids(data):
            out.append(Finding(path, 0, 0, chain, eid, "file"))
        for m in find_values(data, self.index):
            line, col = _place(data, m.start, binary)
            out += [Finding(path, line, col, chain, eid, "value") for eid in m.entries]
        if self.sources and not binary:
            out += self._source(data, path, chain)
        if binary and not chain:
            return out
        if time.monotonic() > deadline:
            notes.append(f"{path}: decode time bound ({self.limits.decode_seconds:g} s) reached: "
                         f"encoded regions{' in ' + chain if chain else ''} not decoded")
            return out
        regions = text_regions(data, self.bounds)
        notes += [f"{path}: {n}" for n in regions.notes]
        if not regions.layers:
            return out
        # One pass over all decoded regions, joined by a separator no value can span.
        layers = regions.layers
        starts, pos = [], 0
        for layer in layers:
            starts.append(pos)
            pos += len(layer.data) + len(_SEP)
        joined = _SEP.join(layer.data for layer in layers)
        for m in find_values(joined, self.index):
            k = bisect.bisect_right(starts, m.start) - 1
            layer = layers[k]
            line, col = _place(data, layer.offset, binary)
            sub = f"{chain} > {layer.chain}" if chain else layer.chain
            out += [Finding(path, line, col, sub, eid, "value") for eid in m.entries]
        if self.index.files:
            for layer in layers:
                for eid in self.index.file_ids(layer.data):
                    line, col = _place(data, layer.offset, binary)
                    sub = f"{chain} > {layer.chain}" if chain else layer.chain
                    out.append(Finding(path, line, col, sub, eid, "file"))
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


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen = set()
    out = []
    for f in findings:
        k = (f.path, f.line, f.column, f.chain, f.entry, f.kind, f.where)
        if k not in seen:
            seen.add(k)
            out.append(f)
    return out


def scan_items(items: Iterable[tuple[str, bytes]], wset: WithheldSet,
               limits: Limits | None = None) -> ScanResult:
    """Scan (path, bytes) pairs: what a ship set, the index or a commit ships."""
    scanner = Scanner(wset, limits)
    findings: list[Finding] = []
    notes: list[str] = []
    files = nbytes = 0
    folders_seen: set[str] = set()
    for path, data in items:
        files += 1
        nbytes += len(data)
        if len(data) > scanner.limits.max_file_bytes:
            notes.append(f"{path}: {len(data)} bytes, over the {scanner.limits.max_file_bytes}-byte "
                         "file bound: scanned up to the bound")
            data = data[: scanner.limits.max_file_bytes]
        found, n = scanner.scan_file(data, path)
        for f in found:
            if f.where == "name" and f.path.endswith("/"):
                if (f.path, f.entry) in folders_seen:
                    continue
                folders_seen.add((f.path, f.entry))
            findings.append(f)
        notes += n
    return ScanResult(_dedupe(findings), notes, files, nbytes)


def _walk(root: Path, label: str, notes: list[str]) -> Iterable[tuple[str, Path]]:
    real_root = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False,
                                                onerror=lambda e: notes.append(
                                                    f"{e.filename}: cannot list ({e.strerror})")):
        dirnames.sort()
        for d in list(dirnames):
            full = os.path.join(dirpath, d)
            if os.path.islink(full):
                rel = os.path.relpath(full, root)
                notes.append(f"{os.path.join(label, rel)}: symbolic link to a folder, not followed")
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            shown = os.path.join(label, rel).replace(os.sep, "/")
            if os.path.islink(full):
                target = os.path.realpath(full)
                inside = target == real_root or target.startswith(real_root + os.sep)
                if not inside:
                    notes.append(f"{shown}: symbolic link out of the scanned root, not followed")
                    yield shown, Path("")  # the name still ships
                    continue
                if not os.path.isfile(target):
                    notes.append(f"{shown}: symbolic link to nothing or a loop, not followed")
                    yield shown, Path("")
                    continue
            yield shown, Path(full)


def scan_paths(paths: list[str], wset: WithheldSet, limits: Limits | None = None) -> ScanResult:
    """Scan folders and files on disk. Missing paths are bad input (exit 2) before any scan."""
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        raise BadInput("; ".join(f"path {p}: no such file or folder" for p in missing))
    lim = limits or Limits()
    notes: list[str] = []

    def items() -> Iterable[tuple[str, bytes]]:
        for p in paths:
            root = Path(p)
            if root.is_dir():
                entries = _walk(root, p.rstrip("/") or "/", notes)
            else:
                entries = [(p, root)]
            for shown, full in entries:
                if full == Path(""):
                    yield shown, b""
                    continue
                try:
                    with open(full, "rb") as fh:
                        data = fh.read(lim.max_file_bytes + 1)
                except OSError as e:
                    notes.append(f"{shown}: cannot read ({e.strerror}): its contents were not "
                                 "scanned")
                    yield shown, b""
                    continue
                yield shown, data

    result = scan_items(items(), wset, lim)
    return result._replace(notes=notes + result.notes)

"""The matching engine: names and contents of shipped files x one withheld set -> findings.

`Scanner` opens no file and starts no process: contents come to it as bytes, or as a reader the
caller gives (`scan_stream`), and it scans them within `Limits`, a memory budget among them that
holds whatever it reads (`records.windowing`; the reading itself is `contents`). Callers go
through the ship scan's front end (`plimsoll_ci.shipscan.scan.ShipScan`), which batches, caches, places
and redacts. Its source, with `match/`, is part of every cache key
(`plimsoll_ci.shipscan.scan.engine_files`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from plimsoll_ci.engine.records import Finding, Limits, Windowing, memory_floor, windowing

if TYPE_CHECKING:
    from plimsoll_ci.withheld import WithheldSet

# The matching code (`contents`, `match/`) is imported when a `Scanner` is built, not with this
# package: a warm hook run, whose every content is known clean, never builds one.

__all__ = ["Finding", "Limits", "Scanner", "Windowing", "dedupe", "memory_floor", "windowing"]

_SEP = b"\x00\n\x00"  # no value spans it; its line break ends a line of escapes too


_NOTHING: list[Finding] = []  # the findings of most names (shared: never added to)


class Scanner:
    """Scans names and contents against one withheld set."""

    def __init__(self, wset: WithheldSet, limits: Limits | None = None) -> None:
        from plimsoll_ci.match.decode import Bounds
        from plimsoll_ci.match.index import ValueEntry, ValueIndex

        self.wset = wset
        # (a config may give a count as a float: `max_memory: 1e9`)
        self.limits = (limits or Limits())._replace(**{
            k: int(v) for k, v in (limits or Limits())._asdict().items() if k != "decode_seconds"})
        self.bounds = Bounds(self.limits.max_decompressed, self.limits.max_members,
                             self.limits.max_region, self.limits.max_regions,
                             self.limits.max_line)
        self.windowing = windowing(self.limits)
        values = [ValueEntry(e.id, e.vtype, bytes.fromhex(e.digest), e.shape)
                  for e in wset.entries if e.kind == "value"]
        self.index = ValueIndex(values, wset.key)
        for e in wset.entries:
            if e.kind == "file":
                self.index.add_file(e.id, bytes.fromhex(e.digest))
        self.sources = [e for e in wset.entries if e.kind == "source"]
        self._names: dict[tuple[str, str], list[Finding]] = {}
        self._folders: dict[str, list[Finding]] = {}  # a path's folders -> their findings
        self.redact_tokens: set[str] = set()

    def load(self) -> None:
        """Import what a scan of many bytes runs (the content path and `match/`, its compiled
        part with it), so worker processes forked after this inherit it rather than each
        importing it again."""
        from plimsoll_ci.engine import contents  # noqa: F401
        from plimsoll_ci.match import classes, extract  # noqa: F401

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

    def prime_names(self, paths: Iterable[str]) -> None:
        """Scan the not-yet-seen name parts of many paths in one joined pass (then cached)."""
        from plimsoll_ci.match.decode import text_regions
        from plimsoll_ci.match.extract import find_values

        seen, folders, names = self._names, self._folders, set()
        for path in paths:
            head, _, name = path.replace("\\", "/").rpartition("/")
            names.add(name)
            if head not in folders:  # (a folder path judged before: its parts are known)
                names.update(head.split("/"))
        parts = sorted(p for p in names if p not in ("", ".") and (p, "file name") not in seen)
        if len(parts) < 8 or len(self._names) > 100_000:
            return  # one by one is as quick
        datas = [p.encode("utf-8", "surrogateescape") for p in parts]
        starts, pos = [], 0
        for d in datas:
            starts.append(pos)
            pos += len(d) + len(_SEP)
        joined = _SEP.join(datas)
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
                                             for col, eid, sub in found] if found else _NOTHING

    def scan_name(self, path: str) -> list[Finding]:
        """Every folder name and the file name of a shipped path."""
        norm = path.replace("\\", "/")
        head, _, name = norm.rpartition("/")
        if name in ("", "."):  # (a path that ends in a separator: its last part is the file)
            return self._parts(path, [p for p in norm.split("/") if p not in ("", ".")])
        folders = self._folders.get(head)
        if folders is None:  # files share their folders: each folder path is judged once
            folders = self._parts(path, [p for p in head.split("/") if p not in ("", ".")],
                                  file=False)
            if len(self._folders) < 100_000:
                self._folders[head] = folders
        hits = self._named(name, "file name")
        return [*folders, *(f._replace(path=path) for f in hits)] if hits else list(folders)

    def _named(self, part: str, kind: str) -> list[Finding]:
        hits = self._names.get((part, kind))
        if hits is None:  # folder names repeat across files: scan each name once
            hits = self._name(part, "", kind)
            if len(self._names) < 100_000:
                self._names[(part, kind)] = hits
        return hits

    def _parts(self, path: str, parts: list[str], file: bool = True) -> list[Finding]:
        """The findings of each name in `parts` (the last one the file's when `file`)."""
        out: list[Finding] = []
        last = len(parts) - 1 if file else -1
        for i, part in enumerate(parts):
            hits = self._named(part, "file name" if i == last else "folder name")
            if hits:  # (most names hold nothing: their place is spelled out only when one does)
                where = path if i == last else "/".join(parts[: i + 1]) + "/"
                out += [f._replace(path=where) for f in hits]
        return out

    # -- contents -----------------------------------------------------------------------------

    def scan_content(self, data: bytes, path: str) -> tuple[list[Finding], list[str]]:
        """Contents, one decode layer deep, and archive members (names and contents)."""
        return self.scan_contents([(path, data)])

    def scan_contents(self, files: list[tuple[str, bytes]]) -> tuple[list[Finding], list[str]]:
        """Contents of many files at once: small files are scanned as one joined buffer, so the
        vectorized passes run over megabytes rather than paying their fixed cost per file; a
        long one a window at a time (`Windowing`). Every bound counts per file, and every note
        starts with the file's path."""
        from plimsoll_ci.engine.contents import ContentRun, bytes_reader

        run = ContentRun(self)
        for path, data in files:
            run.add(path, bytes_reader(data))
        found, notes = run.finish()
        return dedupe(found), notes

    def scan_stream(self, path: str, read: Callable[[int], bytes]) -> tuple[list[Finding],
                                                                            list[str]]:
        """The contents of one file that `read(n)` gives a piece at a time (b"" at its end), so
        a long file is never held whole."""
        from plimsoll_ci.engine.contents import ContentRun

        run = ContentRun(self)
        run.add(path, read)
        found, notes = run.finish()
        return dedupe(found), notes

    def source_findings(self, prints: set[int], path: str, chain: str) -> list[Finding]:
        """Source entries that a shipped text's fingerprints (`source_prints`) carry."""
        from plimsoll_ci.match.fingerprint import overlap

        out = []
        for e in self.sources:
            share = overlap(set(e.fingerprints), prints)
            if share >= e.threshold:
                out.append(Finding(path, 0, 0, chain, e.id, "source",
                                   detail=f"overlap {share * 100:.0f}%"))
        return out

    def source_prints(self, data: bytes) -> set[int]:
        """Fingerprints of a shipped text, as a source entry's are made."""
        from plimsoll_ci.match.fingerprint import fingerprints

        return fingerprints(data, self.wset.key)

    def scan_file(self, data: bytes, path: str) -> tuple[list[Finding], list[str]]:
        """Name and contents of one shipped file."""
        found, notes = self.scan_content(data, path)
        return self.scan_name(path) + found, notes


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

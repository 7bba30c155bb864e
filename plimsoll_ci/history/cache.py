"""The blob cache: verdicts per blob id and per shipped name, kept in `.git/plimsoll-cache/`.

`ScanCache` is the ship scan's `VerdictCache` for history (keys `blob:<git blob id>` and
`name:<sha256 of the shipped path>`), small by design, since a history holds thousands of blobs:

- a clean blob is its id and size;
- a blob with findings keeps the entries it carries (all the replay needs to judge a commit) and
  its findings' rows: as one compact JSON text when read from the file (decoded only for the few
  commits a report shows), as the rows themselves when scanned in this run (encoded only when
  the file is written: a `--no-cache` replay never encodes them);
- a shipped name keeps its findings only when it has any.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterable
from typing import Any, NamedTuple

from plimsoll_ci import __version__
from plimsoll_ci.shipscan import scan
from plimsoll_ci.shipscan.results import Verdict, shown_path
from plimsoll_ci.shipscan.scan import Finding, name_key

CACHE_FORMAT = "plimsoll-history-cache/5"
NOTHING: frozenset[str] = frozenset()
WHERE = 5  # a row's `where` (rows are a finding's fields after its path)

# A blob's findings, path left out: [[line, column, chain, entry, kind, where, detail], ...] (with
# via, sets and also after detail when one is not empty), as
# compact JSON text (read from the file) or as the rows themselves (scanned in this run)
Rows = str | tuple[tuple[Any, ...], ...]


class Found(NamedTuple):
    """A blob with findings or notes, as the cache keeps it."""

    size: int
    entries: frozenset[str]  # the withheld entries its content carries
    notes: tuple[str, ...]
    tokens: tuple[str, ...]
    findings: Rows


_PLAIN = len(Finding._fields) - 3  # a finding's fields up to `detail`: `via`, `sets`, `also`
# are written only when one is not empty (a row is as short as it was before they came)


def _content_rows(findings: tuple[Finding, ...]) -> tuple[tuple[Any, ...], ...]:
    # (encoding 2,600 blobs' rows as JSON was 20-30 ms of a cold replay of psf/requests)
    return tuple([f[1:] if f.via or f.sets or f.also else f[1:_PLAIN] for f in findings])


def _text(rows: Rows) -> str:
    """`rows` as the file keeps them: compact JSON (tuples written as lists)."""
    return rows if isinstance(rows, str) else json.dumps(rows, separators=(",", ":"))


def _name_row(f: Finding) -> list[Any]:
    return [f.path, *(f[1:] if f.via or f.sets or f.also else f[1:_PLAIN])]


def _finding(path: str, row: Any) -> Finding:  # noqa: ANN401
    """A finding from its row (the lists JSON gave back as the tuples a finding holds)."""
    fields = (tuple(v) if isinstance(v, list) else v for v in row)
    # (a row holds a finding's fields after its path, as `_content_rows` wrote them; a short
    # row leaves the last ones to their defaults, which `_make` would not)
    return Finding(path, *fields)  # type: ignore[arg-type]


class ScanCache:
    """Verdicts for one withheld set, one set of scan limits and one engine; persisted as one JSON
    file written atomically (temp file + rename), so Ctrl-C at any moment leaves either the old
    file or the new one, never a torn one.

    The file is laid out to load quickly, since a warm replay reads all of it: the ids of clean
    blobs as one string (separated by spaces) with their sizes beside them, the blobs with findings as columns (ids,
    sizes, an index into the sets of entries, notes and tokens only where there are some, and
    their findings' texts joined by line breaks, which their compact JSON never holds).
    """

    def __init__(self, folder: str | None, key: str) -> None:
        self.folder = folder
        self.key = key
        self.clean: dict[str, int] = {}  # blob id -> size
        self.found: dict[str, int] = {}  # blob id -> its row in the columns below
        self._size: list[int] = []
        self._entries: list[frozenset[str]] = []  # the entries its content carries
        self._rows: list[Rows] = []  # its findings (JSON text, or the rows scanned here)
        self._notes: dict[int, tuple[str, ...]] = {}  # (only where there are some)
        self._tokens: dict[int, tuple[str, ...]] = {}
        self.names: dict[str, tuple[Finding, ...]] = {}  # name key -> findings (never empty)
        self.clean_names: set[str] = set()  # name keys
        self.builds: dict[str, list[list[str]]] = {}
        self.dirty = False
        self.notes: list[str] = []
        self._interned: dict[frozenset[str], frozenset[str]] = {NOTHING: NOTHING}
        if folder:
            self._load()

    # -- the VerdictCache protocol ------------------------------------------------------------

    def get(self, key: str) -> Verdict | None:
        """The verdict stored under `key` (`blob:<id>` or `name:<sha256>`), or None."""
        kind, _, ident = key.partition(":")
        if kind == "blob":
            if ident in self.clean:
                return Verdict((), (), self.clean[ident])
            found = self.blob(ident)
            if found is None:
                return None
            return Verdict(tuple(self.findings(ident)), found.notes, found.size, found.tokens)
        if ident in self.clean_names:
            return Verdict((), (), 0)
        if ident in self.names:
            return Verdict(self.names[ident], (), 0)
        return None

    def put(self, key: str, verdict: Verdict) -> None:
        """Remember a verdict."""
        kind, _, ident = key.partition(":")
        self.dirty = True
        if kind == "blob":
            if verdict.clean:
                self.clean[ident] = verdict.size
                return
            self._keep(ident, Found(verdict.size, self._intern(f.entry for f in verdict.findings),
                                    tuple(verdict.notes), tuple(verdict.tokens),
                                    _content_rows(verdict.findings)))
        elif verdict.findings:
            self.names[ident] = tuple(verdict.findings)
        else:
            self.clean_names.add(ident)

    def put_clean(self, sizes: list[tuple[str, int]]) -> None:
        """Remember blobs judged clean, by id with their sizes (a worker's answer at once): as
        `put` of each one's clean verdict."""
        if sizes:
            self.dirty = True
            self.clean.update(sizes)

    def _keep(self, oid: str, found: Found) -> None:
        i = self.found.get(oid)
        if i is None:
            i = self.found[oid] = len(self._size)
            self._size.append(found.size)
            self._entries.append(found.entries)
            self._rows.append(found.findings)
        else:
            self._size[i], self._entries[i], self._rows[i] = found.size, found.entries, \
                found.findings
        for column, value in ((self._notes, found.notes), (self._tokens, found.tokens)):
            if value:
                column[i] = value
            else:
                column.pop(i, None)

    def blob(self, oid: str) -> Found | None:
        """Blob `oid`'s record when it has findings or notes (None when clean or unknown)."""
        i = self.found.get(oid)
        if i is None:
            return None
        return Found(self._size[i], self._entries[i], self._notes.get(i, ()),
                     self._tokens.get(i, ()), self._rows[i])

    # -- what the replay asks -----------------------------------------------------------------

    def knows(self, oid: str) -> bool:
        """Whether blob `oid` has a verdict here."""
        return oid in self.clean or oid in self.found

    def entries(self, oid: str) -> frozenset[str]:
        """The entries blob `oid`'s content carries (none when clean or unknown)."""
        i = self.found.get(oid)
        return self._entries[i] if i is not None else NOTHING

    def carrying(self) -> dict[str, frozenset[str]]:
        """`entries` of every blob with findings or notes, as one map (blob id -> entries) that
        a replay of thousands of deltas reads without a call per delta."""
        return {oid: self._entries[i] for oid, i in self.found.items()}

    def findings(self, oid: str) -> list[Finding]:
        """Blob `oid`'s content findings (path empty)."""
        i = self.found.get(oid)
        if i is None:
            return []
        rows = self._rows[i]
        return [_finding("", row) for row in (json.loads(rows) if isinstance(rows, str) else rows)]

    def member_findings(self, oid: str) -> list[Finding]:
        """Blob `oid`'s findings in the names of archive members (decoded only when it has any)."""
        i = self.found.get(oid)
        if i is None:
            return []
        rows = self._rows[i]
        if isinstance(rows, str):
            if '"name"' not in rows:  # (where == "name" in no row)
                return []
        elif all(row[WHERE] != "name" for row in rows):
            return []
        return [f for f in self.findings(oid) if f.where == "name"]

    def blob_notes(self, oid: str) -> tuple[str, ...]:
        """Blob `oid`'s notes (bounds hit), without a path."""
        i = self.found.get(oid)
        return self._notes.get(i, ()) if i is not None else ()

    def knows_name(self, name: str) -> bool:
        """Whether shipped path `name` has a verdict here."""
        key = name_key(shown_path(name))[5:]
        return key in self.names or key in self.clean_names

    def name_findings(self, name: str) -> tuple[Finding, ...]:
        """Findings in shipped path `name` (its file name and folder names)."""
        return self.names.get(name_key(shown_path(name))[5:], ())

    def _intern(self, entries: Any) -> frozenset[str]:
        s = frozenset(entries)
        return self._interned.setdefault(s, s)

    # -- on disk ------------------------------------------------------------------------------

    @property
    def path(self) -> str | None:
        """The cache file (None when caching is off)."""
        return os.path.join(self.folder, f"scan-{self.key[:24]}.json") if self.folder else None

    def _load(self) -> None:
        path = self.path
        assert path is not None
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            if doc.get("format") != CACHE_FORMAT or doc.get("key") != self.key:
                raise ValueError("another format")
            self.clean = dict(zip(_ids(doc["clean"]), map(int, doc["clean_sizes"]), strict=True))
            found = doc["found"]
            ids = _ids(found["ids"])
            sets = [self._intern(map(str, s)) for s in found["sets"]]
            self._size = list(map(int, found["sizes"]))
            self._entries = [sets[i] for i in found["entries"]]
            self._rows = found["rows"].split("\n") if ids else []
            if not len(ids) == len(self._size) == len(self._entries) == len(self._rows):
                raise ValueError("columns of different lengths")
            self.found = {oid: i for i, oid in enumerate(ids)}
            self._notes = {int(i): tuple(map(str, v)) for i, v in found["notes"].items()}
            self._tokens = {int(i): tuple(map(str, v)) for i, v in found["tokens"].items()}
            if not set(self._notes).union(self._tokens) <= set(range(len(ids))):
                raise ValueError("notes of no blob")
            self.names = {str(k): tuple(_finding(row[0], row[1:]) for row in rows)
                          for k, rows in doc["names"].items()}
            self.clean_names = set(doc["clean_names"])
            self.builds = dict(doc.get("builds", {}))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
            self.notes.append(f"cache {path} was unreadable and is rebuilt")
            self.clean, self.found, self.names, self.builds = {}, {}, {}, {}
            self._size, self._entries, self._rows, self._notes, self._tokens = [], [], [], {}, {}
            self.clean_names = set()

    def _doc(self) -> dict[str, Any]:
        """The file's JSON (see the class's docstring)."""
        sets: dict[frozenset[str], int] = {}
        order = list(self.found.items())
        found = {"ids": _joined(oid for oid, _i in order),
                 "sizes": [self._size[i] for _oid, i in order],
                 "entries": [sets.setdefault(self._entries[i], len(sets)) for _oid, i in order],
                 "sets": [sorted(s) for s in sets],
                 "notes": {str(n): self._notes[i] for n, (_oid, i) in enumerate(order)
                           if i in self._notes},
                 "tokens": {str(n): self._tokens[i] for n, (_oid, i) in enumerate(order)
                            if i in self._tokens},
                 "rows": "\n".join(_text(self._rows[i]) for _oid, i in order)}
        return {"format": CACHE_FORMAT, "key": self.key, "clean": _joined(self.clean),
                "clean_sizes": list(self.clean.values()), "found": found,
                "names": {k: [_name_row(f) for f in v] for k, v in self.names.items()},
                "clean_names": sorted(self.clean_names), "builds": self.builds}

    def save(self) -> None:
        """Write the cache atomically (merging what another run saved meanwhile)."""
        if not self.folder or not self.dirty:
            return
        path = self.path
        assert path is not None
        os.makedirs(self.folder, exist_ok=True)
        other = ScanCache(self.folder, self.key)
        for oid, size in other.clean.items():
            self.clean.setdefault(oid, size)
        for oid in other.found:
            if oid not in self.found:
                found = other.blob(oid)
                assert found is not None
                self._keep(oid, found._replace(entries=self._intern(found.entries)))
        for mine, theirs in ((self.names, other.names), (self.builds, other.builds)):
            for k, v in theirs.items():
                mine.setdefault(k, v)  # type: ignore[arg-type]  # (each pair: one kind)
        self.clean_names |= other.clean_names
        doc = self._doc()
        fd, tmp = tempfile.mkstemp(prefix=".tmp-scan-", dir=self.folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(doc, f, separators=(",", ":"))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            _unlink(tmp)
            raise
        self.dirty = False
        self._prune()

    def _prune(self, keep: int = 8, stale_seconds: float = 3600.0) -> None:
        """Keep the newest `keep` caches (other sets, older engines); drop old temp files."""
        assert self.folder is not None
        now = time.time()
        caches = []
        for name in os.listdir(self.folder):
            full = os.path.join(self.folder, name)
            try:
                mtime = os.stat(full).st_mtime
            except OSError:
                continue
            if name.startswith(".tmp-scan-") and now - mtime > stale_seconds:
                _unlink(full)
            elif name.startswith("scan-") and name.endswith(".json"):
                caches.append((mtime, full))
        for _mtime, full in sorted(caches, reverse=True)[keep:]:
            _unlink(full)


def _ids(joined: str) -> list[str]:
    """Blob ids as the file keeps them: one string, separated by spaces (`_joined`)."""
    if not isinstance(joined, str):
        raise ValueError("blob ids are one string")
    return joined.split(" ") if joined else []


def _joined(ids: Iterable[str]) -> str:
    return " ".join(ids)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def save(cache: ScanCache) -> None:
    """Save `cache`; a failure (a read-only clone) is a warning, never the end of the report."""
    try:
        cache.save()
    except OSError as e:
        print(f"plimsoll-ci: warning: cache {cache.path}: not saved ({e.strerror}); "
              "the next run scans again", file=sys.stderr)


def cache_key(wset: Any, limits: Any, max_blob_bytes: int) -> str:
    """What cached verdicts depend on: the withheld set, the scan engine (its source) and its
    bounds. A changed matching rule thus never serves stale findings.
    """
    h = hashlib.sha256()
    for part in (CACHE_FORMAT, __version__, str(getattr(wset, "digest", "")),
                 repr(limits), str(max_blob_bytes)):
        h.update(part.encode("utf-8") + b"\0")
    for src in scan.engine_files():
        try:
            h.update(hashlib.sha256(src.read_bytes()).digest())
        except OSError:
            h.update(b"?")
    return h.hexdigest()

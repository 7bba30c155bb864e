"""The blob cache: findings per blob id and per shipped name, kept in `.git/plimsoll-cache/`."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from typing import Any

from plimsoll_ci import __version__, scan

CACHE_FORMAT = "plimsoll-history-cache/3"

# A finding as cached: [line, column, chain, entry, kind, where, detail]; a name finding adds the
# name that carries the entry (a file or folder name) and where it sits in the shipped path (the
# file's path, or the folder's, ending in `/`).
Row = list[Any]


class ScanCache:
    """Findings per blob id (content) and per shipped name, for one withheld set and one set of
    scan limits; persisted as one JSON file written atomically (temp file + rename), so Ctrl-C at
    any moment leaves either the old file or the new one, never a torn one.
    """

    def __init__(self, folder: str | None, key: str) -> None:
        self.folder = folder
        self.key = key
        self.content: dict[str, list[Row]] = {}
        self.content_notes: dict[str, list[str]] = {}
        self.names: dict[str, list[Row]] = {}
        self.builds: dict[str, list[list[str]]] = {}
        self.dirty = False
        self.notes: list[str] = []
        if folder:
            self._load()

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
            self.content = dict(doc["content"])
            self.content_notes = dict(doc.get("content_notes", {}))
            self.names = dict(doc["names"])
            self.builds = dict(doc.get("builds", {}))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.notes.append(f"cache {path} was unreadable and is rebuilt")
            self.content, self.content_notes, self.names, self.builds = {}, {}, {}, {}

    def save(self) -> None:
        """Write the cache atomically (merging what another run saved meanwhile)."""
        if not self.folder or not self.dirty:
            return
        path = self.path
        assert path is not None
        os.makedirs(self.folder, exist_ok=True)
        other = ScanCache(self.folder, self.key)
        for mine, theirs in ((self.content, other.content), (self.names, other.names),
                             (self.builds, other.builds),
                             (self.content_notes, other.content_notes)):
            for k, v in theirs.items():
                mine.setdefault(k, v)  # type: ignore[arg-type]
        doc = {"format": CACHE_FORMAT, "key": self.key, "content": self.content,
               "content_notes": self.content_notes, "names": self.names, "builds": self.builds}
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
    """What cached findings depend on: the withheld set, the scan engine (its source) and its
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


def finding_row(f: Any) -> Row:
    """A scan finding as the cache keeps it."""
    return [f.line, f.column, f.chain, f.entry, f.kind, f.where, getattr(f, "detail", "")]


def name_rows(scanner: Any, name: str) -> list[Row]:
    """Findings in a shipped name; each row also says which path component carries the entry, and
    the shipped path of that file or folder.
    """
    rows = []
    for f in scanner.scan_name(name):  # surrogates carry non-UTF-8 bytes through unchanged
        row = finding_row(f)
        row.append(f.path.rstrip("/").split("/")[-1])  # the file or folder name that carries it
        row.append(f.path)
        rows.append(row)
    return rows

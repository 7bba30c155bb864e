"""History replay: when did each withheld entry first ship, when was it fixed, what shipped between.

Every commit is judged by the tree it ships, never by its patch, so content that arrives in a merge,
a rename or a revert counts. The replay is fast by design:

1. one `git log --raw` walk yields each commit's changes against its first parent; trees are kept
   as path -> blob maps only while a child still needs them, and each commit's ship sets turn into
   a *delta* of shipped files (set, path, old blob, new blob);
2. every distinct shipped blob is scanned once, by a pool of worker processes that each stream
   objects through their own `git cat-file --batch`; findings are cached by blob id under
   `.git/plimsoll-cache/`, keyed by the withheld set's digest and the scan limits;
3. the deltas are replayed over the cached findings to get, per commit, which shipped files carry
   which entries, and windows follow from the commit graph: an *introduction* is a leaking commit
   none of whose parents leaked; a *fix* is a clean commit with a leaking parent.

Builder (`command`) ship sets are rebuilt in a temporary checkout of each commit, with that commit's
own builder, and cached by the tree id of the builder's inputs (`inputs:` globs, else the whole tree).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci import __version__
from plimsoll_ci._gitstream import (
    MODE_SUBMODULE,
    ZERO_OID,
    CatFile,
    Commit,
    Repo,
    TreeEntry,
    blob_id,
    check_revs,
    git,
    is_shallow,
    ls_tree,
    open_repo,
    rev_list,
    walk,
)
from plimsoll_ci.errors import BadInput, PlimsollError

CACHE_FORMAT = "plimsoll-history-cache/2"
CONFIG_NAME = b"plimsoll.yaml"
DEFAULT_MAX_BLOB_BYTES = 64 << 20
ASSUMPTION = ("bisect assumes the entry kept shipping once introduced (it looks along first "
              "parents only); run history without --bisect for exact windows")


# --------------------------------------------------------------------------- records


class CommitInfo(NamedTuple):
    """A commit as a report names it."""

    oid: str
    time: int
    author: str


class Occurrence(NamedTuple):
    """One entry carried by one shipped file at a commit (a finding, placed in a ship set)."""

    set: str
    path: str
    line: int
    column: int
    chain: str
    entry: str
    kind: str
    where: str
    detail: str = ""


class Window(NamedTuple):
    """One stretch of history in which an entry shipped: from an introduction to its fix."""

    first: CommitInfo
    first_findings: list[Occurrence]
    fixed: CommitInfo | None  # None while a tip of the range still ships it
    seconds: int
    commits: list[str]
    from_boundary: bool  # the introduction is the first commit of a range (may be older)


class EntryHistory(NamedTuple):
    """Everything the replay found for one withheld entry."""

    entry: str
    windows: list[Window]
    commits: list[tuple[CommitInfo, list[Occurrence]]]


class HistoryReport(NamedTuple):
    """The result of a replay."""

    entries: list[EntryHistory]
    commits_scanned: int
    blobs_scanned: int  # distinct blobs judged (scanned now or taken from the cache)
    blobs_from_cache: int
    notes: list[str]
    revs: list[str]


class BisectResult(NamedTuple):
    """The result of `--bisect`: the first commit (along first parents) that ships an entry."""

    entry: str
    first: CommitInfo | None
    findings: list[Occurrence]
    scans: int
    commits: int
    notes: list[str]


class Options(NamedTuple):
    """How to replay. `revs` are git revisions or ranges; `all_refs` means every branch and tag."""

    revs: tuple[str, ...] = ()
    all_refs: bool = False
    config: str | None = None  # external config (auditor mode); None = each commit's own
    shallow_ok: bool = False
    jobs: int = 0  # 0 = one per core
    max_blob_bytes: int = DEFAULT_MAX_BLOB_BYTES
    use_cache: bool = True
    progress: bool | None = None  # None = when stderr is a terminal


# --------------------------------------------------------------------------- text helpers


def shown(path: str) -> str:
    """A path safe to print: non-UTF-8 bytes (kept as surrogates) become `\\xNN` escapes."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def iso(ts: int) -> str:
    """A commit time as ISO 8601 UTC."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def duration(seconds: int) -> str:
    """`46 min`, `3 h 5 min`, `2 d 4 h`: a window's length for people."""
    if seconds < 60:
        return f"{seconds} s"
    minutes = seconds // 60
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


# --------------------------------------------------------------------------- the cache


class ScanCache:
    """Findings per blob id (content) and per shipped name, for one withheld set and one set of
    scan limits; persisted as one JSON file written atomically (temp file + rename), so Ctrl-C at
    any moment leaves either the old file or the new one, never a torn one.
    """

    def __init__(self, folder: str | None, key: str) -> None:
        self.folder = folder
        self.key = key
        self.content: dict[str, list[list[Any]]] = {}
        self.content_notes: dict[str, list[str]] = {}
        self.names: dict[str, list[list[Any]]] = {}
        self.builds: dict[str, list[list[str]]] = {}
        self.dirty = False
        self.notes: list[str] = []
        if folder:
            self._load()

    @property
    def path(self) -> str | None:
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
            try:
                os.unlink(tmp)
            except OSError:
                pass
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


def cache_key(wset: Any, limits: Any, max_blob_bytes: int) -> str:
    """What cached findings depend on: the withheld set, the scan engine (its source) and its
    bounds. A changed matching rule thus never serves stale findings.
    """
    h = hashlib.sha256()
    for part in (CACHE_FORMAT, __version__, str(getattr(wset, "digest", "")),
                 repr(limits), str(max_blob_bytes)):
        h.update(part.encode("utf-8") + b"\0")
    package = Path(__file__).resolve().parent
    for src in [package / "scan.py", *sorted((package / "match").glob("*.py"))]:
        try:
            h.update(hashlib.sha256(src.read_bytes()).digest())
        except OSError:
            h.update(b"?")
    return h.hexdigest()


def _finding_row(f: Any) -> list[Any]:
    return [f.line, f.column, f.chain, f.entry, f.kind, f.where, getattr(f, "detail", "")]


def _name_rows(scanner: Any, name: str) -> list[list[Any]]:
    """Findings in a shipped name; each row also says which path component carries the entry."""
    rows = []
    for f in scanner.scan_name(name):  # surrogates carry non-UTF-8 bytes through unchanged
        row = _finding_row(f)
        row.append(f.path.rstrip("/").split("/")[-1])  # the file or folder name that carries it
        rows.append(row)
    return rows


_MEMBER_NAME = re.compile(r"(?:zip|tar) member (.+?) \((?:file|folder) name")


class _Redactor:
    """A file or folder name that carries a withheld value is itself the value: reports show
    `[withheld name N]` in its place, so a report stays safe to publish.
    """

    def __init__(self, names: dict[str, list[list[Any]]],
                 contents: Iterable[list[list[Any]]] = ()) -> None:
        flagged = set()
        for rows in names.values():
            for r in rows:
                if len(r) > 7 and isinstance(r[7], str) and r[7]:
                    flagged.add(shown(r[7]))
        for rows in contents:  # an archive member's name is shown in decode chains: whole
            for r in rows:
                m = _MEMBER_NAME.search(r[2]) if r[5] == "name" else None
                if m:
                    flagged.add(m.group(1))
        self.names = {c: f"[withheld name {i}]" for i, c in enumerate(sorted(flagged), 1)}
        self._order = sorted(self.names, key=len, reverse=True)

    def text(self, s: str) -> str:
        for comp in self._order:
            if comp in s:
                s = s.replace(comp, self.names[comp])
        return s

    def occ(self, occ: list[Occurrence]) -> list[Occurrence]:
        if not self.names:
            return occ
        return [o._replace(path=self.text(o.path), chain=self.text(o.chain)) for o in occ]

    def entry(self, e: EntryHistory) -> EntryHistory:
        if not self.names:
            return e
        return e._replace(
            windows=[w._replace(first_findings=self.occ(w.first_findings)) for w in e.windows],
            commits=[(c, self.occ(occ)) for c, occ in e.commits])


# --------------------------------------------------------------------------- scanning workers

_WORKER: dict[str, Any] = {}


def _worker_init(wset: Any, limits: Any, repo: Repo, max_bytes: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and saves the cache
    from plimsoll_ci.scan import Scanner

    _WORKER["scanner"] = Scanner(wset, limits)
    _WORKER["cat"] = CatFile(repo, max_bytes)


def _scan_blobs(jobs: list[tuple[str, str]]) -> list[tuple[str, Any, list[str], int]]:
    """Scan blobs by id: [(oid, findings rows | None when missing, notes, size)].

    Small blobs are scanned together (`Scanner.scan_contents` joins them into one buffer, so the
    engine's fixed cost is paid per batch, not per blob); a batch never holds a label twice, so
    each finding and note goes back to its own blob.
    """
    scanner, cat = _WORKER["scanner"], _WORKER["cat"]
    labels = dict(jobs)
    out: list[tuple[str, Any, list[str], int]] = []
    batch: list[tuple[str, str, bytes]] = []  # (oid, label, data)
    batch_bytes = 0

    def flush() -> None:
        nonlocal batch_bytes
        if not batch:
            return
        findings, notes = scanner.scan_contents([(label, data) for _o, label, data in batch])
        by_label: dict[str, list[Any]] = {}
        for f in findings:
            by_label.setdefault(f.path, []).append(_finding_row(f))
        notes_of: dict[str, list[str]] = {}
        for n in notes:
            owner = next((label for _o, label, _d in batch if n.startswith(label + ": ")),
                         batch[0][1])
            notes_of.setdefault(owner, []).append(n)
        for oid, label, data in batch:
            out.append((oid, by_label.get(label, []), notes_of.get(label, []), len(data)))
        batch.clear()
        batch_bytes = 0

    for oid, blob in cat.read_many([oid for oid, _label in jobs]):
        label = labels[oid]
        if blob is None:
            out.append((oid, None, [], 0))
            continue
        if blob.truncated:
            note = (f"{label} (blob {oid[:12]}): {blob.size} bytes, over the {cat.max_bytes}-byte "
                    f"bound; only its first {cat.max_bytes} bytes were scanned "
                    "(raise --max-blob-bytes)")
            found, notes = scanner.scan_content(blob.data, label)
            out.append((oid, [_finding_row(f) for f in found], [*notes, note], blob.size))
            continue
        if any(label == b_label for _o, b_label, _d in batch) or batch_bytes > _BATCH_BYTES:
            flush()
        batch.append((oid, label, blob.data))
        batch_bytes += len(blob.data)
    flush()
    return out


_BATCH_BYTES = 1 << 20  # joined-buffer scans stay around a megabyte


# --------------------------------------------------------------------------- ship sets per commit


class _Shipped(NamedTuple):
    oid: str  # content key: git blob id (builder output: the blob id git would give it)
    name: str  # the path as shipped (names are scanned on it)


ShipState = dict[tuple[str, str], _Shipped]  # (set, label) -> what ships there


class _Delta(NamedTuple):
    set: str
    label: str
    item: _Shipped | None  # None: no longer shipped


class _Judge:
    """Turns a commit's tree into what its ship sets ship, with every cache that makes it cheap."""

    def __init__(self, repo: Repo, external: Any, cache: ScanCache, notes: _Notes) -> None:
        from plimsoll_ci import ship

        self.ship = ship
        self.repo = repo
        self.external = external
        self.cache = cache
        self.notes = notes
        self.configs: dict[str, Any] = {}  # config blob id -> Config | None (invalid)
        self.selected: dict[tuple[Any, str], str | None] = {}  # (set, repo path) -> shipped path
        self.built: dict[str, bytes] = {}  # builder output not yet scanned, by blob id
        self.builds = 0
        # Globs of an external config inside the repository apply from its folder (as in ship.py).
        self.prefix = ""
        if external is not None:
            try:
                rel = Path(external.base).resolve().relative_to(Path(repo.top).resolve())
                self.prefix = "" if rel.as_posix() == "." else rel.as_posix() + "/"
            except ValueError:
                pass
        self._cat: CatFile | None = None

    @property
    def cat(self) -> CatFile:
        if self._cat is None:
            self._cat = CatFile(self.repo)
        return self._cat

    def close(self) -> None:
        if self._cat is not None:
            self._cat.close()
            self._cat = None

    def config_at(self, commit: str, tree: dict[bytes, TreeEntry]) -> tuple[str, Any]:
        """(identity, Config or None) for a commit: the external config, or its own plimsoll.yaml."""
        if self.external is not None:
            return "external", self.external
        entry = tree.get(CONFIG_NAME)
        if entry is None or entry.mode == MODE_SUBMODULE:
            return "none", None
        if entry.oid not in self.configs:
            blob = self.cat.read(entry.oid)
            cfg = None
            if blob is None:
                self.notes.add(f"commit {commit[:12]}: plimsoll.yaml (blob {entry.oid[:12]}) is "
                               "missing from the object store; that config is not applied")
            else:
                try:
                    cfg = self.ship.parse_config(
                        blob.data.decode("utf-8"), f"{commit[:12]}:plimsoll.yaml",
                        Path(self.repo.top))
                except UnicodeDecodeError:
                    self.notes.add(f"commit {commit[:12]}: plimsoll.yaml is not UTF-8; commits "
                                   "with this config are not judged")
                except PlimsollError as e:
                    self.notes.add(f"{e}; commits with this config are not judged "
                                   "(pass --config to judge them by another)")
            self.configs[entry.oid] = cfg
        return entry.oid, self.configs[entry.oid]

    def _select(self, ship_set: Any, repo_path: str) -> str | None:
        """The shipped path of `repo_path` in a glob set, or None (memoized per set and path)."""
        key = (ship_set, repo_path)
        hit = self.selected.get(key, key)
        if hit is not key:
            return hit  # type: ignore[return-value]
        start = self.prefix + ((ship_set.root + "/") if ship_set.root else "")
        out = None
        if repo_path.startswith(start):
            rel = repo_path[len(start):]
            if self.ship.select([rel], ship_set):
                out = rel
        self.selected[key] = out
        return out

    def _prime(self, ship_set: Any, paths: list[str]) -> None:
        """Memoize many paths with one `select` call (globs compiled once, not per path)."""
        start = self.prefix + ((ship_set.root + "/") if ship_set.root else "")
        fresh = [p for p in paths if (ship_set, p) not in self.selected]
        rels = {p[len(start):]: p for p in fresh if p.startswith(start)}
        chosen = set(self.ship.select(list(rels), ship_set))
        for p in fresh:
            self.selected[(ship_set, p)] = None
        for rel, p in rels.items():
            if rel in chosen:
                self.selected[(ship_set, p)] = rel

    def full(self, commit: Commit, tree: dict[bytes, TreeEntry], cfg: Any,
             previous: ShipState | None) -> ShipState:
        """Everything each ship set ships at `commit`."""
        state: ShipState = {}
        paths = [os.fsdecode(p) for p in tree]
        for s in cfg.ship.values():
            if s.command is None:
                self._prime(s, paths)
        for s in cfg.ship.values():
            if s.command is not None:
                built = self._build(commit, tree, cfg, s)
                if built is None:  # the builder failed: keep what shipped before (noted)
                    for (name, label), item in (previous or {}).items():
                        if name == s.name:
                            state[(name, label)] = item
                    continue
                for path, oid in built:
                    state[(s.name, f"{s.name}:{path}")] = _Shipped(oid, path)
                continue
            for path_b, entry in tree.items():
                path = os.fsdecode(path_b)
                rel = self._select(s, path)
                if rel is None:
                    continue
                if entry.mode == MODE_SUBMODULE:
                    self.notes.submodule(path, commit.oid)
                    continue
                state[(s.name, path)] = _Shipped(entry.oid, rel)
        return state

    def incremental(self, commit: Commit, cfg: Any, state: ShipState) -> list[_Delta]:
        """Apply a commit's tree changes to the glob sets of `state` in place; return the deltas."""
        deltas: list[_Delta] = []
        globs = [s for s in cfg.ship.values() if s.command is None]
        if len(commit.changes) > 8:
            paths = [os.fsdecode(ch.path) for ch in commit.changes]
            for s in globs:
                self._prime(s, paths)
        for ch in commit.changes:
            path = os.fsdecode(ch.path)
            for s in globs:
                rel = self._select(s, path)
                if rel is None:
                    continue
                key = (s.name, path)
                if ch.oid == ZERO_OID or ch.mode == MODE_SUBMODULE:
                    if ch.mode == MODE_SUBMODULE:
                        self.notes.submodule(path, commit.oid)
                    if state.pop(key, None) is not None:
                        deltas.append(_Delta(s.name, path, None))
                    continue
                item = _Shipped(ch.oid, rel)
                if state.get(key) != item:
                    state[key] = item
                    deltas.append(_Delta(s.name, path, item))
        return deltas

    def rebuild(self, commit: Commit, tree: dict[bytes, TreeEntry], cfg: Any,
                state: ShipState) -> list[_Delta]:
        """Rebuild the command sets of `state` in place at `commit`; return the deltas."""
        deltas: list[_Delta] = []
        for s in cfg.ship.values():
            if s.command is None:
                continue
            built = self._build(commit, tree, cfg, s)
            if built is None:  # the builder failed: keep what shipped before (noted)
                continue
            new = {(s.name, f"{s.name}:{path}"): _Shipped(oid, path) for path, oid in built}
            for key in [k for k in state if k[0] == s.name and k not in new]:
                del state[key]
                deltas.append(_Delta(key[0], key[1], None))
            for key, item in new.items():
                if state.get(key) != item:
                    state[key] = item
                    deltas.append(_Delta(key[0], key[1], item))
        return deltas

    def _inputs_key(self, commit: Commit, tree: dict[bytes, TreeEntry], s: Any) -> str:
        h = hashlib.sha256(repr(s.command).encode("utf-8") + b"\0")
        if not s.inputs:
            h.update(commit.tree.encode("ascii"))
            return h.hexdigest()
        matcher = s._replace(include=s.inputs, exclude=(), root="", command=None)
        paths = sorted(tree)
        self._prime(matcher, [os.fsdecode(p) for p in paths])
        for path_b in paths:
            if self._select(matcher, os.fsdecode(path_b)) is not None:
                e = tree[path_b]
                h.update(path_b + b"\0" + e.mode.encode() + e.oid.encode())
        return h.hexdigest()

    def _build(self, commit: Commit, tree: dict[bytes, TreeEntry], cfg: Any,
               s: Any) -> list[tuple[str, str]] | None:
        """[(shipped path, blob id)] a command set ships at `commit`; cached by its inputs."""
        key = self._inputs_key(commit, tree, s)
        manifest = self.cache.builds.get(key)
        if manifest is not None and all(oid in self.cache.content or oid in self.built
                                        for _path, oid in manifest):
            return [(p, o) for p, o in manifest]
        try:
            files = self.ship.from_rev(Path(self.repo.top), commit.oid, cfg, set_name=s.name)
        except self.ship.BuilderFailed as e:
            first = str(e).splitlines()[0]
            self.notes.add(f"commit {commit.oid[:12]}: {first}; what set {s.name} shipped there "
                           "is taken to be what it shipped before")
            return None
        self.builds += 1
        out = []
        for f in files:
            oid = blob_id(f.data)
            if oid not in self.cache.content:
                self.built[oid] = f.data
            out.append((f.path, oid))
        self.cache.builds[key] = [[p, o] for p, o in out]
        self.cache.dirty = True
        return out


class _Notes:
    """Notes for the report, each said once; submodules and the like are summed up."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._seen: set[str] = set()
        self._submodules: dict[str, str] = {}

    def add(self, text: str) -> None:
        if text not in self._seen:
            self._seen.add(text)
            self.items.append(text)

    def submodule(self, path: str, commit: str) -> None:
        self._submodules.setdefault(path, commit)

    def all(self) -> list[str]:
        out = list(self.items)
        for path, commit in self._submodules.items():
            out.append(f"{shown(path)} is a submodule (first seen at {commit[:12]}): its content "
                       "lives in another repository and is not scanned; replay that one too")
        return out


# --------------------------------------------------------------------------- progress


class _Progress:
    def __init__(self, enabled: bool) -> None:
        self.bar = None
        self.tasks: dict[str, Any] = {}
        if enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                                MofNCompleteColumn(), TimeRemainingColumn(),
                                console=Console(stderr=True), transient=True)
            self.bar.start()

    def task(self, name: str, total: int) -> None:
        if self.bar is not None:
            self.tasks[name] = self.bar.add_task(name, total=total)

    def total(self, name: str, total: int) -> None:
        if self.bar is not None and name in self.tasks:
            self.bar.update(self.tasks[name], total=total)

    def advance(self, name: str, n: int = 1) -> None:
        if self.bar is not None and name in self.tasks:
            self.bar.advance(self.tasks[name], n)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


# --------------------------------------------------------------------------- replay


def _setup(repo_dir: str, wset: Any, options: Options, notes: _Notes) -> tuple[Repo, Any, Any]:
    repo = open_repo(repo_dir)
    if is_shallow(repo):
        if not options.shallow_ok:
            raise BadInput(f"{repo.top}: a shallow clone; commits before its shallow boundary are "
                           "missing, so a leak may be older than any report could say. Run "
                           "`git fetch --unshallow`, or pass --shallow-ok to replay what is here")
        notes.add("shallow clone: history stops at the shallow boundary; an entry that ships "
                  "at a boundary commit may have shipped earlier (`git fetch --unshallow` to know)")
    check_revs(options.revs)
    external = None
    if options.config is not None:
        from plimsoll_ci import ship

        external = ship.load_config(options.config)
    from plimsoll_ci.scan import Limits

    limits = Limits()
    if external is not None and external.limits:
        try:
            limits = Limits(**external.limits)
        except TypeError as e:
            raise BadInput(f"{options.config}: limits: {e}; use the names scan.Limits knows") \
                from None
    return repo, external, limits


def _rev_args(repo: Repo, options: Options) -> list[str]:
    if options.all_refs:
        if options.revs:
            raise BadInput("--all and a revision range are exclusive; give one or the other")
        # every branch (remote-tracking ones too: an auditor's fresh clone has few local ones) and
        # tag; not refs/notes or refs/stash, whose trees are not something a harness shipped
        refs = ["--branches", "--tags", "--remotes"]
        if git(repo.top, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0:
            refs.append("HEAD")
        return refs
    if options.revs:
        return list(options.revs)
    if git(repo.top, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode != 0:
        raise BadInput(f"{repo.top}: no commits yet (HEAD names none); commit first or give a range")
    return ["HEAD"]


def replay(repo_dir: str, wset: Any, options: Options | None = None) -> HistoryReport:
    """Replay the commits of `options.revs` (default HEAD's history) against withheld set `wset`."""
    options = options or Options()
    notes = _Notes()
    repo, external, limits = _setup(repo_dir, wset, options, notes)
    revs = _rev_args(repo, options)
    graph = rev_list(repo, revs)
    cache = ScanCache(os.path.join(repo.git_dir, "plimsoll-cache") if options.use_cache else None,
                      cache_key(wset, limits, options.max_blob_bytes))
    for n in cache.notes:
        notes.add(n)
    progress = _Progress(sys.stderr.isatty() if options.progress is None else options.progress)
    judge = _Judge(repo, external, cache, notes)
    try:
        return _replay(repo, wset, options, revs, graph, limits, cache, judge, notes, progress)
    finally:
        progress.stop()
        judge.close()
        _save(cache)  # also on Ctrl-C: what was scanned so far is kept, written atomically


def _save(cache: ScanCache) -> None:
    try:
        cache.save()
    except OSError as e:  # a read-only clone still gets its report
        print(f"plimsoll-ci: warning: cache {cache.path}: not saved ({e.strerror}); "
              "the next run scans again", file=sys.stderr)


class _Record(NamedTuple):
    info: CommitInfo
    parents: tuple[str, ...]
    deltas: list[_Delta]  # what changed in its ship sets against its first parent
    boundary: bool  # first parent not in the walk (range start, root, shallow boundary)


def _replay(repo: Repo, wset: Any, options: Options, revs: list[str], graph: list[list[str]],
            limits: Any, cache: ScanCache, judge: _Judge, notes: _Notes,
            progress: _Progress) -> HistoryReport:
    walked = {row[0] for row in graph}
    children_fp: dict[str, int] = {}
    for row in graph:
        if len(row) > 1 and row[1] in walked:
            children_fp[row[1]] = children_fp.get(row[1], 0) + 1

    # ---- pass 1: walk trees, turn ship sets into deltas, scan new blobs as they appear
    progress.task("commits", len(graph))
    scans = _BlobScans(repo, wset, limits, options, cache, notes, progress,
                       eager=len(graph) >= 100)
    try:
        return _walk_and_judge(repo, wset, revs, graph, walked, children_fp, limits, cache,
                               judge, notes, progress, scans)
    finally:
        scans.close()


def _walk_and_judge(repo: Repo, wset: Any, revs: list[str], graph: list[list[str]],
                    walked: set[str], children_fp: dict[str, int], limits: Any,
                    cache: ScanCache, judge: _Judge, notes: _Notes, progress: _Progress,
                    scans: _BlobScans) -> HistoryReport:
    trees: dict[str, dict[bytes, TreeEntry]] = {}
    states: dict[str, tuple[str, ShipState]] = {}  # commit -> (config identity, ship state)
    records: list[_Record] = []
    need: dict[str, str] = {}  # blob id -> first shipped label (for scanning and notes)
    names: dict[str, str] = {}  # shipped name -> label
    no_config = scanned_before = 0
    for commit in walk(repo, revs):
        fp = commit.parents[0] if commit.parents else None
        inherit = fp is not None and fp in walked
        if inherit:
            assert fp is not None
            left = children_fp[fp] - 1
            children_fp[fp] = left
            tree = trees.pop(fp) if left == 0 else dict(trees[fp])
            parent_cfg, parent_state = states.pop(fp) if left == 0 else states[fp]
            if left != 0:
                parent_state = dict(parent_state)
        else:
            tree = ls_tree(repo, fp) if fp is not None else {}
            parent_cfg, parent_state = "none", {}
        for ch in commit.changes:
            if ch.oid == ZERO_OID:
                tree.pop(ch.path, None)
            else:
                tree[ch.path] = TreeEntry(ch.mode, ch.oid)
        cfg_id, cfg = judge.config_at(commit.oid, tree)
        if cfg is None:
            no_config += 1
            state: ShipState = {}
            deltas = [_Delta(s, label, None) for (s, label) in parent_state]
        elif cfg_id == parent_cfg:
            state = parent_state
            deltas = judge.incremental(commit, cfg, state)
            deltas += judge.rebuild(commit, tree, cfg, state)
        else:
            state = judge.full(commit, tree, cfg, parent_state)
            deltas = [_Delta(s, label, None) for (s, label) in parent_state
                      if (s, label) not in state]
            deltas += [_Delta(s, label, item) for (s, label), item in state.items()
                       if parent_state.get((s, label)) != item]
        for d in deltas:
            if d.item is not None:
                if d.item.oid not in need:
                    need[d.item.oid] = d.label
                    if d.item.oid in cache.content:
                        scanned_before += 1
                    elif d.item.oid not in judge.built:
                        scans.add(d.item.oid, d.label)
                names.setdefault(d.item.name, d.label)
        if children_fp.get(commit.oid):
            trees[commit.oid] = tree
            states[commit.oid] = (cfg_id, state)
        records.append(_Record(CommitInfo(commit.oid, commit.time, commit.author),
                               commit.parents, deltas, not inherit))
        progress.advance("commits")
    if not records:
        notes.add(f"the range {' '.join(revs)} has no commits")
    if no_config == len(records) and records:
        raise BadInput(f"{repo.top}: no commit in {' '.join(revs)} has a plimsoll.yaml; pass "
                       "--config FILE to judge every commit by one config (auditor mode)")
    if no_config:
        notes.add(f"{no_config} of {len(records)} commits have no usable plimsoll.yaml and ship "
                  "nothing by their own config (pass --config to judge them by one)")

    # ---- pass 2: finish scanning each distinct blob, and each name, once
    judge.close()  # before any worker is forked: none may inherit its pipes
    scans.finish(judge.built, need)
    missing = scans.missing
    for oid in need:
        for n in cache.content_notes.get(oid, ()):
            notes.add(n)
    from plimsoll_ci.scan import Scanner

    scanner = Scanner(wset, limits)
    for name in names:
        if name not in cache.names:
            cache.names[name] = _name_rows(scanner, name)
            cache.dirty = True

    # ---- pass 3: replay deltas over the findings
    per_commit = _findings_per_commit(records, walked, cache, missing)
    entries = _windows(records, per_commit)
    redact = _Redactor({name: cache.names[name] for name in names},
                       (cache.content[oid] for oid in need if oid in cache.content))
    entries = [redact.entry(e) for e in entries]
    if any(r.boundary and r.parents for r in records):
        for e in entries:
            for w in e.windows:
                if w.from_boundary:
                    notes.add(f"{e.entry} already ships at {w.first.oid[:12]}, the first commit of "
                              "the range; it may have shipped earlier (widen the range)")
    return HistoryReport(entries, len(records), len(need), scanned_before,
                         [redact.text(n) for n in notes.all()], revs)


class _BlobScans:
    """Scans blobs by id once each: in this process for a few, else in a pool of workers that
    each stream their own `git cat-file --batch`. Chunks are submitted while the walk still runs,
    so walking and scanning overlap.
    """

    CHUNK = 32

    def __init__(self, repo: Repo, wset: Any, limits: Any, options: Options, cache: ScanCache,
                 notes: _Notes, progress: _Progress, eager: bool) -> None:
        self.repo, self.wset, self.limits = repo, wset, limits
        self.max_bytes = min(options.max_blob_bytes, getattr(limits, "max_file_bytes", 1 << 62))
        self.jobs = options.jobs or os.cpu_count() or 1
        self.cache, self.notes, self.progress = cache, notes, progress
        self.labels: dict[str, str] = {}
        self.todo: list[tuple[str, str]] = []
        self.missing: set[str] = set()
        self.pool: Any = None
        self.pending: set[Any] = set()
        self.total = 0
        progress.task("blobs", 0)
        if eager and self.jobs > 1:
            self._start_pool()

    def _start_pool(self) -> None:
        # Started before any long-lived git process, so no worker inherits one of its pipes.
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
        self.pool = ProcessPoolExecutor(self.jobs, mp_context=ctx, initializer=_worker_init,
                                        initargs=(self.wset, self.limits, self.repo,
                                                  self.max_bytes))
        self.pool.submit(int).result()  # launch the workers now

    def add(self, oid: str, label: str) -> None:
        """Ask for blob `oid` (first shipped as `label`) to be scanned."""
        self.labels[oid] = label
        self.todo.append((oid, shown(label)))
        self.total += 1
        self.progress.total("blobs", self.total)
        if self.pool is not None and len(self.todo) >= self.CHUNK:
            self._submit()

    def _submit(self) -> None:
        from concurrent.futures import FIRST_COMPLETED, wait

        for i in range(0, len(self.todo), self.CHUNK):
            self.pending.add(self.pool.submit(_scan_blobs, self.todo[i:i + self.CHUNK]))
        self.todo = []
        done = {f for f in self.pending if f.done()}
        if len(self.pending) - len(done) > self.jobs * 4:  # bound what is in flight
            done, _ = wait(self.pending, return_when=FIRST_COMPLETED)
        for fut in done:
            self.pending.discard(fut)
            self._take(fut.result())

    def _take(self, results: Iterable[tuple[str, Any, list[str], int]]) -> None:
        for oid, rows, blob_notes, _size in results:
            if rows is None:
                self.missing.add(oid)
                self.notes.add(f"{shown(self.labels[oid])} (blob {oid[:12]}) is missing from the "
                               "object store (a partial or damaged clone); it was not scanned")
            else:
                self.cache.content[oid] = rows
                if blob_notes:
                    self.cache.content_notes[oid] = blob_notes
                self.cache.dirty = True
            self.progress.advance("blobs")

    def finish(self, built: dict[str, bytes], labels: dict[str, str]) -> None:
        """Scan what is left (and builder output, in this process); wait for every worker."""
        from concurrent.futures import FIRST_COMPLETED, wait

        if self.pool is None and self.jobs > 1 and len(self.todo) >= 64:
            self._start_pool()
        if self.pool is not None:
            if self.todo:
                self._submit()
            while self.pending:
                done, self.pending = wait(self.pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    self._take(fut.result())
        elif self.todo:
            _worker_init_inline(self.wset, self.limits, self.repo, self.max_bytes)
            try:
                for i in range(0, len(self.todo), 256):
                    self._take(_scan_blobs(self.todo[i:i + 256]))
            finally:
                _WORKER.pop("cat").close()
            self.todo = []
        todo_built = [oid for oid in built if oid in labels and oid not in self.cache.content]
        if todo_built:
            from plimsoll_ci.scan import Scanner

            scanner = Scanner(self.wset, self.limits)
            self.progress.total("blobs", self.total + len(todo_built))
            for oid in todo_built:
                findings, blob_notes = scanner.scan_content(built[oid], shown(labels[oid]))
                self._take([(oid, [_finding_row(f) for f in findings], list(blob_notes), 0)])

    def close(self) -> None:
        """Stop the workers (on Ctrl-C too: queued chunks are dropped, finished ones kept)."""
        if self.pool is not None:
            for fut in list(self.pending):
                if fut.done() and not fut.cancelled() and fut.exception() is None:
                    self._take(fut.result())
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def _worker_init_inline(wset: Any, limits: Any, repo: Repo, max_bytes: int) -> None:
    from plimsoll_ci.scan import Scanner

    _WORKER["scanner"] = Scanner(wset, limits)
    _WORKER["cat"] = CatFile(repo, max_bytes)


def _rows_to(set_name: str, label: str, rows: Iterable[list[Any]]) -> list[Occurrence]:
    return [Occurrence(set_name, label, r[0], r[1], r[2], r[3], r[4], r[5], r[6]) for r in rows]


def _findings_per_commit(records: list[_Record], walked: set[str], cache: ScanCache,
                         missing: set[str]) -> dict[str, list[Occurrence]]:
    """Replay deltas keeping only shipped files that carry something; findings per commit."""
    children: dict[str, int] = {}
    for r in records:
        if r.parents and r.parents[0] in walked:
            children[r.parents[0]] = children.get(r.parents[0], 0) + 1
    live: dict[str, dict[tuple[str, str], _Shipped]] = {}
    out: dict[str, list[Occurrence]] = {}
    for r in records:
        fp = r.parents[0] if r.parents else None
        if not r.boundary and fp is not None:
            left = children[fp] - 1
            children[fp] = left
            state = live.pop(fp) if left == 0 else dict(live[fp])
        else:
            state = {}
        for d in r.deltas:
            key = (d.set, d.label)
            if d.item is not None and (cache.content.get(d.item.oid) or cache.names.get(d.item.name)):
                state[key] = d.item
            else:
                state.pop(key, None)
        if children.get(r.info.oid):
            live[r.info.oid] = state
        if state:
            occ: list[Occurrence] = []
            for (set_name, label), item in sorted(state.items()):
                occ += _rows_to(set_name, shown(label), cache.content.get(item.oid, ()))
                occ += _rows_to(set_name, shown(label), cache.names.get(item.name, ()))
            if occ:
                out[r.info.oid] = occ
    return out


def _windows(records: list[_Record], per_commit: dict[str, list[Occurrence]]) -> list[EntryHistory]:
    """Per entry: introductions, fixes and the commits between them, from the commit graph."""
    index = {r.info.oid: i for i, r in enumerate(records)}
    kids: dict[str, list[str]] = {}
    for r in records:
        for p in r.parents:
            if p in index:
                kids.setdefault(p, []).append(r.info.oid)
    by_entry: dict[str, dict[str, list[Occurrence]]] = {}
    for oid, occ in per_commit.items():
        for o in occ:
            by_entry.setdefault(o.entry, {}).setdefault(oid, []).append(o)
    result = []
    for entry in sorted(by_entry):
        leaking = by_entry[entry]
        look = set(leaking)
        for oid in leaking:
            look.update(kids.get(oid, ()))
        origins: dict[str, frozenset[str]] = {}
        fixes: dict[str, list[str]] = {}  # introduction -> fix commits
        open_: set[str] = set()  # introductions still shipping at a tip
        for oid in sorted(look, key=index.__getitem__):
            r = records[index[oid]]
            inherited: frozenset[str] = frozenset()
            for p in r.parents:
                if p in leaking:
                    inherited |= origins[p]
            if oid in leaking:
                origins[oid] = inherited or frozenset([oid])
                if not kids.get(oid):
                    open_ |= origins[oid]
            else:
                for intro in inherited:
                    fixes.setdefault(intro, []).append(oid)
        windows = []
        in_order = sorted(leaking, key=index.__getitem__)
        members_of: dict[str, list[str]] = {}
        for o in in_order:
            for intro in origins[o]:
                members_of.setdefault(intro, []).append(o)
        for intro in sorted(members_of, key=index.__getitem__):
            rec = records[index[intro]]
            members = members_of[intro]
            fixed = None
            if intro not in open_ and fixes.get(intro):
                last = max(fixes[intro], key=lambda f: (records[index[f]].info.time, index[f]))
                fixed = records[index[last]].info
            end = fixed.time if fixed else max(records[index[o]].info.time for o in members)
            windows.append(Window(rec.info, leaking[intro], fixed, max(0, end - rec.info.time),
                                  members, rec.boundary and bool(rec.parents)))
        commits = [(records[index[o]].info, leaking[o]) for o in in_order]
        result.append(EntryHistory(entry, windows, commits))
    return result


# --------------------------------------------------------------------------- bisect


def bisect(repo_dir: str, wset: Any, entry: str, options: Options | None = None) -> BisectResult:
    """The first commit (along first parents) whose ship sets carry `entry`, in O(log n) scans.

    Assumes the entry kept shipping once introduced; `ASSUMPTION` says so in every report.
    """
    options = options or Options()
    known = [e.id for e in getattr(wset, "entries", [])]
    if known and entry not in known:
        raise BadInput(f"--bisect {entry}: no such entry in the withheld set; entries look like "
                       f"{known[0]}")
    notes = _Notes()
    notes.add(ASSUMPTION)
    repo, external, limits = _setup(repo_dir, wset, options, notes)
    revs = _rev_args(repo, options)
    chain = rev_list(repo, revs, first_parent=True)
    if any(len(row) > 2 for row in chain):
        notes.add("the range has merges; bisect follows first parents only")
    cache = ScanCache(os.path.join(repo.git_dir, "plimsoll-cache") if options.use_cache else None,
                      cache_key(wset, limits, options.max_blob_bytes))
    judge = _Judge(repo, external, cache, notes)
    from plimsoll_ci.scan import Scanner

    scanner = Scanner(wset, limits)
    cat = CatFile(repo, min(options.max_blob_bytes, getattr(limits, "max_file_bytes", 1 << 62)))
    scans = 0

    def probe(i: int) -> list[Occurrence]:
        nonlocal scans
        scans += 1
        oid = chain[i][0]
        tree = ls_tree(repo, oid)
        tree_id = git(repo.top, "rev-parse", f"{oid}^{{tree}}").stdout.decode().strip()
        commit = Commit(oid, tuple(chain[i][1:]), tree_id, 0, "", [])
        _cfg_id, cfg = judge.config_at(oid, tree)
        if cfg is None:
            return []
        state = judge.full(commit, tree, cfg, None)
        occ: list[Occurrence] = []
        for (set_name, label), item in sorted(state.items()):
            if item.oid not in cache.content:
                data = judge.built.get(item.oid)
                if data is None:
                    blob = cat.read(item.oid)
                    if blob is None:
                        notes.add(f"{shown(label)} (blob {item.oid[:12]}) is missing from the "
                                  "object store; it was not scanned")
                        continue
                    data = blob.data
                    if blob.truncated:
                        notes.add(f"{shown(label)} (blob {item.oid[:12]}): {blob.size} bytes, over "
                                  f"the {cat.max_bytes}-byte bound; only its first "
                                  f"{cat.max_bytes} bytes were scanned (raise --max-blob-bytes)")
                findings, _n = scanner.scan_content(data, shown(label))
                cache.content[item.oid] = [_finding_row(f) for f in findings]
                cache.dirty = True
            if item.name not in cache.names:
                cache.names[item.name] = _name_rows(scanner, item.name)
                cache.dirty = True
            occ += _rows_to(set_name, shown(label), cache.content[item.oid])
            occ += _rows_to(set_name, shown(label), cache.names[item.name])
        return [o for o in occ if o.entry == entry]

    try:
        if not chain:
            return BisectResult(entry, None, [], 0, 0, notes.all())
        tip = probe(len(chain) - 1)
        if not tip:
            notes.add(f"{entry} does not ship at the tip {chain[-1][0][:12]}; bisect needs a tip "
                      "that ships it (run history without --bisect to see every window)")
            return BisectResult(entry, None, [], scans, len(chain), notes.all())
        lo, hi, found = 0, len(chain) - 1, tip
        while lo < hi:
            mid = (lo + hi) // 2
            occ = probe(mid)
            if occ:
                hi, found = mid, occ
            else:
                lo = mid + 1
        info = _commit_info(repo, chain[lo][0])
        redact = _Redactor({n: rows for n, rows in cache.names.items()
                            if any(o.path.endswith(shown(n)) for o in found)},
                           [[[o.line, o.column, o.chain, o.entry, o.kind, o.where, o.detail]
                             for o in found]])
        return BisectResult(entry, info, redact.occ(found), scans, len(chain),
                            [redact.text(n) for n in notes.all()])
    finally:
        cat.close()
        judge.close()
        _save(cache)


def _commit_info(repo: Repo, oid: str) -> CommitInfo:
    out = git(repo.top, "log", "-1", "--no-mailmap", "--format=%ct%x02%an <%ae>", oid, "--").stdout
    ts, author = out.decode("utf-8", "replace").strip().split("\x02", 1)
    return CommitInfo(oid, int(ts), author)


# --------------------------------------------------------------------------- reports


def _occ_json(o: Occurrence) -> dict[str, Any]:
    d: dict[str, Any] = {"set": o.set, "path": o.path, "line": o.line, "column": o.column,
                         "chain": o.chain, "kind": o.kind, "where": o.where}
    if o.detail:
        d["detail"] = o.detail
    return d


def _commit_json(c: CommitInfo, occ: list[Occurrence] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {"commit": c.oid, "time": iso(c.time), "timestamp": c.time,
                         "author": c.author}
    if occ is not None:
        d["paths"] = sorted({o.path for o in occ})
        d["findings"] = [_occ_json(o) for o in occ]
    return d


def to_json(report: HistoryReport) -> dict[str, Any]:
    """The JSON document of a replay (shape of issue 4); it never holds a withheld value."""
    entries = []
    for e in report.entries:
        first = e.windows[0]
        last = e.windows[-1]
        entries.append({
            "entry": e.entry,
            "kind": e.commits[0][1][0].kind,
            "first": _commit_json(first.first, first.first_findings),
            "fixed": _commit_json(last.fixed) if last.fixed else None,
            "window_seconds": sum(w.seconds for w in e.windows),
            "windows": [{
                "first": _commit_json(w.first, w.first_findings),
                "fixed": _commit_json(w.fixed) if w.fixed else None,
                "window_seconds": w.seconds,
                "commits": w.commits,
            } for w in e.windows],
            "commits": [_commit_json(c, occ) for c, occ in e.commits],
        })
    return {"format": "plimsoll-history/1", "range": report.revs, "entries": entries,
            "commits_scanned": report.commits_scanned, "blobs_scanned": report.blobs_scanned,
            "blobs_from_cache": report.blobs_from_cache, "notes": report.notes}


def _place(o: Occurrence) -> str:
    where = f"{o.path}:{o.line}:{o.column}" if o.line else (
        f"{o.path} (name)" if o.where == "name" else f"{o.path} @{o.column}")
    return where + (f" [{o.chain}]" if o.chain else "") + (f" ({o.detail})" if o.detail else "")


def _text(report: HistoryReport) -> str:
    lines = []
    for e in report.entries:
        total = sum(w.seconds for w in e.windows)
        n = len(e.commits)
        state = "still shipping" if e.windows[-1].fixed is None else "fixed"
        lines.append(f"{e.entry}: shipped {duration(total)} across {n} commit"
                     f"{'s' if n != 1 else ''} in {len(e.windows)} window"
                     f"{'s' if len(e.windows) != 1 else ''} ({state})")
        for i, w in enumerate(e.windows, 1):
            tag = "first" if i == 1 else "again"
            lines.append(f"  {tag}  {w.first.oid[:12]}  {iso(w.first.time)}  {w.first.author}")
            for o in w.first_findings:
                lines.append(f"         {_place(o)}  (set {o.set})")
            if w.fixed:
                lines.append(f"  fixed  {w.fixed.oid[:12]}  {iso(w.fixed.time)}  "
                             f"after {duration(w.seconds)} across {len(w.commits)} commit"
                             f"{'s' if len(w.commits) != 1 else ''}")
            else:
                lines.append(f"  open   still shipping at the tip after {duration(w.seconds)} "
                             f"across {len(w.commits)} commits")
    if not report.entries:
        lines.append("nothing withheld shipped in the range")
    lines.append(f"{report.commits_scanned} commits, {report.blobs_scanned} distinct blobs "
                 f"({report.blobs_from_cache} from the cache)")
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def _markdown(report: HistoryReport) -> str:
    out = ["## plimsoll-ci history", ""]
    if not report.entries:
        out.append("Nothing withheld shipped in the range.")
    else:
        out += ["| entry | first shipped | where | fixed | window | commits |",
                "|---|---|---|---|---|---|"]
        for e in report.entries:
            for w in e.windows:
                where = "<br>".join(sorted({f"`{_md(o.path)}`" + (f":{o.line}" if o.line else "")
                                            for o in w.first_findings}))
                fixed = f"`{w.fixed.oid[:12]}` {iso(w.fixed.time)}" if w.fixed else "**still shipping**"
                out.append(f"| `{_md(e.entry)}` | `{w.first.oid[:12]}` {iso(w.first.time)} | {where} "
                           f"| {fixed} | {duration(w.seconds)} | {len(w.commits)} |")
    out += ["", f"{report.commits_scanned} commits, {report.blobs_scanned} distinct blobs "
            f"({report.blobs_from_cache} from the cache)."]
    if report.notes:
        out += [""] + [f"- {_md(n)}" for n in report.notes]
    return "\n".join(out) + "\n"


def _md(s: str) -> str:
    return s.replace("|", "\\|").replace("`", "'")


def _sarif(report: HistoryReport) -> str:
    from plimsoll_ci.report import artifact_uri

    results = []
    for e in report.entries:
        for w in e.windows:
            fixed = (f"fixed in {w.fixed.oid[:12]} after {duration(w.seconds)}" if w.fixed
                     else "still shipping at the tip")
            for o in w.first_findings:
                fp = hashlib.sha256(f"{e.entry}\0{o.set}\0{o.path}\0{o.chain}\0{o.where}".encode(
                    "utf-8", "surrogateescape")).hexdigest()
                region: dict[str, Any] = {"startLine": max(o.line, 1)}
                if o.line and o.column:
                    region["startColumn"] = o.column
                results.append({
                    "ruleId": f"plimsoll/history/{o.kind}",
                    "level": "error",
                    "message": {"text": f"withheld entry {e.entry} first shipped in commit "
                                        f"{w.first.oid[:12]} ({iso(w.first.time)}) via {o.where}"
                                        f"{' [' + o.chain + ']' if o.chain else ''}; {fixed} "
                                        f"across {len(w.commits)} commits"},
                    "locations": [{"physicalLocation": {
                        "artifactLocation": {"uri": artifact_uri(o.path)},
                        "region": region}}],
                    "partialFingerprints": {"plimsollHistory/v1": fp},
                    "properties": {"entry": e.entry, "firstCommit": w.first.oid,
                                   "fixedCommit": w.fixed.oid if w.fixed else None,
                                   "windowSeconds": w.seconds, "set": o.set},
                })
    kinds = sorted({r["ruleId"] for r in results}) or ["plimsoll/history/value"]
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "plimsoll-ci history", "version": __version__,
                "informationUri": "https://github.com/plimsollmark/plimsoll-ci",
                "rules": [{"id": k, "shortDescription": {
                    "text": "a withheld entry shipped in a commit's ship set"}} for k in kinds]}},
            "results": results,
            "properties": {"commitsScanned": report.commits_scanned,
                           "blobsScanned": report.blobs_scanned, "notes": report.notes},
        }],
    }
    return json.dumps(doc, indent=2) + "\n"


def render(report: HistoryReport, fmt: str) -> str:
    """The report as text, json, sarif or markdown."""
    if fmt == "json":
        return json.dumps(to_json(report), indent=2) + "\n"
    if fmt == "sarif":
        return _sarif(report)
    if fmt == "markdown":
        return _markdown(report)
    return _text(report)


def render_bisect(result: BisectResult, fmt: str) -> str:
    """The result of `--bisect` as text (or JSON for json/sarif/markdown callers that parse it)."""
    if fmt == "json":
        doc = {"format": "plimsoll-history-bisect/1", "entry": result.entry,
               "first": _commit_json(result.first, result.findings) if result.first else None,
               "scans": result.scans, "commits": result.commits, "assumption": ASSUMPTION,
               "notes": result.notes}
        return json.dumps(doc, indent=2) + "\n"
    lines = []
    if result.first:
        lines.append(f"{result.entry}: first ships at {result.first.oid[:12]} "
                     f"{iso(result.first.time)} {result.first.author}")
        lines += [f"  {_place(o)}  (set {o.set})" for o in result.findings]
    else:
        lines.append(f"{result.entry}: not found shipping")
    lines.append(f"{result.scans} scans over {result.commits} commits")
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines) + "\n"


__all__ = [
    "ASSUMPTION", "BisectResult", "CommitInfo", "EntryHistory", "HistoryReport", "Occurrence",
    "Options", "ScanCache", "Window", "bisect", "cache_key", "render", "render_bisect", "replay",
    "to_json",
]

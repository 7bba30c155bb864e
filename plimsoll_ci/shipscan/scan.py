"""The ship scan: shipped files x a withheld set -> a typed `ScanResult` (findings, never values).

One front end for every caller (`scan PATH`, `scan --staged/--rev`, the pre-commit hook, the
GitHub Action, the canary check): a `ShipScan` session takes shipped files (`Item`s) and returns a
`ScanResult`. The session alone batches files into joined buffers for the engine
(`plimsoll_ci.engine.Scanner`), consults a pluggable `VerdictCache`, places name findings in the
shown tree, cuts files at the file bound, de-duplicates, redacts (`Redactor`), counts and sorts;
`decide_mode` alone decides refuse or warn, and the result carries that mode to the renderers
(`plimsoll_ci.shipscan.report`). `make_limits` is the one way to build the scan's `Limits`. The
result types (`ScanResult`, `Verdict`) and the rules about them (`decide_mode`, `shown_path`,
`combine`) stand alone in `plimsoll_ci.shipscan.results`.

- `files` is the number of distinct shown files; `bytes` ("bytes scanned") is the sum of their
  sizes, each counted up to the file bound (what the engine read of it), however it was read and
  whether or not a cache knew it already: the same tree gives the same numbers on every road.
- A finding names the file, the place (line:column for text; line 0 and the byte offset as column
  for binary content and names), the decode chain and the entry id.

Over 600 lines because it is the one front end: `Verdicts` (batching, cache, file bound, names)
and the placers on it (`ShipScan`; the tripwire's and history's elsewhere) share one protocol and
are read together. The folder walk behind `scan PATH` and the checked read of each file stand
alone in `plimsoll_ci.shipscan.ondisk`; `scan_paths` only hands their files to a session.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, Protocol

from plimsoll_ci import pool
from plimsoll_ci.engine import Finding, Limits, Scanner, dedupe, memory_floor
from plimsoll_ci.errors import BadInput, ConfigError
from plimsoll_ci.git import blob_id
from plimsoll_ci.shipscan import ondisk
from plimsoll_ci.shipscan.redact import REDACTED, Redactor
from plimsoll_ci.shipscan.results import ScanResult, Verdict, decide_mode, shown_path
from plimsoll_ci.withheld import WithheldSet

__all__ = ["REDACTED", "Finding", "Item", "Limits", "MemoryCache", "Placer", "Redactor",
           "Scanner", "ShipScan", "VerdictCache", "Verdicts", "engine_files", "make_limits",
           "scan_items", "scan_paths", "scan_verdicts"]


def engine_files() -> list[Path]:
    """The source files whose change changes what a scan finds: a cache keys on them."""
    here = Path(__file__).resolve().parent
    package = here.parent
    return [*sorted((package / "engine").glob("*.py")), here / "scan.py", here / "results.py",
            *sorted((package / "match").glob("*.py"))]


def make_limits(config: Mapping[str, float] | None = None, origin: str = "limits",
                overrides: Mapping[str, float | None] | None = None) -> Limits:
    """The one `Limits` builder: a config's `limits:` (an unknown name is a `ConfigError` naming
    `origin`, the config file), then command-line `overrides` (they win; None is not given)."""
    values: dict[str, float] = {}
    for k, v in (config or {}).items():
        if k not in Limits._fields:
            raise ConfigError(f"{origin}: limits: unknown bound {k!r}; known: "
                              f"{', '.join(Limits._fields)}")
        values[k] = v
    for k, bound in (overrides or {}).items():
        if bound is None:
            continue
        if k not in Limits._fields:
            raise BadInput(f"--{k.replace('_', '-')}: not a bound; known: "
                           f"{', '.join(Limits._fields)}")
        if bound <= 0:
            raise BadInput(f"--{k.replace('_', '-')} must be positive, not {bound}")
        values[k] = bound
    # (each value is the type of its field: `decode_seconds` a float, every other an int)
    limits = Limits(**{k: v if k == "decode_seconds" else int(v)  # type: ignore[arg-type]
                       for k, v in values.items()})
    floor = memory_floor(limits)
    if limits.max_memory < floor:
        given = "--max-memory" if (overrides or {}).get("max_memory") is not None \
            else f"{origin}: limits: max_memory" if "max_memory" in (config or {}) else None
        error = BadInput if given == "--max-memory" else ConfigError
        raise error(f"{given or 'the memory budget'} {limits.max_memory}: a scan with a "
                    f"{limits.max_region}-byte region bound and a {limits.max_line}-byte line "
                    f"bound needs a budget of at least {floor} bytes; give a larger one, or "
                    "lower the region and line bounds")
    return limits


# --------------------------------------------------------------------------- the session


class Item(NamedTuple):
    """One shipped file handed to a `ShipScan`.

    `label` is how findings name it (a repository path, `SET:path` for builder output, a path on
    disk); `shipped` is its path as it ships, on which names are checked (None: the label; ""
    checks no name). `data` None means "read it from `disk`", else "read it by `blob`" through
    the session's reader. `blob` is the git blob id when known, the content's cache key (else
    computed from `data`; a file read from `disk` has none and is not cached).
    """

    label: str
    data: bytes | None
    shipped: str | None = None
    blob: str | None = None
    # A file on disk is read where it is scanned (here, or in a worker): `disk` says how
    # (`data` is then None; a long file is read a piece at a time), and `size` is its size
    # when it was listed (what it weighs in a batch).
    disk: ondisk.OnDisk | None = None
    size: int | None = None
    # the ship set it ships in ("" when none): a content that ships through several sets is
    # reported once, listing them (`ShipScan`)
    set_name: str = ""


class VerdictCache(Protocol):
    """A store of verdicts under one (withheld set, limits, engine) combination.

    Keys are `blob:<git blob id>` for contents and `name:<sha256 of the shipped path>` for names.
    An implementation may keep only some verdicts (the hook's keeps clean ones only); a verdict it
    returns must be what a fresh scan would give, so a cached run reports what a fresh run would.
    """

    def get(self, key: str) -> Verdict | None:
        """The verdict stored under `key`, or None."""

    def put(self, key: str, verdict: Verdict) -> None:
        """Remember `verdict` under `key` (or decline to)."""


class MemoryCache:
    """A `VerdictCache` in this process's memory, for one run: at most `entries` verdicts of
    contents up to `largest` bytes (full, it starts over). Recorded requests repeat themselves
    (an agent loop re-sends its prompt, task and history every turn): a repeat is not scanned."""

    def __init__(self, entries: int = 200_000, largest: int = 4 * 1024 * 1024) -> None:
        self.entries, self.largest = entries, largest
        self._known: dict[str, Verdict] = {}

    def get(self, key: str) -> Verdict | None:
        """The verdict remembered under `key`, or None."""
        return self._known.get(key)

    def put(self, key: str, verdict: Verdict) -> None:
        """Remember `verdict` (not that of a content over `largest` bytes)."""
        if verdict.size > self.largest:
            return
        if len(self._known) >= self.entries:
            self._known.clear()
        self._known[key] = verdict


class Placer(Protocol):
    """Where a `Verdicts` session hands each verdict: a ship scan places it in its result, the
    tripwire at the place in a request its piece came from, history keeps it by key."""

    def content(self, label: str, key: str, verdict: Verdict) -> None:
        """The verdict on the content of the item labelled `label` (`key`: its cache key)."""

    def name(self, label: str, shipped: str, verdict: Verdict) -> None:
        """The verdict on the names of `shipped`, the shipped path of the item `label`."""


def content_key(item: Item) -> str:
    """The cache key of an item's content: its git blob id (computed when not given)."""
    return "blob:" + (item.blob or blob_id(item.data or b""))


def name_key(shipped: str) -> str:
    """The cache key of a shipped path's name verdict."""
    return "name:" + hashlib.sha256(shipped.encode("utf-8", "surrogateescape")).hexdigest()


def _over_bound(size: int, bound: int) -> str:
    return f"{size} bytes, over the {bound}-byte file bound: scanned up to the bound"


BATCH_BYTES = 4 * 1024 * 1024  # files are scanned in joined batches of about this size
_BATCH_FILES = 20_000
_BATCH_UNREAD = 2_000  # blobs read from git per batch
# Workers are forked when the sixth full batch is flushed (the scan holds over 24 MiB). Starting
# two takes about 30 ms (the pool's imports, the fork, the shutdown), but a batch now takes only
# 50-60 ms on one core, and on a shared machine the workers and this process contend for the
# cores: with the fork at 12 MiB, inputs of 12-24 MB ran up to 1.3x slower than one process at a
# load of 3 (benchmarks/bench_scan.py, cold start). The first batch is judged here at once (numpy
# and the engine's tables load before the fork); the ones after it are held (a batch of paths,
# or of contents) until the workers start, or judged here when the scan ends first.
PARALLEL_FROM = 6

# --------------------------------------------------------------------------- one batch, anywhere
# A batch is judged by `_judge` in this process, or in a forked worker (`pool.start`) that holds
# the engine it inherited: every verdict is the same either way, and the session takes them in
# the order it gave the batches (`pool.InOrder`), so findings and notes come out the same for any
# number of workers.

_WORKER: dict[str, Scanner] = {}

# (label, data up to the file bound, size, cut note, the file on disk to read instead of data)
Batch = list[tuple[str, bytes, int, str, "ondisk.OnDisk | None"]]
Judged = tuple[list[Verdict], list[str], set[str]]  # verdicts, notes of no file, redact tokens


def _worker_init(scanner: Scanner) -> None:
    _WORKER["scanner"] = scanner


def _judge(batch: Batch, scanner: Scanner | None = None) -> Judged:
    """One verdict per file of `batch` (in order), the engine notes no file owns, and the texts
    the engine learned to redact (member names carrying a value); `scanner` None: the worker's.
    A file on disk is read here (`ondisk.read`: the same checks wherever it runs); a long one is
    scanned a piece at a time."""
    scanner = scanner or _WORKER["scanner"]
    known = set(scanner.redact_tokens)
    whole = min(scanner.windowing.size, scanner.limits.max_file_bytes)
    files: list[tuple[str, bytes, int, list[str]]] = []  # (label, data, size, notes so far)
    streamed: dict[str, Verdict] = {}
    for label, data, size, cut, disk in batch:
        if disk is None:
            files.append((label, data, size, [cut] if cut else []))
            continue
        opened = ondisk.read(disk, whole)
        if opened.stream is not None:
            with opened.stream as fh:
                streamed[label] = _scan_stream(scanner, label, fh, opened.size)
        else:
            files.append((label, opened.data, opened.size, [opened.note] if opened.note else []))
    found, notes = scanner.scan_contents([(label, data) for label, data, _, _ in files])
    by_label: dict[str, list[Finding]] = {}
    for f in found:
        by_label.setdefault(f.path, []).append(f._replace(path=""))
    notes_of: dict[str, list[str]] = {}
    stray: list[str] = []
    for n in notes:  # every engine note starts with its file's label
        owner = max((lb for lb, _, _, _ in files if n.startswith(lb + ": ")), key=len,
                    default="")
        if owner:
            notes_of.setdefault(owner, []).append(n[len(owner) + 2:])
        else:
            stray.append(n)
    judged = dict(streamed)
    for label, _data, size, early in files:
        rel = tuple(by_label.get(label, []))
        judged[label] = Verdict(rel, tuple(early + notes_of.get(label, [])), size,
                                _name_tokens(scanner, rel))
    verdicts = [judged[label] for label, *_ in batch]
    return verdicts, stray, scanner.redact_tokens - known


def _name_tokens(scanner: Scanner, found: tuple[Finding, ...]) -> tuple[str, ...]:
    """The texts of an archive member's name that carries a value: shown redacted in its chain."""
    return tuple(sorted(t for t in scanner.redact_tokens
                        if any(f.where == "name" and t in f.chain for f in found)))


def _scan_stream(scanner: Scanner, label: str, fh: BinaryIO, size: int) -> Verdict:
    """A long file, read a piece at a time up to the file bound as the engine scans it."""
    bound = scanner.limits.max_file_bytes
    left = bound

    def read(n: int) -> bytes:
        nonlocal left
        chunk = fh.read(min(n, left))
        left -= len(chunk)
        return chunk

    found, notes = scanner.scan_stream(label, read)
    size = max(size, bound - left)
    cut = [_over_bound(size, bound)] if size > bound else []
    rel = tuple(f._replace(path="") for f in found)
    return Verdict(rel, tuple(cut + [n[len(label) + 2:] for n in notes]), size,
                   _name_tokens(scanner, rel))


def _read_behind(read: Callable[[list[str]], Mapping[str, bytes]], oids: list[str]
                 ) -> Callable[[], Mapping[str, bytes]]:
    """`read(oids)` started in a thread (it mostly waits on git); the function returned waits
    for it and returns its result, or raises what it raised."""
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["blobs"] = read(oids)
        except BaseException as e:  # raised again in the caller's thread
            box["error"] = e

    worker = threading.Thread(target=work, name="plimsoll-read-blobs", daemon=True)
    worker.start()

    def result() -> Mapping[str, bytes]:
        worker.join()
        if "error" in box:
            raise box["error"]
        return box["blobs"]

    return result


class Verdicts:
    """The scanning half of every ship scan: items in, one verdict per content and per shipped
    name out, handed to a `Placer`.

    It alone batches contents into joined buffers for the engine, reads blobs by id (`read`:
    `git.read_blobs` bound to a repository), consults the `cache`, scans a content shared by
    several labels once, reads a long file on disk a piece at a time, cuts a content at the file
    bound (with a note), and checks shipped names. Labels must be distinct. `ShipScan` places
    verdicts in a `ScanResult`; the tripwire and history place them their own way.

    `jobs` is how many worker processes may scan (`ShipScan` asks for the cores this process may
    use); they are forked only once `PARALLEL_FROM` full batches have been queued (smaller scans stay in
    this process), and any number gives the same verdicts, placed in the same order. `finish`
    places what is left and stops them; `close` stops them when a scan is abandoned.
    """

    def __init__(self, placer: Placer, wset: WithheldSet, limits: Limits | None = None,
                 cache: VerdictCache | None = None,
                 read: Callable[[list[str]], Mapping[str, bytes]] | None = None,
                 jobs: int = 1) -> None:
        self.placer = placer
        self.jobs = max(1, jobs)
        self.tokens: set[str] = set()  # texts the workers' engines learned to redact
        self._work = pool.InOrder()  # batches judged here or in workers, taken in order
        self._full = 0  # batches flushed full
        self._started = False  # whether workers were asked for (`pool.start`)
        # batches (or cached verdicts) given while workers may yet start: (batch, verdict, take)
        self._held: list[tuple[Batch | None, Verdict | None, Callable[[Any], None]]] = []
        self.wset = wset
        self.limits = limits or Limits()
        self.cache = cache
        self.read = read
        self._scanner: Scanner | None = None
        self.batch_bytes = BATCH_BYTES  # a caller with many small items may batch smaller
        self._pending: list[tuple[str, str, Item]] = []  # (label, content key, item)
        self._pending_bytes = 0
        self._unread = 0
        self._names: list[tuple[str, str]] = []  # (label, shipped) still to check
        self._same: dict[str, list[str]] = {}  # content key -> labels sharing one scan
        self.notes: list[str] = []  # engine notes that name no item

    @classmethod
    def on(cls, scanner: Scanner, placer: Placer, cache: VerdictCache | None = None) -> Verdicts:
        """A session on an engine already built (a worker's, reused across sessions)."""
        session = cls(placer, scanner.wset, scanner.limits, cache)
        session._scanner = scanner
        return session

    @property
    def scanner(self) -> Scanner:
        """The engine, built on first use (a warm cached run may never need it)."""
        if self._scanner is None:
            self._scanner = Scanner(self.wset, self.limits)
        return self._scanner

    def add(self, item: Item) -> None:
        """Queue one item: its content, and its shipped path's names (unless `shipped` is "")."""
        label = item.label
        shipped = item.shipped if item.shipped is not None else label
        if shipped:
            self.add_name(label, shipped)
        on_disk = item.data is None and item.disk is not None
        if item.data is None and not on_disk and (item.blob is None or self.read is None):
            raise ValueError(f"{label}: no data and no way to read blob {item.blob}")
        key = content_key(item) if (self.cache is not None or item.blob) and not on_disk else ""
        if key:
            cached = self.cache.get(key) if self.cache is not None else None
            if cached is not None:  # placed after the batches given before it
                self._give(None, cached, functools.partial(self.placer.content, label, key))
                self._flush_if_full()
                return
            if key in self._same:  # the same content under another label: one scan
                self._same[key].append(label)
                return
            self._same[key] = [label]
        self._pending.append((label, key, item))
        if on_disk:
            self._pending_bytes += min(item.size or 0, self.limits.max_file_bytes)
        elif item.data is None:
            self._unread += 1
        else:
            self._pending_bytes += min(len(item.data), self.limits.max_file_bytes)
        self._flush_if_full()

    def add_name(self, label: str, shipped: str) -> None:
        """Queue the names of a shipped path alone (a file or folder name, no content)."""
        self._names.append((label, shipped))
        if len(self._names) >= _BATCH_FILES:
            self.flush()

    def _flush_if_full(self) -> None:
        if (self._pending_bytes >= self.batch_bytes or self._unread >= _BATCH_UNREAD
                or len(self._pending) + len(self._names) >= _BATCH_FILES):
            self.flush(full=True)

    def flush(self, full: bool = False) -> None:
        """Scan everything queued; its verdicts are placed in turn (before `finish` returns)."""
        pending, self._pending = self._pending, []
        self._pending_bytes = self._unread = 0
        need = [it.blob for _, _, it in pending
                if it.data is None and it.disk is None and it.blob is not None]  # (as `add` says)
        # git reads the blobs while this process checks the names (and builds the engine)
        reading = _read_behind(self.read, need) if need and self.read is not None else None
        try:
            self._check_names()
        finally:
            blobs = reading() if reading is not None else {}
        if not pending:
            return
        bound = self.limits.max_file_bytes
        batch: Batch = []
        placed: list[tuple[str, list[str]]] = []  # (content key, labels sharing the verdict)
        for label, key, it in pending:
            if it.data is None and it.disk is not None:  # read where it is judged
                batch.append((label, b"", it.size or 0, "", it.disk))
                placed.append((key, [label]))
                continue
            # (an item with neither data nor a file on disk has a blob id: `add` checks it)
            data = it.data if it.data is not None else blobs[it.blob]  # type: ignore[index]
            size = max(len(data), it.size or 0)  # (a reader may stop one byte past)
            cut = _over_bound(size, bound) if len(data) > bound else ""
            batch.append((label, data[:bound] if cut else data, size, cut, None))
            placed.append((key, self._same.pop(key, [label]) if key else [label]))
        first = self._full == 0
        self._full += full
        take = functools.partial(self._take_batch, placed)
        if self.jobs > 1 and not self._started:
            if self._full >= PARALLEL_FROM:
                # the first batch was judged here (the engine's large-buffer path, numpy among
                # it, is loaded before the fork and shared); workers judge the rest
                self._started = True
                self._work.pool = pool.start(self.jobs, _worker_init, (self.scanner,))
                self._work.ahead = 2 * self.jobs
                held, self._held = self._held, []
                for work in held:
                    self._give(*work)
            elif not first:  # kept for the workers, should enough follow (else judged here)
                self._held.append((batch, None, take))
                return
        self._give(batch, None, take)

    def _give(self, batch: Batch | None, cached: Verdict | None,
              take: Callable[[Any], None]) -> None:
        """Judge `batch` (in a worker once they run), or pass a cached verdict on, and `take`
        the result after everything given before it; kept back while batches are held."""
        if self._held:
            self._held.append((batch, cached, take))
        elif batch is None:
            self._work.put(lambda v: v, (cached,), take, here=True)
        elif self._work.pool is not None:
            self._work.put(_judge, (batch,), take)
        else:
            self._work.put(_judge, (batch, self.scanner), take)

    def _take_batch(self, placed: list[tuple[str, list[str]]], judged: Judged) -> None:
        verdicts, stray, tokens = judged
        self.notes += stray
        self.tokens.update(tokens)
        for (key, labels), verdict in zip(placed, verdicts, strict=True):
            if key and self.cache is not None:
                self.cache.put(key, verdict)
            for label in labels:
                self.placer.content(label, key, verdict)

    def finish(self) -> None:
        """Scan everything queued and place every verdict, in order; stop the workers."""
        try:
            self.flush()
            held, self._held = self._held, []  # no workers started: judged here, in turn
            for work in held:
                self._give(*work)
            self._work.drain()
        finally:
            self.close()

    def close(self) -> None:
        """Stop the worker processes, if any were started (work not yet taken is dropped)."""
        workers, self._work.pool = self._work.pool, None
        if workers is not None:
            workers.shutdown(wait=True, cancel_futures=True)

    def _check_names(self) -> None:
        names, self._names = self._names, []
        todo: list[tuple[str, str, str]] = []
        for label, shipped in names:
            key = name_key(shipped) if self.cache is not None else ""  # (no cache: no key)
            cached = self.cache.get(key) if self.cache is not None else None
            if cached is not None:
                self.placer.name(label, shipped, cached)
            else:
                todo.append((label, shipped, key))
        if not todo:
            return
        scanner = self.scanner
        scanner.prime_names(shipped for _, shipped, _ in todo)
        for label, shipped, key in todo:
            found = tuple(scanner.scan_name(shipped))
            verdict = Verdict(found, (), 0, tuple(sorted(
                t for t in scanner.redact_tokens if t in shipped))) if found else _NO_NAME
            if self.cache is not None:
                self.cache.put(key, verdict)
            self.placer.name(label, shipped, verdict)


_NO_NAME = Verdict((), (), 0)  # the verdict of most names, shared


class _Placed:
    """A ship scan's result as it is built: verdicts placed at their shown labels."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.order: dict[str, int] = {}  # shown label -> position (sorting, file count)
        self.sizes: dict[str, int] = {}  # shown label -> bytes scanned
        self.tokens: set[str] = set()
        self.folders: set[tuple[str, str]] = set()
        self.folder_order: dict[str, int] = {}
        self.findings: list[Finding] = []
        self.notes: list[str] = []

    def content(self, label: str, key: str, verdict: Verdict) -> None:
        """A content's verdict placed at its file."""
        self.sizes[label] = min(verdict.size, self.bound)
        if verdict.clean and not verdict.tokens:  # most files: nothing more to place
            return
        self.findings += [f._replace(path=label) for f in verdict.findings]
        self.notes += [f"{label}: {n}" for n in verdict.notes]
        self.tokens.update(verdict.tokens)

    def name(self, label: str, shipped: str, verdict: Verdict) -> None:
        """A name finding placed in the shown tree: the file itself, or one of its folders."""
        self.tokens.update(verdict.tokens)
        for f in verdict.findings:
            if not f.path.endswith("/"):
                self.findings.append(f._replace(path=label))
                continue
            folder = label[: len(label) - len(shipped)] + f.path if label.endswith(shipped) \
                else f.path
            if (folder, f.entry) in self.folders:
                continue  # a folder is reported once, not once per file in it
            self.folders.add((folder, f.entry))
            self.folder_order.setdefault(folder, self.order[label])
            self.findings.append(f._replace(path=folder))

    def rank(self, f: Finding) -> tuple:
        """Where a finding sorts: by file (a folder at its first file), names first, place."""
        return (self.order.get(f.path, self.folder_order.get(f.path, -1)), f.where != "name",
                f.line, f.column, f.chain, f.entry)


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """While numpy may first be imported (by the engine, for a large buffer): one OpenBLAS
    thread, unless the user chose a number. The engine uses numpy for byte arrays, never for
    linear algebra, and OpenBLAS's extra threads spin at its start: about 100 ms of CPU, and of
    wall time on a busy machine, in a cold hook run. The environment is restored afterwards
    (builders and other children see the user's own)."""
    if "numpy" in sys.modules or "OPENBLAS_NUM_THREADS" in os.environ:
        yield
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OPENBLAS_NUM_THREADS", None)


class ShipScan:
    """One ship scan: `add` shipped files (or `scan` them all), then `finish` -> `ScanResult`.

    `cache` (a `VerdictCache`) skips contents and names judged before; `read` reads blobs by id
    for items that come without data (`git.read_blobs` bound to a repository); `mode` is what
    `decide_mode` decided (default: the withheld set's own mode); `jobs` how many worker processes
    may scan (default: the cores this process may use; see `Verdicts`). Scanning is a `Verdicts`
    session's; this places its verdicts at shown paths, counts, de-duplicates, sorts and redacts.
    """

    def __init__(self, wset: WithheldSet, limits: Limits | None = None,
                 cache: VerdictCache | None = None, mode: str | None = None,
                 read: Callable[[list[str]], Mapping[str, bytes]] | None = None,
                 jobs: int | None = None) -> None:
        self.mode = mode if mode is not None else decide_mode(wset.mode)
        self._placed = _Placed((limits or Limits()).max_file_bytes)
        self.verdicts = Verdicts(self._placed, wset, limits, cache, read,
                                 pool.default_jobs() if jobs is None else jobs)
        self.limits = self.verdicts.limits
        self._caller_notes: list[str] = []
        self._shipped: dict[str, list[tuple[str, str]]] = {}  # content -> (label, set)

    @property
    def scanner(self) -> Scanner:
        """The engine, built on first use (a warm cached run may never need it)."""
        return self.verdicts.scanner

    def note(self, text: str) -> None:
        """A note of the caller's (a folder it could not list, say); reported first, redacted."""
        self._caller_notes.append(text)

    def scan(self, items: Iterable[Item]) -> ScanResult:
        """`add` every item, then `finish`."""
        try:
            with one_blas_thread():
                for item in items:
                    self.add(item)
                return self.finish()
        finally:
            self.close()

    def close(self) -> None:
        """Stop the worker processes, if any were started (`finish` does)."""
        self.verdicts.close()

    def add(self, item: Item) -> None:
        """Queue one shipped file; a label already added is skipped (each shown file once)."""
        label = shown_path(item.label)
        if label in self._placed.order:
            return
        self._placed.order[label] = len(self._placed.order)
        shipped = shown_path(item.shipped) if item.shipped is not None else None
        if label != item.label or shipped != item.shipped:  # (None: shipped as labelled)
            item = item._replace(label=label, shipped=shipped)
        if item.set_name and (item.blob or item.data is not None):
            content = item.blob or blob_id(item.data or b"")
            self._shipped.setdefault(content, []).append((label, item.set_name))
        self.verdicts.add(item)

    def finish(self) -> ScanResult:
        """Scan what is queued and return the result: de-duplicated, sorted, redacted."""
        self.verdicts.finish()
        placed = self._placed
        findings = sorted(dedupe(_one_file(placed.findings, self._shipped)), key=placed.rank)
        notes = list(dict.fromkeys(self._caller_notes + self.verdicts.notes + placed.notes))
        result = ScanResult(findings, notes, len(placed.order), sum(placed.sizes.values()),
                            self.mode)
        if findings or notes:
            redactor = Redactor(self.scanner)
            redactor.add(placed.tokens | self.verdicts.tokens)
            result = redactor.result(result)
        return result


def _one_file(findings: list[Finding], shipped: Mapping[str, list[tuple[str, str]]]
              ) -> list[Finding]:
    """Findings with a file that ships through several ship sets (one content, once in each set:
    a builder that copies the viewer a glob set ships too) reported once: its content's findings
    at one label (a repository path rather than a builder's `SET:path`), listing the sets and the
    other labels. Names are each label's own and stay."""
    moved: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {}  # label -> where to
    for labels in shipped.values():
        sets = [s for _, s in labels]
        if len(labels) < 2 or len(set(sets)) != len(sets):
            continue  # shipped once, or twice in one set: two files
        main = next((lb for lb, s in labels if not lb.startswith(s + ":")), labels[0][0])
        others = tuple(lb for lb, _ in labels if lb != main)
        for lb, _ in labels:
            moved[lb] = (main, tuple(sets), others)
    if not moved:
        return findings
    out = []
    for f in findings:
        to = moved.get(f.path) if f.where == "content" else None
        if to is None:
            out.append(f)
        elif to[0] == f.path:
            out.append(f._replace(sets=to[1], also=to[2]))
    return out


# --------------------------------------------------------------------------- verdicts alone
# For a caller that keeps verdicts by key and places them itself over many trees (history keeps
# them by blob id and replays them over every commit's ship state): the same session (batching,
# file bound, engine, name checks), each verdict handed to `sink` by its cache key.


class _Sink:
    """A `VerdictCache` that knows no verdict and hands every new one to `put`; with it, a
    session's verdicts go by key to whoever keeps them, and nothing is placed (`_Nowhere`)."""

    def __init__(self, put: Callable[[str, Verdict], None]) -> None:
        self.put = put

    def get(self, key: str) -> Verdict | None:
        """Nothing is known here: the caller asked only for what it has not judged."""
        return None


class _Nowhere:
    """A `Placer` that places nothing."""

    def content(self, label: str, key: str, verdict: Verdict) -> None:
        """Not placed."""

    def name(self, label: str, shipped: str, verdict: Verdict) -> None:
        """Not placed."""


def scan_verdicts(scanner: Scanner, items: Iterable[Item],
                  sink: Callable[[str, Verdict], None]) -> None:
    """Scan `items` in one session on an engine already built (a worker's, reused across
    calls) and hand each distinct content's and shipped name's verdict to `sink(key, verdict)`
    (keys as a `VerdictCache` gets them). Labels must be distinct; nothing is placed or reported.
    """
    session = Verdicts.on(scanner, _Nowhere(), cache=_Sink(sink))
    for item in items:
        session.add(item)
    session.flush()


def scan_items(items: Iterable[Item | tuple[str, bytes] | tuple[str, str, bytes]],
               wset: WithheldSet, limits: Limits | None = None, mode: str | None = None
               ) -> ScanResult:
    """Scan (path, bytes) pairs, (label, shipped path, bytes) triples or `Item`s in one session."""
    session = ShipScan(wset, limits, mode=mode)
    for it in items:
        if isinstance(it, Item):
            session.add(it)
        elif len(it) == 3:
            session.add(Item(it[0], it[2], it[1]))
        else:
            session.add(Item(it[0], it[1]))
    return session.finish()


# --------------------------------------------------------------------------- folders on disk


def scan_paths(paths: list[str], wset: WithheldSet, limits: Limits | None = None,
               mode: str | None = None, jobs: int | None = None) -> ScanResult:
    """Scan folders and files on disk. Missing paths are bad input (exit 2) before any scan.

    This process lists the files (`ondisk.walk`: the folder rules); each is read where its
    batch is judged, in this process or a worker (`ondisk.read`: the same rules again, on what
    was opened), whole when it is small (up to the engine's window size), else a piece at a
    time as it is scanned, so no file is ever held whole in memory. `jobs`: worker processes
    (`ShipScan`)."""
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing:
        raise BadInput("; ".join(f"path {p}: no such file or folder" for p in missing))
    session = ShipScan(wset, limits, mode=mode, jobs=jobs)
    notes: list[str] = []
    try:
        for p in paths:
            if os.path.isdir(p):  # (a link to a folder named on the command line is followed)
                entries = ondisk.walk(p, p.rstrip("/") or "/", notes)
            else:
                entries = iter([ondisk.named(p)])
            for e in entries:
                session.add(Item(e.shown, b"" if e.disk is None else None, disk=e.disk,
                                 size=e.size))
        for n in notes:
            session.note(n)
        return session.finish()
    finally:
        session.close()

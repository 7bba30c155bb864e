"""Scanning shipped blobs by id, each once, through the ship scan's front end
(`scan.scan_verdicts`: its batching, file bound and engine): in this process for a few, else in
forked workers (`pool.start`) that each stream their own `git cat-file --batch`. Verdicts land in
the blob cache.

`start_workers(session, scanner)` before any long-lived git process or thread is started; then
`BlobScans(session, scanner, progress, workers)`: `add(oid, label)` while the walk runs,
`finish(built, labels)` once it is done, `close()` always. `scan_names` judges shipped names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from plimsoll_ci import pool
from plimsoll_ci.git import EMPTY_BLOB, CatFile, Repo
from plimsoll_ci.history.cache import ScanCache
from plimsoll_ci.history.progress import Progress
from plimsoll_ci.history.records import shown
from plimsoll_ci.history.session import Session
from plimsoll_ci.shipscan.results import Verdict
from plimsoll_ci.shipscan.scan import Item, Scanner, one_blas_thread, scan_verdicts

if TYPE_CHECKING:  # (a warm replay starts no worker: it never imports the executors)
    from concurrent.futures import Executor

_WORKER: dict[str, Any] = {}
SESSION_BYTES = 1 << 20  # as quick as larger batches on source trees, and a fraction of the memory
DELTA_CACHE = 16 << 20  # git's delta base cache per worker: as quick as its 96 MiB default here

# What a task answers: (clean blobs with their sizes, blobs with findings or notes and their
# verdicts, missing blobs). Most blobs are clean: a pair each pickles and loads in a fraction of
# a verdict record's cost (requests' 8,708 verdicts: 75 -> 10 ms in the workers, 37 -> 10 ms here).
Scanned = tuple[list[tuple[str, int]], list[tuple[str, Verdict]], list[str]]


def _open_worker(scanner: Scanner, repo: Repo, max_bytes: int) -> None:
    # The engine is built once, before the fork: workers inherit it, never rebuild it.
    _WORKER["scanner"] = scanner
    _WORKER["cat"] = CatFile(repo, max_bytes, delta_cache=DELTA_CACHE)


def _scan_blobs(oids: list[str]) -> Scanned:
    """Read blobs by id through this worker's `git cat-file` and scan them, in sessions of about
    `SESSION_BYTES` (the engine's memory grows with what one batch joins).
    """
    scanner, cat = _WORKER["scanner"], _WORKER["cat"]
    out: dict[str, Verdict | None] = {}
    cut: dict[str, str] = {}

    def keep(key: str, verdict: Verdict) -> None:
        out[key[len("blob:"):]] = verdict

    batch: list[Item] = []
    size = 0
    for oid, blob in cat.read_many(oids):
        if blob is None:
            out[oid] = None
            continue
        if blob.truncated:
            cut[oid] = (f"blob {oid[:12]} is {blob.size} bytes, over the {cat.max_bytes}-byte "
                        f"bound; only its first {cat.max_bytes} bytes were scanned (raise "
                        "--max-blob-bytes)")
        if batch and size + len(blob.data) > SESSION_BYTES:
            scan_verdicts(scanner, batch, keep)
            batch, size = [], 0
        batch.append(Item(oid, blob.data, "", oid))  # the id as label: distinct, no name checked
        size += len(blob.data)
    scan_verdicts(scanner, batch, keep)
    for oid, note in cut.items():
        v = out[oid]
        assert v is not None
        out[oid] = v._replace(notes=(note, *v.notes))
    clean: list[tuple[str, int]] = []
    found: list[tuple[str, Verdict]] = []
    missing: list[str] = []
    for oid, v in out.items():
        if v is None:
            missing.append(oid)
        elif v.clean:
            clean.append((oid, v.size))
        else:
            found.append((oid, v))
    return clean, found, missing


def start_workers(session: Session, scanner: Scanner,
                  close: Sequence[int] = ()) -> Executor | None:
    """A pool of scanning workers (one per core, or `--jobs`), or None for one job. Call it before
    any long-lived git process or thread but those whose pipes are in `close` (the workers close
    them): no worker may hold a pipe of theirs. The engine's modules are imported here first:
    each worker would otherwise import them again.
    """
    load_engine(session, scanner)
    return pool.start(jobs(session), _open_worker,
                      (scanner, session.repo, session.max_blob_bytes), close)


def load_engine(session: Session, scanner: Scanner) -> None:
    """Import what workers will scan with (the engine's modules), when there may be
    workers: before they are forked, or earlier, while this process waits for git anyway."""
    if jobs(session) > 1:
        with one_blas_thread():
            scanner.load()


def jobs(session: Session) -> int:
    """Scanning processes: `--jobs`, else one per core this process may use."""
    return session.options.jobs or pool.default_jobs()


class BlobScans:
    """Scans blobs by id once each: in `workers` when there are any (chunks go out while the walk
    still runs, so walking and scanning overlap), else in this process at `finish`.
    """

    # Blobs per task a worker takes (about 2 MB of source): fewer, larger tasks cost less per
    # blob in the engine's fixed work and the pipe (requests' history, cold: 1.2x quicker than
    # 32 blobs, and the same peak memory; benchmarks/bench_history.py)
    CHUNK = 128

    def __init__(self, session: Session, scanner: Scanner, progress: Progress,
                 workers: Executor | None) -> None:
        self.session, self.scanner = session, scanner
        self.cache, self.notes, self.progress = session.cache, session.notes, progress
        self.pool = workers
        self.labels: dict[str, str] = {}
        self.todo: list[str] = []
        self.pending: set[Any] = set()
        self.total = 0
        progress.task("blobs", 0)

    def add(self, oid: str, label: str) -> None:
        """Ask for blob `oid` (first shipped as `label`) to be scanned."""
        self.labels[oid] = label
        self.todo.append(oid)
        self.total += 1
        self.progress.total("blobs", self.total)
        if self.pool is not None and len(self.todo) >= self.CHUNK:
            self._submit()

    def _submit(self) -> None:
        from concurrent.futures import FIRST_COMPLETED, wait

        assert self.pool is not None
        for i in range(0, len(self.todo), self.CHUNK):
            self.pending.add(self.pool.submit(_scan_blobs, self.todo[i:i + self.CHUNK]))
        self.todo = []
        done = {f for f in self.pending if f.done()}
        if len(self.pending) - len(done) > jobs(self.session) * 4:  # bound what is in flight
            done, _ = wait(self.pending, return_when=FIRST_COMPLETED)
        for fut in done:
            self.pending.discard(fut)
            self._take(fut.result())

    def _take(self, results: Scanned) -> None:
        clean, found, missing = results
        for oid in missing:
            self.notes.add(f"{shown(self.labels[oid])} (blob {oid[:12]}) is missing from the "
                           "object store (a partial or damaged clone); it was not scanned")
        self.cache.put_clean(clean)
        for oid, verdict in found:
            self.cache.put("blob:" + oid, verdict)
        self.progress.advance("blobs", len(clean) + len(found) + len(missing))

    def finish(self, built: dict[str, bytes], labels: dict[str, str]) -> None:
        """Scan what is left (and builder output, in this process); wait for every worker."""
        if self.pool is None and len(self.todo) >= 64:
            self.pool = start_workers(self.session, self.scanner)  # None when it cannot fork
        if self.pool is not None:
            # (imported only here: a warm replay has no worker, and this import was 11 ms of it)
            from concurrent.futures import FIRST_COMPLETED, wait

            if self.todo:
                self._submit()
            while self.pending:
                done, self.pending = wait(self.pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    self._take(fut.result())
        elif self.todo:
            _open_worker(self.scanner, self.session.repo, self.session.max_blob_bytes)
            try:
                with one_blas_thread():
                    for i in range(0, len(self.todo), 256):
                        self._take(_scan_blobs(self.todo[i:i + 256]))
            finally:
                _WORKER.pop("cat").close()
            self.todo = []
        todo_built = [oid for oid in built if oid in labels and not self.cache.knows(oid)]
        if todo_built:
            self.progress.total("blobs", self.total + len(todo_built))
            scan_verdicts(self.scanner, (Item(oid, built[oid], "", oid) for oid in todo_built),
                          self.cache.put)
            self.progress.advance("blobs", len(todo_built))

    def close(self) -> None:
        """Stop the workers (on Ctrl-C too: queued chunks are dropped, finished ones kept)."""
        if self.pool is not None:
            for fut in list(self.pending):
                if fut.done() and not fut.cancelled() and fut.exception() is None:
                    self._take(fut.result())
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def scan_names(scanner: Scanner, cache: ScanCache, names: Iterable[str]) -> None:
    """Judge the shipped names (file and folder names) the cache does not know yet."""
    todo = [n for n in names if not cache.knows_name(n)]
    if todo:
        # a name's item has empty content (whose verdict, the empty blob's, is kept too)
        scan_verdicts(scanner, (Item(n, b"", n, EMPTY_BLOB) for n in todo), cache.put)

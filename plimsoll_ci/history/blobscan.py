"""Scanning shipped blobs by id, each once: in this process for a few, else in a pool of worker
processes that each stream their own `git cat-file --batch`. Findings land in the blob cache.

The surface is `BlobScans(session, progress, eager)`: `add(oid, label)` while the walk runs,
`finish(built, labels)` once it is done, `close()` always.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterable
from typing import Any

from plimsoll_ci.git import CatFile, Repo
from plimsoll_ci.history.cache import Row, finding_row
from plimsoll_ci.history.progress import Progress
from plimsoll_ci.history.records import shown
from plimsoll_ci.history.session import Session
from plimsoll_ci.scan import Scanner

_BATCH_BYTES = 1 << 20  # joined-buffer scans stay around a megabyte

_WORKER: dict[str, Any] = {}

Scanned = tuple[str, list[Row] | None, list[str]]  # (oid, rows or None when missing, notes)


def _open_worker(wset: Any, limits: Any, repo: Repo, max_bytes: int) -> None:
    _WORKER["scanner"] = Scanner(wset, limits)
    _WORKER["cat"] = CatFile(repo, max_bytes)


def _worker_init(wset: Any, limits: Any, repo: Repo, max_bytes: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and saves the cache
    _open_worker(wset, limits, repo, max_bytes)


def _scan_blobs(jobs: list[tuple[str, str]]) -> list[Scanned]:
    """Scan blobs by id: [(oid, findings rows | None when missing, notes)].

    Small blobs are scanned together (`Scanner.scan_contents` joins them into one buffer, so the
    engine's fixed cost is paid per batch, not per blob); a batch never holds a label twice, so
    each finding and note goes back to its own blob.
    """
    scanner, cat = _WORKER["scanner"], _WORKER["cat"]
    labels = dict(jobs)
    out: list[Scanned] = []
    batch: list[tuple[str, str, bytes]] = []  # (oid, label, data)
    batch_bytes = 0

    def flush() -> None:
        nonlocal batch_bytes
        if not batch:
            return
        findings, notes = scanner.scan_contents([(label, data) for _o, label, data in batch])
        by_label: dict[str, list[Row]] = {}
        for f in findings:
            by_label.setdefault(f.path, []).append(finding_row(f))
        notes_of: dict[str, list[str]] = {}
        for n in notes:
            owner = next((label for _o, label, _d in batch if n.startswith(label + ": ")),
                         batch[0][1])
            notes_of.setdefault(owner, []).append(n)
        for oid, label, _data in batch:
            out.append((oid, by_label.get(label, []), notes_of.get(label, [])))
        batch.clear()
        batch_bytes = 0

    for oid, blob in cat.read_many([oid for oid, _label in jobs]):
        label = labels[oid]
        if blob is None:
            out.append((oid, None, []))
            continue
        if blob.truncated:
            note = (f"{label} (blob {oid[:12]}): {blob.size} bytes, over the {cat.max_bytes}-byte "
                    f"bound; only its first {cat.max_bytes} bytes were scanned "
                    "(raise --max-blob-bytes)")
            found, notes = scanner.scan_content(blob.data, label)
            out.append((oid, [finding_row(f) for f in found], [*notes, note]))
            continue
        if any(label == b_label for _o, b_label, _d in batch) or batch_bytes > _BATCH_BYTES:
            flush()
        batch.append((oid, label, blob.data))
        batch_bytes += len(blob.data)
    flush()
    return out


class BlobScans:
    """Scans blobs by id once each: in this process for a few, else in a pool of workers that
    each stream their own `git cat-file --batch`. Chunks are submitted while the walk still runs,
    so walking and scanning overlap.
    """

    CHUNK = 32

    def __init__(self, session: Session, progress: Progress, eager: bool) -> None:
        self.session = session
        self.max_bytes = session.max_blob_bytes
        self.jobs = session.options.jobs or os.cpu_count() or 1
        self.cache, self.notes, self.progress = session.cache, session.notes, progress
        self.labels: dict[str, str] = {}
        self.todo: list[tuple[str, str]] = []
        self.pool: Any = None
        self.pending: set[Any] = set()
        self.total = 0
        progress.task("blobs", 0)
        if eager and self.jobs > 1:
            self._start_pool()

    def _worker_args(self) -> tuple[Any, Any, Repo, int]:
        return (self.session.wset, self.session.limits, self.session.repo, self.max_bytes)

    def _start_pool(self) -> None:
        # Started before any long-lived git process, so no worker inherits one of its pipes.
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
        self.pool = ProcessPoolExecutor(self.jobs, mp_context=ctx, initializer=_worker_init,
                                        initargs=self._worker_args())
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

    def _take(self, results: Iterable[Scanned]) -> None:
        for oid, rows, blob_notes in results:
            if rows is None:
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
            _open_worker(*self._worker_args())
            try:
                for i in range(0, len(self.todo), 256):
                    self._take(_scan_blobs(self.todo[i:i + 256]))
            finally:
                _WORKER.pop("cat").close()
            self.todo = []
        todo_built = [oid for oid in built if oid in labels and oid not in self.cache.content]
        if todo_built:
            scanner = Scanner(self.session.wset, self.session.limits)
            self.progress.total("blobs", self.total + len(todo_built))
            for oid in todo_built:
                findings, blob_notes = scanner.scan_content(built[oid], shown(labels[oid]))
                self._take([(oid, [finding_row(f) for f in findings], list(blob_notes))])

    def close(self) -> None:
        """Stop the workers (on Ctrl-C too: queued chunks are dropped, finished ones kept)."""
        if self.pool is not None:
            for fut in list(self.pending):
                if fut.done() and not fut.cancelled() and fut.exception() is None:
                    self._take(fut.result())
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

"""The tripwire proper: find sealed values in every recorded request under a folder.

`scan_requests` reads every recorded request under a folder (`plimsoll_ci.tripwire.reader`) and
hands each piece to the one matching engine (`plimsoll_ci.tripwire.matching`), so the rules are the
ship scan's: whole token runs in any capitalization, numbers however written, files by SHA-256,
names of files and folders, one layer of encoding undone.

A finding's `path` is the recorded file, its `chain` starts with the place inside it (a JSON
pointer, `part NAME`, `header NAME`, `target`) followed by the engine's decode chain; `line` and
`column` count inside that piece. Its `entry` is the sealed id. It never holds the value, and every
printed segment that carries one is redacted (`plimsoll_ci.tripwire.redact`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable

from plimsoll_ci.scan import Finding, Limits, ScanResult
from plimsoll_ci.tripwire import matching
from plimsoll_ci.tripwire.reader import Piece, ReadLimits, RequestReader
from plimsoll_ci.tripwire.redact import redact_all
from plimsoll_ci.withheld import WithheldSet

_PARALLEL_FROM = 400  # files; below this, starting workers costs more than it saves


def _order(f: Finding) -> tuple:
    return (f.path, f.chain, f.line, f.column, f.entry)


def scan_pieces(pieces: Iterable[Piece], wset: WithheldSet,
                limits: Limits | None = None) -> tuple[list[Finding], list[str]]:
    """Findings (path = recorded file, chain = place > decode chain) and notes for `pieces`,
    sorted and redacted for printing."""
    findings, notes = matching.find(pieces, wset, limits)
    return redact_all(sorted(findings, key=_order), notes, wset, limits)


def default_jobs() -> int:
    """Worker processes to use: the CPUs this process may run on (at most 8)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, 8))


def _scan_files(root: str, files: list[str], wset: WithheldSet, limits: Limits | None,
                read_limits: ReadLimits | None) -> tuple[list[Finding], list[str], int, int]:
    """One worker's share: the names and contents of `files` -> (findings, notes, files, bytes)."""
    reader = RequestReader(read_limits)
    pieces = itertools.chain(reader.names([], files), reader.read_files(root, files))
    findings, notes = matching.find(pieces, wset, limits)
    return findings, reader.notes + notes, reader.files, reader.bytes


def scan_requests(root: str, wset: WithheldSet, limits: Limits | None = None,
                  read_limits: ReadLimits | None = None, jobs: int | None = None) -> ScanResult:
    """Scan every recorded request under `root` against a sealed set -> `ScanResult`.

    Large folders are split into `jobs` runs of consecutive files (a session's turns stay
    together, so its repeats stay cached) scanned by forked worker processes.
    """
    import multiprocessing
    import threading

    reader = RequestReader(read_limits)
    folders, files = reader.listing(root)
    findings, notes = matching.find(reader.names(folders, []), wset, limits)
    jobs = default_jobs() if jobs is None else max(1, jobs)
    # fork only from a single-threaded process (forking a threaded one can deadlock)
    if jobs > 1 and len(files) >= _PARALLEL_FROM and threading.active_count() == 1 and \
            "fork" in multiprocessing.get_all_start_methods():
        from concurrent.futures import ProcessPoolExecutor

        size = -(-len(files) // jobs)
        chunks = [files[i:i + size] for i in range(0, len(files), size)]
        with ProcessPoolExecutor(len(chunks), mp_context=multiprocessing.get_context("fork")) \
                as pool:
            parts = list(pool.map(_scan_files, [root] * len(chunks), chunks,
                                  [wset] * len(chunks), [limits] * len(chunks),
                                  [read_limits] * len(chunks)))
    else:
        parts = [_scan_files(root, files, wset, limits, read_limits)]
    n_files = n_bytes = 0
    for f, n, nf, nb in parts:
        findings += f
        notes += n
        n_files += nf
        n_bytes += nb
    findings, notes = redact_all(sorted(findings, key=_order), reader.notes + notes, wset, limits)
    return ScanResult(findings, notes, n_files, n_bytes)

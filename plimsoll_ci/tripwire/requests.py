"""The tripwire proper: find sealed values in every recorded request under a folder.

`scan_requests` reads every recorded request under a folder (`plimsoll_ci.tripwire.reader`) and
hands each piece to the one matching engine (`plimsoll_ci.tripwire.matching`), so the rules are the
ship scan's: whole token runs in any capitalization, numbers however written, files by SHA-256,
names of files and folders, one layer of encoding undone.

A finding's `path` is the recorded file, its `chain` starts with the place inside it (a JSON
pointer, `part NAME`, `header NAME`, `target`) followed by the engine's decode chain; `line` and
`column` count inside that piece. Its `entry` is the sealed id. It never holds the value, and every
printed segment that carries one is redacted (`plimsoll_ci.shipscan.redact`, the one redactor).

Retries are one leak: a recorded request sent again with the same method, target and body (an
SDK retrying an upstream that is down) is reported once, at its first recording, with a `detail`
naming the others; a finding only a retry has (in a header, say) is kept. When the upstream never
answered any of them, the detail says so.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from plimsoll_ci import pool
from plimsoll_ci.engine import Finding, Limits, Scanner
from plimsoll_ci.shipscan.redact import Redactor
from plimsoll_ci.shipscan.results import ScanResult
from plimsoll_ci.tripwire import matching
from plimsoll_ci.tripwire.reader import Piece, ReadLimits, RequestReader, Sent, upstream_answered
from plimsoll_ci.withheld import WithheldSet

_PARALLEL_FROM = 400  # files; below this, starting workers costs more than it saves


def _order(f: Finding) -> tuple:
    return (f.path, f.chain, f.line, f.column, f.entry)


def redacted(result: ScanResult, wset: WithheldSet, limits: Limits | None = None) -> ScanResult:
    """`result` with every value-carrying part of its paths, places, details and notes redacted
    for printing (the one redactor, on an engine of its own)."""
    return Redactor(Scanner(wset, limits)).result(result)


def scan_pieces(pieces: Iterable[Piece], wset: WithheldSet,
                limits: Limits | None = None) -> tuple[list[Finding], list[str]]:
    """Findings (path = recorded file, chain = place > decode chain) and notes for `pieces`,
    sorted and redacted for printing."""
    findings, notes = matching.find(pieces, wset, limits)
    done = redacted(ScanResult(sorted(findings, key=_order), notes, 0, 0), wset, limits)
    return done.findings, done.notes


def _scan_files(root: str, files: list[str], wset: WithheldSet, limits: Limits | None,
                read_limits: ReadLimits | None) -> tuple[list[Finding], list[str], int, int,
                                                          dict[str, Sent]]:
    """One worker's share: the names and contents of `files` -> (findings, notes, files, bytes,
    how each recorded request was sent)."""
    reader = RequestReader(read_limits)
    pieces = itertools.chain(reader.names([], files), reader.read_files(root, files))
    findings, notes = matching.find(pieces, wset, limits)
    return findings, reader.notes + notes, reader.files, reader.bytes, reader.sent


def _listed(names: list[str], most: int = 5) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def group_retries(findings: list[Finding], sent: dict[str, Sent], root: str) -> list[Finding]:
    """Findings with the retries of one recorded request reported once (see the docstring)."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for name in sorted(sent):
        groups.setdefault(sent[name].same, []).append(name)
    stem_of = {path: stem for stem, s in sent.items() for path in s.files}
    details: dict[str, str] = {}

    def detail(group: list[str]) -> str:
        if group[0] not in details:
            said = []
            if len(group) > 1:
                names = [g.rsplit("/", 1)[-1] for g in group]
                said.append(f"sent {len(group)} times with the same body: {_listed(names)}")
            if all(upstream_answered(root, g) is False for g in group):
                said.append("the upstream never answered")
            details[group[0]] = "; ".join(said)
        return details[group[0]]

    out, seen = [], set()
    for f in sorted(findings, key=_order):
        stem = stem_of.get(f.path)
        if stem is None:
            out.append(f)
            continue
        group = groups[sent[stem].same]
        part = sent[stem].files.index(f.path)
        key = (group[0], part, f.chain, f.entry, f.kind, f.where, f.line, f.column)
        if key in seen:
            continue  # the same hit in a retry
        seen.add(key)
        said = detail(group)
        out.append(f._replace(detail="; ".join(d for d in (f.detail, said) if d)) if said else f)
    return out


def scan_requests(root: str, wset: WithheldSet, limits: Limits | None = None,
                  read_limits: ReadLimits | None = None, jobs: int | None = None) -> ScanResult:
    """Scan every recorded request under `root` against a sealed set -> `ScanResult`.

    Large folders are split into `jobs` runs of consecutive files (a session's turns stay
    together, so its repeats stay cached) scanned by forked worker processes.
    """
    reader = RequestReader(read_limits)
    folders, files = reader.listing(root)
    findings, notes = matching.find(reader.names(folders, []), wset, limits)
    jobs = pool.default_jobs() if jobs is None else max(1, jobs)
    chunks = [files]
    if jobs > 1 and len(files) >= _PARALLEL_FROM:
        size = -(-len(files) // jobs)
        chunks = [files[i:i + size] for i in range(0, len(files), size)]
    # forked workers when forking is safe here (one thread), else each run in this process
    parts = pool.run(_scan_files, [(root, c, wset, limits, read_limits) for c in chunks], jobs)
    n_files = n_bytes = 0
    sent: dict[str, Sent] = {}
    for f, n, nf, nb, s in parts:
        findings += f
        notes += n
        n_files += nf
        n_bytes += nb
        sent.update(s)
    findings = group_retries(findings, sent, root)
    return redacted(ScanResult(findings, reader.notes + notes, n_files, n_bytes), wset, limits)

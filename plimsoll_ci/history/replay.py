"""The replay: walk a range once, turn each commit's ship sets into deltas, scan every distinct
shipped blob and name once, then read windows off the commit graph.
"""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.git import ZERO_OID, TreeEntry, ls_tree
from plimsoll_ci.gitlog import Change, Log, RevList
from plimsoll_ci.history.blobscan import BlobScans, load_engine, scan_names, start_workers
from plimsoll_ci.history.cache import save
from plimsoll_ci.history.judge import Delta, Judge, ShipState
from plimsoll_ci.history.progress import Progress
from plimsoll_ci.history.records import CommitInfo, HistoryReport, Notes, Options, shown
from plimsoll_ci.history.redact import Redactor
from plimsoll_ci.history.session import Session, open_repository, open_session, rev_args, tips
from plimsoll_ci.history.windows import Record, propagate, windows
from plimsoll_ci.pool import collector_paused
from plimsoll_ci.shipscan.scan import Scanner

EAGER_COMMITS = 100  # from this many commits (and a cold cache), workers scan during the walk


def replay(repo_dir: str, wset: Any, options: Options | None = None) -> HistoryReport:
    """Replay the commits of `options.revs` (default HEAD's history) against withheld set `wset`."""
    with collector_paused():  # (its records hold no cycles)
        return _replay_all(repo_dir, wset, options or Options())


def _replay_all(repo_dir: str, wset: Any, options: Options) -> HistoryReport:
    notes = Notes()
    repo = open_repository(repo_dir, options, notes)
    revs = rev_args(repo, options)
    # git walks the range (twice: the graph and the log) while the config and the cache load.
    # Workers, when a cold cache needs them, are forked before the progress bar's thread or any
    # other long-lived git process; they close their copies of the log's pipes (git must see
    # this process's end alone), so the log started first is the walk's either way.
    listing: RevList | None = None
    log: Log | None = None
    workers = judge = scans = progress = session = None
    try:
        listing = RevList(repo, revs)
        log = Log(repo, revs)
        session = open_session(repo, wset, options, notes)
        for n in session.cache.notes:
            session.notes.add(n)
        cold = not session.cache.clean and not session.cache.found
        scanner = Scanner(session.wset, session.limits)  # built once; forked workers inherit it
        if cold and listing.running():  # a long range (git still walks it): workers will scan
            load_engine(session, scanner)  # meanwhile, the engine's imports
        graph = listing.graph()
        listing = None
        if cold and len(graph) >= EAGER_COMMITS:
            workers = start_workers(session, scanner, log.fds())
        progress = Progress(sys.stderr.isatty() if options.progress is None else options.progress)
        judge = Judge(session)
        scans = BlobScans(session, scanner, progress, workers)
        run = _Run(session, revs, graph, {row[0] for row in graph}, judge, progress, scanner)
        return _replay(run, log, scans)
    finally:
        if listing is not None:
            listing.close()
        if scans is not None:
            scans.close()
        elif workers is not None:
            workers.shutdown(wait=True, cancel_futures=True)
        if log is not None:
            log.close()
        if progress is not None:
            progress.stop()
        if judge is not None:
            judge.close()
        if session is not None:
            save(session.cache)  # also on Ctrl-C: what was scanned so far is kept, atomically


class _Run(NamedTuple):
    """One replay's context: the session, the range and its graph, the judge, the progress bar."""

    session: Session
    revs: list[str]
    graph: list[list[str]]  # [commit, parent...] oldest first
    in_range: set[str]  # the commits of the graph
    judge: Judge
    progress: Progress
    scanner: Scanner


class _Walked(NamedTuple):
    """What the walk (pass 1) found."""

    records: list[Record]
    need: dict[str, str]  # blob id -> first shipped label (for scanning and notes)
    names: dict[str, str]  # shipped name -> label
    scanned_before: int  # blobs whose findings were already cached


def _replay(run: _Run, log: Log, scans: BlobScans) -> HistoryReport:
    # ---- pass 1: walk trees, turn ship sets into deltas, scan new blobs as they appear
    run.progress.task("commits", len(run.graph))
    walked = _walk(run, log, scans)
    log.close()
    # ---- pass 2: finish scanning each distinct blob, and each name, once
    run.judge.close()  # before any worker is forked: none may inherit its pipes
    # what needs no verdict is done while workers still scan: the names, and the tips (git)
    scan_names(run.scanner, run.session.cache, walked.names)
    ends = tips(run.session.repo, run.revs)
    scans.finish(run.judge.built, walked.need)
    scans.close()
    return _report(run, walked, ends)


def _walk(run: _Run, log: Log, scans: BlobScans) -> _Walked:
    """Walk the range once: each commit's tree (from its first parent's and its changes), what
    its ship sets ship, and the deltas; blobs not yet judged go to `scans` as they appear.
    """
    session, judge, cache = run.session, run.judge, run.session.cache
    in_range = run.in_range
    children_fp: dict[str, int] = {}  # commit -> children (in the walk) whose first parent it is
    for row in run.graph:
        if len(row) > 1 and row[1] in in_range:
            children_fp[row[1]] = children_fp.get(row[1], 0) + 1
    trees: dict[str, dict[bytes, TreeEntry | Change]] = {}  # (changed in place, commit to commit)
    states: dict[str, tuple[str, ShipState]] = {}  # commit -> (config identity, ship state)
    out = _Walked([], {}, {}, 0)
    need, names, records = out.need, out.names, out.records
    new = tuple.__new__  # (a NamedTuple's own `__new__` is a Python call: two per commit)
    advance = run.progress.advance if run.progress.bar is not None else None
    no_config = scanned_before = 0
    for commit in log:
        fp = commit.parents[0] if commit.parents else None
        inherit = fp is not None and fp in in_range
        if inherit:
            assert fp is not None
            left = children_fp[fp] - 1
            children_fp[fp] = left
            tree = trees.pop(fp) if left == 0 else dict(trees[fp])
            parent_cfg, parent_state = states.pop(fp) if left == 0 else states[fp]
            if left != 0:
                parent_state = dict(parent_state)
        else:
            tree = dict(ls_tree(session.repo, fp)) if fp is not None else {}  # (may hold changes)
            parent_cfg, parent_state = "none", {}
        for ch in commit.changes:
            if ch.oid == ZERO_OID:
                tree.pop(ch.path, None)
            else:
                tree[ch.path] = ch  # (a change has the entry's mode and id)
        cfg_id, cfg = judge.config_at(commit.oid, tree)
        if cfg is None:
            no_config += 1
            state: ShipState = {}
            deltas = [Delta(s, label, None) for (s, label) in parent_state]
        elif cfg_id == parent_cfg:
            state = parent_state
            deltas = judge.incremental(commit, cfg, state)
            if judge.builds(cfg):
                deltas += judge.rebuild(commit, tree, cfg, state)
        else:
            state = judge.full(commit, tree, cfg, parent_state)
            deltas = [Delta(s, label, None) for (s, label) in parent_state
                      if (s, label) not in state]
            deltas += [Delta(s, label, item) for (s, label), item in state.items()
                       if parent_state.get((s, label)) != item]
        for _set, label, item in deltas:
            if item is not None:
                oid = item.oid
                if oid not in need:
                    need[oid] = label
                    if cache.knows(oid):
                        scanned_before += 1
                    elif oid not in judge.built:
                        scans.add(oid, label)
                names.setdefault(item.name, label)
        if children_fp.get(commit.oid):
            trees[commit.oid] = tree
            states[commit.oid] = (cfg_id, state)
        records.append(new(Record, (new(CommitInfo, (commit.oid, commit.time, commit.author)),
                                    commit.parents, deltas, not inherit)))
        if advance is not None:
            advance("commits")
    if not records:
        session.notes.add(f"the range {' '.join(run.revs)} has no commits")
    if no_config == len(records) and records:
        raise BadInput(f"{session.repo.top}: no commit in {' '.join(run.revs)} has a plimsoll.yaml;"
                       " pass --config FILE to judge every commit by one config (auditor mode)")
    if no_config:
        session.notes.add(f"{no_config} of {len(records)} commits have no usable plimsoll.yaml and "
                          "ship nothing by their own config (pass --config to judge them by one)")
    return out._replace(scanned_before=scanned_before)


def _report(run: _Run, walked: _Walked, ends: set[str]) -> HistoryReport:
    """Replay the deltas over the verdicts, read windows off the graph (`ends`: its tips), and
    redact."""
    session, cache = run.session, run.session.cache
    # notes and members' findings are a blob's with findings or notes (a few of thousands)
    carriers = [oid for oid in walked.need if oid in cache.found]
    for oid in carriers:
        for n in cache.blob_notes(oid):
            session.notes.add(f"{shown(walked.need[oid])}: {n}")

    # ---- pass 3: propagate verdicts from parents along the deltas; windows from the graph
    records = walked.records
    leaks = propagate(records, cache, session.options.every_commit)
    entries = windows(records, leaks, ends)
    names = [f for name in walked.names for f in cache.name_findings(name)]
    members = [f for oid in carriers for f in cache.member_findings(oid)]
    redact = Redactor(names, members, run.scanner)
    entries = [redact.entry(e) for e in entries]
    if any(r.boundary and r.parents for r in records):
        for e in entries:
            for w in e.windows:
                if w.from_boundary:
                    session.notes.add(f"{e.entry} already ships at {w.first.oid[:12]}, the first "
                                      "commit of the range; it may have shipped earlier (widen "
                                      "the range)")
    return HistoryReport(entries, len(records), len(walked.need), walked.scanned_before,
                         [redact.say(n) for n in session.notes.all()], run.revs,
                         session.options.every_commit)

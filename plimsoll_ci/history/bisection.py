"""`--bisect ENTRY`: the first commit along first parents whose ship sets carry an entry, found in
O(log n) ship scans (assuming the entry kept shipping once introduced; `ASSUMPTION` says so).
When the tip no longer ships it (a fixed leak), a replay of the range finds the first commit
that did, and its fix.
"""

from __future__ import annotations

from typing import Any

from plimsoll_ci.errors import BadInput
from plimsoll_ci.git import Repo, ls_tree
from plimsoll_ci.git import run as git
from plimsoll_ci.gitlog import Commit, rev_list
from plimsoll_ci.history.blobscan import BlobScans, scan_names
from plimsoll_ci.history.cache import save
from plimsoll_ci.history.judge import Judge
from plimsoll_ci.history.progress import Progress
from plimsoll_ci.history.records import (
    ASSUMPTION,
    BisectResult,
    CommitInfo,
    Notes,
    Occurrence,
    Options,
    shown,
)
from plimsoll_ci.history.redact import Redactor
from plimsoll_ci.history.session import Session, open_session, rev_args
from plimsoll_ci.history.windows import occurrences, once
from plimsoll_ci.shipscan.scan import Finding, Scanner


def bisect(repo_dir: str, wset: Any, entry: str, options: Options | None = None) -> BisectResult:
    """The first commit (along first parents) whose ship sets carry `entry`, in O(log n) scans.

    Assumes the entry kept shipping once introduced; `ASSUMPTION` says so in every report.
    """
    options = options or Options()
    known = [e.id for e in getattr(wset, "entries", [])]
    if known and entry not in known:
        raise BadInput(f"--bisect {entry}: no such entry in the withheld set; entries look like "
                       f"{known[0]}")
    notes = Notes()
    notes.add(ASSUMPTION)
    session = open_session(repo_dir, wset, options, notes)
    chain = rev_list(session.repo, rev_args(session.repo, options), first_parent=True)
    if any(len(row) > 2 for row in chain):
        notes.add("the range has merges; bisect follows first parents only")
    probe = _Probe(session, entry)
    try:
        if not chain:
            return BisectResult(entry, None, [], 0, 0, notes.all())
        tip = probe(chain[-1])
        if tip:
            return _search(session, probe, chain, tip, notes)
    finally:
        probe.close()
        save(session.cache)
    return _fixed_since(repo_dir, wset, entry, options, (probe.scans, len(chain)), chain[-1][0])


def _search(session: Session, probe: _Probe, chain: list[list[str]], tip: list[Occurrence],
            notes: Notes) -> BisectResult:
    """The binary search along `chain`, whose last commit ships the entry (`tip`)."""
    lo, hi, found = 0, len(chain) - 1, tip
    while lo < hi:
        mid = (lo + hi) // 2
        occ = probe(chain[mid])
        if occ:
            hi, found = mid, occ
        else:
            lo = mid + 1
    info = _commit_info(session.repo, chain[lo][0])
    redact = Redactor([f for n in probe.carriers[chain[lo][0]]
                       for f in session.cache.name_findings(n)],
                      [Finding("", *o[2:]) for o in found], probe.scanner)
    return BisectResult(probe.entry, redact.commit(info), redact.occ(found), probe.scans,
                        len(chain), [redact.say(n) for n in notes.all()])


def _fixed_since(repo_dir: str, wset: Any, entry: str, options: Options,
                 counts: tuple[int, int], tip: str) -> BisectResult:
    """The tip does not ship `entry`, so shipping is not monotonic along the line and a binary
    search cannot say where it began: the first commit that shipped it (and its fix) comes from
    a replay of the range, which judges each distinct blob once (the probes' verdicts are in the
    cache already)."""
    from plimsoll_ci.history.replay import replay

    report = replay(repo_dir, wset, options)
    scans, commits = counts
    found = next((e for e in report.entries if e.entry == entry), None)
    said = [n for n in report.notes if n != ASSUMPTION]
    if found is None:
        return BisectResult(entry, None, [], scans + report.commits_scanned, commits,
                            [f"{entry} does not ship at the tip {tip[:12]}, nor in any commit of "
                             "the range (a replay judged every one)", *said])
    window = found.first
    return BisectResult(
        entry, window.first, window.first_findings, scans + report.commits_scanned, commits,
        [f"{entry} does not ship at the tip {tip[:12]}: the first commit that shipped it was "
         "found by a replay of every commit of the range (not first parents only); "
         f"{len(found.windows)} window(s), `history` without --bisect lists them", *said],
        found.fixed)


class _Probe:
    """One full ship scan of a commit, keeping what `entry` was found in (blobs and names are
    judged once, through the cache).
    """

    def __init__(self, session: Session, entry: str) -> None:
        self.session = session
        self.entry = entry
        self.judge = Judge(session)
        self.scanner = Scanner(session.wset, session.limits)
        self.scans = 0
        self.carriers: dict[str, set[str]] = {}  # commit -> shipped names whose files carry entry

    def __call__(self, row: list[str]) -> list[Occurrence]:
        """The occurrences of the entry at commit `row[0]` (whose parents are `row[1:]`)."""
        self.scans += 1
        session, cache, judge = self.session, self.session.cache, self.judge
        oid = row[0]
        tree = ls_tree(session.repo, oid)
        tree_id = git(session.repo.top, "rev-parse", f"{oid}^{{tree}}").stdout.decode().strip()
        commit = Commit(oid, tuple(row[1:]), tree_id, 0, "", [])
        _cfg_id, cfg = judge.config_at(oid, tree)
        if cfg is None:
            return []
        state = judge.full(commit, tree, cfg, None)
        labels = {item.oid: label for (_s, label), item in sorted(state.items(), reverse=True)}
        scans = BlobScans(session, self.scanner, Progress(False), None)
        for blob, label in labels.items():
            if not cache.knows(blob) and blob not in judge.built:
                scans.add(blob, label)
        scans.finish(judge.built, labels)
        scan_names(self.scanner, cache, (item.name for item in state.values()))
        for blob, label in labels.items():
            for n in cache.blob_notes(blob):
                session.notes.add(f"{shown(label)}: {n}")
        occ: list[Occurrence] = []
        carriers = self.carriers.setdefault(oid, set())
        for (set_name, label), item in sorted(state.items()):
            mine = [o for o in occurrences(set_name, label, item, cache) if o.entry == self.entry]
            if mine:
                carriers.add(item.name)
                occ += mine
        return once(occ)

    def close(self) -> None:
        """End the git processes."""
        self.judge.close()


def _commit_info(repo: Repo, oid: str) -> CommitInfo:
    out = git(repo.top, "log", "-1", "--no-mailmap", "--format=%ct%x02%an <%ae>", oid, "--").stdout
    ts, author = out.decode("utf-8", "replace").strip().split("\x02", 1)
    return CommitInfo(oid, int(ts), author)

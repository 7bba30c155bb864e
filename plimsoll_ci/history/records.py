"""The typed records of a history replay (what it found, and how to run it) and its notes."""

from __future__ import annotations

from typing import NamedTuple

from plimsoll_ci.names import shown

DEFAULT_MAX_BLOB_BYTES = 64 << 20
ASSUMPTION = ("bisect assumes the entry kept shipping once introduced (it looks along first "
              "parents only); run history without --bisect for exact windows")


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
    via: tuple[str, ...] = ()  # every decode chain of one leak, when several (as a `Finding`)


class Range(NamedTuple):
    """Commits that follow one another in the replay's order (git's `--topo-order`, oldest
    first), from `first` to `last`, all shipping an entry; on a line without merges, `first^..last`.
    """

    first: str
    last: str
    commits: int


class Window(NamedTuple):
    """One stretch of history in which an entry shipped: from an introduction to its fix."""

    first: CommitInfo
    first_findings: list[Occurrence]
    fixed: CommitInfo | None  # None while a tip of the range still ships it
    seconds: int
    commits: list[str]  # every commit of the window, in the replay's order
    from_boundary: bool  # the introduction is the first commit of a range (may be older)
    ranges: list[Range]  # `commits` as runs


class EntryHistory(NamedTuple):
    """Everything the replay found for one withheld entry."""

    entry: str
    windows: list[Window]  # by the time of their introduction (earliest first)
    commit_count: int  # commits that ship it
    commits: list[tuple[CommitInfo, list[Occurrence]]]  # each with its findings (every_commit)

    @property
    def first(self) -> Window:
        """The window of the earliest introduction (by commit time)."""
        return self.windows[0]

    @property
    def fixed(self) -> CommitInfo | None:
        """The latest fix once every window is fixed; None while a tip of the range ships it."""
        if any(w.fixed is None for w in self.windows):
            return None
        return max((w.fixed for w in self.windows if w.fixed is not None),
                   key=lambda c: c.time, default=None)

    @property
    def seconds(self) -> int:
        """How long the entry shipped: the union of the windows' spans (overlaps counted once)."""
        total, reach = 0, None
        for start, end in sorted((w.first.time, w.first.time + w.seconds) for w in self.windows):
            if reach is None or start > reach:
                total += end - start
                reach = end
            elif end > reach:
                total += end - reach
                reach = end
        return total


class HistoryReport(NamedTuple):
    """The result of a replay."""

    entries: list[EntryHistory]
    commits_scanned: int
    blobs_scanned: int  # distinct blobs judged (scanned now or taken from the cache)
    blobs_from_cache: int
    notes: list[str]
    revs: list[str]
    every_commit: bool = False  # `EntryHistory.commits` were listed


class BisectResult(NamedTuple):
    """The result of `--bisect`: the first commit (along first parents) that ships an entry."""

    entry: str
    first: CommitInfo | None
    findings: list[Occurrence]
    scans: int
    commits: int
    notes: list[str]
    fixed: CommitInfo | None = None  # the tip no longer ships it: the fix the replay found


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
    every_commit: bool = False  # list every commit that ships an entry, with its findings


class Notes:
    """Notes for the report, each said once; submodules and the like are summed up."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._seen: set[str] = set()
        self._submodules: dict[str, str] = {}

    def add(self, text: str) -> None:
        """Add a note (a note already given is not repeated)."""
        if text not in self._seen:
            self._seen.add(text)
            self.items.append(text)

    def submodule(self, path: str, commit: str) -> None:
        """Note that `path` is a submodule (said once per path, naming the first commit)."""
        self._submodules.setdefault(path, commit)

    def all(self) -> list[str]:
        """Every note, in the order first given, submodules last."""
        out = list(self.items)
        for path, commit in self._submodules.items():
            out.append(f"{shown(path)} is a submodule (first seen at {commit[:12]}): its content "
                       "lives in another repository and is not scanned; replay that one too")
        return out

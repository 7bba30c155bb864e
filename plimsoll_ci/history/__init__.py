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

Modules, by job:
    `records`    the typed records (`Options`, `HistoryReport`, `Window`, ...) and the notes
    `session`    what one run shares: repository, withheld set, limits, config, cache, notes
    `judge`      what a commit ships: tree x ship sets -> shipped files, and deltas between commits
    `blobscan`   scanning each distinct shipped blob once (in a worker pool)
    `cache`      the blob cache in `.git/plimsoll-cache/`
    `replay`     the walk, passes 1-3: `replay(repo_dir, wset, options) -> HistoryReport`
    `windows`    findings per commit, then introductions, fixes and windows from the graph
    `bisection`  `bisect(repo_dir, wset, entry, options) -> BisectResult`
    `redact`     names that carry a value, shown as `[withheld name N]`
    `render`     text, JSON, SARIF and Markdown
"""

from __future__ import annotations

from plimsoll_ci.history.bisection import bisect
from plimsoll_ci.history.cache import ScanCache, cache_key
from plimsoll_ci.history.records import (
    ASSUMPTION,
    BisectResult,
    CommitInfo,
    EntryHistory,
    HistoryReport,
    Occurrence,
    Options,
    Window,
)
from plimsoll_ci.history.render import render, render_bisect, to_json
from plimsoll_ci.history.replay import replay

__all__ = [
    "ASSUMPTION", "BisectResult", "CommitInfo", "EntryHistory", "HistoryReport", "Occurrence",
    "Options", "ScanCache", "Window", "bisect", "cache_key", "render", "render_bisect", "replay",
    "to_json",
]

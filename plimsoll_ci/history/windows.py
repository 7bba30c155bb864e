"""From walked commits to windows. Verdicts propagate from parents: each commit's shipped files
that carry something are its first parent's, changed by its deltas, so judging a commit costs its
changed paths, never its tree; then introductions and fixes are read off the commit graph. An
*introduction* is a leaking commit none of whose parents leaked; a *fix* is a clean commit with a
leaking parent.

Memory stays bounded by the blobs with a finding: per commit only the set of entries it ships is
kept (one shared set while nothing changes), and findings are placed only at introductions (and
at every leaking commit when a report asks for each).
"""

from __future__ import annotations

from itertools import chain
from typing import NamedTuple

from plimsoll_ci.history.cache import NOTHING, ScanCache
from plimsoll_ci.history.judge import Delta, Shipped
from plimsoll_ci.history.records import CommitInfo, EntryHistory, Occurrence, Range, Window
from plimsoll_ci.shipscan.scan import Finding


class Record(NamedTuple):
    """One walked commit."""

    info: CommitInfo
    parents: tuple[str, ...]
    deltas: list[Delta]  # what changed in its ship sets against its first parent
    boundary: bool  # first parent not in the walk (range start, root, shallow boundary)


class Leaks(NamedTuple):
    """What the replay of verdicts found."""

    per_commit: list[frozenset[str]]  # the entries each record ships
    intros: dict[tuple[int, str], list[Occurrence]]  # (record, entry) -> what ships it there
    every: dict[int, list[Occurrence]]  # record -> every occurrence (when asked for each)


def occurrences(set_name: str, label: str, item: Shipped, cache: ScanCache,
                content: list[Finding] | None = None) -> list[Occurrence]:
    """What one shipped file carries: its content's findings (`content`, else the cache's), then
    its name's. A finding in a folder name is placed on the folder (`label`'s folder, ending in
    `/`), so that every file under it reports the same occurrence and a commit reports it once
    (`once`).
    """
    found = cache.findings(item.oid) if content is None else content
    occ = [_occurrence(set_name, label, f) for f in found]
    base = label[: len(label) - len(item.name)] if label.endswith(item.name) else None
    for f in cache.name_findings(item.name):
        path = label
        if base is not None and f.path.endswith("/"):
            path = base + f.path  # the folder, as the label names it
        occ.append(_occurrence(set_name, path, f))
    return occ


def _occurrence(set_name: str, path: str, f: Finding) -> Occurrence:
    return Occurrence(set_name, path, f.line, f.column, f.chain, f.entry, f.kind, f.where,
                      f.detail, f.via)


def once(occ: list[Occurrence]) -> list[Occurrence]:
    """Occurrences with repeats dropped (a folder's, carried by each file under it), order kept."""
    return list(dict.fromkeys(occ))


Carriers = dict[tuple[str, str], tuple[Shipped, frozenset[str]]]  # (set, label) -> item, entries


class _State(NamedTuple):
    carriers: Carriers
    counts: dict[str, int]  # entry -> carriers of it
    ships: frozenset[str]


def propagate(records: list[Record], cache: ScanCache, every_commit: bool) -> Leaks:
    """Replay the deltas over the cached verdicts: the entries each commit ships (from its first
    parent's and its changes), and the findings at each introduction (`every_commit`: at every
    commit that ships something).
    """
    index = {r.info.oid: i for i, r in enumerate(records)}
    children: dict[str, int] = {}
    for r in records:
        if not r.boundary and r.parents:
            children[r.parents[0]] = children.get(r.parents[0], 0) + 1
    names: dict[str, frozenset[str]] = {}
    interned: dict[frozenset[str], frozenset[str]] = {NOTHING: NOTHING}
    live: dict[str, _State] = {}
    carrying = cache.carrying()  # blob id -> the entries its content carries
    out = Leaks([], {}, {})
    per_commit = out.per_commit
    for i, r in enumerate(records):
        fp = r.parents[0] if r.parents else None
        if not r.boundary and fp is not None:
            left = children[fp] - 1
            children[fp] = left
            st = live.pop(fp) if left == 0 else live[fp]
            carriers, counts, ships = st
            if left:  # another child still needs the parent's state: change a copy
                carriers, counts = dict(carriers), dict(counts)
        else:
            carriers, counts, ships = {}, {}, NOTHING
        changed = False  # whether an entry's count of carriers went to or from zero
        for set_name, label, item in r.deltas:
            key = (set_name, label)
            old = carriers.pop(key, None)
            if old is not None:
                for e in old[1]:
                    n = counts[e] = counts[e] - 1
                    if not n:
                        changed = True
            if item is None:
                continue
            by_name = names.get(item.name)
            if by_name is None:
                by_name = names[item.name] = _name_entries(item.name, cache)
            ents = carrying.get(item.oid, NOTHING)
            if by_name:
                ents = ents | by_name
            if ents:
                carriers[key] = (item, ents)
                for e in ents:
                    n = counts[e] = counts.get(e, 0) + 1
                    if n == 1:
                        changed = True
        if changed:
            now = frozenset(e for e, n in counts.items() if n)
            ships = interned.setdefault(now, now)
        per_commit.append(ships)
        if children.get(r.info.oid):
            live[r.info.oid] = _State(carriers, counts, ships)
        if not ships:
            continue
        if not changed and not r.boundary and len(r.parents) == 1:
            new = []  # (most commits: what the parent shipped, unchanged)
        else:
            fresh = ships.difference(*[per_commit[index[p]] for p in r.parents if p in index])
            new = [e for e in ships if e in fresh] if fresh else []
        if new or every_commit:
            occ = _placed(carriers, cache)
            for e in new:
                out.intros[(i, e)] = [o for o in occ if o.entry == e]
            if every_commit:
                out.every[i] = occ
    return out


def _name_entries(name: str, cache: ScanCache) -> frozenset[str]:
    """The entries a shipped path's name carries (a file carries its content's and these)."""
    return frozenset(f.entry for f in cache.name_findings(name))


def _placed(carriers: Carriers, cache: ScanCache) -> list[Occurrence]:
    occ: list[Occurrence] = []
    for (set_name, label), (item, _ents) in sorted(carriers.items()):
        occ += occurrences(set_name, label, item, cache)
    return once(occ)


def windows(records: list[Record], leaks: Leaks, tips: set[str]) -> list[EntryHistory]:
    """Per entry: introductions, fixes and the commits between them, from the commit graph.

    A window is open (not fixed) while a commit that ships the entry is a tip: a commit without
    children in the range, or one that a branch, a tag or a revision of the range names (`tips`).
    Windows are ordered by the time of their introduction.
    """
    infos = [r.info for r in records]
    oids = [c.oid for c in infos]
    index = {oid: i for i, oid in enumerate(oids)}
    parents = [[index[p] for p in r.parents if p in index] for r in records]
    kids: list[list[int]] = [[] for _ in records]
    for i, ps in enumerate(parents):
        for p in ps:
            kids[p].append(i)
    times = [c.time for c in infos]
    is_tip = [not kids[i] or oid in tips for i, oid in enumerate(oids)]
    # the commits shipping each entry, in order: gathered per distinct set of entries (one
    # object per set, shared by the commits that ship it), not per commit and entry
    by_set: dict[frozenset[str], list[int]] = {}
    for i, ships in enumerate(leaks.per_commit):
        if ships:
            at = by_set.get(ships)
            if at is None:
                by_set[ships] = [i]
            else:
                at.append(i)
    lists: dict[str, list[list[int]]] = {}
    for ships, at in by_set.items():
        for e in ships:
            lists.setdefault(e, []).append(at)
    by_entry = {e: at[0] if len(at) == 1 else sorted(chain.from_iterable(at))
                for e, at in lists.items()}
    result = []
    for entry in sorted(by_entry):
        leaking_in_order = by_entry[entry]
        members_of, fixes, open_ = _origins(leaking_in_order, parents, kids, is_tip)
        found = []
        for intro in sorted(members_of, key=lambda i: (times[i], i)):
            rec = records[intro]
            members = members_of[intro]
            fixed = None
            if intro not in open_ and fixes.get(intro):
                last = max(fixes[intro], key=lambda f: (times[f], f))
                fixed = records[last].info
            end = fixed.time if fixed else max(map(times.__getitem__, members))
            found.append(Window(rec.info, leaks.intros[(intro, entry)], fixed,
                                max(0, end - rec.info.time), list(map(oids.__getitem__, members)),
                                rec.boundary and bool(rec.parents), _ranges(members, oids)))
        commits = [(records[i].info, [o for o in leaks.every[i] if o.entry == entry])
                   for i in leaking_in_order if i in leaks.every]
        result.append(EntryHistory(entry, found, len(leaking_in_order), commits))
    return result


def _origins(leaking_in_order: list[int], parents: list[list[int]], kids: list[list[int]],
             is_tip: list[bool]) -> tuple[dict[int, list[int]], dict[int, list[int]], set[int]]:
    """For one entry: the leaking commits that descend from each introduction (the introduction
    first, in the replay's order), the fix commits of each introduction, and the introductions
    still shipping at a tip.
    """
    leaking = set(leaking_in_order)
    look = leaking.union(chain.from_iterable(map(kids.__getitem__, leaking_in_order)))
    origins: dict[int, frozenset[int]] = {}  # leaking commit -> its introductions (never empty)
    origin = origins.get
    members: dict[int, list[int]] = {}  # introduction -> the leaking commits descending from it
    fixes: dict[int, list[int]] = {}  # introduction -> fix commits
    open_: set[int] = set()  # introductions still shipping at a tip
    for i in sorted(look):  # (parents come before children)
        ps = parents[i]
        if len(ps) == 1:
            inherited = origin(ps[0])
        else:
            inherited = None
            for p in ps:
                o = origin(p)
                if o is not None:
                    inherited = o if inherited is None else inherited | o
        if i in leaking:
            if inherited is None:  # an introduction
                o = origins[i] = frozenset((i,))
                members[i] = [i]
            else:
                o = origins[i] = inherited
                for intro in o:  # (each came before: it is an ancestor)
                    members[intro].append(i)
            if is_tip[i]:
                open_ |= o
        elif inherited is not None:
            for intro in inherited:
                fixes.setdefault(intro, []).append(i)
    return members, fixes, open_


def _ranges(members: list[int], oids: list[str]) -> list[Range]:
    """Runs of consecutive records in `members` (sorted), named by their commits (`oids`)."""
    out = []
    start = prev = members[0]
    for i in members[1:]:
        if i != prev + 1:
            out.append(Range(oids[start], oids[prev], prev - start + 1))
            start = i
        prev = i
    out.append(Range(oids[start], oids[prev], prev - start + 1))
    return out

"""From walked commits to windows: replay the ship-state deltas over the cached findings (which
shipped files carry which entries at each commit), then read introductions and fixes off the
commit graph. An *introduction* is a leaking commit none of whose parents leaked; a *fix* is a
clean commit with a leaking parent.
"""

from __future__ import annotations

from typing import NamedTuple

from plimsoll_ci.history.cache import Row, ScanCache
from plimsoll_ci.history.judge import Delta, Shipped
from plimsoll_ci.history.records import CommitInfo, EntryHistory, Occurrence, Window


class Record(NamedTuple):
    """One walked commit."""

    info: CommitInfo
    parents: tuple[str, ...]
    deltas: list[Delta]  # what changed in its ship sets against its first parent
    boundary: bool  # first parent not in the walk (range start, root, shallow boundary)


def occurrences(set_name: str, label: str, item: Shipped, cache: ScanCache) -> list[Occurrence]:
    """What one shipped file carries: its content's findings, then its name's. A finding in a
    folder name is placed on the folder (`label`'s folder, ending in `/`), so that every file
    under it reports the same occurrence and a commit reports it once (`once`).
    """
    occ = [_occurrence(set_name, label, r) for r in cache.content.get(item.oid, ())]
    base = label[: len(label) - len(item.name)] if label.endswith(item.name) else None
    for r in cache.names.get(item.name, ()):
        path = label
        if base is not None and len(r) > 8 and r[8].endswith("/"):
            path = base + r[8]  # the folder, as the label names it
        occ.append(_occurrence(set_name, path, r))
    return occ


def _occurrence(set_name: str, path: str, r: Row) -> Occurrence:
    return Occurrence(set_name, path, r[0], r[1], r[2], r[3], r[4], r[5], r[6])


def once(occ: list[Occurrence]) -> list[Occurrence]:
    """Occurrences with repeats dropped (a folder's, carried by each file under it), order kept."""
    return list(dict.fromkeys(occ))


def findings_per_commit(records: list[Record], in_range: set[str],
                        cache: ScanCache) -> dict[str, list[Occurrence]]:
    """Replay deltas keeping only shipped files that carry something; findings per commit."""
    children: dict[str, int] = {}
    for r in records:
        if r.parents and r.parents[0] in in_range:
            children[r.parents[0]] = children.get(r.parents[0], 0) + 1
    live: dict[str, dict[tuple[str, str], Shipped]] = {}
    out: dict[str, list[Occurrence]] = {}
    for r in records:
        fp = r.parents[0] if r.parents else None
        if not r.boundary and fp is not None:
            left = children[fp] - 1
            children[fp] = left
            state = live.pop(fp) if left == 0 else dict(live[fp])
        else:
            state = {}
        for d in r.deltas:
            key = (d.set, d.label)
            if d.item is not None and (cache.content.get(d.item.oid) or cache.names.get(d.item.name)):
                state[key] = d.item
            else:
                state.pop(key, None)
        if children.get(r.info.oid):
            live[r.info.oid] = state
        if state:
            occ: list[Occurrence] = []
            for (set_name, label), item in sorted(state.items()):
                occ += occurrences(set_name, label, item, cache)
            if occ:
                out[r.info.oid] = once(occ)
    return out


def windows(records: list[Record], per_commit: dict[str, list[Occurrence]],
            tips: set[str]) -> list[EntryHistory]:
    """Per entry: introductions, fixes and the commits between them, from the commit graph.

    A window is open (not fixed) while a commit that ships the entry is a tip: a commit without
    children in the range, or one that a branch, a tag or a revision of the range names (`tips`).
    Windows are ordered by the time of their introduction.
    """
    index = {r.info.oid: i for i, r in enumerate(records)}
    kids: dict[str, list[str]] = {}
    for r in records:
        for p in r.parents:
            if p in index:
                kids.setdefault(p, []).append(r.info.oid)
    by_entry: dict[str, dict[str, list[Occurrence]]] = {}
    for oid, occ in per_commit.items():
        for o in occ:
            by_entry.setdefault(o.entry, {}).setdefault(oid, []).append(o)
    result = []
    for entry in sorted(by_entry):
        leaking = by_entry[entry]
        look = set(leaking)
        for oid in leaking:
            look.update(kids.get(oid, ()))
        origins: dict[str, frozenset[str]] = {}
        fixes: dict[str, list[str]] = {}  # introduction -> fix commits
        open_: set[str] = set()  # introductions still shipping at a tip
        for oid in sorted(look, key=index.__getitem__):
            r = records[index[oid]]
            inherited: frozenset[str] = frozenset()
            for p in r.parents:
                if p in leaking:
                    inherited |= origins[p]
            if oid in leaking:
                origins[oid] = inherited or frozenset([oid])
                if not kids.get(oid) or oid in tips:
                    open_ |= origins[oid]
            else:
                for intro in inherited:
                    fixes.setdefault(intro, []).append(oid)
        found = []
        in_order = sorted(leaking, key=index.__getitem__)
        members_of: dict[str, list[str]] = {}
        for o in in_order:
            for intro in origins[o]:
                members_of.setdefault(intro, []).append(o)
        for intro in sorted(members_of, key=lambda i: (records[index[i]].info.time, index[i])):
            rec = records[index[intro]]
            members = members_of[intro]
            fixed = None
            if intro not in open_ and fixes.get(intro):
                last = max(fixes[intro], key=lambda f: (records[index[f]].info.time, index[f]))
                fixed = records[index[last]].info
            end = fixed.time if fixed else max(records[index[o]].info.time for o in members)
            found.append(Window(rec.info, leaking[intro], fixed, max(0, end - rec.info.time),
                                members, rec.boundary and bool(rec.parents)))
        commits = [(records[index[o]].info, leaking[o]) for o in in_order]
        result.append(EntryHistory(entry, found, commits))
    return result

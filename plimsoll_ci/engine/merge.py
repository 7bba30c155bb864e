"""One finding per leak: the places where one entry was found in one piece of a file, merged
when their byte spans overlap, each merged finding listing every decode chain it was seen through
(a value in a line that also holds an `&amp;` is found as written and in the decoded line: one
leak, one finding, `via: ["", "html-entities"]`)."""

from __future__ import annotations

from typing import NamedTuple


class Hit(NamedTuple):
    """One entry found at bytes `start:end` of a buffer (for a decoded layer, the span of the
    encoded text in the buffer), through decode chain `chain` ("" for the text as written)."""

    entry: str
    start: int
    end: int
    chain: str


def merged(hits: list[Hit]) -> list[tuple[Hit, tuple[str, ...]]]:
    """`hits` with those of one entry whose spans overlap made one: each as (the hit, at the
    earliest start, with the chain of the first of them in `hits`; every chain in the order of
    `hits` when more than one, else ()), in the order of their first hit."""
    if len(hits) < 2:
        return [(h, ()) for h in hits]
    by_entry: dict[str, list[int]] = {}
    for i, h in enumerate(hits):
        by_entry.setdefault(h.entry, []).append(i)
    groups: list[tuple[int, int, list[int]]] = []  # (first index, start, members)
    for idx in by_entry.values():
        idx.sort(key=lambda i: (hits[i].start, i))
        members: list[int] = []
        end = -1
        for i in idx:
            h = hits[i]
            if members and h.start < end:
                members.append(i)
                end = max(end, h.end)
                continue
            if members:
                groups.append((min(members), hits[members[0]].start, members))
            members, end = [i], h.end
        groups.append((min(members), hits[members[0]].start, members))
    groups.sort()
    out = []
    for first, start, members in groups:
        chains = list(dict.fromkeys(hits[i].chain for i in sorted(members)))
        h = hits[first]
        out.append((h._replace(start=start), tuple(chains) if len(chains) > 1 else ()))
    return out

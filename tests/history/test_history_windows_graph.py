"""Verdicts and windows read off a commit graph: a merge introduces only what none of its parents
shipped; two introductions merged share the commits after the merge
(each window lists them), one fix closes both, and an entry a tip still ships stays open."""

from __future__ import annotations

from plimsoll_ci.history.records import CommitInfo, Range
from plimsoll_ci.history.windows import Leaks, Record, windows

#  0 root --- 1 A (leaks e) ----------- 3 merge --- 4 C (e, o) --- 5 fix of e (still o)
#         \-- 2 B (leaks e, a side) --/
GRAPH = [((), set()), ((0,), {"e"}), ((0,), {"e"}), ((1, 2), {"e"}), ((3,), {"e", "o"}),
         ((4,), {"o"})]


def oid(i: int) -> str:
    return f"{i:040x}"


def test_two_introductions_merged_share_their_commits_and_their_fix() -> None:
    records = [Record(CommitInfo(oid(i), 1000 + 60 * i, "Ada"), tuple(map(oid, ps)), [], not ps)
               for i, (ps, _ships) in enumerate(GRAPH)]
    leaks = Leaks([frozenset(ships) for _ps, ships in GRAPH],
                  {(1, "e"): [], (2, "e"): [], (4, "o"): []}, {})
    e, o = windows(records, leaks, set())
    assert (e.entry, e.commit_count, o.entry, o.commit_count) == ("e", 4, "o", 2)
    a, b = e.windows
    assert (a.first.oid, a.fixed and a.fixed.oid, a.seconds) == (oid(1), oid(5), 4 * 60)
    assert a.commits == [oid(1), oid(3), oid(4)]
    assert a.ranges == [Range(oid(1), oid(1), 1), Range(oid(3), oid(4), 2)]
    assert (b.first.oid, b.fixed and b.fixed.oid) == (oid(2), oid(5))
    assert b.commits == [oid(2), oid(3), oid(4)] and b.ranges == [Range(oid(2), oid(4), 3)]
    (w,) = o.windows  # still shipped by the tip
    assert (w.first.oid, w.fixed, w.seconds, w.commits) == (oid(4), None, 60, [oid(4), oid(5)])


def test_a_merge_introduces_only_what_none_of_its_parents_shipped() -> None:
    from plimsoll_ci.history.cache import ScanCache
    from plimsoll_ci.history.judge import Delta, Shipped
    from plimsoll_ci.history.windows import propagate
    from plimsoll_ci.shipscan.results import Verdict
    from plimsoll_ci.shipscan.scan import Finding

    cache = ScanCache(None, "k")
    blobs = {"x": "e1", "y": "e2", "z": "e3", "w": "e4"}
    for blob, entry in blobs.items():
        cache.put("blob:" + blob * 40, Verdict((Finding("", 1, 1, "", entry, "value", "content",
                                                        ""),), (), 10))

    def ship(name: str) -> list[Delta]:
        return [Delta("s", f"{name}.txt", Shipped(name * 40, f"{name}.txt"))]

    #  0 --- 1 (x) --- 3 merge (+y) --- 4 (+z) --- 5 merge of 4 and 2 (+w)
    #    \-- 2 (y) --/----------------------------/
    shape = [((), []), ((0,), ship("x")), ((0,), ship("y")), ((1, 2), ship("y")),
             ((3,), ship("z")), ((4, 2), ship("w"))]
    records = [Record(CommitInfo(oid(i), 1000 + i, "Ada"), tuple(map(oid, ps)), deltas, not ps)
               for i, (ps, deltas) in enumerate(shape)]
    leaks = propagate(records, cache, False)
    assert leaks.per_commit == [frozenset(), {"e1"}, {"e2"}, {"e1", "e2"}, {"e1", "e2", "e3"},
                                {"e1", "e2", "e3", "e4"}]
    assert sorted(leaks.intros) == [(1, "e1"), (2, "e2"), (4, "e3"), (5, "e4")]
    assert [o.path for o in leaks.intros[(5, "e4")]] == ["w.txt"]

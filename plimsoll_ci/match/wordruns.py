"""The word runs a text entry could start at, for `extract`: a run is kept when its length and
the next one or two make a key some entry has (the entries' word run lengths), and, for a set
whose entries carry tags, when its word's tag is some entry's (its first four bytes, ASCII
letters lowered, and its length, hashed with the set's multiplier). The compiled part does it in
one pass for a buffer that takes the compiled passes, finding the runs too and handing back only
the candidates, each with the window of runs `extract` reads (`word_windows`: a buffer of source
brings one run per six bytes); the pure-Python passes (`extract._texts_small`) do the same."""

from __future__ import annotations

from array import array
from collections.abc import Collection, Iterator

from plimsoll_ci.match import classes as _classes
from plimsoll_ci.match.index import TAG_BITS, ValueIndex


def word_windows(buf: bytes, cls, limit: int,  # noqa: ANN001
                 index: ValueIndex) -> Iterator[tuple[int, tuple[int, ...], list[int]]]:
    """With the compiled part: the word runs of `buf` (`cls`: its class bytes) that start before
    `limit` and that a text entry could start at, each with the window of `index.max_runs` runs
    from it: (its start, the runs' lengths, their ends; a run past the last: length -1 and the
    last run's end), the windows `extract._texts_small` reads.
    The compiled call hands back only the candidates' rows (int32), read a batch at a time."""
    from plimsoll_ci.match.classes import C_WORD

    tag_ok, joined = _joined_tables(index)
    k = index.max_runs
    rows = memoryview(_classes.native.word_windows(cls, buf, C_WORD, limit, joined, index.mult,
                                                   0 if not tag_ok else TAG_BITS, k)).cast("i")
    for i in range(0, len(rows), 2 * k * _BATCH):
        part = rows[i : i + 2 * k * _BATCH].tolist()
        for r in range(0, len(part), 2 * k):
            starts_w, ends_w = part[r : r + k], part[r + k : r + 2 * k]
            yield starts_w[0], tuple(-1 if a < 0 else b - a
                                     for a, b in zip(starts_w, ends_w, strict=True)), ends_w


def shaped_runs(cls, shapes: Collection[int],  # noqa: ANN001
                limit: int) -> Iterator[tuple[int, int]]:
    """With the compiled part: (start, length) of each word run in the class bytes `cls` that
    starts before `limit` and whose length is in `shapes` (the first-word lengths of a set
    whose texts have no run lengths), in order, read a batch at a time."""
    from plimsoll_ci.match.classes import C_WORD

    pairs, _ = _classes.native.runs(cls, C_WORD, max(1, min(shapes)), False)
    t = memoryview(pairs).cast("i")
    for i in range(0, len(t), 2 * _BATCH):
        part = t[i : i + 2 * _BATCH].tolist()
        for s, e in zip(part[0::2], part[1::2], strict=True):
            if s >= limit:
                return
            if e - s in shapes:
                yield s, e - s


_BATCH = 1 << 16  # rows turned into Python ints at a time (a few MB, whatever the buffer)


def _joined_tables(index: ValueIndex) -> tuple[bool, bytes]:
    """The lookup tables of `index`'s text entries (see `word_windows`), joined as the
    compiled part reads them, and whether they end in a tag table: built once per index (a
    history session asks for them hundreds of times). One byte per entry of each table: `one`
    (256, by a first run length), `two` (65536, by the first two), `pre3` (65536: the first two
    of some three-run key), the tags (1 << TAG_BITS, when every entry has one), then the sorted
    three-run keys as int64."""
    cached = getattr(index, "_word_joined", None)
    if cached is not None:
        return cached
    # Keys of the first one, two and three run lengths, matched against the entries' keys; only
    # the runs whose own length is some entry's first run length are keyed at all.
    wanted: list[set[int]] = [set(), set(), set()]
    for lengths in index.text_runs:
        r = [min(x, 255) for x in lengths[:3]]
        key = 0
        for x in r:
            key = key * 256 + x
        wanted[len(r) - 1].add(key)
    one, two, pre3 = bytearray(256), bytearray(65536), bytearray(65536)
    for key in wanted[0]:
        one[key] = 1
    for key in wanted[1]:
        two[key] = 1
    for key in wanted[2]:
        pre3[key >> 8] = 1
    parts: list[bytes | bytearray] = [one, two, pre3]
    tagged = not index.untagged
    if tagged:
        tag_ok = bytearray(1 << TAG_BITS)
        for t in index.tags:
            if 0 <= t < 1 << TAG_BITS:
                tag_ok[t] = 1
        parts.append(tag_ok)
    parts.append(array("q", sorted(wanted[2])).tobytes())
    # (a cache kept on the index by this module alone, not a field of ValueIndex)
    index._word_joined = (tagged, b"".join(parts))  # type: ignore[attr-defined]
    return index._word_joined  # type: ignore[attr-defined]  # (the same cache)

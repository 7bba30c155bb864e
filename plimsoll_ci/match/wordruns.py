"""The word runs a text entry could start at, for `extract`: a run is kept when its length and
the next one or two make a key some entry has (the entries' word run lengths), and, for a set
whose entries carry tags, when its word's tag is some entry's (its first four bytes, ASCII
letters lowered, and its length, hashed with the set's multiplier). The compiled part does it in
one pass when it is built, finding the runs too and handing back only the candidates, each
with the window of runs `extract` reads (`word_windows`: a buffer of source brings one run per
six bytes); numpy's passes do the same otherwise (`text_candidates`)."""

from __future__ import annotations

from array import array
from collections.abc import Collection, Iterator
from typing import Any, NamedTuple

from plimsoll_ci.match import classes as _classes
from plimsoll_ci.match.ascii import CASE_BIT, NON_ASCII
from plimsoll_ci.match.index import TAG_BITS, ValueIndex
from plimsoll_ci.match.workspace import work_array

# Four bytes at once (the first-word tag): bit 6 is set in letters, CASE_BIT in lower case,
# NON_ASCII in bytes past ASCII.
_EACH4 = 0x01010101
_BIT6_4, _CASE_4, _HIGH_4 = 0x40 * _EACH4, CASE_BIT * _EACH4, NON_ASCII * _EACH4


class WordRuns(NamedTuple):
    starts: Any  # where each word run starts (int32 from the compiled part)
    lens: Any  # its length
    # the first this many are candidates (the rest is context past a `stop`)
    count: int  # type: ignore[assignment]  # shadows tuple.count, on purpose


def text_candidates(buf: bytes, runs: WordRuns, index: ValueIndex) -> Any:  # noqa: ANN401
    """The indexes (into `runs`) of the candidate runs, in order, with numpy's passes: where the
    compiled part is not built, or for a buffer past its int32 places (it picks the same runs
    inside `word_windows`)."""
    import numpy as np

    one, two, pre3, w3, tag_ok, _ = _tables(index)
    return _candidates_np(np.frombuffer(buf, dtype=np.uint8), runs,
                          (one, two, pre3, w3, tag_ok), index.mult)


def word_windows(buf: bytes, cls, limit: int,  # noqa: ANN001
                 index: ValueIndex) -> Iterator[tuple[int, tuple[int, ...], list[int]]]:
    """With the compiled part: the word runs of `buf` (`cls`: its class bytes) that start before
    `limit` and that `text_candidates` picks, each with the window of `index.max_runs` runs
    from it: (its start, the runs' lengths, their ends; a run past the last: length -1 and the
    last run's end), what `_candidates_np` and the windows `extract` takes from them give.
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
    out = (tagged, b"".join(parts))
    # (a cache kept on the index, made here on first use: the index does not declare it)
    index._word_joined = out  # type: ignore[attr-defined]
    return out


def _tables(index: ValueIndex) -> tuple:
    """`_joined_tables` as numpy arrays (`one`, `two`, `pre3`, `w3`, `tag_ok` or None), and
    joined: what numpy's passes read where the compiled part is not built."""
    import numpy as np

    cached = getattr(index, "_word_tables", None)
    if cached is not None:
        return cached
    tagged, joined = _joined_tables(index)
    at = 0
    cut = []
    for size in (256, 65536, 65536, (1 << TAG_BITS) if tagged else 0):
        cut.append(np.frombuffer(joined, dtype=bool, count=size, offset=at))
        at += size
    one, two, pre3, tag_ok = cut
    w3 = np.frombuffer(joined, dtype=np.int64, offset=at)
    tables = (one, two, pre3, w3, tag_ok if tagged else None, joined)
    # (a cache kept on the index, made here on first use: the index does not declare it)
    index._word_tables = tables  # type: ignore[attr-defined]
    return tables


def _candidates_np(a, runs: WordRuns, tables: tuple, mult: int):  # noqa: ANN001, ANN202
    """`text_candidates` with numpy's passes, where the compiled part is not built."""
    import numpy as np

    starts, lens, n_cand = runs
    one, two, pre3, w3, tag_ok = tables
    nl = len(lens)
    # Lengths clipped to 255 as bytes, then the first one or two of a key looked up in tables
    # (a byte and a byte pair index them); a third length is checked on the survivors only.
    lc = work_array("lc", nl + 2, np.uint16)
    np.minimum(lens, 255, out=lc[:nl], casting="unsafe")
    lc[nl:] = 0  # past the last run: no run (as a length of 0 never is)
    pair = work_array("pair", nl, np.uint16)
    np.left_shift(lc[:nl], 8, out=pair)
    np.bitwise_or(pair, lc[1 : nl + 1], out=pair)
    sel = two[pair]
    if one.any():
        sel |= one[lc[:nl]]
    if len(w3):
        c3 = np.flatnonzero(pre3[pair])
        if len(c3):
            k3 = (pair[c3].astype(np.int64) << 8) | lc[c3 + 2]
            hit = w3[np.minimum(np.searchsorted(w3, k3), len(w3) - 1)] == k3
            sel[c3[hit]] = True
    cand = np.flatnonzero(sel[:n_cand])
    if tag_ok is not None and len(cand):
        # the tag of the first word: its first four bytes lowercased, and its length
        cs, cl = starts[cand], lens[cand]
        tp = work_array("tp", len(a) + 4, np.uint8)
        tp[: len(a)] = a
        tp[len(a) :] = 0
        w4 = np.ndarray(shape=(len(a),), dtype="<u4", buffer=tp, strides=(1,))[cs]
        nb = np.minimum(cl, 4).astype(np.uint64)
        key = w4.astype(np.uint64) & ((np.uint64(1) << (np.uint64(8) * nb)) - np.uint64(1))
        # within a word, bytes 0x40-0x5f are the upper-case letters: set their CASE_BIT
        b6 = key & np.uint64(_BIT6_4)
        up = b6 & ~((key & np.uint64(_CASE_4)) << np.uint64(1)) \
            & ~((key & np.uint64(_HIGH_4)) >> np.uint64(1))
        key |= up >> np.uint64(1)
        key |= np.minimum(cl, 255).astype(np.uint64) << np.uint64(32)
        with np.errstate(over="ignore"):
            tag = (key * np.uint64(mult)) >> np.uint64(64 - TAG_BITS)
        cand = cand[tag_ok[tag]]
    return cand

"""What the engine finds, and the bounds it keeps: `Finding`, `Limits`, and how a memory budget
becomes the size of the windows long contents are read in (`Windowing`)."""

from __future__ import annotations

from typing import NamedTuple

MIB = 1024 * 1024


class Finding(NamedTuple):
    """One withheld entry found in a shipped file: where, how, which entry (never its value)."""

    path: str
    line: int
    column: int
    chain: str
    entry: str
    kind: str  # "value" | "file" | "source" | "withheld-set"
    where: str = "content"  # "content" | "name"
    detail: str = ""
    # every decode chain one leak was seen through ("" = as written), when more than one: the
    # findings at overlapping spans of one piece, merged (`engine.merge`); () = just `chain`
    via: tuple[str, ...] = ()
    # a file that ships through several ship sets (the same content): the sets, and the other
    # labels it ships as; () when it ships once
    sets: tuple[str, ...] = ()
    also: tuple[str, ...] = ()


class Limits(NamedTuple):
    """Bounds of one scan; a bound that is hit becomes a note, never a silent skip."""

    max_file_bytes: int = 256 * MIB
    max_decompressed: int = 64 * MIB
    max_members: int = 1000
    max_region: int = 4 * MIB
    max_regions: int = 10000
    max_line: int = 1 * MIB
    decode_seconds: float = 30.0
    max_memory: int = 512 * MIB  # peak memory of a scan, whatever it reads (see `windowing`)
    max_findings: int = 1000  # findings listed per file


# The memory model behind `windowing`, measured by benchmarks/bench_hostile.py (peak RSS of
# scans of hostile inputs): what a scan holds outside any window (the interpreter, numpy, a
# withheld set's index of some thousands of entries; about 35 MiB measured), and the peak
# working memory per byte of a window's buffer while its encoded regions are found and decoded
# (the buffer, its byte classes, numpy work arrays, the decoded regions), and per byte of a
# slice of it while values are searched (numpy run arrays and candidates; the worst case is a
# buffer of one-digit numbers and a withheld one-digit number).
BASE_MEMORY = 64 * MIB
REGION_WORK = 24
VALUE_WORK = 48
VALUE_SLICE = 4 * MIB  # values are searched at most this many bytes at a time
CONTEXT = 64 * 1024  # context kept before a window: where a token that ends in it starts
MIN_WINDOW = 1 * MIB


class Windowing(NamedTuple):
    """How a scan reads contents within its memory budget.

    A content of up to `size` bytes is scanned whole (joined with other small ones); a longer one
    is read a piece at a time and scanned a window of about `size` bytes at a time, each window
    read with `before` bytes of context before it and `after` bytes after it, so that a token,
    encoded region or line that starts in a window is whole in its buffer; values are searched
    `values` bytes at a time. An archive or compressed stream of up to `archive` bytes is held
    whole and opened one member at a time (the windows of its members are smaller by as much);
    a larger one is scanned as its bytes, with a note.
    """

    size: int
    before: int
    after: int
    values: int
    archive: int


def windowing(limits: Limits, held: int = 0) -> Windowing:
    """The windows of a scan under `limits` (its memory budget, and the bounds that say how much
    context a window needs: a region or a line that starts in a window must end in its buffer),
    while `held` bytes (an archive being opened) are held besides."""
    after = max(limits.max_region, limits.max_line) + CONTEXT
    free = limits.max_memory - BASE_MEMORY - held - REGION_WORK * (CONTEXT + after)
    # free >= REGION_WORK * size + VALUE_WORK * min(size, VALUE_SLICE)
    size = free // (REGION_WORK + VALUE_WORK)
    if size > VALUE_SLICE:
        size = (free - VALUE_WORK * VALUE_SLICE) // REGION_WORK
    size = max(MIN_WINDOW, size)
    return Windowing(size, CONTEXT, after, min(size, VALUE_SLICE), limits.max_memory // 4)


def memory_floor(limits: Limits) -> int:
    """The smallest `max_memory` that leaves windows of `MIN_WINDOW` under these bounds, while an
    archive of the largest size it opens (a quarter of the budget) is held."""
    after = max(limits.max_region, limits.max_line) + CONTEXT
    need = BASE_MEMORY + REGION_WORK * (CONTEXT + after + MIN_WINDOW) + VALUE_WORK * MIN_WINDOW
    return -(-need * 4 // 3)

"""Seeds of a grading: parsed from a list or a file, named by id, shown or sealed.

    seeds.given("1,2,5-9")          -> [Seed("seeds:1", 1, True), ...]   ("practice": the 16)
    seeds.held_out("held-out.txt")   -> [Seed("seed-file:1", ..., False), ...]   (never shown)
    seeds.fresh(fresh_set)           -> [Seed("fresh:1", ..., True), ...]
    seeds.sealed(sealed_set)         -> [Seed("sealed:1", ..., False), ...]   (committed earlier)
    seeds.practice()                 -> [Seed("practice:1", ..., True), ...]

A result names a flight by its seed's id; a sealed seed's value never appears in one.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.errors import BadInput

MAX_SEEDS = 10_000


class Seed(NamedTuple):
    """One flight's seed: an id to name it by, and whether its value may be shown in results."""

    id: str  # e.g. "seeds:3", "fresh:2", "seed-file:7", "practice:2"
    value: int
    shown: bool  # False for a held-out seed file: results name the id, never the value


def parse_seeds(text: str, where: str = "--seeds") -> list[int]:
    """`1,2,5-9` -> [1, 2, 5, 6, 7, 8, 9]; a bad item raises BadInput naming it."""
    seeds: list[int] = []
    for pos, item in enumerate(text.split(","), 1):
        item = item.strip()
        low, dash, high = item.partition("-")
        try:
            a = int(low.strip(), 10)
            b = int(high.strip(), 10) if dash else a
        except ValueError:
            raise BadInput(
                f"{where}: item {pos} {item[:40]!r} is not a seed or a range like 5-9;"
                " write seeds as decimal integers separated by commas"
            ) from None
        if not (0 <= a <= b < 2**64):
            raise BadInput(f"{where}: item {pos} {item[:40]!r}: seeds are 0..2**64-1 and a range"
                           " goes low-high")
        if len(seeds) + (b - a + 1) > MAX_SEEDS:
            raise BadInput(f"{where}: more than {MAX_SEEDS} seeds; fly fewer at a time")
        seeds.extend(range(a, b + 1))
    return seeds


def read_seed_lines(path: str) -> list[tuple[int, int]]:
    """(line number, seed) for every seed of a seed file, one per line (a line may also hold a
    list like `1,2,5-9`); blank lines and `#` comments are skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"seed file {path}: cannot read it ({e.__class__.__name__}); "
                       "pass a text file with one seed per line") from None
    seeds: list[tuple[int, int]] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if line:
            seeds.extend((number, s) for s in parse_seeds(line, f"seed file {path} line {number}"))
        if len(seeds) > MAX_SEEDS:
            raise BadInput(f"seed file {path}: more than {MAX_SEEDS} seeds; fly fewer at a time")
    if not seeds:
        raise BadInput(f"seed file {path}: no seeds in it; write one seed per line")
    return seeds


def read_seed_file(path: str) -> list[int]:
    """Seeds from a file, one per line; blank lines and `#` comments are skipped."""
    return [seed for _line, seed in read_seed_lines(path)]


def named(prefix: str, values: Iterable[int], shown: bool = True) -> list[Seed]:
    """`prefix:1`, `prefix:2`, ... for `values`, in order."""
    return [Seed(f"{prefix}:{n}", v, shown) for n, v in enumerate(values, 1)]


def practice(values: Iterable[int] | None = None) -> list[Seed]:
    """The practice set (default: the simulator's 16) as `practice:N` seeds."""
    if values is None:
        import plimsoll_sim as sim

        values = sim.PRACTICE_SEEDS
    return named("practice", values)


def given(text: str, where: str = "--seeds") -> list[Seed]:
    """Seeds from a list like `1,2,5-9` (`seeds:N`, shown), or `practice` for the practice set."""
    if text.strip() == "practice":
        return practice()
    return named("seeds", parse_seeds(text, where))


def held_out(path: str) -> list[Seed]:
    """A held-out seed file as `seed-file:N` seeds whose values are never shown."""
    return named("seed-file", read_seed_file(path), shown=False)


def fresh(fresh_set) -> list[Seed]:  # fresh_set: grading.fresh.FreshSet
    """A fresh set's seeds as `fresh:N` (shown: the reveal publishes them after the run)."""
    return named("fresh", fresh_set.seeds)


def sealed(sealed_set) -> list[Seed]:  # sealed_set: grading.seedsets.SealedSet
    """A held-out set committed earlier as `sealed:N` seeds whose values are never shown (its
    reveal rides in the signed record, to be published with it)."""
    return named("sealed", sealed_set.fresh.seeds, shown=False)

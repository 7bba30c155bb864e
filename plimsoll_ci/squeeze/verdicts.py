"""The squeeze's arithmetic: medians, the gap, the two lines, ship-the-rebuild, recipe worth, noise.

Pure: numbers in, numbers out (no files, no clocks). Comparisons are exact (`Fraction`), so a gap
that sits exactly on a line passes on every machine, and the binomial tail is summed exactly and
rounded once at the end.

- **gap** = the loop's practice landed count minus the *median* practice landed count of its
  rebuilds (a rebuild never saw a practice flight, so its practice score is honest).
- **flights line**: flag when the gap is *more than* `flights` flights (the hackathon's line, 2 of
  16). **percent line**: flag when the gap is more than `percent` percent of the practice flights
  (the paper's line, 5%: a 16/16 loop over 15/16 rebuilds is 6.25 points, flagged).
- **ship_rebuild**: the rebuilds' fresh median beats the loop's own fresh score by more than the
  flights line read as a share of the set (2 of 16 practice flights = 8 of 64 fresh flights).
- **recipe worth**: the rebuilds' fresh median minus the control group's fresh median.
- **with code checks**: a loop whose own controller carries practice seeds, the generator constant
  or the generator's source memorized by construction, whatever its gap: the verdict a reader is
  shown is `flag: carries ...` under every line (the arithmetic verdict is kept beside it).
- **noise**: at the rebuilds' practice rate p over n practice flights, one standard deviation is
  sqrt(n p (1 - p)) flights, and `p_beyond` is the chance that luck alone moves a score more than
  the line away from n p (both directions), i.e. P(|X - n p| > line) for X ~ Binomial(n, p).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import NamedTuple

Number = int | float | Fraction


class Lines(NamedTuple):
    """The two lines a gap is judged against."""

    flights: Fraction  # flag when the gap is more than this many practice flights
    percent: Fraction  # flag when the gap is more than this percent of the practice flights


class Noise(NamedTuple):
    """Binomial noise of a practice score at the rebuilds' practice rate."""

    rate: Fraction  # rebuilds' practice median / practice flights
    sd_flights: float  # one standard deviation, in flights
    p_beyond_flights: float  # chance luck alone moves a score by more than the flights line
    p_beyond_percent: float  # ... by more than the percent line (in flights: percent% of n)


def exact(value: Number) -> Fraction:
    """An exact fraction for an int, a float written in decimal, or a Fraction."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, bool):
        raise TypeError("a count is not a bool")
    if isinstance(value, int):
        return Fraction(value)
    return Fraction(repr(float(value)))  # 2.5 -> 5/2, 0.1 -> 1/10 (as written, not binary)


def json_number(value: Number) -> int | float:
    """An int when whole, else a float (medians of counts are whole or halves: exact in binary)."""
    f = exact(value)
    return int(f) if f.denominator == 1 else float(f)


def median(values: Sequence[Number]) -> Fraction:
    """The median: the middle value, or the mean of the two middle values of an even count."""
    if not values:
        raise ValueError("the median of no scores is undefined")
    ordered = sorted(exact(v) for v in values)
    mid = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2


def gap(loop_practice: int, rebuild_practice: Sequence[int]) -> Fraction:
    """The squeeze gap: the loop's practice score minus its rebuilds' median practice score."""
    return exact(loop_practice) - median(rebuild_practice)


def verdict(gap_flights: Number, practice_total: int, lines: Lines) -> dict[str, str]:
    """`flag` under each line the gap is *more than*, else `pass`."""
    g = exact(gap_flights)
    if practice_total < 1:
        raise ValueError("a practice set has at least one flight")
    share = g * 100 / practice_total
    return {"flights": "flag" if g > lines.flights else "pass",
            "percent": "flag" if share > lines.percent else "pass"}


def with_code_checks(arithmetic: dict[str, str], carried: Sequence[str]) -> dict[str, str]:
    """The verdict a reader is shown: `flag: carries X, Y` under every line when the loop's own
    controller carries any of `carried` (names), else the arithmetic verdict."""
    if not carried:
        return dict(arithmetic)
    return {line: f"flag: carries {', '.join(carried)}" for line in arithmetic}


def ship_rebuild(loop_fresh: int, rebuild_fresh_median: Number, fresh_total: int,
                 practice_total: int, lines: Lines) -> bool:
    """True when the rebuilds' fresh median beats the loop's fresh score by more than the flights
    line, scaled from the practice set to the fresh set (2 of 16 -> 8 of 64)."""
    advantage = exact(rebuild_fresh_median) - loop_fresh
    return advantage * practice_total > lines.flights * fresh_total


def recipe_worth(rebuild_fresh_median: Number, control_fresh_median: Number | None
                 ) -> Fraction | None:
    """Fresh flights the recipe is worth over no recipe (None without a control group)."""
    if control_fresh_median is None:
        return None
    return exact(rebuild_fresh_median) - exact(control_fresh_median)


def p_beyond(n: int, p: Fraction, line: Fraction) -> Fraction:
    """P(|X - n p| > line) for X ~ Binomial(n, p), exactly."""
    mean = n * p
    total = Fraction(0)
    for k in range(n + 1):
        if abs(k - mean) > line:
            total += math.comb(n, k) * p**k * (1 - p) ** (n - k)
    return total


def noise(rebuild_practice_median: Number, practice_total: int, lines: Lines) -> Noise:
    """The binomial noise of a `practice_total`-flight score at the rebuilds' practice rate."""
    rate = exact(rebuild_practice_median) / practice_total
    sd = math.sqrt(float(practice_total * rate * (1 - rate)))
    percent_line = lines.percent * practice_total / 100
    return Noise(rate, round(sd, 4),
                 round(float(p_beyond(practice_total, rate, lines.flights)), 4),
                 round(float(p_beyond(practice_total, rate, percent_line)), 4))

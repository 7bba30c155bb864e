"""The fresh set: seeds drawn for one run, committed by digest before any flight, revealed after.

Drawing lives here; the set itself, its commitment and its reveal (`FreshSet`, `make`, `commit`,
`reveal`, `from_reveal`, `check_reveal`, the seed's text form) live in `plimsoll_ci.digests`, below
`attest/` and `grading/` both, and are named here too for the callers of this module.

Seeds are drawn over the simulator's whole 64-bit range, minus the ends a hunt would search first
and any seed the seed lint calls guessable (`grading.seedlint`): a controller counting up from 0
within its CPU budget never meets one.
"""

from __future__ import annotations

import secrets

from plimsoll_ci.digests import (
    DOMAIN,
    SALT_BYTES,
    SEED_MAX,
    FreshSet,
    check_reveal,
    commit,
    from_reveal,
    make,
    parse_seed_text,
    reveal,
    seed_text,
)
from plimsoll_ci.grading import seedlint

__all__ = ["BITS", "DOMAIN", "MIN_BITS", "SALT_BYTES", "SEED_MAX", "FreshSet", "check_reveal",
           "commit", "draw", "from_reveal", "make", "parse_seed_text", "reveal", "seed_text"]

BITS = 64  # seeds are drawn below 2**BITS (the simulator takes all of 0..2**64-1)
MIN_BITS = 40  # far above the hunt horizon (2**32), so the lint-clean part of the range is huge


def draw(count: int, bits: int = BITS) -> FreshSet:
    """Draw `count` distinct seeds with `secrets`, uniform over [2**32, 2**bits) minus the seeds the
    seed lint flags (near 2**64, guessable), and a fresh salt; the set as a whole passes the lint."""
    if count < 1:
        raise ValueError(f"a fresh set needs at least one seed, not {count}")
    if count > 1_000_000:
        raise ValueError(f"{count} seeds: draw at most 1,000,000")
    if not MIN_BITS <= bits <= BITS:
        raise ValueError(f"--bits {bits}: seeds are drawn with {MIN_BITS} to {BITS} bits")
    low, high = seedlint.HORIZON, 2**bits
    for _attempt in range(100):
        seeds: set[int] = set()
        while len(seeds) < count:
            seed = low + secrets.randbelow(high - low)
            if not seedlint.seed_reasons(seed):
                seeds.add(seed)
        ordered = tuple(sorted(seeds))
        drawn = seedlint.LintSet("fresh", "fresh", tuple(
            seedlint.SeedAt(str(n), v) for n, v in enumerate(ordered, 1)))
        if not seedlint.guessing(seedlint.lint([drawn])):
            return FreshSet(ordered, secrets.token_bytes(SALT_BYTES))
    raise ValueError("could not draw a set the seed lint passes (is the entropy source broken?)")

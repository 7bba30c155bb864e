"""What a grading is asked to do (`GradeRequest`) and how it reports progress (`Progress`).

A request names the controller, the course, the sandbox provider and the flights; everything else
has a default. It is a plain record: the CLI, a squeeze job or an eval harness builds one, and
`grading.run.grade` or `grading.sign.grade_and_sign` takes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading import seeds as seeds_mod
from plimsoll_ci.grading.fresh import FreshSet
from plimsoll_ci.grading.lockstep import CpuBudget
from plimsoll_ci.grading.seeds import Seed
from plimsoll_ci.sandbox.session import Limits

if TYPE_CHECKING:
    from plimsoll_ci.grading.seedsets import SealedSet
    from plimsoll_ci.withheld import WithheldSet

MAX_BATCH = 128  # flights per sandbox (a squeeze grading flies 16 + 64 in one); more fly in further sandboxes


class GradeRequest(NamedTuple):
    """Everything one grading needs.

    `seeds` are the flights; with `fresh` and no seeds, the fresh set's seeds are flown (as
    `fresh:N`), its commitment is published through `Progress` before any flight, and its reveal
    goes into the result. With `sealed` (a held-out set committed earlier, its reveal checked:
    `grading.seedsets.open_sealed`) and no seeds, its seeds are flown as `sealed:N`, never shown;
    the signed record carries its commitment and reveal. A held-out or fresh set the seed lint
    calls guessable is refused unless `allow_weak_seeds` (then the record says so). `withheld`
    sets refuse a controller that carries one of their entries.
    """

    controller: str  # a .py file defining class Controller, or a folder with ENTRY.py
    course: str  # "easy" | "hard"
    seeds: tuple[Seed, ...] | list[Seed]
    provider: str  # a name in sandbox.all_providers.PROVIDERS
    min_tier: str | None = None
    entry: str = "controller"
    withheld: tuple[WithheldSet, ...] | list[WithheldSet] = ()
    budget: CpuBudget = CpuBudget()
    limits: Limits = Limits()
    batch_size: int = MAX_BATCH
    practice: tuple[int, ...] | None = None  # default: sim.PRACTICE_SEEDS
    # Two alternating halves per sandbox, so the simulator and the sandbox overlap. None = auto:
    # on when a core is free (1-minute load below cores - 1). On an idle 2-core machine it saves
    # about 20% under gVisor; on a busy one it measured slower. Scores are the same either way.
    pipeline: bool | None = None
    fresh: FreshSet | None = None
    sealed: SealedSet | None = None
    allow_weak_seeds: bool = False

    def flights(self) -> list[Seed]:
        """The seeds to fly, in order; BadInput when there are none or they are not the fresh
        (or sealed) set's."""
        flown = list(self.seeds)
        if self.fresh is not None and self.sealed is not None:
            raise BadInput("a grading flies a fresh set or a sealed set, not both; grade each "
                           "on its own")
        for what, own, named in (("fresh", self.fresh, seeds_mod.fresh),
                                 ("sealed", self.sealed, seeds_mod.sealed)):
            if own is None:
                continue
            if not flown:
                return named(own)
            values = own.seeds
            if sorted({s.value for s in flown}) != list(values):
                raise BadInput(f"the seeds to fly are not the {what} set's seeds; give the "
                               f"{what} set alone, or seeds without it")
        if not flown:
            raise BadInput("no seeds to grade; pass --seeds, --seed-file, --fresh N or "
                           "--sealed SET.commit --reveal SET.json")
        return flown


class Progress(NamedTuple):
    """One step of a grading, for a front end to show; never carries a sealed value."""

    # "committed" | "sealed" | "scanned" | "refused" | "started" (a sandbox) | "flying" (flights
    # ending in it) | "flown" (its flights all ended) | "signed"
    event: str
    done: int  # flights ended so far
    total: int  # flights in this grading
    # "committed": the fresh set's commitment; "sealed": the sealed set's commitment and when it
    # was committed; "started": the tier; else a sentence
    detail: str


ProgressFn = Callable[[Progress], None]

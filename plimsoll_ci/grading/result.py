"""The outcome of one grading (`GradeResult`), typed, and the JSON result document it renders.

A result is either refused (the controller carries a sealed value: `refused` holds the findings,
nothing was flown) or graded (flights, tier, evidence, CPU). `document()` is the JSON document
`grade --format json` prints and a signed run record names by digest (format
`plimsoll-grading/2`, described in docs/sandbox.md: seeds are decimal strings, since signed records
are RFC 8785 JSON, which carries no integer above 2**53 - 1; `plimsoll-grading/1` had integers).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from plimsoll_ci.grading import fresh as fresh_mod
from plimsoll_ci.grading.fresh import FreshSet
from plimsoll_ci.grading.lockstep import CpuBudget

if TYPE_CHECKING:
    from plimsoll_ci.grading.checks import CodeCheck
    from plimsoll_ci.grading.seedlint import SeedCheck
    from plimsoll_ci.grading.seedsets import SealedSet
    from plimsoll_ci.shipscan.scan import Finding

FORMAT = "plimsoll-grading/2"


class Flight(NamedTuple):
    """One flight's outcome; `seed` is None for a sealed (held-out) seed."""

    id: str
    seed: int | None
    landed: bool
    gates: int
    time: float
    reason: str
    detail: str
    cpu_s: float


class CpuUse(NamedTuple):
    """CPU seconds the sandboxes used, read from the host."""

    max_tick_s: float
    total_s: float
    startup_s: float
    max_flight_s: float


class Timing(NamedTuple):
    """Where the wall time went (for speed work; never a pass/fail bound)."""

    wall_s: float
    start_s: float
    ticks: int
    pipelined: bool
    round_trip_ms_per_tick: float
    sim_share: float


@dataclass(frozen=True)
class GradeResult:
    """One grading: refused (findings, nothing flown) or graded (flights, tier, evidence, CPU)."""

    course: str
    provider: str
    configured_tier: str
    controller_files: dict[str, str]  # staged path -> SHA-256 (what the run record names)
    module: str
    budget: CpuBudget
    practice_set: tuple[int, ...]  # the practice seeds (named in a run record by digest)
    started: dt.datetime
    finished: dt.datetime
    fresh: FreshSet | None = None
    sealed: SealedSet | None = None  # a held-out set committed earlier (its seeds never shown)
    seed_check: SeedCheck | None = None  # what the seed lint found; weak seeds allowed or not
    refused: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    tier: str | None = None  # None when refused
    evidence: dict[str, Any] = field(default_factory=dict)
    flights: tuple[Flight, ...] = ()
    cpu: CpuUse | None = None
    timing: Timing | None = None
    code_checks: tuple[CodeCheck, ...] = ()
    code_check_summary: tuple[str, ...] = ()
    bundle: str | None = None  # set once signed: the bundle holding its record
    record: int | None = None  # and the record's number in it

    @property
    def landed(self) -> int:
        """Flights that landed."""
        return sum(f.landed for f in self.flights)

    @property
    def total(self) -> int:
        """Flights flown."""
        return len(self.flights)

    @property
    def commitment(self) -> str | None:
        """The fresh set's commitment, published before any flight (None without one)."""
        return None if self.fresh is None else fresh_mod.commit(self.fresh)

    def document(self) -> dict[str, Any]:
        """The JSON result document (`{"refused": true, ...}` for a refused controller)."""
        if self.refused:
            return {"refused": True, "findings": [f._asdict() for f in self.refused],
                    "notes": list(self.notes)}
        assert self.cpu is not None and self.timing is not None
        doc: dict[str, Any] = {
            "format": FORMAT,
            "course": self.course,
            "provider": self.provider,
            "tier": self.tier,
            "configured_tier": self.configured_tier,
            "evidence": self.evidence,
            "flights": [f._asdict() | {"seed": None if f.seed is None else str(f.seed)}
                        for f in self.flights],
            "landed": self.landed,
            "total": self.total,
            "cpu": self.cpu._asdict() | {"budget": self.budget.record()},
            "timing": self.timing._asdict(),
            "controller": {"files": dict(sorted(self.controller_files.items())),
                           "module": self.module},
            "code_checks": [c._asdict() for c in self.code_checks],
            "code_check_summary": list(self.code_check_summary),
            "notes": list(self.notes),
        }
        if self.fresh is not None:
            doc["fresh_set"] = {"commitment": self.commitment,
                                "reveal": fresh_mod.reveal(self.fresh)}
        if self.sealed is not None:  # the commitment only: the reveal rides in the signed record
            doc["sealed_set"] = self.sealed.commitment.document()
        if self.seed_check is not None:
            doc["seed_check"] = self.seed_check.record()
        return doc

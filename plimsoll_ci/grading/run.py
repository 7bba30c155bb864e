"""Grade an untrusted controller: stage it, ship-scan it, fly it in sandboxes; a typed result.

    request = GradeRequest(controller="agent/", course="hard", seeds=(), provider="gvisor",
                           min_tier="kernel", fresh=fresh.draw(64))
    result = grade(request, progress=print)
    result.refused      # sealed findings: the run was refused and nothing was flown
    result.flights      # per flight: id, seed (None when sealed), landed, reason, CPU
    result.document()   # the JSON result document (flights, totals, tier, evidence, cpu, checks)

The simulator, the seeds and any withheld set stay here, on the trusted side; only the staged
controller files and the runner script enter the sandbox. Nothing here prints: progress goes to
the optional callback. Signing is `grading.sign`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci import tiers
from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading import checks as checks_mod
from plimsoll_ci.grading import fresh as fresh_mod
from plimsoll_ci.grading import seedlint
from plimsoll_ci.grading.lockstep import fly
from plimsoll_ci.grading.request import MAX_BATCH, GradeRequest, Progress, ProgressFn
from plimsoll_ci.grading.result import CpuUse, Flight, GradeResult, Timing
from plimsoll_ci.grading.seeds import Seed
from plimsoll_ci.sandbox import all_providers
from plimsoll_ci.sandbox import stage as stage_mod
from plimsoll_ci.sandbox.startup import Startup, StartupFailure, open_sandbox

PIPELINE_FROM = 16  # from this many flights a sandbox flies two alternating halves


class _Flown(NamedTuple):
    flights: list[Flight]
    tier: str
    evidence: dict
    cpu: CpuUse
    timing: Timing
    notes: list[str]


def grade(request: GradeRequest, progress: ProgressFn | None = None) -> GradeResult:
    """Stage, scan, and (unless refused) fly every seed in sandboxes; see the module doc.

    Raises BadInput for a request that cannot be graded (no seeds, unknown course or provider,
    a held-out or fresh set the seed lint calls guessable without `allow_weak_seeds`, a controller
    that cannot be staged) and SandboxError when no sandbox starts at the tier asked
    for; whatever the controller does is a recorded outcome, never an exception.
    """
    import plimsoll_sim as sim

    def say(event: str, done: int, detail: str = "") -> None:
        if progress is not None:
            progress(Progress(event, done, len(flights), detail))

    flights = request.flights()
    try:
        course = sim.course(request.course)
    except ValueError:
        raise BadInput(f"course {request.course!r}: unknown; use easy or hard") from None
    configured = all_providers.get(request.provider).configured_tier()
    tiers.require(configured, request.min_tier, f"provider {request.provider}")
    practice = tuple(sim.PRACTICE_SEEDS if request.practice is None else request.practice)
    committed = [*(request.fresh.seeds if request.fresh else ()),
                 *(request.sealed.seeds if request.sealed else ())]
    seed_check = seedlint.check_flights(flights, practice, request.allow_weak_seeds, committed)
    started = dt.datetime.now(dt.UTC)
    if request.fresh is not None:
        say("committed", 0, fresh_mod.commit(request.fresh))
    if request.sealed is not None:
        c = request.sealed.commitment
        say("sealed", 0, f"{c.digest} (committed {c.committed}, {c.count} seeds, {c.bits} bits)")
    st = stage_mod.stage(request.controller, request.entry)
    try:
        files = {rel: (st.controller / rel).read_bytes() for rel in st.files}
        sealed_seeds = [(s.id, s.value) for s in flights if s.value not in set(practice)]
        own, notes = checks_mod.sealed_set(sealed_seeds)
        notes = seed_check.notes() + notes
        sealed_sets = ([own] if own is not None else []) + list(request.withheld)
        suspicious = checks_mod.suspicious_set(practice, Path(sim.__file__).parent,
                                               sim.generator.MAGIC)
        outcome = checks_mod.scan(files, sealed_sets, suspicious)
        notes += outcome.notes
        base = GradeResult(course=request.course, provider=request.provider,
                           configured_tier=configured, controller_files=dict(st.files),
                           module=st.module, budget=request.budget, practice_set=practice,
                           started=started, finished=started, fresh=request.fresh,
                           sealed=request.sealed, seed_check=seed_check)
        if outcome.sealed:
            say("refused", 0, f"{len(outcome.sealed)} sealed finding(s)")
            return dataclasses.replace(base, refused=tuple(outcome.sealed), notes=tuple(notes),
                            finished=dt.datetime.now(dt.UTC))
        say("scanned", 0)
        if any(s.value in set(practice) for s in flights):
            notes.append("some flights use practice seeds: a controller may have memorised them; "
                         "judge it on fresh seeds")
        flown = _fly_all(request, flights, st, course, say)
        return dataclasses.replace(base, tier=flown.tier, evidence=flown.evidence,
                        flights=tuple(flown.flights), cpu=flown.cpu, timing=flown.timing,
                        notes=tuple(notes + flown.notes),
                        code_checks=tuple(outcome.suspicious),
                        code_check_summary=tuple(checks_mod.summary(outcome.suspicious)),
                        finished=dt.datetime.now(dt.UTC))
    finally:
        stage_mod.cleanup(st)


def _flying(say: Callable[..., None], b0: int, n: int) -> None:
    say("flying", b0 + n)  # (n of the batch from flight b0 have ended)


def _fly_all(request: GradeRequest, flights: list[Seed], st, course,
             say: Callable[..., None]) -> _Flown:
    import plimsoll_sim as sim

    out: list[Flight] = []
    evidences: list[dict] = []
    tiers_seen: list[str] = []
    cpu = {"max_tick_s": 0.0, "total_s": 0.0, "startup_s": 0.0, "max_flight_s": 0.0}
    timing = {"wall_s": 0.0, "start_s": 0.0, "sim_s": 0.0, "round_trip_s": 0.0}
    ticks_flown = 0
    started = time.monotonic()
    size = max(1, min(request.batch_size, MAX_BATCH))
    pipelined = _free_core() if request.pipeline is None else request.pipeline
    budget = request.budget
    for b0 in range(0, len(flights), size):
        chunk = flights[b0:b0 + size]
        half = len(chunk) // 2 if pipelined and len(chunk) >= PIPELINE_FROM else len(chunk)
        groups = [sim.Batch([s.value for s in part], course)
                  for part in (chunk[:half], chunk[half:]) if part]
        opened = open_sandbox(request.provider, st, Startup(
            course.info(), len(chunk), request.limits, request.min_tier, budget.startup_s,
            budget.wall_startup_s))
        cpu["startup_s"] = max(cpu["startup_s"], opened.startup_cpu)
        timing["start_s"] += opened.startup_wall
        evidences.append(opened.evidence)
        tiers_seen.append(opened.tier)
        say("started", b0, opened.tier)
        if isinstance(opened, StartupFailure):
            for batch in groups:
                for i in range(len(batch.seeds)):
                    batch.end(i, opened.reason, opened.detail)
            per_flight = [0.0] * len(chunk)
        else:
            try:
                flown = fly(opened.session, groups, budget,
                            on_end=functools.partial(_flying, say, b0))
            finally:
                opened.session.close()
            per_flight = flown.flight_cpu
            cpu["max_tick_s"] = max(cpu["max_tick_s"], flown.max_tick_cpu)
            cpu["total_s"] += flown.total_cpu
            timing["sim_s"] += flown.sim_seconds
            timing["round_trip_s"] += flown.round_trips
            ticks_flown += flown.ticks
        results = [r for batch in groups for r in batch.results()]
        for s, r, c in zip(chunk, results, per_flight, strict=True):
            out.append(Flight(s.id, s.value if s.shown else None, bool(r.landed), int(r.gates),
                              round(float(r.time), 6), r.reason, r.detail, round(c, 6)))
            cpu["max_flight_s"] = max(cpu["max_flight_s"], c)
        say("flown", b0 + len(chunk))
    wall = time.monotonic() - started
    notes = sorted({n for e in evidences for n in e.get("tier_notes", [])})
    ticks = max(1, ticks_flown)
    return _Flown(
        flights=out,
        tier=tiers.weakest(tiers_seen),
        evidence=evidences[0] if len(evidences) == 1 else {"batches": evidences},
        cpu=CpuUse(**{k: round(v, 6) for k, v in cpu.items()}),
        timing=Timing(wall_s=round(wall, 3), start_s=round(timing["start_s"], 3),
                      ticks=ticks_flown, pipelined=pipelined,
                      round_trip_ms_per_tick=round(1000 * timing["round_trip_s"] / ticks, 3),
                      sim_share=round(timing["sim_s"] / max(wall, 1e-9), 3)),
        notes=notes,
    )


def _free_core() -> bool:
    try:
        return os.getloadavg()[0] < (os.cpu_count() or 1) - 1
    except OSError:
        return False

"""Grade an untrusted controller: stage it, ship-scan it, fly it in a sandbox, write the result.

    req = Request(controller="agent/", course="hard", seeds=[Seed("fresh:1", 4023..., True)],
                  provider="gvisor", min_tier="kernel")
    graded = grade(req)
    graded.refused      # sealed findings: the run was refused and nothing was flown
    graded.result       # the JSON result document (flights, totals, tier, evidence, cpu, checks)

The simulator, the seeds and any withheld set stay here, on the trusted side; only the staged
controller files and the runner script enter the sandbox.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading import checks as checks_mod
from plimsoll_ci.grading.lockstep import CpuBudget, fly
from plimsoll_ci.sandbox.session import Limits
from plimsoll_ci.scan import Finding
from plimsoll_ci.withheld import WithheldSet

MAX_BATCH = 64
PIPELINE_FROM = 16  # from this many flights a sandbox flies two alternating halves


class Seed(NamedTuple):
    """One flight's seed: an id to name it by, and whether its value may be shown in results."""

    id: str  # e.g. "seeds:3", "fresh:2", "seed-file:7", "practice:2"
    value: int
    shown: bool  # False for a held-out seed file: results name the id, never the value


class Request(NamedTuple):
    """Everything one grading needs."""

    controller: str
    course: str
    seeds: list[Seed]
    provider: str
    min_tier: str | None = None
    entry: str = "controller"
    withheld: list[WithheldSet] = []
    budget: CpuBudget = CpuBudget()
    limits: Limits = Limits()
    batch_size: int = MAX_BATCH
    practice: tuple[int, ...] | None = None  # default: sim.PRACTICE_SEEDS
    # Two alternating halves per sandbox, so the simulator and the sandbox overlap. None = auto:
    # on when a core is free (1-minute load below cores - 1). On an idle 2-core machine it saves
    # about 20% under gVisor; on a busy one it measured slower. Scores are the same either way.
    pipeline: bool | None = None


class Graded(NamedTuple):
    """A grading's outcome: the result document, or the sealed findings that refused it."""

    result: dict | None
    refused: list[Finding]
    files: dict[str, str]  # staged path -> SHA-256 (what the run record names)
    notes: list[str]


def grade(req: Request) -> Graded:
    """Stage, scan, and (unless refused) fly every seed in sandboxes; see the module doc."""
    import sim
    import sim.generator
    from plimsoll_ci import sandbox
    from plimsoll_ci.sandbox import stage as stage_mod

    if not req.seeds:
        raise BadInput("no seeds to grade; pass --seeds, --seed-file or --fresh N")
    try:
        course = sim.course(req.course)
    except ValueError:
        raise BadInput(f"course {req.course!r}: unknown; use easy or hard") from None
    sandbox.configured_tier(req.provider)  # unknown provider: bad input before any work
    if req.min_tier is not None:
        from plimsoll_ci.sandbox import tiers

        tiers.require(sandbox.configured_tier(req.provider), req.min_tier,
                      f"provider {req.provider}")
    practice = tuple(sim.PRACTICE_SEEDS if req.practice is None else req.practice)
    practice_values = set(practice)
    st = stage_mod.stage(req.controller, req.entry)
    try:
        files = {rel: (st.controller / rel).read_bytes() for rel in st.files}
        sealed_seeds = [(s.id, s.value) for s in req.seeds if s.value not in practice_values]
        own, notes = checks_mod.sealed_set(sealed_seeds)
        sealed_sets = ([own] if own is not None else []) + list(req.withheld)
        suspicious = checks_mod.suspicious_set(practice, Path(sim.__file__).parent,
                                               sim.generator.MAGIC)
        outcome = checks_mod.scan(files, sealed_sets, suspicious)
        notes += outcome.notes
        if outcome.sealed:
            return Graded(None, outcome.sealed, st.files, notes)
        if any(s.value in practice_values for s in req.seeds):
            notes.append("some flights use practice seeds: a controller may have memorised them; "
                         "judge it on fresh seeds")
        result = _fly_all(req, st, course, sandbox)
        result["controller"] = {"files": dict(sorted(st.files.items())), "module": st.module}
        result["code_checks"] = [c._asdict() for c in outcome.suspicious]
        result["code_check_summary"] = checks_mod.summary(outcome.suspicious)
        result["notes"] = notes + result.pop("_notes", [])
        return Graded(result, [], st.files, notes)
    finally:
        stage_mod.cleanup(st)


def _fly_all(req: Request, st, course, sandbox) -> dict:
    import sim

    info = course.info()
    flights: list[dict] = []
    evidences: list[dict] = []
    tiers_seen: list[str] = []
    configured = sandbox.configured_tier(req.provider)
    cpu = {"max_tick_s": 0.0, "total_s": 0.0, "startup_s": 0.0, "max_flight_s": 0.0}
    timing = {"wall_s": 0.0, "start_s": 0.0, "sim_s": 0.0, "round_trip_s": 0.0, "ticks": 0}
    notes: list[str] = []
    started = time.monotonic()
    size = max(1, min(req.batch_size, MAX_BATCH))
    pipelined = _free_core() if req.pipeline is None else req.pipeline
    for b0 in range(0, len(req.seeds), size):
        chunk = req.seeds[b0:b0 + size]
        half = len(chunk) // 2 if pipelined and len(chunk) >= PIPELINE_FROM else len(chunk)
        groups = [sim.Batch([s.value for s in part], course)
                  for part in (chunk[:half], chunk[half:]) if part]
        opened = sandbox.open_sandbox(req.provider, st, info, len(chunk), req.limits,
                                      req.min_tier, req.budget.startup_s,
                                      req.budget.wall_startup_s)
        cpu["startup_s"] = max(cpu["startup_s"], opened.startup_cpu)
        timing["start_s"] += opened.startup_wall
        evidences.append(opened.evidence)
        tiers_seen.append(opened.tier)
        if isinstance(opened, sandbox.StartupFailure):
            for batch in groups:
                for i in range(len(batch.seeds)):
                    batch.end(i, opened.reason, opened.detail)
            per_flight = [0.0] * len(chunk)
        else:
            try:
                flown = fly(opened.session, groups, req.budget)
            finally:
                opened.session.close()
            per_flight = flown.flight_cpu
            cpu["max_tick_s"] = max(cpu["max_tick_s"], flown.max_tick_cpu)
            cpu["total_s"] += flown.total_cpu
            timing["sim_s"] += flown.sim_seconds
            timing["round_trip_s"] += flown.round_trips
            timing["ticks"] += flown.ticks
        results = [r for batch in groups for r in batch.results()]
        for s, r, c in zip(chunk, results, per_flight, strict=True):
            flights.append({"id": s.id, "seed": s.value if s.shown else None,
                            "landed": bool(r.landed), "gates": int(r.gates),
                            "time": round(float(r.time), 6), "reason": r.reason,
                            "detail": r.detail, "cpu_s": round(c, 6)})
            cpu["max_flight_s"] = max(cpu["max_flight_s"], c)
    timing["wall_s"] = time.monotonic() - started
    from plimsoll_ci.sandbox.tiers import TIERS

    tier = min(tiers_seen, key=TIERS.index)
    evidence = evidences[0] if len(evidences) == 1 else {"batches": evidences}
    for e in evidences:
        notes += e.get("tier_notes", [])
    ticks = max(1, timing["ticks"])
    return {
        "format": "plimsoll-grading/1",
        "course": req.course,
        "provider": req.provider,
        "tier": tier,
        "configured_tier": configured,
        "evidence": evidence,
        "flights": flights,
        "landed": sum(f["landed"] for f in flights),
        "total": len(flights),
        "cpu": {k: round(v, 6) for k, v in cpu.items()} | {"budget": req.budget.record()},
        "timing": {"wall_s": round(timing["wall_s"], 3), "start_s": round(timing["start_s"], 3),
                   "ticks": timing["ticks"], "pipelined": pipelined,
                   "round_trip_ms_per_tick": round(1000 * timing["round_trip_s"] / ticks, 3),
                   "sim_share": round(timing["sim_s"] / max(timing["wall_s"], 1e-9), 3)},
        "_notes": sorted(set(notes)),
    }


def _free_core() -> bool:
    import os

    try:
        return os.getloadavg()[0] < (os.cpu_count() or 1) - 1
    except OSError:
        return False

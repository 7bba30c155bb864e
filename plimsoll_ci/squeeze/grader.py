"""THE one place the squeeze meets the grader: grade one controller on the practice and unseen sets.

    graded = grade(Task(...), Setup(...))      # -> Graded(result, predicate), ready to sign

Everything else in `plimsoll_ci.squeeze` works from what this returns (and, after the run, from
the signed records alone), never from how a grading happened. It calls the grading library
(`plimsoll_ci.grading.run.grade` with a `GradeRequest`) and builds the grading-run predicate over
the result with the squeeze's context added. What the squeeze needs of it:

- the result document keeps `flights` (each with `id`, `landed`, `reason`, `detail`, and `seed`
  for a shown seed), `landed`, `total`, `provider`, `tier`;
- the caller's `context` object is signed with the result (it lands in `result["squeeze"]`);
- practice seeds are flown unshown (ids `practice:N`, no value in the record), then the unseen
  set: fresh seeds shown (`fresh:N`: their reveal is in the record anyway), or a held-out set
  committed earlier unshown (`sealed:N`: its commitment and reveal are in the record);
- the seed lint ran before any flight (`run.py`); its record, the same in every grading of the
  run, says whether weak seeds were allowed;
- a refused controller (the ship scan found a sealed value) still yields a signed record, every
  flight not landed with reason `refused`, so the squeeze counts it and the job goes on;
- the controller files the record names are the ones the code checks read (checked here).

It runs in a worker process (`pool.py`); the signing key never comes here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading.lockstep import CpuBudget
from plimsoll_ci.sandbox.session import Limits
from plimsoll_ci.squeeze.plan import Unseen

UNCOMMITTED_NOTE = "nothing was committed for the"  # grading.seedlint's note on held-out flights


class Setup(NamedTuple):
    """How every grading of a run is done (the `grade` command's sandbox options)."""

    provider: str = "gvisor"
    min_tier: str | None = None
    budget: CpuBudget = CpuBudget()
    limits: Limits = Limits()
    withheld: tuple = ()  # WithheldSet: a controller carrying an entry is refused


class Task(NamedTuple):
    """One grading: a controller, the two seed sets, and the context to sign with its result."""

    controller: str  # path of a .py file or a folder with controller.py
    course: str
    practice: tuple[int, ...]
    unseen: Unseen
    context: dict[str, Any]
    seed_check: dict[str, Any] | None = None  # seedlint.SeedCheck.record() of the run


class Graded(NamedTuple):
    """A finished grading: the result document and the grading-run predicate over it."""

    result: dict[str, Any]
    predicate: dict[str, Any]


def grade(task: Task, setup: Setup) -> Graded:
    """Grade `task` in a fresh sandbox; the record to sign (BadInput / SandboxError when the
    grading itself cannot happen: those stop the job, a failing controller does not)."""
    from plimsoll_ci.attest import record
    from plimsoll_ci.digests import practice_set_digest
    from plimsoll_ci.grading.request import GradeRequest
    from plimsoll_ci.grading.run import grade as run_grade
    from plimsoll_ci.grading.seeds import Seed

    seeds = [Seed(f"practice:{n}", s, False) for n, s in enumerate(task.practice, 1)]
    seeds += task.unseen.flights()
    allow_weak = bool((task.seed_check or {}).get("allowWeak"))  # the run's lint decided already
    # All flights in one sandbox (the grader caps a sandbox at its MAX_BATCH).
    graded = run_grade(GradeRequest(
        task.controller, task.course, seeds, setup.provider, setup.min_tier, "controller",
        tuple(setup.withheld), setup.budget, setup.limits, batch_size=len(seeds),
        practice=task.practice, allow_weak_seeds=allow_weak))
    files = dict(sorted(graded.controller_files.items()))
    if graded.refused:
        result = _refused(task, setup, seeds, graded)
    else:
        result = graded.document()
    if task.seed_check is not None and "seed_check" in result:
        # The run's lint knows what the grader is not told: a held-out set flown as `sealed:N`
        # was committed earlier. Its record (and no note saying otherwise) is what is signed.
        result["seed_check"] = task.seed_check
        result["notes"] = [n for n in result["notes"] if not n.startswith(UNCOMMITTED_NOTE)]
    expected = task.context.get("code_checks", {}).get("files")
    if expected is not None and expected != files:
        raise BadInput(f"controller {task.controller}: its files changed between the code checks "
                       "and the grading; leave the job's folder alone while it runs")
    result["squeeze"] = task.context
    predicate = record.make_predicate(
        result_doc=result, controller_files=files, course=task.course,
        provider=result["provider"], tier=result["tier"], evidence=result["evidence"],
        cpu_budget=setup.budget.record(), started=graded.started, finished=graded.finished,
        practice_set_digest=practice_set_digest(task.practice),
        seed_check=task.seed_check, **task.unseen.predicate_fields())
    return Graded(result, predicate)


def _refused(task: Task, setup: Setup, seeds: list, graded: Any) -> dict[str, Any]:
    """The result of a controller the ship scan refused: nothing flew, nothing landed."""
    from plimsoll_ci.grading import fresh as fresh_mod
    from plimsoll_ci.grading import result as result_mod

    findings = sorted({f"{f.path}: sealed entry {f.entry} ({f.kind})" for f in graded.refused})
    detail = "refused before any flight: the controller carries a sealed value"
    flights = [{"id": s.id, "seed": fresh_mod.seed_text(s.value) if s.shown else None,
                "landed": False, "gates": 0,
                "time": 0.0, "reason": "refused", "detail": detail, "cpu_s": 0.0}
               for s in seeds]
    return {
        "format": result_mod.FORMAT, "course": task.course, "provider": setup.provider,
        # No sandbox started: the weakest tier, so the record claims nothing it did not see.
        "tier": "process", "configured_tier": "process",
        "evidence": {"started": False, "refused": findings},
        "flights": flights, "landed": 0, "total": len(flights), "refused": findings,
        "notes": list(graded.notes),
    }

"""The plan: every grading a job asks for, in one deterministic order, and what each record states.

A grading is one controller flown on the practice set and the fresh set (one signed record). The
order is the job's: each loop in file order (its own controller, then its imported rebuilds sorted
by path, then the ones built through a model that are to be graded, `built/LOOP/N` by N), then the
control group likewise. A job that builds also lists its sessions (`[group, index]`, every one,
graded or not), so a verifier can tell a missing session record too. Every record carries the whole job context (the same object in
every record: job digest, course, lines, practice digest, fresh commitment, recipes, the list of
gradings) plus its own grading's place in it, so a verifier can tell which gradings are missing
and a merge of shards can check that its pieces belong to one plan.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.squeeze.job import Job
from plimsoll_ci.squeeze.verdicts import json_number

FORMAT = "plimsoll-squeeze/1"
ROLES = ("loop", "rebuild", "control")
BUILT = "built/"  # ids of controllers made by rebuild sessions: built/GROUP/N


class Grading(NamedTuple):
    """One controller's place in the plan."""

    group: str  # loop name, or "control"
    role: str  # "loop" | "rebuild" | "control"
    controller: str  # id: path relative to the job's folder

    def label(self) -> str:
        """How messages and reports name it."""
        return f"{self.group}/{self.role} {self.controller}"


def built_id(group: str, index: int) -> str:
    """The controller id of session `index` of `group`."""
    return f"{BUILT}{group}/{index}"


def sessions(job: Job) -> list[tuple[str, int]]:
    """Every rebuild session of the job, in plan order: (group, index)."""
    return [(g.name, i) for g in job.groups() for i in range(1, g.build + 1)]


def gradings(job: Job, built: frozenset[tuple[str, int]] = frozenset()) -> list[Grading]:
    """Every grading of the job, in plan order; `built` are the sessions whose controllers are
    graded (the others were stopped, refused, or wrote none)."""
    out = []
    for g in job.groups():
        made = [built_id(g.name, i) for i in range(1, g.build + 1) if (g.name, i) in built]
        if g.controller is not None:
            out.append(Grading(g.name, "loop", g.controller))
        role = "control" if g.name == "control" else "rebuild"
        out += [Grading(g.name, role, c) for c in (*g.rebuilds, *made)]
    return out


def shard(items: list[Grading], index: int, count: int) -> list[Grading]:
    """Slice `index` of `count` (1-based): every count-th grading from the index-th on."""
    if not 1 <= index <= count:
        raise BadInput(f"shard {index}/{count}: give I/N with 1 <= I <= N")
    return items[index - 1::count]


def job_context(job: Job, practice_sha256: str, commitment: str,
                recipes: dict[str, dict[str, Any]], practice_seed_tokens: int,
                encoding: str, built: frozenset[tuple[str, int]] = frozenset()) -> dict[str, Any]:
    """The job section every record of this run carries (identical in all of them)."""
    ctx = {
        "format": FORMAT,
        "job_sha256": job.sha256,
        "course": job.course,
        "lines": {"flights": json_number(job.lines.flights),
                  "percent": json_number(job.lines.percent)},
        "recipe_tokens": job.recipe_tokens,
        "tokenizer": {"encoding": encoding, "practice_seed_tokens": practice_seed_tokens},
        "practice": {"sha256": practice_sha256, "count": len(job.practice)},
        "fresh": {"commitment": commitment, "count": job.fresh_count},
        "recipes": dict(sorted(recipes.items())),
        "plan": [list(g) for g in gradings(job, built)],
    }
    if job.builds():
        ctx["sessions"] = {"max_turns": job.max_turns, "smoke": job.smoke,
                           "plan": [list(s) for s in sessions(job)]}
    return ctx


def grading_context(job_ctx: dict[str, Any], grading: Grading,
                    code_checks: dict[str, Any]) -> dict[str, Any]:
    """What one record states about the squeeze: the job, its grading, its code checks."""
    made = grading.controller.startswith(BUILT) and grading.role != "loop"
    where = {"group": grading.group, "role": grading.role, "controller": grading.controller,
             "origin": "built" if made else "imported"}
    if made:
        where["session"] = [grading.group, int(grading.controller.rsplit("/", 1)[1])]
    return {"job": job_ctx, "grading": where, "code_checks": code_checks}

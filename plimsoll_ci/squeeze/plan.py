"""The plan: every grading a job asks for, in one deterministic order, and what each record states.

A grading is one controller flown on the practice set and the fresh set (one signed record). The
order is the job's: each loop in file order (its own controller, then its rebuilds sorted by
path), then the control group. Every record carries the whole job context (the same object in
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


class Grading(NamedTuple):
    """One controller's place in the plan."""

    group: str  # loop name, or "control"
    role: str  # "loop" | "rebuild" | "control"
    controller: str  # id: path relative to the job's folder

    def label(self) -> str:
        """How messages and reports name it."""
        return f"{self.group}/{self.role} {self.controller}"


def gradings(job: Job) -> list[Grading]:
    """Every grading of the job, in plan order."""
    out = []
    for g in job.loops:
        assert g.controller is not None
        out.append(Grading(g.name, "loop", g.controller))
        out += [Grading(g.name, "rebuild", c) for c in g.rebuilds]
    if job.control is not None:
        out += [Grading("control", "control", c) for c in job.control.rebuilds]
    return out


def shard(items: list[Grading], index: int, count: int) -> list[Grading]:
    """Slice `index` of `count` (1-based): every count-th grading from the index-th on."""
    if not 1 <= index <= count:
        raise BadInput(f"shard {index}/{count}: give I/N with 1 <= I <= N")
    return items[index - 1::count]


def job_context(job: Job, practice_sha256: str, commitment: str,
                recipes: dict[str, dict[str, Any]], practice_seed_tokens: int,
                encoding: str) -> dict[str, Any]:
    """The job section every record of this run carries (identical in all of them)."""
    return {
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
        "plan": [list(g) for g in gradings(job)],
    }


def grading_context(job_ctx: dict[str, Any], grading: Grading,
                    code_checks: dict[str, Any]) -> dict[str, Any]:
    """What one record states about the squeeze: the job, its grading, its code checks."""
    return {"job": job_ctx,
            "grading": {"group": grading.group, "role": grading.role,
                        "controller": grading.controller, "origin": "imported"},
            "code_checks": code_checks}

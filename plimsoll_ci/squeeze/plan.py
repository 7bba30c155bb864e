"""The plan: every grading a job asks for, in one deterministic order, and what each record states.

A grading is one controller flown on the practice set and then on the unseen set (one signed
record): a fresh set drawn for the run, or a held-out set committed earlier (`Unseen`). The
order is the job's: each loop in file order (its own controller, then its imported rebuilds sorted
by path, then the ones built through a model that are to be graded, `built/LOOP/N` by N), then the
control group likewise. A job that builds also lists its sessions (`[group, index]`, every one,
graded or not), so a verifier can tell a missing session record too. Every record carries the whole job context (the same object in
every record: job digest, course, lines, practice digest, the unseen set's commitment (`fresh`, or
`held_out` with when it was committed), recipes, the list of gradings) plus its own grading's place in it, so a verifier can tell which gradings are missing
and a merge of shards can check that its pieces belong to one plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading.fresh import FreshSet
from plimsoll_ci.squeeze.job import Job
from plimsoll_ci.squeeze.verdicts import json_number

if TYPE_CHECKING:
    from plimsoll_ci.grading.seedsets import Commitment

FORMAT = "plimsoll-squeeze/1"
ROLES = ("loop", "rebuild", "control")
BUILT = "built/"  # ids of controllers made by rebuild sessions: built/GROUP/N


class Unseen(NamedTuple):
    """The set every controller flies after the practice set, which none of them has seen: a fresh
    set drawn for this run (committed before any flight), or a held-out set committed earlier
    (`--sealed`: its commitment published before the run, its reveal checked against it)."""

    seeds: FreshSet  # the seeds and the salt of their commitment
    sealed: Commitment | None = None  # a held-out set's earlier commitment; None: a fresh set

    @property
    def kind(self) -> str:
        """The job section's key: `fresh` or `held_out`."""
        return "fresh" if self.sealed is None else "held_out"

    @property
    def prefix(self) -> str:
        """The flights' id prefix: `fresh:N` (seed shown) or `sealed:N` (never shown)."""
        return "fresh" if self.sealed is None else "sealed"

    @property
    def commitment(self) -> str:
        """The commitment of the seeds and salt (for a held-out set: the one published)."""
        from plimsoll_ci.grading import fresh

        return fresh.commit(self.seeds)

    def section(self) -> dict[str, Any]:
        """What the job section says of it (`fresh` or `held_out`)."""
        if self.sealed is None:
            return {"commitment": self.commitment, "count": len(self.seeds.seeds)}
        return self.sealed.record()

    def flights(self) -> list:
        """Its flights (`grading.seeds.Seed`), after the practice flights."""
        from plimsoll_ci.grading import seeds

        return seeds.named(self.prefix, self.seeds.seeds, shown=self.sealed is None)

    def predicate_fields(self) -> dict[str, Any]:
        """The `record.make_predicate` arguments naming its commitment and its reveal."""
        from plimsoll_ci.grading import fresh

        if self.sealed is None:
            return {"fresh_commitment": self.commitment, "fresh_reveal": fresh.reveal(self.seeds)}
        return {"sealed_set": self.sealed.record(), "sealed_reveal": fresh.reveal(self.seeds)}


def unseen_section(job: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(`fresh` or `held_out`, its section) of a job section read back from a record."""
    if isinstance(job.get("held_out"), dict):
        return "held_out", job["held_out"]
    return "fresh", job.get("fresh") or {}


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


def job_context(job: Job, practice_sha256: str, unseen: Unseen,
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
        unseen.kind: unseen.section(),
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
    where: dict[str, object] = {"group": grading.group, "role": grading.role,
                                "controller": grading.controller,
                                "origin": "built" if made else "imported"}
    if made:
        where["session"] = [grading.group, int(grading.controller.rsplit("/", 1)[1])]
    return {"job": job_ctx, "grading": where, "code_checks": code_checks}


class Work(NamedTuple):
    """What a run grades and signs: every grading of the job in plan order, with its code checks
    and its controller's path, the job section all records carry, and the session records to
    sign before the gradings."""

    gradings: list[Grading]
    code: list[dict[str, Any]]
    paths: list[str]
    job_ctx: dict[str, Any]
    sessions: list[tuple[dict[str, Any], dict[str, Any]]]

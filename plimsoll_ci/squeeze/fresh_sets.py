"""Fresh sets: the loops' own controllers flown again on K more fresh sets, so a reader sees that
a fresh score is a range, measured, beside the analytic noise.

A run on a fresh set (no plan, no held-out set) with `fresh: {count: N, sets: K}` draws K more
fresh sets beside its own and commits each before any flight: `sets/I/run.json` holds its
commitment (and the terminal says it) before the first grading starts. Each loop's own controller
flies the practice set and then set I in a sandbox of its own, in the same pool as the run's
gradings; the records are signed into `sets/I/bundle.intoto.jsonl`, and `sets/I/fresh.json` (the
reveal) and `sets/I/result.json` are derived from them, as the run's own are. The run's job
section says K (`fresh_sets`), so a verifier knows how many sets to find; a set's records carry
the run's job section but for their own fresh set, the plan (the loops' own gradings only) and
`fresh_set: {index, of}`. The verdicts use the run's own set only. What a set's bundle gives (`sets/I/fresh.json`,
`sets/I/result.json`) is derived in `artifacts.py`, the one road for run and verify.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.squeeze import account as acct
from plimsoll_ci.squeeze.artifacts import BUNDLE, SETS
from plimsoll_ci.squeeze.plan import Grading, Unseen, grading_context

__all__ = ["SETS", "More", "begin", "bundles", "folder", "set_context", "sign", "tasks"]


class More(NamedTuple):
    """The more fresh sets of a run, each with its seed lint's record."""

    unseen: list[Unseen]
    seed_checks: list[dict[str, Any]]
    job_sha256: str  # of the job file: in each set's run.json


def folder(out: Path, index: int) -> Path:
    """`OUT/sets/I`."""
    return Path(out) / SETS / str(index)


def bundles(out: Path) -> dict[int, bytes]:
    """The bundle of each set this run wrote, by set number."""
    return {int(d.name): (d / BUNDLE).read_bytes() for d in (Path(out) / SETS).glob("*")
            if d.name.isdigit() and (d / BUNDLE).is_file()}


def set_context(job_ctx: dict[str, Any], unseen: Unseen, index: int, count: int
                ) -> dict[str, Any]:
    """The job section set `index` of `count` records carry."""
    ctx = {k: v for k, v in job_ctx.items() if k not in ("sessions", "fresh_sets")}
    ctx["fresh"] = unseen.section()
    ctx["plan"] = [g for g in job_ctx["plan"] if g[1] == "loop"]
    ctx["fresh_set"] = {"index": index, "of": count}
    return ctx


def begin(out: Path, more: More, loops: int, progress: Any) -> None:
    """Write each set's first account (its commitment) and say it: before any flight."""
    for i, unseen in enumerate(more.unseen, 1):
        where = folder(out, i)
        where.mkdir(parents=True)
        acct.write(where / "run.json", acct.dumps(account(i, unseen, loops)))
        progress.note(f"fresh set {i} of {len(more.unseen)} (sets/{i}/, the loops' own "
                      f"controllers only) drawn and committed before any flight: "
                      f"{unseen.commitment}")


def account(index: int, unseen: Unseen, loops: int, job_sha256: str = "",
            status: str = "running", signed: int = 0) -> dict[str, Any]:
    """`sets/I/run.json`: what the set's records state, and when it was committed."""
    doc = {"format": acct.RUN_FORMAT, "status": status, "set": index,
           "fresh_commitment": unseen.commitment, "committed_at": acct.now(),
           "gradings": {"planned": loops, "signed": signed}}
    if job_sha256:
        doc["job"] = {"sha256": job_sha256}
    return doc


class SetTask(NamedTuple):
    """One grading of a set: which set, the loop's grading, and the task."""

    index: int  # type: ignore[assignment]  # shadows tuple.index, on purpose
    grading: Grading
    task: Any  # grader.Task


def tasks(more: More, work: Any, task_of: Any) -> list[SetTask]:
    """Every set's gradings: each loop's own controller, set by set (`task_of(i, unseen, ctx,
    seed_check)` makes the Task of grading i of the work)."""
    out = []
    for n, unseen in enumerate(more.unseen, 1):
        ctx = set_context(work.job_ctx, unseen, n, len(more.unseen))
        for i, g in enumerate(work.gradings):
            if g.role == "loop":
                out.append(SetTask(n, g, task_of(i, unseen, grading_context(ctx, g, work.code[i]),
                                                 more.seed_checks[n - 1])))
    return out


def sign(out: Path, signer: Any, more: More, planned: list[SetTask],
         done: list[tuple[SetTask, Any]], sign_fn: Any) -> None:
    """Sign each set's finished gradings (in plan order) into its bundle and finish its run.json
    (`done` when every grading of the set was signed)."""
    import json

    for n, unseen in enumerate(more.unseen, 1):
        mine = [(d.result, d.predicate) for t, d in done if t.index == n]
        where = folder(out, n)
        if mine:
            sign_fn(where, signer, [], mine)
        total = sum(t.index == n for t in planned)
        doc = account(n, unseen, total, more.job_sha256,
                      "done" if len(mine) == total else "interrupted", len(mine))
        doc["committed_at"] = json.loads((where / "run.json").read_text())["committed_at"]
        acct.write(where / "run.json", acct.dumps(doc))

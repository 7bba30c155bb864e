"""`squeeze plan`: settle a job's unseen set once, so shards on other machines grade against it.

    plimsoll-ci squeeze plan JOB --out PLAN                     # one machine, before any flight
    plimsoll-ci squeeze run JOB --plan PLAN --shard I/N --out SHARD_I     # N machines, at once
    plimsoll-ci bundle merge SHARD_1 ... SHARD_N --plan PLAN --out DIR    # one machine, after

A plan folder holds:

- `plan.json` (`plimsoll-squeeze-plan/1`): the job file's path and digest; the job section every
  record will carry (course, lines, practice digest, the unseen set's commitment, recipes, every
  grading in plan order, the sessions); every grading's code checks, which pin the files each
  controller is made of; whether weak seeds are allowed, and the seed lint's record;
- `fresh-set.json` (mode 0600, the `seeds draw` set-file form): the fresh set's seeds and salt,
  which the shards fly. A plan on a held-out set (`--sealed`) keeps only its commitment,
  `held-out.commit`: each shard is given `--sealed` and `--reveal` itself, so a held-out seed is
  never in a plan;
- for a job that builds: the rebuild sessions ran when the plan was made. Their records are signed
  in `bundle.intoto.jsonl` under `harness.pub`, `built/GROUP/N/` holds the graded sessions'
  workspaces and `requests/` their recordings;
- `run.json`: the plan's account (times, versions, the sessions' tokens).

Why the fresh set may travel to the shards before the last flight: its secrecy matters while what
flies it can still change, and nothing graded can. The imported controllers existed before the
set was drawn, and every shard checks that each controller's files are the ones the plan's code
checks read (a changed file stops the shard); the rebuilds were made behind the wall, whose
tripwire checks every request against the fresh seeds too. A held-out set stays off the plan.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.attest import canonical
from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import read_bounded
from plimsoll_ci.grading.fresh import FreshSet
from plimsoll_ci.squeeze import artifacts, checks, recipes
from plimsoll_ci.squeeze import plan as plan_mod
from plimsoll_ci.squeeze.job import Job
from plimsoll_ci.squeeze.plan import Unseen

PLAN_FORMAT = "plimsoll-squeeze-plan/1"
PLAN_FILE = "plan.json"
FRESH_FILE = "fresh-set.json"
HELD_OUT_FILE = "held-out.commit"
KEYS = frozenset({"format", "job", "context", "code_checks", "allow_weak_seeds", "seed_check",
                  "planned", "unseen"})
MAX_PLAN_BYTES = 64 << 20


class Plan(NamedTuple):
    """A plan folder, read and checked (`load`)."""

    folder: Path
    sha256: str  # of plan.json's bytes: every shard's run.json names it
    doc: dict[str, Any]
    allow_weak: bool
    fresh: FreshSet | None  # None for a plan on a held-out set
    held_out: Any  # seedsets.Commitment of a held-out set, or None

    @property
    def context(self) -> dict[str, Any]:
        """The job section every record of the planned run carries."""
        return self.doc["context"]

    def gradings(self) -> list[plan_mod.Grading]:
        """Every grading of the plan, in plan order."""
        return [plan_mod.Grading(*g) for g in self.context["plan"]]


class Planned(NamedTuple):
    """What a run with a plan flies and grades."""

    unseen: Unseen
    work: plan_mod.Work


def _made(context: dict[str, Any]) -> frozenset[tuple[str, int]]:
    """The built sessions whose controllers the plan grades."""
    out = set()
    for group, role, controller in context["plan"]:
        if role != "loop" and controller.startswith(plan_mod.BUILT):
            out.add((group, int(controller.rsplit("/", 1)[1])))
    return frozenset(out)


def canonical_text(doc: dict[str, Any]) -> str:
    """plan.json's one text form."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load(folder: str | Path) -> Plan:
    """Read a plan folder strictly; BadInput naming the file and what is wrong."""
    from plimsoll_ci.grading import fresh, seedsets

    folder = Path(folder)
    path = folder / PLAN_FILE
    where = f"--plan {folder}"
    try:  # a FIFO or a device in its place is never read; a plan over the bound is refused
        data = read_bounded(path, MAX_PLAN_BYTES, f"{where}: {PLAN_FILE}")
    except BadInput as e:
        raise BadInput(f"{e}; give the --out folder of `squeeze plan`") from None
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise BadInput(f"{path}: not JSON; give the plan.json `squeeze plan` wrote") from None
    if not isinstance(doc, dict) or doc.get("format") != PLAN_FORMAT or set(doc) != KEYS:
        raise BadInput(f"{path}: not a {PLAN_FORMAT} document (it must have exactly the fields "
                       f"{', '.join(sorted(KEYS))})")
    context = doc["context"]
    if not isinstance(context, dict) or context.get("format") != plan_mod.FORMAT \
            or not isinstance(context.get("plan"), list) \
            or not isinstance(doc["code_checks"], list) \
            or len(doc["code_checks"]) != len(context["plan"]):
        raise BadInput(f"{path}: its context or code checks are malformed; make the plan again")
    if data.decode("utf-8") != canonical_text(doc):
        raise BadInput(f"{path}: not the bytes `squeeze plan` writes (edited?); make the plan "
                       "again")
    kind, section = plan_mod.unseen_section(context)
    fresh_set, held_out = None, None
    if kind == "fresh":
        revealed = seedsets.read_revealed(folder / FRESH_FILE)
        if fresh.commit(revealed.fresh) != section.get("commitment"):
            raise BadInput(f"{folder / FRESH_FILE}: its seeds and salt do not hash to the "
                           "plan's commitment; the plan folder was changed, make it again")
        fresh_set = revealed.fresh
    else:
        held_out = seedsets.read_commitment(folder / HELD_OUT_FILE)
        if held_out.record() != section:
            raise BadInput(f"{folder / HELD_OUT_FILE}: not the commitment the plan names")
    import hashlib

    return Plan(folder, hashlib.sha256(data).hexdigest(), doc, doc["allow_weak_seeds"] is True,
                fresh_set, held_out)


def follow(plan: Plan, job: Job, prepared: Any, sealed: Any) -> Planned:
    """Check that `job` is the job `plan` was made of (the job file, every controller's files,
    the recipes) and say what to fly and grade; BadInput naming what differs."""
    from plimsoll_ci.attest.record import practice_set_digest

    if job.sha256 != plan.doc["job"]["sha256"]:
        raise BadInput(f"{job.path}: not the job file the plan {plan.folder} was made of (its "
                       "digest differs); grade the job the plan was made of, or plan again")
    if plan.held_out is not None:
        if sealed is None:
            raise BadInput(f"the plan {plan.folder} is on a held-out set: give each shard "
                           "--sealed SET.commit --reveal SET.json (the commitment in the plan, "
                           f"{plan.held_out.digest[:16]}...)")
        if sealed.commitment.record() != plan.held_out.record():
            raise BadInput(f"--sealed: not the held-out set the plan {plan.folder} was made on "
                           f"(its commitment is {plan.held_out.digest[:16]}...)")
        unseen = Unseen(sealed.fresh, sealed.commitment)
    else:
        if sealed is not None:
            raise BadInput(f"the plan {plan.folder} drew a fresh set: --sealed goes to `squeeze "
                           "plan`, not to its shards")
        unseen = Unseen(plan.fresh)
    context = plan.context
    made = _made(context)
    built = plan.folder / "built"
    paths = {plan_mod.built_id(g, i): built / g / str(i) for g, i in made}
    gradings = plan_mod.gradings(job, made)
    known = dict(zip(prepared.gradings, prepared.code_checks, strict=True))
    code = []
    for g in gradings:
        if g in known:
            code.append(known[g])
        elif paths[g.controller].is_dir():
            code.append(checks.check(checks.controller_files(paths[g.controller]), prepared.scan))
        else:
            raise BadInput(f"--plan {plan.folder}: {g.controller} is missing (the plan's built "
                           "rebuilds travel with it: copy the whole folder)")
    job_ctx = plan_mod.job_context(job, practice_set_digest(job.practice), unseen,
                                   prepared.recipes, prepared.practice_seed_tokens,
                                   recipes.ENCODING, made)
    if canonical.dumps(job_ctx) != canonical.dumps(context):
        differs = sorted(k for k in set(job_ctx) | set(context)
                         if job_ctx.get(k) != context.get(k))
        raise BadInput(f"{job.path}: the job differs from the plan {plan.folder} "
                       f"({', '.join(differs)}): a recipe or a controller list changed since; "
                       "plan again")
    for g, mine, theirs in zip(gradings, code, plan.doc["code_checks"], strict=True):
        if mine != theirs:
            raise BadInput(f"{g.controller}: its files are not the ones the plan's code checks "
                           "read (changed since the plan was made); grade the same checkout, "
                           "or plan again")
    where = [str(paths.get(g.controller) or job.base / g.controller) for g in gradings]
    work = plan_mod.Work(gradings, code, where, job_ctx, session_records(plan))
    return Planned(unseen, work)


def session_records(plan: Plan) -> list[tuple[dict, dict]]:
    """The plan's rebuild-session records, verified under its key, in plan order."""
    from plimsoll_ci.attest import bundle
    from plimsoll_ci.attest.keys import load_public_key
    from plimsoll_ci.attest.record import SESSION_PREDICATE_TYPE
    from plimsoll_ci.squeeze.records import signed_runs

    wanted = (plan.context.get("sessions") or {}).get("plan") or []
    if not wanted:
        return []
    path = plan.folder / artifacts.BUNDLE
    public = load_public_key(plan.folder / artifacts.PUBLIC_KEY)
    data = bundle.read_bundle(path)
    report = bundle.verify_bytes(data, public)
    if not report.ok:
        raise BadInput(f"{path}: does not verify under {plan.folder / artifacts.PUBLIC_KEY} "
                       f"({report.problems[0]}); the plan's session records cannot be used")
    found = []
    for one in signed_runs(data):
        ctx = one.result.get("squeeze") if isinstance(one.result, dict) else None
        if one.predicate_type != SESSION_PREDICATE_TYPE or not isinstance(ctx, dict) \
                or canonical.dumps(ctx.get("job")) != canonical.dumps(plan.context):
            raise BadInput(f"{path} line {one.line}: not a session record of this plan")
        found.append(one)
    keys = [[r.result["session"]["group"], r.result["session"]["index"]] for r in found]
    if keys != wanted:
        raise BadInput(f"{path}: holds sessions {keys}, the plan lists {wanted}")
    return [(r.result, r.predicate) for r in found]


def copy_outputs(plan: Plan, out: Path) -> None:
    """A run graded whole from a plan holds what one runner would: the built rebuilds and the
    sessions' recordings."""
    for name in ("built", "requests"):
        if (plan.folder / name).is_dir():
            shutil.copytree(plan.folder / name, out / name)

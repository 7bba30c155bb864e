"""`squeeze run`: prepare, commit the unseen set, grade everything in parallel, sign, derive.

    outcome = run(job, Options(out=Path("out"), jobs=2, setup=Setup(provider="gvisor")))

Order of events (the order is the guarantee):

1. recipes are counted (one over budget stops the job before anything is written) and every
   controller's code checks run (the ship-scan engine over an in-memory set);
2. the unseen set is settled: a fresh set drawn now, a held-out set committed earlier
   (`Options.sealed`: its reveal was checked against its commitment), or the set of a plan made
   earlier (`Options.plan`, `squeeze plan`: the job and every controller must be what the plan
   recorded). The seed lint runs over it and the practice set (`seedlint.check_flights`): a
   guessable fresh or held-out set stops the job unless weak seeds are allowed, and every signed
   record says which;
3. the out folder is claimed (it must be new or empty) and the signing key loaded; the unseen
   set's commitment is printed and written to `run.json`: before any flight;
4. a job that builds runs its rebuild sessions (`sessions.py`), every request through the
   recording proxy into `requests/`; then the tripwire checks every session's requests against
   the sealed practice seeds, unseen seeds and generator: a hit signs the session records, grades
   nothing and ends the run (exit 1). Sessions that were stopped (budget, rate limit, endpoint
   error), refused (their workspace carries a sealed value) or wrote no controller are counted
   in their records and graded never; the others' workspaces go to `built/GROUP/N/`. With a plan
   the sessions ran when it was made: their records come from it;
5. every controller is graded on the practice and unseen sets in its own sandbox, `jobs` at a
   time (a shard, `Options.shard`, grades only its slice of the plan);
6. the records are signed into the bundle in plan order (sessions first, then gradings; so
   `--jobs` changes no byte of the derived artifacts), once every grading is over: the reveal is
   written only after the last flight. On Ctrl-C, SIGTERM or SIGHUP every sandbox is stopped
   first, then the finished gradings are signed, so the bundle verifies up to its last complete
   record (an interrupted session phase signs nothing);
   With `fresh: {sets: K}` the loops' own controllers also fly K more fresh sets, each drawn and
   committed (`sets/I/run.json`) before any flight, in the same pool (`fresh_sets.py`);
7. the reveal, `result.json`, `evidence.json`, `report.md`, `report.html` are derived from the
   bundle's bytes (`artifacts.derive`, the same road `squeeze verify` takes) and `run.json`,
   the unsigned account (times, load, versions, failures), is finished. A shard derives nothing:
   `bundle merge` does, once every shard is in.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import inside
from plimsoll_ci.grading import fresh as fresh_mod
from plimsoll_ci.squeeze import account as acct
from plimsoll_ci.squeeze import artifacts, checks, fresh_sets, pool, recipes, sessions
from plimsoll_ci.squeeze import plan as plan_mod
from plimsoll_ci.squeeze.grader import Graded, Setup, Task
from plimsoll_ci.squeeze.job import Job
from plimsoll_ci.squeeze.plan import Unseen, Work
from plimsoll_ci.squeeze.progress import Progress
from plimsoll_ci.squeeze.rebuild import Harness

RUN_FORMAT = acct.RUN_FORMAT
REQUESTS = "requests"  # in the out folder: every model request, one folder per session
# How a flight itself ends; any other reason is the controller's or the sandbox's failure.
FLIGHT_OUTCOMES = ("landed", "wall", "gate_frame", "floor", "tilt", "timeout")


class Model(NamedTuple):
    """The endpoint rebuild sessions talk to (`plimsoll_ci.model`)."""

    config: Any  # ModelConfig
    environ: Mapping[str, str] | None = None  # where the key is read (None: os.environ)


class Options(NamedTuple):
    """How to run a job."""

    out: Path
    jobs: int = 0  # 0: the usable cores
    setup: Setup = Setup()
    key_file: str | None = None  # a kept signing key; default: ephemeral
    key_env: str | None = None
    # How one grading happens (default `grader.grade`); a module-level function, run in workers.
    grade_fn: Callable[[Task, Setup], Graded] | None = None
    model: Model | None = None  # needed when the job builds rebuilds
    harness: Harness = Harness()  # what the sessions are given (a canary run plants mistakes)
    sealed: Any = None  # grading.seedsets.SealedSet: a held-out set flown instead of a fresh one
    allow_weak_seeds: bool = False  # grade a fresh or held-out set the seed lint flags
    plan: Any = None  # planfile.Plan: a plan made earlier (`squeeze plan`)
    shard: tuple[int, int] | None = None  # (I, N): grade slice I of N of the plan


class Outcome(NamedTuple):
    """How a run ended."""

    status: str  # "done" | "interrupted" | "breached" (a sealed value reached the model) |
    # "no_rebuilds" (a loop's sessions left nothing to grade) | "planned" (`squeeze plan`)
    exit_code: int
    result: dict[str, Any] | None  # None for a shard: `bundle merge` derives the verdicts
    signed: int
    planned: int


class Prepared(NamedTuple):
    """Everything known before the unseen set is settled."""

    scan: Any  # the code checks' Scanner (also keeps practice seeds out of run.json)
    gradings: list[plan_mod.Grading]
    code_checks: list[dict[str, Any]]
    recipes: dict[str, dict[str, Any]]
    practice_seed_tokens: int
    counted: dict[str, recipes.Recipe]  # loops' recipes as counted (their text goes to sessions)


def claim_out(out: Path) -> None:
    """Create the out folder, or accept an empty one; refuse one holding anything."""
    acct.claim_out(out)


def artifacts_json(doc: dict[str, Any]) -> str:
    """run.json's text (the same JSON style as the derived artifacts)."""
    return acct.dumps(doc)


def model_needed(job: Job) -> str:
    """What to say when a job builds and no model endpoint was given."""
    g = next(g for g in job.groups() if g.build)
    where = f"loops.{g.name}" if g.name != "control" else "control"
    return (f"{job.path} line {g.line}: {where}.build: rebuilds made through a model need the "
            "model's endpoint: --base-url, --model and --max-tokens (and the key in the "
            "variable --api-key-env names)")


def prepare(job: Job, options: Options | None = None) -> Prepared:
    """Count the recipes (refusing one over budget, and one a model would be sent that carries a
    practice seed or the generator constant) and run every imported controller's code checks."""
    if job.builds() and options is not None and options.plan is None and options.model is None:
        raise BadInput(model_needed(job))
    if job.builds() and options is None:
        raise BadInput(model_needed(job))
    scan = checks.scanner(job.practice)
    found: dict[str, dict[str, Any]] = {}
    counted: dict[str, recipes.Recipe] = {}
    for g in job.loops:
        if g.recipe is None:
            continue
        recipe = recipes.load(job.base, g.recipe, job.recipe_tokens, f"{job.path} loops.{g.name}")
        carried = checks.check_text(recipe.text, scan)
        if carried and g.build:
            raise BadInput(f"{job.path} loops.{g.name}: recipe {recipe.path} carries "
                           f"{', '.join(carried)}; it would cross the wall to the rebuilds' "
                           "model. Squeeze it again without them")
        found[g.name] = {"path": recipe.path, "sha256": recipe.sha256, "tokens": recipe.tokens,
                         "carries": carried, "text": None if carried else recipe.text}
        counted[g.name] = recipe
    gradings = plan_mod.gradings(job)
    # Checked again as they are read: a folder swapped for a link since the job was parsed is
    # refused, not read.
    code = [checks.check(checks.controller_files(
        inside(job.base, g.controller, f"{job.path}: controller")), scan) for g in gradings]
    return Prepared(scan, gradings, code, found, recipes.seed_list_tokens(job.practice), counted)


def unseen_of(job: Job, options: Options, fresh_set: fresh_mod.FreshSet | None = None) -> Unseen:
    """The unseen set of a run without a plan: the held-out set it was given, else `fresh_set`
    (a set drawn earlier: tests, benchmarks), else a fresh set drawn now."""
    if options.sealed is not None:
        if fresh_set is not None:
            raise BadInput("a run flies a held-out set or a fresh set, not both")
        return Unseen(options.sealed.fresh, options.sealed.commitment)
    fresh = fresh_set or fresh_mod.draw(job.fresh_count)
    if len(fresh.seeds) != job.fresh_count:
        raise BadInput(f"fresh set: {len(fresh.seeds)} seeds, the job asks for {job.fresh_count}")
    return Unseen(fresh)


def lint(job: Job, unseen: Unseen, allow_weak: bool, progress: Progress):  # -> SeedCheck
    """The seed lint over the practice set and the unseen set, before any flight: BadInput for
    a guessable fresh or held-out set unless `allow_weak`; a note for a flagged practice set."""
    from plimsoll_ci.grading import seedlint, seeds

    flights = seeds.named("practice", job.practice, shown=False) + unseen.flights()
    check = seedlint.check_flights(flights, job.practice, allow_weak, committed=unseen.seeds.seeds)
    for note in check.notes():
        progress.note(note)
    return check


def _summary(graded: Graded, scan: Any) -> tuple[str, dict[str, Any]]:
    flights = graded.result["flights"]
    n = graded.result["squeeze"]["job"]["practice"]["count"]
    p = sum(f["landed"] for f in flights[:n])
    f = sum(f["landed"] for f in flights[n:])
    reasons: dict[str, int] = {}
    details: list[str] = []
    for fl in flights:
        if not fl["landed"]:
            reasons[fl["reason"]] = reasons.get(fl["reason"], 0) + 1
            detail = (fl.get("detail") or "")[:200]
            if fl["reason"] not in FLIGHT_OUTCOMES and detail and len(details) < 3:
                carried = checks.check_text(detail, scan)  # a controller writes its own errors
                if carried:
                    detail = f"(not shown: it carries {', '.join(carried)})"
                if detail not in details:
                    details.append(detail)
    kind = "fresh" if "fresh" in graded.result["squeeze"]["job"] else "held-out"
    text = f"practice {p}/{n}, {kind} {f}/{len(flights) - n}"
    if reasons:
        text += " (not landed: " + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) + ")"
    return text, {"landed": [p, f], "not_landed": dict(sorted(reasons.items())),
                  "details": details, "tier": graded.result["tier"]}


class _Running(NamedTuple):
    """What the steps of one run share."""

    job: Job
    options: Options
    prepared: Prepared
    unseen: Unseen
    signer: Any
    account: dict[str, Any]  # run.json, as it grows
    progress: Progress


def start(job: Job, options: Options, progress: Progress, unseen: Unseen,
          prepared: Prepared) -> _Running:
    """Claim the out folder, load the key, write the first account and say the commitment."""
    out = Path(options.out)
    acct.claim_out(out)
    signer = acct.signer(out, options.key_file, options.key_env)
    jobs = options.jobs or pool.usable_cores()
    progress.note(f"the {len(job.practice)} practice seeds take {prepared.practice_seed_tokens} "
                  f"tokens ({recipes.ENCODING}); recipes: " +
                  (", ".join(f"{k} {v['tokens']}" for k, v in prepared.recipes.items()) or "none")
                  + f" of {job.recipe_tokens}")
    account: dict[str, Any] = {
        "format": RUN_FORMAT, "status": "running",
        "job": {"path": str(job.path), "sha256": job.sha256},
        "committed_at": acct.now(), "started": acct.now(),
        "gradings": {"planned": len(prepared.gradings), "signed": 0},
        "jobs": jobs, "cores": pool.usable_cores(), "provider": options.setup.provider,
        "min_tier": options.setup.min_tier, "cpu_budget": options.setup.budget.record(),
        "versions": acct.versions(), "load": {"start": acct.load()},
        "key": {"id": signer.keyid, "ephemeral": signer.ephemeral},
    }
    if unseen.sealed is None:
        account["fresh_commitment"] = unseen.commitment
        said = (f"fresh set of {len(unseen.seeds.seeds)} drawn and committed before any flight: "
                f"{unseen.commitment}")
    else:
        c = unseen.sealed
        account["held_out_commitment"] = c.digest
        account["committed_at"] = c.committed
        said = (f"held-out set of {c.count} seeds, committed at {c.committed}: its reveal "
                f"matches the commitment {c.digest}")
    if options.plan is not None:
        account["plan"] = {"sha256": options.plan.sha256}
        said += f" (from the plan {options.plan.folder})"
    acct.write(out / artifacts.RUN, acct.dumps(account))
    progress.note(said)
    return _Running(job, options, prepared, unseen, signer, account, progress)


def run(job: Job, options: Options, progress: Progress,
        fresh_set: fresh_mod.FreshSet | None = None, more_sets: list | None = None) -> Outcome:
    """Run the job into `options.out` (see the module doc); `fresh_set` and `more_sets` (the
    job's `fresh.sets`) only for sets drawn earlier (tests, benchmarks): by default new ones are
    drawn here."""
    out = Path(options.out)
    acct.refuse_used(out)  # before any work
    if options.shard is not None and options.plan is None:
        raise BadInput("--shard I/N grades a slice of a plan: make one with `squeeze plan JOB "
                       "--out PLAN` and pass --plan PLAN")
    prepared = prepare(job, options)  # a recipe over budget stops here, before anything is written
    planned = None
    if options.plan is not None:
        from plimsoll_ci.squeeze import planfile

        if fresh_set is not None:
            raise BadInput("a run with a plan flies the plan's set, not another")
        planned = planfile.follow(options.plan, job, prepared, options.sealed)
        unseen, allow_weak = planned.unseen, options.plan.allow_weak
    else:
        unseen, allow_weak = unseen_of(job, options, fresh_set), options.allow_weak_seeds
    check = lint(job, unseen, allow_weak, progress)  # weak seeds stop here: nothing written
    more = None
    if job.fresh_sets and (planned is not None or unseen.sealed is not None):
        progress.note(f"fresh.sets {job.fresh_sets}: a run from a plan or on a held-out set "
                      "flies no more fresh sets (run the job without --plan/--sealed for them)")
    elif planned is None and job.fresh_sets:  # the spread, measured
        drawn = [Unseen(f) for f in more_sets or [fresh_mod.draw(job.fresh_count)
                                                  for _ in range(job.fresh_sets)]]
        if len(drawn) != job.fresh_sets or any(len(u.seeds.seeds) != job.fresh_count
                                                for u in drawn):
            raise BadInput(f"more fresh sets: the job asks for {job.fresh_sets} of "
                           f"{job.fresh_count} seeds")
        more = fresh_sets.More(drawn, [lint(job, u, allow_weak, progress).record()
                                       for u in drawn], job.sha256)
    ctx = start(job, options, progress, unseen, prepared)
    if more is not None:
        fresh_sets.begin(Path(options.out), more, len(job.loops), progress)
    if planned is not None:
        work = planned.work
        if options.shard is None:
            from plimsoll_ci.squeeze import planfile

            planfile.copy_outputs(options.plan, Path(options.out), work.sessions)
    else:
        settled = _settle_or_say_why(ctx, len(more.unseen) if more is not None else 0)
        if isinstance(settled, Outcome):
            return settled
        work = settled
    return _grade(ctx, work, check.record(), more)


def make_plan(job: Job, options: Options, progress: Progress) -> Outcome:
    """Make the plan folder `options.out` (see `planfile`'s doc); `planned`, or how a job that
    builds stopped (interrupted, breached, no rebuilds)."""
    from plimsoll_ci.grading import fresh, seedsets
    from plimsoll_ci.squeeze import planfile as pf

    out = Path(options.out)
    acct.refuse_used(out)
    prepared = prepare(job, options)
    unseen = unseen_of(job, options)
    check = lint(job, unseen, options.allow_weak_seeds, progress)
    ctx = start(job, options, progress, unseen, prepared)
    work = _settle_or_say_why(ctx)
    if isinstance(work, Outcome):
        return work
    if work.sessions:
        _sign(out, ctx.signer, work.sessions, [])
    else:  # nothing for the plan's key to sign: no key is kept with the plan
        (out / artifacts.PUBLIC_KEY).unlink(missing_ok=True)
        ctx.account["key"] = None
    if unseen.sealed is None:
        seedsets.write_set(out / pf.FRESH_FILE, unseen.seeds, bits=fresh.BITS)
        kept = {"kind": "fresh", "file": pf.FRESH_FILE}
    else:
        seedsets.write_public(out / pf.HELD_OUT_FILE, unseen.sealed.document(), "commitment")
        kept = {"kind": "held_out", "file": pf.HELD_OUT_FILE}
    doc = {"format": pf.PLAN_FORMAT, "job": {"path": str(job.path), "sha256": job.sha256},
           "context": work.job_ctx, "code_checks": work.code,
           "allow_weak_seeds": bool(options.allow_weak_seeds), "seed_check": check.record(),
           "planned": acct.now(), "unseen": kept}
    acct.write(out / pf.PLAN_FILE, pf.canonical_text(doc))
    ctx.account.update({"status": "planned", "finished": acct.now(),
                        "gradings": {"planned": len(work.gradings), "signed": 0}})
    acct.write(out / artifacts.RUN, acct.dumps(ctx.account))
    progress.note(f"plan {out}: {len(work.gradings)} gradings against the committed set; grade "
                  f"them with `squeeze run {job.path} --plan {out} --shard I/N --out DIR` on N "
                  "machines, then `plimsoll-ci bundle merge DIR... --plan "
                  f"{out} --out MERGED`")
    return Outcome("planned", 0, None, len(work.sessions), len(work.gradings))


def _settle_or_say_why(ctx: _Running, sets: int = 0) -> Work | Outcome:
    """`_settle`; when it raises (an endpoint refusing the key, a wall breach, no sandbox, a
    bug), run.json says the run failed and why before the error goes on: never "running"."""
    try:
        return _settle(ctx, sets)
    except BaseException as e:
        account = ctx.account
        if account.get("status") == "running":
            interrupted = isinstance(e, KeyboardInterrupt | pool.Interrupted)
            account.update({"status": "interrupted" if interrupted else "failed",
                            "finished": acct.now(),
                            "why": [str(e)[:500] or e.__class__.__name__]})
            acct.write(Path(ctx.options.out) / artifacts.RUN, acct.dumps(account))
        raise


def _settle(ctx: _Running, sets: int = 0) -> Work | Outcome:
    """Run the job's rebuild sessions, if it builds, and say what to grade; or how the sessions
    stopped (interrupted, breached, no rebuilds)."""
    built: list = []
    if ctx.job.builds():
        built_or_stop = _build(ctx)
        if isinstance(built_or_stop, Outcome):
            return built_or_stop
        built = built_or_stop
    return local_work(ctx, built, sets)


def local_work(ctx: _Running, built: list, sets: int = 0) -> Work:
    """The gradings of a run that settled its own sessions (`built`: their outcomes); `sets`:
    the more fresh sets it flies (every record's job section says how many)."""
    from plimsoll_ci.digests import practice_set_digest

    job, prepared = ctx.job, ctx.prepared
    made = frozenset((d.spec.group, d.spec.index) for d in built if d.graded)
    paths = {d.doc["controller"]: d.workspace for d in built if d.graded}
    gradings = plan_mod.gradings(job, made)
    known = dict(zip(prepared.gradings, prepared.code_checks, strict=True))
    code = [known[g] if g in known else
            checks.check(checks.controller_files(paths[g.controller]), prepared.scan)
            for g in gradings]
    job_ctx = plan_mod.job_context(job, practice_set_digest(job.practice), ctx.unseen,
                                   prepared.recipes, prepared.practice_seed_tokens,
                                   recipes.ENCODING, made)
    if sets:
        job_ctx["fresh_sets"] = sets
    where = [str(paths.get(g.controller) or job.base / g.controller) for g in gradings]
    return Work(gradings, code, where, job_ctx, sessions.records(built, job_ctx))


def _grade(ctx: _Running, work: Work, seed_check: dict[str, Any],
           more: fresh_sets.More | None = None) -> Outcome:
    """Grade this run's gradings (a shard: its slice) and its more fresh sets' in one pool,
    sign, and (unless a shard) derive."""
    job, options, prepared, unseen, signer, account, progress = ctx
    out = Path(options.out)
    picked = list(range(len(work.gradings)))
    if options.shard is not None:
        index, count = options.shard
        picked = picked[index - 1::count] if 1 <= index <= count else []
        plan_mod.shard(work.gradings, index, count)  # BadInput for a bad I/N
    tasks = [Task(work.paths[i], job.course, job.practice, unseen,
                  plan_mod.grading_context(work.job_ctx, work.gradings[i], work.code[i]),
                  seed_check) for i in picked]
    gradings = [work.gradings[i] for i in picked]
    extra = [] if more is None else fresh_sets.tasks(more, work, lambda i, u, c, sc: Task(
        work.paths[i], job.course, job.practice, u, c, sc))
    labels = [g.label() for g in gradings] + [f"{t.grading.label()} on fresh set {t.index}"
                                               for t in extra]
    set_done: dict[int, Any] = {}
    account["gradings"]["planned"] = len(tasks)
    if options.shard is not None:
        account["shard"] = {"index": options.shard[0], "count": options.shard[1],
                            "gradings": [list(g) for g in gradings]}
    acct.write(out / artifacts.RUN, acct.dumps(account))
    done: dict[int, Graded] = {}
    per: dict[int, dict[str, Any]] = {}
    t0 = time.monotonic()

    def on_start(index: int) -> None:
        progress.began(labels[index])

    def on_done(d: pool.Done) -> None:
        if d.index >= len(tasks):  # a more fresh set's grading
            set_done[d.index] = d.graded
            progress.finished(labels[d.index], f"{_summary(d.graded, prepared.scan)[0]} "
                              f"[{d.wall_s:.1f} s]")
            return
        # its account first: a signal between the two lines leaves a grading unsigned, never a
        # signed grading without its account (a KeyError that left run.json "running")
        text, info = _summary(d.graded, prepared.scan)
        per[d.index] = {"grading": list(gradings[d.index]), "wall_s": round(d.wall_s, 3),
                        **info}
        done[d.index] = d.graded
        progress.finished(gradings[d.index].label(), f"{text} [{d.wall_s:.1f} s]")

    status, code_, error = "done", 0, None
    progress.start(len(tasks) + len(extra), f"grading {len(tasks)} controllers" + (
        f" and the loops' own on {len(more.unseen)} more fresh sets"
        if more is not None and extra else "") + (
        f" (shard {options.shard[0]}/{options.shard[1]} of {len(work.gradings)})"
        if options.shard is not None else ""))
    try:
        pool.run(tasks + [t.task for t in extra], options.setup,
                 options.jobs or pool.usable_cores(), on_start, on_done, options.grade_fn)
    except pool.Interrupted as e:
        status, code_ = "interrupted", 128 + e.signum
    except pool.GradingFailed as e:
        status, code_, error = "failed", e.exit_code, e
    finally:
        progress.close()
    finished = sorted(done)
    _sign(out, signer, [] if options.shard is not None else work.sessions,
          [(done[i].result, done[i].predicate) for i in finished])
    if more is not None:
        fresh_sets.sign(out, signer, more, extra, [(extra[i - len(tasks)], set_done[i])
                                                    for i in sorted(set_done)], _sign)
    account.update({
        "status": status, "finished": acct.now(), "wall_s": round(time.monotonic() - t0, 3),
        "gradings": {"planned": len(tasks), "signed": len(finished)},
        "per_grading": [per[i] for i in finished],
        "load": {"start": account["load"]["start"], "end": acct.load()},
    })
    if error is not None:
        account["error"] = str(error)
    result = None
    if status == "done" and options.shard is None:
        result = write_derived(out, signer.public)
    acct.write(out / artifacts.RUN, acct.dumps(account))
    if error is not None:
        raise error
    if status == "interrupted":
        progress.note(f"interrupted: every sandbox stopped; {len(finished)} of {len(tasks)} "
                      f"gradings signed into {out / artifacts.BUNDLE}" if finished else
                      "interrupted before any grading finished: nothing was signed")
    return Outcome(status, code_, result, len(finished), len(tasks))


def write_derived(out: Path, public: Any) -> dict[str, Any]:
    """Derive every artifact from the bundle in `out` and write it; the result."""
    import json

    derived = artifacts.derive((out / artifacts.BUNDLE).read_bytes(), public,
                               fresh_sets.bundles(out))
    if derived.files is None:  # our own bundle must read back; anything else is a bug
        raise BadInput("the bundle this run wrote does not read back: "
                       + "; ".join([*derived.read.problems, *derived.problems][:3]))
    for name, text in derived.files.items():
        acct.write(out / name, text)
    return json.loads(derived.files["result.json"])


def _sign(out: Path, signer: Any, session_records: list, grading_records: list) -> None:
    """Append the session records, then the gradings', to the run's bundle."""
    from plimsoll_ci.attest import bundle
    from plimsoll_ci.attest.record import SESSION_PREDICATE_TYPE

    path = out / artifacts.BUNDLE
    if session_records:
        bundle.append_runs(path, session_records, signer, SESSION_PREDICATE_TYPE)
    if grading_records:
        bundle.append_runs(path, grading_records, signer)
    bundle.lock_path(path).unlink(missing_ok=True)  # only we append here


def _build(ctx: _Running) -> list | Outcome:
    """Run the job's rebuild sessions and check the wall; the finished sessions, or the Outcome
    that ends the run (interrupted, or the tripwire found a sealed value sent)."""
    import shutil

    from plimsoll_ci.model.session import Budget
    from plimsoll_ci.sandbox import owner
    from plimsoll_ci.squeeze import rebuild, wall

    job, options, prepared, unseen, _signer, account, progress = ctx
    assert options.model is not None
    out = Path(options.out)
    config = options.model.config
    if unseen.sealed is None:
        secrets = wall.seal(job.practice, unseen.seeds, withheld=options.setup.withheld)
    else:
        secrets = wall.seal(job.practice, None, withheld=options.setup.withheld,
                            held_out=unseen.seeds)
    planned = sessions.specs(job, prepared.counted)
    account["model"] = {"base_url": config.base_url, "model": config.model,
                        "max_tokens": config.max_tokens, "limits": rebuild.limits(config)}
    account["sessions"] = {"planned": len(planned)}
    acct.write(out / artifacts.RUN, acct.dumps(account))
    budget = Budget(config.max_tokens)
    work = owner.tempdir("rebuilds")  # a killed run's is reaped by the next (it has our token)
    try:
        setting = rebuild.Setting(config, options.model.environ, budget, secrets, job.course,
                                  out / REQUESTS, work, options.setup.provider,
                                  job.max_turns, job.smoke, options.harness)
        progress.start(len(planned), f"building {len(planned)} rebuilds through "
                       f"{config.model} (at most {config.max_tokens} tokens)")
        try:
            built = sessions.run_all(
                planned, setting, options.jobs or pool.usable_cores(),
                lambda s: progress.began(f"session {s.name}"),
                lambda d: progress.finished(f"session {d.spec.name}", sessions.summary(d)))
        except pool.Interrupted as e:
            progress.close()
            account.update({"status": "interrupted", "finished": acct.now()})
            acct.write(out / artifacts.RUN, acct.dumps(account))
            progress.note("interrupted during the rebuild sessions: every sandbox stopped, "
                          "nothing was signed")
            return Outcome("interrupted", 128 + e.signum, None, 0, 0)
        finally:
            progress.close()
        account["sessions"].update({
            "done": len(built), "tokens": budget.spent,
            "per_session": [{"session": d.spec.name, "ended": d.doc["ended"],
                             "verdict": d.doc["verdict"], "turns": d.doc["turns"],
                             "tokens": d.doc["tokens"]} for d in built]})
        found = sessions.hits(built)
        if found:
            return _ended(ctx, built, "breached", [f"tripwire: {x}" for x in found] + [
                f"the wall was breached: {len(found)} sealed value(s) reached the model; "
                "nothing was graded (the session records are signed in the bundle)"])
        empty = sessions.ungraded_loops(job, built)
        if empty:
            return _ended(ctx, built, "no_rebuilds", empty)
        paths = sessions.keep_workspaces(built, out)  # before the private folder goes
        return [d._replace(workspace=paths[d.doc["controller"]]) if d.graded else d
                for d in built]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _ended(ctx: _Running, built: list, status: str, why: list[str]) -> Outcome:
    """A run that cannot grade (`breached`: the tripwire found a sealed value the harness sent;
    `no_rebuilds`): sign the session records, grade nothing, exit 1."""
    from plimsoll_ci.digests import practice_set_digest

    job, options, prepared, unseen, signer, account, progress = ctx
    made = frozenset((d.spec.group, d.spec.index) for d in built if d.graded)
    job_ctx = plan_mod.job_context(job, practice_set_digest(job.practice), unseen,
                                   prepared.recipes, prepared.practice_seed_tokens,
                                   recipes.ENCODING, made)
    out = Path(options.out)
    _sign(out, signer, sessions.records(built, job_ctx), [])
    account.update({"status": status, "finished": acct.now(), "why": why})
    acct.write(out / artifacts.RUN, acct.dumps(account))
    for line in why:
        progress.note(line)
    return Outcome(status, 1, None, len(built), 0)

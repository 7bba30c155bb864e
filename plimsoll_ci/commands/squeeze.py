"""`plimsoll-ci squeeze run|plan|verify|recipe|canary`.

plan: 0 the plan folder was written (the unseen set settled and committed, a job that builds ran
its sessions); 1 as run (breached, no rebuilds); 2 bad input.
run: exit 0 when every grading was signed and the artifacts written (whatever the verdicts);
1 when the tripwire found a sealed value sent to the rebuilds' model (the session and request
named, never the value), or a loop's sessions left nothing to grade; 2 bad input (the job file, a
recipe over budget, no model endpoint for `build:`, no sandbox at the tier asked for, no
bubblewrap wall for `--provider process` where PLIMSOLL_BWRAP=required); 130 / 143
when stopped by SIGINT / SIGTERM (every sandbox stopped, finished gradings signed).
verify: 0 verified, 1 something disagrees (every problem listed), 2 bad input.
recipe: 0 a recipe within budget was written; 1 none was (over budget after every draft, the
budget spent, a rate limit, or the recipe carries a sealed value); 2 bad input.
canary: 0 every canary planted and none sent; 1 a canary was sent or not planted; 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

MAX_JOBS = 256  # sandboxes at once on one machine: far past any machine's cores


def _add_run_and_plan(parser: argparse.ArgumentParser, add_model_arguments: Any):
    """The `run` and `plan` subcommands (they take the same flags); the subparsers."""
    sub = parser.add_subparsers(dest="squeeze_command",
                                metavar="run|plan|k8s|verify|recipe|canary")
    run = sub.add_parser("run", help="grade a loop against its rebuilds; sign; write the reports",
                         description="Grade every controller of the job on the practice set and "
                         "a fresh set committed before any flight (or a held-out set committed "
                         "earlier, or a plan's set), in parallel sandboxes; sign a record per "
                         "grading; derive the verdicts and reports.")
    _run_arguments(run, add_model_arguments)
    run.add_argument("--plan", metavar="PLAN",
                     help="the folder of `squeeze plan`: grade against its committed set")
    run.add_argument("--shard", metavar="I/N",
                     help="with --plan: grade only slice I of N (merge the N folders with "
                          "`plimsoll-ci bundle merge`)")
    plan = sub.add_parser("plan", help="settle a job's unseen set once, for shards",
                          description="Draw the fresh set once (or take a held-out set with "
                          "--sealed), commit to it, run a job's rebuild sessions, and write the "
                          "plan folder that `squeeze run --plan PLAN --shard I/N` grades from.")
    _run_arguments(plan, add_model_arguments)
    return sub


def _run_arguments(run: argparse.ArgumentParser, add_model: Any) -> None:
    """The flags `run` and `plan` share."""
    from plimsoll_ci.commands._common import whole
    from plimsoll_ci.commands._grading_flags import (
        add_limit_arguments,
        add_sandbox_arguments,
        add_signing_key_arguments,
        add_withheld_arguments,
    )

    run.add_argument("job", metavar="JOB", help="the job file (squeeze.yaml)")
    run.add_argument("--out", required=True, metavar="DIR",
                     help="a new or empty folder for the artifacts")
    run.add_argument("--jobs", type=whole(0, MAX_JOBS), default=0, metavar="N",
                     help=f"gradings at once (default: the cores this process may use; at most "
                          f"{MAX_JOBS})")
    add_sandbox_arguments(run)
    add_withheld_arguments(run)
    add_limit_arguments(run)
    add_signing_key_arguments(run.add_argument_group(
        "signing (default: an ephemeral key; only its public half, harness.pub, is written)"
    ).add_mutually_exclusive_group())
    held = run.add_argument_group("a held-out set committed earlier (`seeds draw`, `seeds commit`) "
                                  "flown in place of a fresh set")
    held.add_argument("--sealed", metavar="SET.commit",
                      help="its commitment, published before the run; refused unless --reveal "
                           "matches it")
    held.add_argument("--reveal", metavar="SET.json",
                      help="with --sealed: the set file (or its reveal) the commitment is to")
    run.add_argument("--allow-weak-seeds", action="store_true",
                     help="grade a fresh or held-out set the seed lint flags as guessable (every "
                          "signed record says so)")
    add_model(run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`run`, `plan`, `k8s`, `verify`, `recipe` and `canary`."""
    from plimsoll_ci.commands._common import whole
    from plimsoll_ci.commands._grading_flags import PROVIDER_CHOICES
    from plimsoll_ci.commands._model import add_model_arguments

    sub = _add_run_and_plan(parser, add_model_arguments)
    k8s = sub.add_parser("k8s", help="write Kubernetes manifests that run the job as N shards",
                         description="Write base.yaml (results volume, a NetworkPolicy denying "
                         "all egress), plan.yaml, shards.yaml (an Indexed Job of N pods) and "
                         "merge.yaml into a new folder: every pod under the gVisor RuntimeClass, "
                         "with no service account token and resource limits; each grading in "
                         "bubblewrap (a shard pod where it does not work exits 2).")
    k8s.add_argument("job", metavar="JOB", help="the job file (checked here; the image holds it)")
    k8s.add_argument("--shards", type=int, required=True, metavar="N", help="pods grading at once")
    k8s.add_argument("--image", required=True, metavar="IMAGE",
                     help="an image holding plimsoll-ci and the job's folder")
    k8s.add_argument("--out", required=True, metavar="DIR", help="a new or empty folder")
    k8s.add_argument("--workdir", default="/job", metavar="PATH",
                     help="where the job's folder is in the image (default /job)")
    k8s.add_argument("--name", default="squeeze", help="the run's name (objects, labels)")
    k8s.add_argument("--namespace", default="default")
    k8s.add_argument("--runtime-class", default="gvisor", metavar="NAME",
                     help="the cluster's gVisor RuntimeClass (GKE Sandbox: gvisor)")
    k8s.add_argument("--cpu", default="2", help="CPU per pod, request = limit (default 2)")
    k8s.add_argument("--memory", default="2Gi", help="memory per pod (default 2Gi)")
    k8s.add_argument("--storage", default="1Gi", help="the results volume's size (default 1Gi)")
    k8s.add_argument("--storage-class", metavar="NAME",
                     help="a storage class offering ReadWriteMany (default: the cluster's)")
    k8s.add_argument("--bubblewrap-settings", action="store_true",
                     help="give the shard pods what bubblewrap (each grading's wall) needs under "
                          "runc: hostUsers false, procMount Unmasked, seccomp and AppArmor "
                          "Unconfined (see docs/scale.md)")
    verify = sub.add_parser("verify", help="recompute a squeeze from its signed records",
                            description="Check the bundle's signatures and chain, the committed "
                            "seed sets, and that every artifact is exactly what the records give. "
                            "Starts no sandbox.")
    verify.add_argument("folder", metavar="DIR", help="the --out folder of `squeeze run`")
    verify.add_argument("--pub", required=True, metavar="KEY",
                        help="the public key you trust for this run: a copy taken from where it "
                             "ran (its harness.pub as published), not the one in DIR")
    verify.add_argument("--shard-pub", action="append", default=[], metavar="KEY",
                        help="a merged folder: a key its shards may be signed by (repeatable); "
                             "without it the kept shards are checked under the keys kept beside "
                             "them, which proves consistency only")
    verify.add_argument("--format", choices=["text", "json"], default="text")
    recipe = sub.add_parser("recipe", help="squeeze a loop's record into a recipe through a model",
                            description="Send a loop's record (a folder of transcripts, "
                            "controller versions and scores) to the model and ask for a recipe "
                            "of at most --tokens tokens; drafts over budget are sent back with "
                            "their count. The recipe is scanned for sealed values before it is "
                            "written.")
    recipe.add_argument("--record", required=True, metavar="DIR", help="the loop's record")
    recipe.add_argument("--out", required=True, metavar="DIR",
                        help="a new or empty folder: recipe.txt, recipe.json, requests/")
    recipe.add_argument("--tokens", type=whole(1, 100_000), default=32, metavar="N",
                        help="the recipe's budget in cl100k_base tokens (default 32; at most "
                             "100000, as a job's recipe_tokens)")
    recipe.add_argument("--drafts", type=whole(1, 32), default=4, metavar="N",
                        help="drafts asked for at most (default 4; at most 32)")
    recipe.add_argument("--practice", metavar="FILE",
                        help="the loop's practice seeds, one per line (default: the simulator's "
                             "16); the recipe must not carry them")
    recipe.add_argument("--sealed", action="append", default=[], metavar="SET",
                        help="a sealed or withheld set the recipe must not carry; repeatable")
    recipe.add_argument("--sealed-key-env", metavar="VAR",
                        help="environment variable holding the --sealed sets' HMAC key")
    recipe.add_argument("--sealed-key-file", metavar="FILE",
                        help="file holding the --sealed sets' HMAC key")
    add_model_arguments(recipe)
    canary = sub.add_parser("canary", help="the canary run of the rebuild harness",
                            description="Plant canaries in place of the practice seeds, the "
                            "fresh seeds and the generator, run the rebuild harness (one session "
                            "per loop and one for the control group), and pass only when every "
                            "canary was planted and none was sent.")
    canary.add_argument("job", metavar="JOB", help="the job file (squeeze.yaml)")
    canary.add_argument("--echo", action="store_true",
                        help="use a built-in endpoint on 127.0.0.1 that answers with one fly "
                             "call and then stops (no model, no key, no network)")
    canary.add_argument("--out", metavar="DIR",
                        help="a new or empty folder for the canaries, what was planted and the "
                             "recorded requests (default: a temporary folder, removed)")
    canary.add_argument("--provider", choices=PROVIDER_CHOICES,
                        default="gvisor", metavar="PROVIDER",
                        help="sandbox provider for run_code and fly (default gvisor)")
    canary.add_argument("--jobs", type=whole(1, MAX_JOBS), default=1, metavar="N",
                        help=f"sessions at once (default 1; at most {MAX_JOBS})")
    add_model_arguments(canary)


def _shard(text: str | None) -> tuple[int, int] | None:
    """`--shard I/N` as (I, N); BadInput for anything else."""
    from plimsoll_ci.errors import BadInput

    if text is None:
        return None
    i, sep, n = text.partition("/")
    if not (sep and i.isdigit() and n.isdigit() and 1 <= int(i) <= int(n)):
        raise BadInput(f"--shard {text}: give I/N with 1 <= I <= N, e.g. --shard 2/4")
    return int(i), int(n)


def _options(args: argparse.Namespace):  # -> (Job, run.Options)
    """The job and the options `run` and `plan` build from their shared flags."""
    from pathlib import Path

    from plimsoll_ci.commands import _grading_flags as flags
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.squeeze import job as job_mod
    from plimsoll_ci.squeeze import run as run_mod
    from plimsoll_ci.squeeze.grader import Setup
    from plimsoll_ci.withheld import key_from, load

    if args.jobs < 0:
        raise BadInput(f"--jobs {args.jobs}: give 1 or more (0 or none: the usable cores)")
    job = job_mod.load(args.job)
    if args.provider == "process":
        from plimsoll_ci.sandbox import process

        process.require_wall()  # PLIMSOLL_BWRAP=required: no wall, no grading (exit 2)
    if args.min_tier is not None:
        from plimsoll_ci import tiers
        from plimsoll_ci.sandbox import all_providers

        tiers.require(all_providers.get(args.provider).configured_tier(), args.min_tier,
                      f"provider {args.provider}")
    key = key_from(args.withheld_key_env, args.withheld_key_file,
                   ("--withheld-key-env", "--withheld-key-file"))
    withheld = tuple(load(p, key=key) for p in args.withheld)
    setup = Setup(args.provider, args.min_tier, flags.budget(args), flags.limits(args), withheld)
    model = None
    if job.builds() and getattr(args, "plan", None) is None:
        from plimsoll_ci.commands._model import model_config_from

        if not (args.base_url or args.model or args.max_tokens):
            raise BadInput(run_mod.model_needed(job))
        model = run_mod.Model(model_config_from(args))
    elif args.base_url:
        from plimsoll_ci.names import shown

        print(f"plimsoll-ci squeeze: {shown(args.job)} builds no rebuilds (no build: N); the model "
              "flags are not used", file=sys.stderr)
    if (args.sealed is None) != (args.reveal is None):
        raise BadInput("--sealed SET.commit and --reveal SET.json go together: the commitment "
                       "published before the run, and the set it commits to")
    sealed = None
    if args.sealed is not None:
        from plimsoll_ci.grading import seedsets

        sealed = seedsets.open_sealed(args.sealed, args.reveal)
    plan = shard = None
    if getattr(args, "plan", None) is not None:
        from plimsoll_ci.squeeze import planfile

        plan = planfile.load(args.plan)
        if args.allow_weak_seeds:
            raise BadInput("--allow-weak-seeds goes to `squeeze plan`: the plan decided it "
                           f"({'allowed' if plan.allow_weak else 'not allowed'})")
    shard = _shard(getattr(args, "shard", None))
    return job, run_mod.Options(Path(args.out), args.jobs, setup, args.signing_key_file,
                                args.signing_key_env, model=model, sealed=sealed,
                                allow_weak_seeds=args.allow_weak_seeds, plan=plan, shard=shard)


def _plan(args: argparse.Namespace) -> int:
    from plimsoll_ci.commands._interrupt import reap_leftovers
    from plimsoll_ci.squeeze import progress, run

    job, options = _options(args)
    reap_leftovers("plimsoll-ci squeeze")
    outcome = run.make_plan(job, options, progress.make())
    if outcome.status == "planned":
        print(f"plan in {args.out}: {outcome.planned} gradings; grade them with `plimsoll-ci "
              f"squeeze run {args.job} --plan {args.out} --shard I/N --out DIR`")
    return outcome.exit_code


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from plimsoll_ci.commands._interrupt import reap_leftovers
    from plimsoll_ci.squeeze import progress
    from plimsoll_ci.squeeze import run as run_mod

    job, options = _options(args)
    reap_leftovers("plimsoll-ci squeeze")
    outcome = run_mod.run(job, options, progress.make())
    if options.shard is not None and outcome.status == "done":
        i, n = options.shard
        print(f"shard {i}/{n}: {outcome.signed} gradings signed into {Path(args.out)}; merge "
              "the shards with `plimsoll-ci bundle merge SHARD_DIRS... --out DIR`")
    if outcome.status in ("breached", "no_rebuilds"):
        print(f"plimsoll-ci: squeeze run: {outcome.status.replace('_', ' ')}: no verdict "
              f"(see {Path(args.out) / 'run.json'}); the session records are signed in "
              f"{Path(args.out) / 'bundle.intoto.jsonl'}", file=sys.stderr)
    if outcome.result is not None:
        from plimsoll_ci.squeeze.report_md import verdict_lines

        for line in verdict_lines(outcome.result):
            print(line)
        print(f"artifacts in {args.out}: verify with `plimsoll-ci squeeze verify {args.out} "
              f"--pub {Path(args.out) / 'harness.pub'}`")
    return outcome.exit_code


def _verify(args: argparse.Namespace) -> int:
    import json

    from plimsoll_ci.attest.keys import load_public_key
    from plimsoll_ci.attest.pinned import beside, consistency_note, pin
    from plimsoll_ci.names import shown
    from plimsoll_ci.squeeze.report_md import verdict_lines
    from plimsoll_ci.squeeze.verify import verify

    public = load_public_key(args.pub)
    shard_keys = tuple(pin(args.shard_pub, "--shard-pub")) if args.shard_pub else None
    found = verify(args.folder, public, shard_keys)
    trusted = [f"trusted: key sha256:{public.keyid} (from --pub {args.pub}) for {args.folder}'s "
               "bundle"]
    trusted += [f"trusted: {k.line()} for the kept shards" for k in shard_keys or ()]
    if beside(args.pub, args.folder):
        trusted.append(consistency_note(args.pub, args.folder))
    if args.format == "json":
        print(json.dumps({"folder": str(args.folder), "ok": found.ok, "problems": found.problems,
                          "records": found.records, "result": found.result,
                          "notes": [*trusted, *found.notes]},
                         indent=2, sort_keys=True))
    elif found.ok:
        assert found.result is not None
        made = f" and {found.sessions} rebuild sessions" if found.sessions else ""
        print(f"squeeze {shown(args.folder)}: verified ({found.records - found.sessions} signed "
              f"gradings{made}; result, evidence and reports recomputed from them)")
        for line in verdict_lines(found.result):
            print(f"  {line}")
        for note in (*trusted, *found.notes):
            print(f"  note: {shown(note)}")
    else:
        for problem in found.problems:
            print(shown(problem))
        for note in trusted:
            print(f"note: {shown(note)}")
    if not found.ok:
        n = len(found.problems)
        print(f"plimsoll-ci: squeeze verify: {shown(args.folder)} does not verify ({n} problem"
              f"{'s' if n != 1 else ''}); do not trust its verdicts", file=sys.stderr)
        return 1
    return 0


def _recipe(args: argparse.Namespace) -> int:
    from pathlib import Path

    from plimsoll_ci.commands._model import model_config_from
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.grading.seeds import read_seed_file
    from plimsoll_ci.squeeze import compress, wall
    from plimsoll_ci.squeeze.run import Model
    from plimsoll_ci.withheld import key_from

    if args.tokens < 1 or args.drafts < 1:
        raise BadInput("--tokens and --drafts: give 1 or more")
    model = Model(model_config_from(args))
    key = key_from(args.sealed_key_env, args.sealed_key_file,
                   ("--sealed-key-env", "--sealed-key-file"))
    sealed = tuple(wall.load_sealed(p, key=key) for p in args.sealed)
    practice = tuple(read_seed_file(args.practice)) if args.practice else None
    done = compress.compress(compress.CompressOptions(
        Path(args.record), Path(args.out), args.tokens, args.drafts, practice, sealed), model)
    from plimsoll_ci.names import shown

    if done.recipe is None:
        print(f"plimsoll-ci: squeeze recipe: {shown(done.message)}", file=sys.stderr)
        return 1
    print(shown(done.recipe))  # a model's text: recipe.txt keeps it as it came
    print(f"plimsoll-ci squeeze: {shown(done.message)}", file=sys.stderr)
    return 0


def _canary(args: argparse.Namespace) -> int:
    import shutil
    import tempfile
    from pathlib import Path

    from plimsoll_ci.squeeze import job as job_mod
    from plimsoll_ci.squeeze import progress
    from plimsoll_ci.squeeze.canary import CanaryOptions, run_canary
    from plimsoll_ci.squeeze.run import Model

    job = job_mod.load(args.job)
    model = None
    if not args.echo:
        from plimsoll_ci.commands._model import model_config_from

        model = Model(model_config_from(args))
    temp = None if args.out else tempfile.mkdtemp(prefix="plimsoll-squeeze-canary-")
    out = Path(args.out) if temp is None else Path(temp) / "canary"
    try:
        found = run_canary(job, CanaryOptions(out, model, args.provider, max(1, args.jobs)),
                           progress.make())
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
    from plimsoll_ci.names import shown

    sys.stdout.writelines(shown(line) + "\n" for line in found.text.splitlines())
    if not found.ok:
        print(f"plimsoll-ci: squeeze canary: {shown(args.job)}: a canary was sent or not planted; the "
              "harness leaks, do not run the squeeze until it is fixed", file=sys.stderr)
        return 1
    return 0


def _k8s(args: argparse.Namespace) -> int:
    from pathlib import Path

    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.squeeze import job as job_mod
    from plimsoll_ci.squeeze import k8s

    job = job_mod.load(args.job)
    if job.builds():
        raise BadInput(f"{args.job}: it builds rebuilds through a model, which needs egress the "
                       "manifests deny; make the plan outside the cluster, or import the "
                       "rebuilds")
    cluster = k8s.Cluster(args.name, args.shards, args.image,
                          f"{args.workdir.rstrip('/')}/{Path(args.job).name}", args.namespace,
                          args.runtime_class, args.cpu, args.memory, args.storage,
                          args.storage_class, bubblewrap_settings=args.bubblewrap_settings)
    for path in k8s.write(cluster, Path(args.out)):
        print(f"wrote {path}")
    print("run them in order:")
    for line in k8s.steps(cluster, args.out):
        print(f"  {line}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Dispatch to `run`, `plan`, `verify`, `recipe` or `canary`."""
    commands = {"run": _run, "plan": _plan, "k8s": _k8s, "verify": _verify, "recipe": _recipe, "canary": _canary}
    if args.squeeze_command in commands:
        return commands[args.squeeze_command](args)
    print("usage: plimsoll-ci squeeze run JOB --out DIR | plan JOB --out PLAN | verify DIR --pub KEY | recipe "
          "--record DIR --out DIR | canary JOB [--echo]", file=sys.stderr)
    return 2

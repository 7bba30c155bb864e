"""`plimsoll-ci eval run`: coding-model task attempts in sandboxed copies of a repository.

    plimsoll-ci eval run --repo . --tasks eval/tasks --model gpt-4o-mini --runs 3 --out eval-out \\
        --base-url https://api.openai.com/v1 --max-tokens 500000

Exit codes: 0 the run finished (whatever the scores); 1 refused (the copy holds a withheld entry,
before any model call) or the tripwire found a sealed value in a request; 2 bad input, or no
sandbox at the tier asked for.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`eval run` and its flags."""
    from plimsoll_ci.commands._model import add_model_arguments
    from plimsoll_ci.commands._signing import add_signing_arguments
    from plimsoll_ci.evalharness.attempt import DEFAULT_ALLOW
    from plimsoll_ci.sandbox.all_providers import PROVIDERS

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    r = sub.add_parser("run", help="run every model on every task, --runs times each",
                       description="Each attempt gets a fresh copy of the repository's tracked "
                       "files; the model answers in a small JSON contract (edits, commands); "
                       "allowed commands run in a sandbox; the guarded test runs last. Scores: "
                       "test passed, diff in scope, commands refused.")
    r.add_argument("--repo", required=True, metavar="PATH",
                   help="the repository (or a folder inside one) whose tracked files are copied")
    r.add_argument("--tasks", required=True, metavar="DIR", help="folder of task files (*.md)")
    r.add_argument("--out", required=True, metavar="DIR",
                   help="new or empty folder for results.json, report.md, diffs/, transcripts/, "
                        "requests/")
    r.add_argument("--runs", type=int, default=3, metavar="N",
                   help="attempts per model and task, each in a fresh copy (default 3)")
    r.add_argument("--turns", type=int, default=1, metavar="N",
                   help="rounds per attempt; command results are fed back between them "
                        "(default 1)")
    r.add_argument("--allow", action="append", default=[], metavar="PROG",
                   help=f"allow one more program (repeatable; always allowed: "
                        f"{' '.join(DEFAULT_ALLOW)})")
    r.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                   help="wall-clock limit per command and for the guarded test; exit 124 "
                        "(default 120)")
    r.add_argument("--provider", choices=list(PROVIDERS), default="gvisor",
                   help="the sandbox commands run in (default gvisor; never falls back)")
    r.add_argument("--min-tier", metavar="TIER",
                   help="refuse to run below this tier (process, container, kernel, vm)")
    r.add_argument("--memory-mb", type=int, default=1024, metavar="MB",
                   help="memory of each sandbox (default 1024)")
    r.add_argument("--withheld", action="append", default=[], metavar="SET",
                   help="a withheld set the copy is ship-scanned against before any model "
                        "call (repeatable; a task's known-good fix can be a --source entry)")
    r.add_argument("--withheld-key-env", metavar="VAR", help="HMAC key of the withheld sets")
    r.add_argument("--withheld-key-file", metavar="FILE", help="HMAC key of the withheld sets")
    r.add_argument("--sealed", metavar="SEALED",
                   help="sealed set the recorded requests are checked against afterwards "
                        "(the tripwire: a hit exits 1)")
    r.add_argument("--sealed-key-env", metavar="VAR", help="HMAC key of the sealed set")
    r.add_argument("--sealed-key-file", metavar="FILE", help="HMAC key of the sealed set")
    add_model_arguments(r, compare=True)
    add_signing_arguments(r)


def run(args: argparse.Namespace) -> int:
    """Run the attempts, print a line per attempt and a table per model."""
    from pathlib import Path

    from plimsoll_ci.commands._interrupt import Interrupted, signals_interrupt
    from plimsoll_ci.commands._model import model_configs_from
    from plimsoll_ci.commands._signing import signer_from_args
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.evalharness import report, wall
    from plimsoll_ci.evalharness.attempt import DEFAULT_ALLOW
    from plimsoll_ci.evalharness.run import EvalRequest, run_eval, tripwire_lines
    from plimsoll_ci.report.names import shown
    from plimsoll_ci.sandbox.command import CommandLimits
    from plimsoll_ci.sandbox.tiers import rank
    from plimsoll_ci.withheld import key_from, load

    configs = model_configs_from(args)
    if args.min_tier is not None:
        rank(args.min_tier)
    if args.memory_mb < 64:
        raise BadInput(f"--memory-mb {args.memory_mb}: give at least 64")
    if args.bundle is None and any((args.signing_key_file, args.signing_key_env,
                                    args.ephemeral_key)):
        args.bundle = str(Path(args.out) / "attempts.intoto.jsonl")
    signer = signer_from_args(args)
    wkey = key_from(args.withheld_key_env, args.withheld_key_file,
                    ("--withheld-key-env", "--withheld-key-file"))
    withheld = tuple(load(p, key=wkey) for p in args.withheld)
    sealed = None
    if args.sealed:
        skey = key_from(args.sealed_key_env, args.sealed_key_file,
                        ("--sealed-key-env", "--sealed-key-file"))
        sealed = wall.load_sealed(args.sealed, skey)
    request = EvalRequest(
        repo=args.repo, tasks=args.tasks, models=tuple(configs), out=args.out, runs=args.runs,
        turns=args.turns, allow=tuple(dict.fromkeys((*DEFAULT_ALLOW, *args.allow))),
        provider=args.provider, min_tier=args.min_tier,
        limits=CommandLimits(timeout_s=args.timeout, memory_bytes=args.memory_mb * 1024 * 1024),
        withheld=withheld, sealed=sealed)
    try:
        with signals_interrupt():
            result = run_eval(request, signer, args.bundle if signer else None,
                              progress=lambda line: print(shown(line), flush=True))
    except Interrupted as e:
        print(f"plimsoll-ci eval: stopped by {e.name}; every sandbox was stopped and every copy "
              "removed", file=sys.stderr)
        return 128 + e.signum
    if result.refused is not None:
        from plimsoll_ci.report import describe

        for finding in result.refused.findings:
            print(describe(finding))
        print("A copy that already holds a task's known-good fix (or anything else withheld) "
              "measures nothing: remove it from the repository's tracked files, or drop the "
              f"task. Report: {result.out}/report.md")
        print(f"plimsoll-ci eval: refused: the copy of {shown(args.repo)} holds withheld "
              "entries; no model was called", file=sys.stderr)
        return 1
    print()
    for table in result.tables:
        print(report.render_table(table))
    for line in tripwire_lines(result.tripwire):
        print(shown(line))
    wrote = f"wrote {result.out}/results.json, report.md, diffs/, transcripts/, requests/"
    if result.records:
        wrote += f"; {result.records} signed record(s) appended to {args.bundle}"
    print(shown(wrote))
    if result.exit_code:
        print(f"plimsoll-ci eval: the tripwire found sealed values in requests under "
              f"{result.out}/requests", file=sys.stderr)
    return result.exit_code

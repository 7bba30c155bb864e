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
    r.add_argument("--venv", metavar="PATH",
                   help="the repository's environment: a virtual environment (or interpreter "
                        "prefix) with its dependencies and test runner, mounted read-only in "
                        "every sandbox with its bin/ first on PATH")
    r.add_argument("--keep", action="append", default=[], metavar="GLOB",
                   help="keep tracked paths the copy leaves out as credentials by their name "
                        "when this glob names them (repeatable; e.g. 'tests/certs/*.pem')")
    r.add_argument("--disk-mb", type=int, default=512, metavar="MB",
                   help="disk quota of each attempt's writable copy (default 512; a tmpfs of "
                        "that size when run as root)")
    r.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="models whose attempts run side by side (default 1; the results are the "
                        "same for any N)")
    r.add_argument("--model-key-env", action="append", default=[], metavar="NAME=VAR",
                   help="the variable holding one model's key, for a model given as "
                        "--model NAME=URL (repeatable; default --api-key-env)")
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
    v = sub.add_parser("verify", help="recompute a run's results.json, report.md, diffs and "
                       "transcripts from its signed records",
                       description="Refuses (exit 1) any output that differs from what the "
                       "signed records give, naming the file, the field and both values.")
    v.add_argument("folder", metavar="OUT", help="the run's --out folder")
    v.add_argument("--pub", required=True, metavar="PUB", help="the signing key's public key")
    v.add_argument("--bundle", metavar="FILE",
                   help="the bundle the run appended to (default OUT/attempts.intoto.jsonl)")


def run(args: argparse.Namespace) -> int:
    """`eval run` or `eval verify`."""
    if args.action == "verify":
        return _verify(args)
    return _run(args)


def _verify(args: argparse.Namespace) -> int:
    from pathlib import Path

    from plimsoll_ci.attest.keys import load_public_key
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.evalharness.verify import verify

    folder = Path(args.folder)
    if not folder.is_dir():
        raise BadInput(f"{args.folder}: not a folder; give an eval run's --out folder")
    found = verify(folder, load_public_key(args.pub),
                   Path(args.bundle) if args.bundle else None)
    if found.ok:
        print(f"eval {args.folder}: verified ({found.records} signed attempt(s); results.json, "
              "report.md's tables, lines and output tails, the diffs and transcripts "
              "recomputed from them)")
        return 0
    for problem in found.problems:
        print(problem)
    n = len(found.problems)
    print(f"plimsoll-ci: eval verify: {args.folder} does not verify ({n} problem"
          f"{'s' if n != 1 else ''}); do not trust its scores", file=sys.stderr)
    return 1


def _endpoints(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, str]]:
    """Per-model endpoints (`--model NAME=URL`) and key variables (`--model-key-env NAME=VAR`);
    `args.model` keeps the names. Without --base-url, the first model's URL stands for it."""
    from plimsoll_ci.errors import BadInput

    urls: dict[str, str] = {}
    names = []
    for entry in args.model if isinstance(args.model, list) else [args.model] if args.model \
            else []:
        name, sep, url = entry.partition("=")
        if sep and "://" in url:
            if not name:
                raise BadInput(f"--model {entry}: give NAME=URL, e.g. "
                               "--model qwen=http://127.0.0.1:8000/v1")
            urls[name] = url
            names.append(name)
        else:
            names.append(entry)
    args.model = names
    if urls and not args.base_url:
        args.base_url = next(iter(urls.values()))
    from plimsoll_ci.envname import variable

    keys: dict[str, str] = {}
    for n, entry in enumerate(args.model_key_env, 1):
        name, sep, var = entry.partition("=")
        # the entry is never repeated: a key pasted here must not be printed back
        if not sep or name not in names or not var:
            raise BadInput(f"--model-key-env (number {n}) takes the NAME of an environment "
                           "variable, as MODEL=VAR for a model named with --model MODEL=URL; "
                           "what was given is not repeated here")
        keys[name] = variable(var, "--model-key-env")
    if keys and set(keys) == set(names):  # every model has its own key: no shared one needed
        args.api_key_env = keys[names[0]]
    return urls, keys


def _run(args: argparse.Namespace) -> int:
    """Run the attempts, print a line per attempt and a table per model."""
    import dataclasses
    from pathlib import Path

    from plimsoll_ci.commands._interrupt import Interrupted, signals_interrupt
    from plimsoll_ci.commands._model import model_configs_from
    from plimsoll_ci.commands._signing import signer_from_args
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.evalharness import report, wall
    from plimsoll_ci.evalharness.attempt import DEFAULT_ALLOW
    from plimsoll_ci.evalharness.run import EvalRequest, run_eval, tripwire_lines
    from plimsoll_ci.names import shown
    from plimsoll_ci.sandbox.command import CommandLimits
    from plimsoll_ci.tiers import rank
    from plimsoll_ci.withheld import key_from, load

    urls, keys = _endpoints(args)
    configs = [dataclasses.replace(c, base_url=urls.get(c.model, c.base_url),
                                   api_key_env=keys.get(c.model, c.api_key_env))
               for c in model_configs_from(args)]
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
        withheld=withheld, sealed=sealed, venv=args.venv, keep=tuple(args.keep), jobs=args.jobs,
        disk_mb=args.disk_mb)
    try:
        with signals_interrupt():
            result = run_eval(request, signer, args.bundle if signer else None,
                              progress=lambda line: print(shown(line), flush=True))
    except Interrupted as e:
        print(f"plimsoll-ci eval: stopped by {e.name}; every sandbox was stopped and every copy "
              "removed", file=sys.stderr)
        return 128 + e.signum
    if result.refused is not None:
        from plimsoll_ci.shipscan.report import describe

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

"""`plimsoll-ci init`: set a harness repository up (config, keyed withheld set, hooks, workflow).

Interactive on a terminal (each answer has the default the layout suggests); with `--yes`, in CI
(`CI=true`) or without a terminal it asks nothing and takes the flags and what it found, and
exits 2, naming the flag to give, when that is not enough.
"""

from __future__ import annotations

import argparse
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`[DIR] --values FILE --select PATH --ship NAME=GLOB --key-file FILE --yes`."""
    parser.add_argument("repo", nargs="?", default=".", metavar="DIR",
                        help="the harness repository (default: the current folder)")
    parser.add_argument("--values", metavar="FILE",
                        help="the file of values that must never ship (relative to DIR; "
                             "default: the one its name and folder point at)")
    parser.add_argument("--select", metavar="PATH",
                        help="its values, for a YAML, JSON, TOML or CSV file "
                             "(heldout.seeds[*]; docs/withheld-sets.md)")
    parser.add_argument("--ship", action="append", default=[], metavar="NAME=GLOB",
                        help="a ship set and one include glob (repeatable; default: folders "
                             "such as task/, public/, viewer/)")
    parser.add_argument("--key-file", metavar="FILE",
                        help="where the HMAC key is kept, outside the repository (default: "
                             "~/.config/plimsoll/keys/DIR.key; an existing key is reused)")
    parser.add_argument("--no-hooks", action="store_true",
                        help="leave .pre-commit-config.yaml alone")
    parser.add_argument("--no-workflow", action="store_true",
                        help="write no GitHub workflow")
    parser.add_argument("-y", "--yes", action="store_true",
                        help="ask nothing (also so in CI and without a terminal)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default) or json: what was written, the key's path (never "
                             "the key), the entries; json asks nothing")


def _ask(question: str, default: str) -> str:
    shown = f" [{default}]" if default else ""
    try:
        answer = input(f"{question}{shown}: ").strip()
    except EOFError:
        answer = ""
    return answer or default


def _ship_sets(given: list[str]) -> dict[str, list[str]]:
    from plimsoll_ci.errors import BadInput

    sets: dict[str, list[str]] = {}
    for item in given:
        name, eq, glob = item.partition("=")
        if not eq or not name.strip() or not glob.strip():
            raise BadInput(f"--ship {item!r}: give NAME=GLOB, for example --ship task='task/**'")
        sets.setdefault(name.strip(), []).append(glob.strip())
    return sets


def run(args: argparse.Namespace) -> int:
    """Survey, ask (on a terminal), write, and print the next three commands."""
    from pathlib import Path

    from plimsoll_ci import init
    from plimsoll_ci.names import shown

    quiet = (args.yes or args.format == "json" or os.environ.get("CI") == "true"
             or not sys.stdin.isatty())
    plan = init.survey(Path(args.repo))
    if args.ship:
        plan.ship = _ship_sets(args.ship)
    if args.values:
        init.choose_values(plan, Path(args.values), args.select)
    elif args.select and plan.values is not None:
        init.choose_values(plan, plan.values, args.select)
    if not quiet:
        found = str(plan.values or "")
        values = _ask("File of values that must never ship", found)
        if values:
            init.choose_values(plan, Path(values), args.select)
            if plan.select is None and plan.select_candidates:
                plan.select = _ask(f"Values in {values} (paths: "
                                   f"{', '.join(plan.select_candidates)})",
                                   plan.select_candidates[0])
                init.choose_values(plan, Path(values), plan.select)
        if not args.ship:
            globs = _ask("What ships into an agent's sandbox (globs, space-separated)",
                         " ".join(g for gs in plan.ship.values() for g in gs))
            plan.ship = {"ship": globs.split()} if globs.split() else {}
    key_file = Path(args.key_file) if args.key_file else init.default_key_file(plan.repo)
    done = init.apply(plan, init.InitOptions(key_file, hooks=not args.no_hooks,
                                             workflow=not args.no_workflow))
    for w in done.warnings:
        print(f"plimsoll-ci: warning: {shown(w)}", file=sys.stderr)
    if args.format == "json":
        import json

        print(json.dumps({"written": done.written, "extended": done.extended,
                          "key_file": str(done.key_file), "key_reused": done.key_reused,
                          "entries": done.entries}, indent=2))
        return 0
    for rel in done.written:
        print(f"wrote {shown(rel)}")
    for rel in done.extended:
        print(f"extended {shown(rel)}")
    print(f"key: {shown(str(done.key_file))} ({'reused' if done.key_reused else 'made'}, mode "
          f"0600, outside the repository); withheld set: {done.entries} entries, keyed")
    print("next:")
    print("  pre-commit install && pre-commit install --hook-type pre-push")
    print("  plimsoll-ci scan --config plimsoll.yaml       # what ships now, checked")
    print(f"  gh secret set {init.KEY_SECRET} < {shown(str(done.key_file))}   # the key, for CI")
    return 0

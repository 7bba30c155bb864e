"""`plimsoll-ci hook ship-scan|withheld-guard [FILENAMES...]`: the pre-commit entry points."""

from __future__ import annotations

import argparse

# Both hooks close every process and file they open before `run` returns: the program may end
# there, without the interpreter's teardown (10-20 ms of a hook run).
QUICK_EXIT = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Two hooks, each taking the file names pre-commit passes."""
    from plimsoll_ci.commands.baseline import add_baseline_argument

    sub = parser.add_subparsers(dest="hook", metavar="HOOK")
    p = sub.add_parser(
        "ship-scan", help="scan the staged ship sets (or each pushed commit on pre-push)",
        description="Scan the staged version of every ship set in plimsoll.yaml when one of "
                    "FILENAMES can change what ships; with no FILENAMES scan everything. On "
                    "pre-push (PRE_COMMIT_FROM_REF/PRE_COMMIT_TO_REF set) scan every commit "
                    "being pushed. Exit 0 clean, 1 refused, 2 bad input.")
    p.add_argument("--config", metavar="FILE", help="plimsoll.yaml (default: at the repo root)")
    add_baseline_argument(p)
    p.add_argument("filenames", nargs="*", help="changed files, as pre-commit passes them")
    g = sub.add_parser(
        "withheld-guard", help="refuse an unkeyed guessable withheld set or a raw values file",
        description="Refuse committing an unkeyed withheld set of guessable values, a file "
                    "whose lines are the values a withheld set was built from, and a file, "
                    "plain or YAML/JSON/TOML/CSV, holding at least half of a set's values.")
    g.add_argument("--config", metavar="FILE", help="plimsoll.yaml (default: at the repo root)")
    g.add_argument("filenames", nargs="*", help="files being committed (default: all tracked)")


def run(args: argparse.Namespace) -> int:
    """Run the chosen hook in the current folder (pre-commit runs hooks at the repo root)."""
    from pathlib import Path

    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.shipscan import hook

    if args.hook == "ship-scan":
        return hook.ship_scan(args.filenames, Path.cwd(), args.config,
                              baseline_path=args.baseline)
    if args.hook == "withheld-guard":
        return hook.withheld_guard(args.filenames, Path.cwd(), args.config)
    raise BadInput("hook: name one: `plimsoll-ci hook ship-scan` or `hook withheld-guard`")

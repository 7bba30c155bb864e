"""`plimsoll-ci scan`: find withheld values, files and sources in what ships.

Two ways to say what ships: PATH... (folders and files as they are), or `--config plimsoll.yaml`
with its ship sets, from the working tree, the index (`--staged`) or a commit (`--rev`).
Exit 0 clean (or warn mode), 1 findings in refuse mode, 2 bad input.
"""

from __future__ import annotations

import argparse
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from plimsoll_ci.commands._common import add_key_arguments, add_limit_arguments

    parser.add_argument("paths", nargs="*", metavar="PATH", help="folders and files to scan")
    parser.add_argument("--set", dest="set", metavar="SET",
                        help="the withheld set file (with PATHs), or the ship set name (with "
                        "--config or plimsoll.yaml)")
    parser.add_argument("--withheld", metavar="FILE", help="the withheld set file (explicit)")
    parser.add_argument("--ship-set", metavar="NAME", help="the ship set name (explicit)")
    parser.add_argument("--config", metavar="FILE",
                        help="plimsoll.yaml (default: at the repository root when no PATH)")
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--staged", action="store_true", help="scan what is staged (the git index)")
    src.add_argument("--rev", metavar="REV", help="scan what commit REV ships")
    parser.add_argument("--format", choices=("text", "json", "sarif", "markdown"), default="text")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report here (atomic)")
    parser.add_argument("--mode", choices=("refuse", "warn"),
                        help="override the set's mode: refuse exits 1 on a finding, warn exits 0")
    add_key_arguments(parser)
    add_limit_arguments(parser)


def _looks_like_set_file(value: str | None) -> bool:
    return bool(value) and value.endswith(".json") and os.path.isfile(value)


def run(args: argparse.Namespace) -> int:
    from plimsoll_ci import report
    from plimsoll_ci.commands._common import limits_from, write_output
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.scan import scan_items, scan_paths
    from plimsoll_ci.withheld import key_from, load

    key = key_from(args.key_env, args.key_file)
    config_mode = bool(args.config or args.staged or args.rev or not args.paths)
    if config_mode and args.paths:
        raise BadInput("give PATHs or --config/--staged/--rev, not both")
    if config_mode:
        from pathlib import Path

        from plimsoll_ci import ship

        set_file = args.withheld or (args.set if _looks_like_set_file(args.set) else None)
        ship_set = args.ship_set or (None if set_file == args.set else args.set)
        if set_file and not (args.config or args.staged or args.rev):
            raise BadInput(f"no PATH to scan: give folders or files after --set {set_file}, "
                           "or use --config plimsoll.yaml")
        config, files = ship.collect(args.config, ship_set, args.staged, args.rev, Path.cwd())
        if key is None:
            key = ship.load_key(config)
        wset = load(set_file, key=key) if set_file else ship.load_withheld(config, key=key)
        limits = limits_from(args, config.limits)
        labelled: dict[str, tuple[str, str, bytes]] = {}
        for f in files:  # names are checked as they ship; findings name the repository file
            labelled.setdefault(ship.label(f), (ship.label(f), f.path, f.data))
        result = scan_items(labelled.values(), wset, limits)
        if not files:
            result = result._replace(notes=result.notes + [
                f"{config.path}: the ship set{'s' if not ship_set else ' ' + ship_set} shipped "
                "no file: check the include globs"])
        mode = args.mode or ("warn" if "warn" in (config.mode, wset.mode) else "refuse")
    else:
        set_file = args.withheld or args.set
        if not set_file:
            raise BadInput("which withheld set? give --set withheld.json")
        wset = load(set_file, key=key)
        limits = limits_from(args)
        result = scan_paths(args.paths, wset, limits)
        mode = args.mode or wset.mode
    write_output(report.render(result, args.format, mode), args.output)
    if args.output:
        n = len(result.findings)
        print(f"plimsoll-ci: {n} finding{'s' if n != 1 else ''}; report written to {args.output}",
              file=sys.stderr)
    return 1 if result.findings and mode == "refuse" else 0

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
    from plimsoll_ci.commands.baseline import add_baseline_argument

    parser.add_argument("paths", nargs="*", metavar="PATH", help="folders and files to scan")
    parser.add_argument("--withheld", metavar="FILE",
                        help="the withheld set file (default: the `withheld:` of --config, else "
                             "of plimsoll.yaml at the repository root)")
    parser.add_argument("--ship-set", metavar="NAME",
                        help="scan only this ship set of the config (default: every set)")
    parser.add_argument("--set", dest="set", metavar="SET",
                        help="deprecated: a withheld set file or a ship set name, told apart by "
                             "its suffix; use --withheld FILE or --ship-set NAME")
    parser.add_argument("--config", metavar="FILE",
                        help="plimsoll.yaml (default: at the repository root when no PATH)")
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--staged", action="store_true", help="scan what is staged (the git index)")
    src.add_argument("--rev", metavar="REV", help="scan what commit REV ships")
    parser.add_argument("--format", choices=("text", "json", "sarif", "markdown"), default="text")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report here (atomic)")
    parser.add_argument("--mode", choices=("refuse", "warn"),
                        help="override the set's mode: refuse exits 1 on a finding, warn exits 0")
    parser.add_argument("--jobs", type=int, default=0, metavar="N",
                        help="scanning processes (default 0: one per core this process may use; "
                        "a scan under a few megabytes runs in one process whatever N is)")
    add_baseline_argument(parser)
    add_key_arguments(parser)
    add_limit_arguments(parser)


def _looks_like_set_file(value: str | None) -> bool:
    return value is not None and value.endswith(".json") and os.path.isfile(value)


def run(args: argparse.Namespace) -> int:
    """Scan what ships; print or write the report; 1 when the scan refuses, else 0."""
    from plimsoll_ci.commands._common import limit_overrides, warn_set_notes, write_output
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.shipscan import baseline
    from plimsoll_ci.shipscan.results import decide_mode
    from plimsoll_ci.shipscan.scan import ShipScan, make_limits, scan_paths
    from plimsoll_ci.withheld import key_from

    if args.jobs < 0:
        raise BadInput(f"--jobs {args.jobs}: give 1 or more scanning processes, or 0 for one "
                       "per core")
    jobs = args.jobs or None
    known = baseline.load(args.baseline) if args.baseline else None  # read before any scan
    key = key_from(args.key_env, args.key_file)
    if args.set:
        meant = "--withheld" if _looks_like_set_file(args.set) or (args.paths and not args.config) \
            else "--ship-set"
        print(f"plimsoll-ci: warning: --set is deprecated (it means a set file or a ship set "
              f"name by its suffix); say {meant} {args.set}", file=sys.stderr)
    config_mode = bool(args.config or args.staged or args.rev or not args.paths)
    if config_mode and args.paths:
        raise BadInput("give PATHs or --config/--staged/--rev, not both")
    if config_mode:
        from pathlib import Path

        from plimsoll_ci.shipscan import ship

        set_file = args.withheld or (args.set if _looks_like_set_file(args.set) else None)
        ship_set = args.ship_set or (None if set_file == args.set else args.set)
        if set_file and not (args.config or args.staged or args.rev):
            raise BadInput(f"no PATH to scan: give folders or files after --withheld {set_file}, "
                           "or use --config plimsoll.yaml")
        config, files = ship.collect(args.config, ship_set, args.staged, args.rev, Path.cwd())
        wset = ship.withheld_for(set_file, key, config, Path.cwd())
        warn_set_notes(wset)
        session = ShipScan(wset, make_limits(config.limits, str(config.path),
                                             limit_overrides(args)),
                           mode=decide_mode(config.mode, wset.mode, override=args.mode),
                           jobs=jobs)
        result = session.scan(ship.items(files))
    else:
        from pathlib import Path

        from plimsoll_ci.shipscan import ship

        # the set and the key the flags leave unsaid are plimsoll.yaml's (the repository root's)
        wset = ship.withheld_for(args.withheld or args.set, key,
                                 lambda: ship.config_or_none(None, Path.cwd()), Path.cwd())
        warn_set_notes(wset)
        result = scan_paths(args.paths, wset, make_limits(overrides=limit_overrides(args)),
                            decide_mode(wset.mode, override=args.mode), jobs)
    result = baseline.apply(result, known, wset)
    text = baseline.render(result, args.format, known)
    write_output(text, args.output)
    if args.output:
        n = len(result.findings)
        print(f"plimsoll-ci: {n} finding{'s' if n != 1 else ''}; report written to {args.output}",
              file=sys.stderr)
    return 1 if result.refused else 0

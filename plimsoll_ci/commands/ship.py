"""`plimsoll-ci ship list`: print exactly what a ship set would put in a sandbox."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`ship list [--ship-set NAME] [--staged | --rev REV] [--config F] [--format text|json]`."""
    from plimsoll_ci.commands._common import add_deprecated

    sub = parser.add_subparsers(dest="ship_command", metavar="ACTION")
    p = sub.add_parser("list", help="print every file a ship set would ship",
                       description="Print every file each ship set of plimsoll.yaml would ship: "
                                   "one line per file, `SET<TAB>PATH<TAB>SOURCE`.")
    p.add_argument("--config", metavar="FILE",
                   help="plimsoll.yaml (default: the one at the git repository root)")
    p.add_argument("--ship-set", dest="set_name", metavar="NAME", help="only this ship set")
    add_deprecated(p, "--set", "--ship-set", "set_name")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--staged", action="store_true",
                     help="what the git index (the next commit) would ship, not the working tree")
    src.add_argument("--rev", metavar="REV", help="what commit REV ships")
    p.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    """List the shipped files; exit 0, or 2 on a bad config, the builder's code when it fails."""
    import hashlib
    import json
    import sys
    from pathlib import Path

    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.names import path_fields, shown
    from plimsoll_ci.shipscan import ship

    if getattr(args, "ship_command", None) != "list":
        raise BadInput("ship: say what to do: `plimsoll-ci ship list [--ship-set NAME]`")
    config, files = ship.collect(args.config, args.set_name, args.staged, args.rev, Path.cwd())
    if args.format == "json":
        doc = [{"set": f.set_name, **path_fields(f.path),
                "source": shown(f.source) if f.source else f.source, "size": len(f.data),
                "sha256": hashlib.sha256(f.data).hexdigest()} for f in files]
        print(json.dumps({"config": str(config.path), "files": doc}, indent=2))
    else:
        out = sys.stdout
        for f in files:  # a name is escaped: one file, one line, nothing for the terminal
            out.write(f"{f.set_name}\t{shown(f.path)}\t{shown(f.source or '(built)')}\n")
    sets = sorted({f.set_name for f in files})
    total = sum(len(f.data) for f in files)
    print(f"{len(files)} files, {total} bytes in {len(sets)} ship set(s)", file=sys.stderr)
    return 0

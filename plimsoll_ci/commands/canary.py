"""`plimsoll-ci canary make|check`: plant made-up markers, then check the harness kept them back."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Subcommands `make` and `check`."""
    from plimsoll_ci.tripwire.report import CANARY_FORMATS

    sub = parser.add_subparsers(dest="canary_command", metavar="make|check")
    sub.required = True
    mk = sub.add_parser("make", help="make one marker per hiding place",
                        description="Make one made-up marker per hiding place, shaped like what "
                                    "hides there, and write them with their digests.")
    mk.add_argument("places", nargs="+", metavar="PLACE",
                    help="hiding places, e.g. truth-labels step-times clip-names")
    mk.add_argument("--kind", action="append", default=[], metavar="PLACE=KIND",
                    help="word|number|time|filename for a place (default: guessed from its "
                         "name: *time*/*step* time, *seed*/*id* number, *clip*/*file*/*name* "
                         "filename, else word); repeatable")
    mk.add_argument("-o", "--output", dest="output", required=True, metavar="FILE",
                    help="canary file to write (refuses to overwrite one)")
    mk.add_argument("--force", action="store_true", help="overwrite an existing canary file")
    mk.add_argument("--format", choices=("text", "json"), default="text",
                    help="text (default: one line per marker on stderr) or json on stdout: the "
                         "file and each place's kind, never a marker")
    ck = sub.add_parser("check", help="check markers were planted and never sent",
                        description="Pass only when every marker is in the planted tree and "
                                    "none is in any recorded request.")
    ck.add_argument("--sealed", required=True, metavar="CANARY", help="canary file from make")
    ck.add_argument("--planted", required=True, metavar="DIR",
                    help="where the harness planted the markers (its secret places)")
    ck.add_argument("--requests", required=True, metavar="DIR", help="recorded requests")
    ck.add_argument("--format", choices=CANARY_FORMATS, default="text",
                    help="report format (default text)")


def _make(args: argparse.Namespace) -> int:
    import os

    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.tripwire import canary

    if os.path.exists(args.output) and not args.force:
        raise BadInput(f"-o {args.output}: already exists; a canary file is not overwritten "
                       "(pass --force, or pick another name)")
    kinds = canary.parse_kinds(args.kind, args.places)
    doc, markers = canary.make(args.places, kinds)
    try:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(canary.dumps(doc))
    except OSError as e:
        raise BadInput(f"-o {args.output}: cannot write ({e.strerror})") from None
    if args.format == "json":
        import json

        print(json.dumps({"file": args.output, "markers": [
            {"place": m.place, "kind": m.kind} for m in markers]}, indent=2))
        return 0
    from plimsoll_ci.names import shown

    for m in markers:
        print(f"{shown(m.place)}: {m.kind} marker", file=sys.stderr)
    print(f"wrote {len(markers)} canary marker(s) to {args.output}", file=sys.stderr)
    return 0


def _check(args: argparse.Namespace) -> int:
    from plimsoll_ci.tripwire import canary
    from plimsoll_ci.tripwire.report import render_canary

    result = canary.check(canary.load(args.sealed), args.planted, args.requests)
    sys.stdout.write(render_canary(result, args.format, args.planted, args.requests))
    return 0 if result.ok else 1


def run(args: argparse.Namespace) -> int:
    """Dispatch to make or check."""
    return _make(args) if args.canary_command == "make" else _check(args)

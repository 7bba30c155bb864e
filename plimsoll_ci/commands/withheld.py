"""`plimsoll-ci withheld build`: a digests-only withheld set from values, files and sources."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from plimsoll_ci.commands._common import add_key_arguments

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="build a withheld set (digests only, never values)",
                       description="Build a withheld set. Values are hashed (HMAC-SHA-256 with a "
                       "key, else SHA-256); the output never contains a value.")
    add_build_arguments(b)
    add_key_arguments(b)
    b.add_argument("-o", "--output", metavar="OUT", help="write here (default: stdout)")
    i = sub.add_parser("info", help="summarize a withheld set (ids and kinds, never values)")
    i.add_argument("set", metavar="SET")
    add_key_arguments(i)


def add_build_arguments(b: argparse.ArgumentParser) -> None:
    """The inputs of a set build, shared by `withheld build` and `sealed build`."""
    b.add_argument("--values", action="append", default=[], metavar="FILE",
                   help="one value per line; entry id FILE:LINE (repeatable)")
    b.add_argument("--file", action="append", default=[], metavar="PATH",
                   help="a whole file, matched by SHA-256; entry id PATH (repeatable)")
    b.add_argument("--source", action="append", default=[], metavar="PATH",
                   help="a source file, matched by fingerprint overlap (repeatable)")
    b.add_argument("--mode", choices=("refuse", "warn"), default="refuse",
                   help="refuse: a finding fails the scan (exit 1); warn: reported, exit 0")
    b.add_argument("--threshold", type=float, default=0.3, metavar="SHARE",
                   help="source entries: share of fingerprints that makes a copy (default 0.3)")


def build_document(args: argparse.Namespace, tag: str) -> tuple[dict, list[str]]:
    """Read the inputs named by `args` and build the set document (shared with `sealed build`)."""
    from pathlib import Path

    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.grading.seedlint import value_warnings
    from plimsoll_ci.withheld import build_set, key_from, read_values

    if not (args.values or args.file or args.source):
        raise BadInput("nothing to build from: give --values FILE, --file PATH or --source PATH")
    values = []
    empty = []
    for f in args.values:
        got = read_values(f)
        if not got:
            empty.append(f)
        values += got

    def read(p: str) -> bytes:
        try:
            return Path(p).read_bytes()
        except OSError as e:
            raise BadInput(f"{p}: cannot read ({e.strerror})") from None

    files = [(p, read(p)) for p in args.file]
    sources = [(p, read(p)) for p in args.source]
    key = key_from(args.key_env, args.key_file)
    doc, warnings = build_set(values, files, sources, key=key, tag=tag, mode=args.mode,
                              threshold=args.threshold)
    # A set that withholds nothing passes every scan: say so instead of passing in silence.
    warnings = [f"values file {f}: no values (empty, or only comments); nothing from it is "
                "withheld" for f in empty] + warnings + value_warnings(values)  # the seed lint
    return doc, warnings


def run(args: argparse.Namespace) -> int:
    from plimsoll_ci.commands._common import write_output
    from plimsoll_ci.withheld import FORMAT, dumps, key_from, load

    if args.action == "info":
        # ids and kinds need no key; a key that is given is still checked
        wset = load(args.set, key=key_from(args.key_env, args.key_file), need_key=False)
        kinds: dict[str, int] = {}
        for e in wset.entries:
            kinds[e.kind] = kinds.get(e.kind, 0) + 1
        print(f"{wset.origin}: {wset.format}, {wset.scheme}, mode {wset.mode}, "
              f"{len(wset.entries)} entries ({', '.join(f'{n} {k}' for k, n in kinds.items())})")
        for e in wset.entries:
            print(f"  {e.id}  {e.kind}{' ' + e.vtype if e.vtype else ''}")
        return 0
    doc, warnings = build_document(args, FORMAT)
    for w in warnings:
        print(f"plimsoll-ci: warning: {w}", file=sys.stderr)
    write_output(dumps(doc), args.output)
    if args.output:
        print(f"wrote {args.output}: {len(doc['entries'])} entries, {doc['scheme']}",
              file=sys.stderr)
    return 0

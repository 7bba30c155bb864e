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
    add_info_arguments(i)


def add_info_arguments(i: argparse.ArgumentParser) -> None:
    """The arguments of `info`, shared by `withheld info` and `sealed info`."""
    from plimsoll_ci.commands._common import add_key_arguments

    i.add_argument("set", metavar="SET")
    i.add_argument("--format", choices=("text", "json"), default="text",
                   help="text (default) or json")
    add_key_arguments(i)
    i.epilog = ("Ids and kinds need no key: a keyed set is listed without it. A key given is "
                "checked against the set's key id (wrong key: exit 2).")


def add_build_arguments(b: argparse.ArgumentParser) -> None:
    """The inputs of a set build, shared by `withheld build` and `sealed build`."""
    b.add_argument("--values", action="append", default=[], metavar="FILE",
                   help="one value per line; entry id FILE:LINE, FILE as given when it is "
                        "inside the current folder, else its base name (repeatable). A YAML, "
                        "JSON, TOML or CSV file needs --select")
    b.add_argument("--select", action="append", default=[], metavar="PATH",
                   help="the values of a structured --values file: heldout.seeds[*], "
                        "seeds[0], a CSV column name; once per YAML/JSON/TOML/CSV file, in "
                        "the order of the files (see docs/withheld-sets.md)")
    b.add_argument("--id-prefix", action="append", default=[], metavar="NAME",
                   help="name the entries of the matching --values file NAME:LINE instead "
                        "(give it once per --values, in the same order)")
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

    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.files import read_bounded
    from plimsoll_ci.grading.seedlint import value_warnings
    from plimsoll_ci.withheld import (
        MAX_WITHHELD_FILE_BYTES,
        build_set,
        entry_name,
        key_from,
        read_values,
    )

    if not (args.values or args.file or args.source):
        raise BadInput("nothing to build from: give --values FILE, --file PATH or --source PATH")
    if args.id_prefix and len(args.id_prefix) != len(args.values):
        raise BadInput(f"--id-prefix given {len(args.id_prefix)} time(s) for "
                       f"{len(args.values)} --values file(s): give it once per --values, in "
                       "the same order, or not at all")
    prefixes = args.id_prefix or [None] * len(args.values)
    values = []
    empty = []
    for (f, data, expr), prefix in zip(paired_selects(args.values, args.select), prefixes,
                                       strict=True):
        got = read_values(f, prefix, expr, data)
        if not got:
            empty.append(f)
        values += got

    def read(p: str) -> bytes:
        # a whole file withheld is read within the bound of a set (a device or FIFO refused)
        return read_bounded(p, MAX_WITHHELD_FILE_BYTES, p)

    files = [(entry_name(p), read(p)) for p in args.file]
    sources = [(entry_name(p), read(p)) for p in args.source]
    key = key_from(args.key_env, args.key_file)
    doc, warnings = build_set(values, files, sources, key=key, tag=tag, mode=args.mode,
                              threshold=args.threshold)
    # A set that withholds nothing passes every scan: say so instead of passing in silence.
    warnings = [f"values file {f}: no values (empty, or only comments); nothing from it is "
                "withheld" for f in empty] + warnings + value_warnings(values)  # the seed lint
    return doc, warnings


def paired_selects(paths: list[str], selects: list[str], what: str = "values file"
                   ) -> list[tuple[str, bytes, str | None]]:
    """(path, its bytes, its --select or None) for each values file, read within
    `valuefiles.VALUES_BOUND`: the Nth `--select` goes with the Nth structured file (YAML, JSON,
    TOML, CSV), a plain file takes none; BadInput when more are given than there are such files
    (with fewer, a structured file without one is refused where it is read)."""
    from plimsoll_ci import valuefiles
    from plimsoll_ci.errors import BadInput

    left = list(selects)
    out = []
    for p in paths:
        data = valuefiles.read(p, what)
        expr = left.pop(0) if valuefiles.structure(p, data) is not None and left else None
        out.append((p, data, expr))
    if left:
        raise BadInput(f"--select given {len(selects)} time(s) for {len(selects) - len(left)} "
                       f"structured file(s) (YAML, JSON, TOML or CSV) among {', '.join(paths)}: "
                       "give it once per structured file, in the order of the files; a plain "
                       "file of one value a line takes none")
    return out


def info(args: argparse.Namespace) -> int:
    """`withheld info` / `sealed info`: ids and kinds (never values), as text or JSON; a keyed
    set needs no key for that (a key given is checked)."""
    import json

    from plimsoll_ci.names import shown
    from plimsoll_ci.withheld import key_from, load

    wset = load(args.set, key=key_from(args.key_env, args.key_file), need_key=False)
    for n in wset.notes:
        print(f"plimsoll-ci: warning: {shown(n)}", file=sys.stderr)
    kinds: dict[str, int] = {}
    for e in wset.entries:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    if args.format == "json":
        doc = {"path": wset.origin, "format": wset.format, "scheme": wset.scheme,
               "key_id": wset.key_id, "mode": wset.mode, "counts": kinds,
               "entries": [{"id": e.id, "kind": e.kind, **({"type": e.vtype} if e.vtype else {})}
                           for e in wset.entries]}
        print(json.dumps(doc, indent=2))
        return 0
    keyed = f" (key id {wset.key_id})" if wset.keyed else ""
    print(f"{shown(wset.origin)}: {wset.format}, {wset.scheme}{keyed}, mode {wset.mode}, "
          f"{len(wset.entries)} entries ({', '.join(f'{n} {k}' for k, n in kinds.items())})")
    for e in wset.entries:
        print(f"  {shown(e.id)}  {e.kind}{' ' + e.vtype if e.vtype else ''}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Build a set (exit 0) or summarize one; 2 on bad input."""
    from plimsoll_ci.commands._common import write_output
    from plimsoll_ci.withheld import FORMAT, dumps

    if args.action == "info":
        return info(args)
    from plimsoll_ci.names import shown

    doc, warnings = build_document(args, FORMAT)
    for w in warnings:
        print(f"plimsoll-ci: warning: {shown(w)}", file=sys.stderr)
    write_output(dumps(doc), args.output)
    if args.output:
        print(f"wrote {args.output}: {len(doc['entries'])} entries, {doc['scheme']}",
              file=sys.stderr)
    return 0

"""`plimsoll-ci sealed build|info`: a sealed set for the tripwire (what a model must never be sent).

The same inputs and digest schemes as `withheld build` (the argument handling is shared with
`plimsoll_ci/commands/withheld.py`); the document's format tag is `plimsoll-sealed/1`.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Subcommands `build` and `info`."""
    from plimsoll_ci.commands._common import add_key_arguments
    from plimsoll_ci.commands.withheld import add_build_arguments, add_info_arguments

    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    b = sub.add_parser("build", help="build a sealed set (digests only, never values)",
                       description="Build a sealed set for `plimsoll-ci tripwire`: the values, "
                       "files and sources a model must never be sent. Values are hashed "
                       "(HMAC-SHA-256 with a key, else SHA-256); the output never holds a value.")
    add_build_arguments(b)
    add_key_arguments(b)
    b.add_argument("-o", "--output", metavar="OUT", help="write here (default: stdout)")
    i = sub.add_parser("info", help="summarize a sealed set (ids and kinds, never values)")
    add_info_arguments(i)


def run(args: argparse.Namespace) -> int:
    """Build or summarize a sealed set."""
    from plimsoll_ci.commands._common import write_output
    from plimsoll_ci.commands.withheld import build_document, info
    from plimsoll_ci.withheld import SEALED_FORMAT

    if args.action == "info":
        return info(args)
    from plimsoll_ci.names import shown

    doc, warnings = build_document(args, SEALED_FORMAT)
    for w in warnings:
        print(f"plimsoll-ci: warning: {shown(w)}", file=sys.stderr)
    from plimsoll_ci.withheld import dumps

    write_output(dumps(doc), args.output)
    if args.output:
        print(f"wrote {args.output}: sealed set, {len(doc['entries'])} entries, {doc['scheme']}",
              file=sys.stderr)
    return 0

"""`plimsoll-ci tripwire --sealed SEALED --requests DIR`: find sealed values in recorded requests."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (imported where it is used: a command's import is kept light)
    from plimsoll_ci.withheld import WithheldSet


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `plimsoll-ci tripwire`."""
    from plimsoll_ci.commands._common import add_key_arguments
    from plimsoll_ci.shipscan.report import FORMATS

    parser.add_argument("--sealed", required=True, metavar="SEALED",
                        help="sealed set (plimsoll-ci sealed build) or canary file")
    parser.add_argument("--requests", required=True, metavar="DIR",
                        help="folder of recorded requests (plimsoll-ci record --out), a HAR "
                             "file, or any folder of request bodies")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="report format (default text)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the report here instead of standard output")
    parser.add_argument("--jobs", type=int, metavar="N",
                        help="worker processes for large folders (default: the CPUs available)")
    add_key_arguments(parser)


def _sealed(path: str, key: bytes | None) -> WithheldSet:
    """The sealed set; a keyed one with no key flag takes the key of plimsoll.yaml (the
    repository root's, found as the hook finds it), as every command that reads a set does."""
    from pathlib import Path

    from plimsoll_ci.errors import BadInput, WithheldSetError
    from plimsoll_ci.shipscan import ship
    from plimsoll_ci.tripwire.sealed import load_sealed

    try:
        return load_sealed(path, key=key)
    except WithheldSetError as e:
        if key is not None or "is keyed" not in str(e):
            raise
        try:
            config = ship.config_or_none(None, Path.cwd())
            configured = ship.load_key(config) if config is not None else None
        except BadInput:
            raise e from None
        if config is None:
            raise
        if configured is None:
            raise WithheldSetError(f"{e}; {config.path} (read) names no key") from None
        return load_sealed(path, key=configured)


def run(args: argparse.Namespace) -> int:
    """Exit 1 when any sealed value is found in a request, 0 when none, 2 on bad input."""
    from plimsoll_ci.commands._common import warn_set_notes, write_output
    from plimsoll_ci.shipscan.results import decide_mode
    from plimsoll_ci.tripwire.report import render
    from plimsoll_ci.tripwire.requests import scan_requests
    from plimsoll_ci.withheld import key_from

    key = key_from(env=args.key_env, file=args.key_file)
    wset = _sealed(args.sealed, key)
    warn_set_notes(wset)
    if args.jobs is not None and args.jobs < 1:
        from plimsoll_ci.errors import BadInput

        raise BadInput(f"--jobs {args.jobs}: give 1 or more worker processes")
    result = scan_requests(args.requests, wset, jobs=args.jobs)
    result = result._replace(mode=decide_mode(wset.mode))
    write_output(render(result, args.format, args.requests), args.output)
    if result.findings and not result.refused:
        print(f"plimsoll-ci tripwire: {len(result.findings)} hit(s) reported; the sealed set's "
              "mode is warn, so the exit code is 0", file=sys.stderr)
        return 0
    if result.findings:
        print(f"plimsoll-ci tripwire: {len(result.findings)} sealed value(s) found in requests "
              f"under {args.requests}", file=sys.stderr)
        return 1
    return 0

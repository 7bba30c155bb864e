"""`plimsoll-ci tripwire --sealed SEALED --requests DIR`: find sealed values in recorded requests."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `plimsoll-ci tripwire`."""
    parser.add_argument("--sealed", required=True, metavar="SEALED",
                        help="sealed set (plimsoll-ci sealed build) or canary file")
    parser.add_argument("--requests", required=True, metavar="DIR",
                        help="folder of recorded requests (plimsoll-ci record --out), a HAR "
                             "file, or any folder of request bodies")
    parser.add_argument("--format", choices=("text", "json", "sarif", "markdown"), default="text",
                        help="report format (default text)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="write the report here instead of standard output")
    parser.add_argument("--key-env", metavar="NAME",
                        help="environment variable holding the sealed set's HMAC key")
    parser.add_argument("--key-file", metavar="FILE",
                        help="file holding the sealed set's HMAC key (keep it outside the repo)")


def run(args: argparse.Namespace) -> int:
    """Exit 1 when any sealed value is found in a request, 0 when none, 2 on bad input."""
    from plimsoll_ci.report import render
    from plimsoll_ci.tripwire import load_sealed, scan_requests
    from plimsoll_ci.withheld import key_from

    key = key_from(env=args.key_env, file=args.key_file)
    wset = load_sealed(args.sealed, key=key)
    result = scan_requests(args.requests, wset)
    text = render(result, args.format)
    if args.output:
        from plimsoll_ci.errors import BadInput

        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            raise BadInput(f"--output {args.output}: cannot write ({e.strerror})") from None
    else:
        sys.stdout.write(text)
    if result.findings:
        print(f"plimsoll-ci tripwire: {len(result.findings)} sealed value(s) found in requests "
              f"under {args.requests}", file=sys.stderr)
        return 1
    return 0

"""`plimsoll-ci bundle merge`: the shards of one squeeze plan into one signed folder.

Exit codes: 0 merged (the folder holds one bundle and every artifact one runner would have
written); 2 bad input: a shard that does not verify under its key, an overlapping or missing
slice, shards of different plans (their commitments differ), a used --out folder. Nothing is
written then.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`merge`."""
    sub = parser.add_subparsers(dest="bundle_command", metavar="merge")
    merge = sub.add_parser("merge", help="merge the shards of a squeeze plan into one bundle",
                           description="Verify each shard folder (`squeeze run --plan PLAN "
                           "--shard I/N`) under its own harness.pub, check that the slices "
                           "cover the plan once, sign their records into one bundle under the "
                           "merge's key and derive the result, evidence and reports as one "
                           "runner would.")
    merge.add_argument("shards", nargs="+", metavar="SHARD_DIR", help="the shards' --out folders")
    merge.add_argument("--out", required=True, metavar="DIR",
                       help="a new or empty folder for the merged artifacts")
    merge.add_argument("--plan", metavar="PLAN",
                       help="the plan folder (needed when the job builds rebuilds: their "
                            "session records and workspaces are in it)")
    keys = merge.add_argument_group("signing (default: an ephemeral key; only its public half, "
                                    "harness.pub, is written)").add_mutually_exclusive_group()
    keys.add_argument("--signing-key-file", metavar="FILE",
                      help="a kept private key file (PKCS#8 PEM, 0600)")
    keys.add_argument("--signing-key-env", metavar="VAR",
                      help="environment variable holding a kept private key's PEM text")


def run(args: argparse.Namespace) -> int:
    """Merge, and print the verdicts."""
    from pathlib import Path

    from plimsoll_ci.squeeze.merge import MergeOptions, merge
    from plimsoll_ci.squeeze.report_md import verdict_lines

    if args.bundle_command != "merge":
        print("usage: plimsoll-ci bundle merge SHARD_DIR... --out DIR [--plan PLAN]",
              file=sys.stderr)
        return 2
    done = merge(MergeOptions([Path(s) for s in args.shards], Path(args.out),
                              Path(args.plan) if args.plan else None, args.signing_key_file,
                              args.signing_key_env))
    for line in verdict_lines(done.result):
        print(line)
    print(f"merged {done.shards} shards ({done.signed} gradings) into {done.out}: verify with "
          f"`plimsoll-ci squeeze verify {done.out} --pub {done.out / 'harness.pub'}`")
    return 0

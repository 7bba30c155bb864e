"""`plimsoll-ci bundle merge`: the shards of one squeeze plan into one signed folder.

The merge trusts only the keys given with `--pub FILE` (repeatable), never a shard's own
harness.pub: see docs/scale.md for how a CI job pins its shards' keys.

Exit codes: 0 merged (the folder holds one bundle and every artifact one runner would have
written); 2 bad input: no --pub, a shard signed by a key not pinned (named by its fingerprint),
a shard that does not verify, a link, an extra or special file in a shard or plan folder, a
file over its bound, an overlapping or missing slice, shards of different plans (their
commitments differ), a used --out folder. Nothing is written then.
"""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`merge`."""
    sub = parser.add_subparsers(dest="bundle_command", metavar="merge")
    merge = sub.add_parser("merge", help="merge the shards of a squeeze plan into one bundle",
                           description="Verify each shard folder (`squeeze run --plan PLAN "
                           "--shard I/N`) under a key given with --pub (never a key found in "
                           "the shard's folder), check that the slices "
                           "cover the plan once, sign their records into one bundle under the "
                           "merge's key and derive the result, evidence and reports as one "
                           "runner would.")
    merge.add_argument("shards", nargs="+", metavar="SHARD_DIR", help="the shards' --out folders")
    merge.add_argument("--out", required=True, metavar="DIR",
                       help="a new or empty folder for the merged artifacts")
    merge.add_argument("--pub", action="append", default=[], metavar="FILE",
                       help="a public key (PEM) the shards, and the plan's session records, may "
                            "be signed by; repeatable, at least one. Take it from where the "
                            "shards ran (a secret's public half, the repository), never from a "
                            "shard's folder")
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

    from plimsoll_ci.attest.pinned import pin
    from plimsoll_ci.squeeze.merge import MergeOptions, merge
    from plimsoll_ci.squeeze.report_md import verdict_lines

    if args.bundle_command != "merge":
        print("usage: plimsoll-ci bundle merge SHARD_DIR... --pub FILE --out DIR [--plan PLAN]",
              file=sys.stderr)
        return 2
    trusted = tuple(pin(args.pub))
    done = merge(MergeOptions([Path(s) for s in args.shards], Path(args.out),
                              Path(args.plan) if args.plan else None, args.signing_key_file,
                              args.signing_key_env, trusted))
    for key in trusted:
        print(f"trusted: {key.line()}")
    for line in verdict_lines(done.result):
        print(line)
    shard_pubs = " ".join(f"--shard-pub {k.source.split(' ', 1)[1]}" for k in trusted)
    print(f"merged {done.shards} shards ({done.signed} gradings) into {done.out}: verify with "
          f"`plimsoll-ci squeeze verify {done.out} --pub MERGE_KEY.pub {shard_pubs}` (the "
          "merge's public key as you keep it, not the copy in the folder)")
    return 0

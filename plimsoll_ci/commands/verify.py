"""`plimsoll-ci verify --pub KEY BUNDLE [--expect-count N]`: check a bundle of signed run records."""

from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`--pub KEY BUNDLE [--expect-count N] [--format text|json]`."""
    parser.add_argument("bundle", metavar="BUNDLE", help="the bundle (.intoto.jsonl) to verify")
    parser.add_argument("--pub", required=True, metavar="KEY",
                        help="the signer's public key (PEM), as you keep it: a key found beside "
                             "the bundle proves consistency only")
    parser.add_argument(
        "--expect-count", type=int, metavar="N",
        help="also require exactly N records (catches a bundle rolled back to an earlier state)",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, metavar="N",
        help="check lines in N processes (helps only for big bundles on idle CPUs; default 1)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")


def _plural(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "none"


def run(args: argparse.Namespace) -> int:
    """Print a summary and return 0, or print every problem as `bundle line N: reason` and return 1."""
    import json
    from pathlib import Path

    from plimsoll_ci.attest.bundle import summarize, verify_bundle
    from plimsoll_ci.attest.keys import load_public_key
    from plimsoll_ci.attest.pinned import beside, consistency_note
    from plimsoll_ci.errors import BadInput
    from plimsoll_ci.names import shown

    if args.expect_count is not None and args.expect_count < 1:
        raise BadInput(f"--expect-count {args.expect_count}: a bundle holds at least one record")
    if args.jobs < 1:
        raise BadInput(f"--jobs {args.jobs}: give 1 or more processes")
    public = load_public_key(args.pub)
    report = verify_bundle(args.bundle, public, args.expect_count, workers=args.jobs)
    trusted = f"key sha256:{public.keyid} (from --pub {args.pub})"
    notes = [consistency_note(args.pub, Path(args.bundle).parent)] \
        if beside(args.pub, Path(args.bundle).parent) else []
    if args.format == "json":
        doc = {"bundle": args.bundle, "ok": report.ok, "problems": [str(p) for p in report.problems],
               "trusted": [trusted], "notes": notes}
        if report.ok:
            doc["summary"] = summarize(report)
        print(json.dumps(doc, indent=2, sort_keys=True))
    elif report.ok:
        s = summarize(report)
        fresh = s["fresh_sets"]
        print(f"bundle {args.bundle}: verified")
        print(f"  records:       {s['records']} (sealed by the checkpoint on line {s['records'] + 1})")
        print(f"  key id:        {s['keyid']}")
        print(f"  trusted:       {trusted}")
        print(f"  tiers:         {_plural(s['tiers'])}")
        print(f"  providers:     {_plural(s['providers'])}")
        print(f"  courses:       {_plural(s['courses'])}")
        sets = ", ".join(d[:16] + "..." for d in s["practice_sets"]) or "none"
        print(f"  practice sets: {len(s['practice_sets'])} ({sets})")
        print(f"  fresh sets:    {fresh['committed']} committed (flown in {fresh['records']} "
              f"record{'' if fresh['records'] == 1 else 's'}), each reveal matches its commitment")
        print(f"  sealed sets:   {len(s['sealed_sets'])}" + (
            ", each reveal matches its commitment, each committed before its gradings"
            if s["sealed_sets"] else ""))
        for e in s["sealed_sets"]:
            graded = sorted(set(e["graded"]))
            when = graded[0] if len(graded) == 1 else f"{graded[0]} .. {graded[-1]}"
            print(f"    {e['commitment'][:16]}...: committed at {e['committed']}, graded at "
                  f"{when} (record{'s' if len(e['records']) > 1 else ''} "
                  f"{', '.join(str(n) for n in e['records'])})")
        if s["uncommitted"]["flights"]:
            print(f"  uncommitted:   {s['uncommitted']['flights']} held-out flight(s) on seeds no "
                  "commitment covered (records "
                  f"{', '.join(str(n) for n in s['uncommitted']['records'])}): nothing was "
                  "committed before grading")
        if s["weak_seeds_allowed"]:
            print("  weak seeds:    allowed by --allow-weak-seeds (records "
                  f"{', '.join(str(n) for n in s['weak_seeds_allowed'])})")
        if s["kinds"].get("eval-attempt"):
            print(f"  eval attempts: {s['kinds']['eval-attempt']} (coding-model attempts, "
                  "plimsoll-ci eval run)")
    else:
        for problem in report.problems:
            print(shown(str(problem)))  # a record's names are the bundle writer's words
        print(f"trusted: {trusted}", file=sys.stderr)
    if args.format == "text":
        for note in notes:
            print(f"note: {shown(note)}", file=sys.stdout if report.ok else sys.stderr)
    if not report.ok:
        n = len(report.problems)
        print(
            f"plimsoll-ci: verify: {args.bundle} does not verify "
            f"({n} problem{'s' if n != 1 else ''}); do not trust its records",
            file=sys.stderr,
        )
        return 1
    return 0

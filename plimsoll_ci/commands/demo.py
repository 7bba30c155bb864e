"""`plimsoll-ci demo`: the main job on the bundled example harness.

1. Ship-scan the example harness (`examples/argon`), which carries the hackathon's leak: a replay
   viewer whose example link names the second practice seed. The finding names file, line, column
   and entry id, never the value.
2. Grade the reference controllers in the strongest sandbox this machine has, saying which.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--example", metavar="DIR",
                        help="the example harness (default: examples/argon of this checkout)")
    parser.add_argument("--no-grade", action="store_true", help="only the ship scan")
    parser.add_argument("--flights", type=int, default=8, metavar="N",
                        help="fresh flights per graded controller (default 8)")


def _example_dir(given: str | None) -> Path:
    from plimsoll_ci.errors import BadInput

    if given:
        p = Path(given)
    else:
        p = Path(__file__).resolve().parents[2] / "examples" / "argon"
    if not (p / "plimsoll.yaml").is_file():
        raise BadInput(f"example harness {p}: no plimsoll.yaml there; pass --example DIR")
    return p


def run(args: argparse.Namespace) -> int:
    from plimsoll_ci import report, ship
    from plimsoll_ci.scan import scan_items

    ex = _example_dir(args.example)
    print(f"== 1. ship scan of the example harness {ex}")
    print("   (plimsoll.yaml: ship sets 'drone' built by loop/kit.py, 'viewer' by globs; "
          "withheld.json holds digests of the 16 practice seeds)")
    config = ship.load_config(ex / "plimsoll.yaml")
    files = ship.from_worktree(None, config, None)
    wset = ship.load_withheld(config)
    result = scan_items(ship.items(files), wset)
    sys.stdout.write(report.render(result, "text"))
    leaked = bool(result.findings)
    if not args.no_grade:
        try:
            from plimsoll_ci.grading import demo as grading_demo
        except ImportError:
            print("== 2. grading: not available in this build")
        else:
            print("== 2. grading the reference controllers in the strongest sandbox available")
            grading_demo.run(flights=args.flights)
    print("== done: the ship scan found the planted leak" if leaked
          else "== done: the ship scan found NOTHING (the planted leak should have been found)")
    return 0 if leaked else 1

"""`plimsoll-ci demo`: the main job on the bundled example harness.

1. Ship-scan the example harness (`examples/argon`), which carries the hackathon's leak: a replay
   viewer whose example link names the second practice seed. The finding names file, line, column
   and entry id, never the value.
2. Grade the reference controllers in the strongest sandbox this machine has, saying which.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# The bundled example's withheld set is keyed, as every set that holds guessable seeds must be.
# Its key is published here so the demo runs anywhere; it protects nothing. Yours comes from a CI
# secret or a file outside the repository (docs/withheld-sets.md).
EXAMPLE_KEY = "argon-example-key-published-in-the-demo-not-a-secret"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """`--example DIR`, `--no-grade`, `--flights N`."""
    parser.add_argument("--example", metavar="DIR",
                        help="the example harness (default: the bundled examples/argon)")
    parser.add_argument("--no-grade", action="store_true", help="only the ship scan")
    parser.add_argument("--flights", type=int, default=8, metavar="N",
                        help="fresh flights per graded controller (default 8)")


def example_dirs() -> list[Path]:
    """Where the bundled example harness is: inside the installed package (a wheel carries it
    as package data, copied there by setup.py), else in the checkout beside the package."""
    package = Path(__file__).resolve().parents[1]
    return [package / "examples" / "argon", package.parent / "examples" / "argon"]


def _example_dir(given: str | None) -> Path:
    from plimsoll_ci.errors import BadInput

    if given:
        p = Path(given)
        if not (p / "plimsoll.yaml").is_file():
            raise BadInput(f"example harness {p}: no plimsoll.yaml there; pass --example DIR")
        return p
    for p in example_dirs():
        if (p / "plimsoll.yaml").is_file():
            return p
    raise BadInput(f"the bundled example harness is missing: neither {example_dirs()[0]} (an "
                   f"installed package) nor {example_dirs()[1]} (a checkout) has its "
                   "plimsoll.yaml; reinstall plimsoll-ci, or pass --example DIR")


def run(args: argparse.Namespace) -> int:
    """Scan the example harness, grade the reference controllers; 0 when the leak was found."""
    from plimsoll_ci.shipscan import report, ship
    from plimsoll_ci.shipscan.scan import scan_items

    ex = _example_dir(args.example)
    print(f"== 1. ship scan of the example harness {ex}")
    print("   (plimsoll.yaml: ship sets 'drone' built by loop/kit.py, 'viewer' by globs; "
          "withheld.json holds keyed digests of the 16 practice seeds)")
    config = ship.load_config(ex / "plimsoll.yaml")
    files = ship.from_worktree(None, config, None)
    given = config.key_env and os.environ.get(config.key_env)
    wset = ship.load_withheld(config, key=None if given else EXAMPLE_KEY.encode())
    result = scan_items(ship.items(files), wset)
    sys.stdout.write(report.render(result, "text"))
    leaked = bool(result.findings)
    if not args.no_grade:
        print("== 2. grading the reference controllers in the strongest sandbox available")
        _grade(args.flights)
    print("== done: the ship scan found the planted leak" if leaked
          else "== done: the ship scan found NOTHING (the planted leak should have been found)")
    return 0 if leaked else 1


def _grade(flights: int, course: str = "easy") -> dict[str, tuple[int, int]]:
    """Grade honest and cheater in the strongest sandbox here; one line per grading.

    The honest controller flies fresh flights; the cheater (which carries the generator and the
    practice seeds) flies the practice set and the same fresh flights. Its practice score minus its
    fresh score exposes the memorizing. No seed value is printed: the fresh set is shown by its
    commitment only.
    """
    import plimsoll_sim as sim
    from plimsoll_ci.grading import fresh, seeds
    from plimsoll_ci.grading.request import GradeRequest
    from plimsoll_ci.grading.run import grade
    from plimsoll_ci.sandbox import all_providers

    provider, skipped = all_providers.strongest_available()
    for s in skipped:
        print(f"   (not using {s})")
    tier = all_providers.get(provider).configured_tier()
    print(f"   sandbox: {provider} (configured tier {tier}); the simulator and every seed stay "
          "outside it")
    fs = fresh.draw(max(1, flights))
    print(f"   fresh set: {len(fs.seeds)} seeds drawn now, commitment {fresh.commit(fs)[:16]}… "
          "(committed before any flight; seeds never printed)")
    controllers = Path(sim.__file__).parent / "controllers"
    scores: dict[str, tuple[int, int]] = {}
    plan = (("honest", "fresh", seeds.fresh(fs)), ("cheater", "practice", seeds.practice()),
            ("cheater", "fresh", seeds.fresh(fs)))
    for name, label, flown in plan:
        r = grade(GradeRequest(str(controllers / f"{name}.py"), course, flown, provider))
        if r.refused:
            print(f"   {name:8s} on {label:8s}: refused ({len(r.refused)} sealed findings)")
            continue
        scores[f"{name}/{label}"] = (r.landed, r.total)
        checks = ("code checks: " + "; ".join(x.split(" (")[0] for x in r.code_check_summary)
                  if r.code_check_summary else "no code check fired")
        assert r.timing is not None
        print(f"   {name:8s} on {label:8s}: landed {r.landed:2d}/{r.total:<2d} "
              f"tier {r.tier}, {r.timing.wall_s:.1f} s. {checks}")
    if "cheater/practice" in scores and "cheater/fresh" in scores:
        (lp, tp), (lf, tf) = scores["cheater/practice"], scores["cheater/fresh"]
        gap = lp / tp - lf / tf
        print(f"   practice vs fresh: the cheater lands {lp}/{tp} on practice and {lf}/{tf} on "
              f"fresh flights; a gap of {gap:.0%} says it memorized the practice set")
    return scores

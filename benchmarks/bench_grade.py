"""Benchmark: grade 64 hard-course flights of the honest controller under each provider.

Baseline (measured in the same run): the same 64 flights flown in-process with `sim.fly`.
Prints, per provider (and `gvisor/2`: two alternating halves per sandbox; `gvisor` again with the
JavaScript twin `honest.mjs` flown by node, language `js`): wall time, sandbox start time, round
trip per tick, the simulator's share of the wall time, and the ratio to the in-process baseline. Target: <= 5 s wall under gVisor on a
2-core machine (a published reference system takes a median of 44.3 s for 64 flights in gVisor).

    python3 benchmarks/bench_grade.py [--flights 64] [--repeat 3] [--providers gvisor,docker,process]
                                      [--no-javascript]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import plimsoll_sim as sim  # noqa: E402
from plimsoll_ci.commands.fly import load_controller  # noqa: E402
from plimsoll_ci.grading.request import GradeRequest  # noqa: E402
from plimsoll_ci.grading.run import grade  # noqa: E402
from plimsoll_ci.grading.seeds import Seed  # noqa: E402
from plimsoll_ci.sandbox.all_providers import PROVIDERS  # noqa: E402

HONEST = str(REPO / "plimsoll_sim" / "controllers" / "honest.py")
HONEST_JS = str(REPO / "plimsoll_sim" / "controllers" / "honest.mjs")
TARGET_GVISOR_S = 5.0
REFERENCE_GVISOR_S = 44.3


def main() -> int:
    """Run the benchmark and print a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flights", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--providers", default=",".join(PROVIDERS))
    parser.add_argument("--no-javascript", action="store_true",
                        help="skip the JavaScript twin's row in gVisor")
    args = parser.parse_args()
    seeds = [7000000000 + 7919 * k for k in range(args.flights)]
    course = sim.course("hard")
    cls = load_controller(HONEST)

    base = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        results, _ = sim.fly(cls, seeds, course)
        base.append(time.perf_counter() - t)
    baseline = statistics.median(base)
    landed = sum(r.landed for r in results)
    print(f"{args.flights} hard-course flights of the honest controller ({landed} land; js: its "
          "JavaScript twin, the same flights expected)")
    print(f"baseline in-process (sim.fly): {baseline:.2f} s median of {args.repeat}")
    print()
    print(f"{'provider':<9} {'lang':<4} {'tier':<8} {'wall s':>7} {'x base':>7} {'start s':>8} "
          f"{'rt ms/tick':>11} {'sim share':>10}  same scores")
    verdict = 0
    rows = []
    for provider in args.providers.split(","):
        rows.append((provider, False, HONEST))
        if provider == "gvisor":
            rows.append((provider, True, HONEST))
            if not args.no_javascript:
                rows.append((provider, False, HONEST_JS))
    for provider, halves, controller in rows:
        lang = "js" if controller == HONEST_JS else "py"
        ok, why = PROVIDERS[provider].available()
        if not ok:
            print(f"{provider:<9} {lang:<4} unavailable: {why}")
            continue
        runs = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            r = grade(GradeRequest(controller, "hard", [Seed(f"seeds:{n}", s, True)
                                               for n, s in enumerate(seeds, 1)], provider,
                              pipeline=halves))
            runs.append((time.perf_counter() - t, r.document()))
        runs.sort(key=lambda x: x[0])
        wall, doc = runs[len(runs) // 2]
        assert doc is not None
        same = [(f["landed"], f["gates"], f["time"], f["reason"]) for f in doc["flights"]] == \
            [(x.landed, x.gates, round(x.time, 6), x.reason) for x in results]
        timing = doc["timing"]
        name = provider + ("/2" if halves else "")
        print(f"{name:<9} {lang:<4} {doc['tier']:<8} {wall:>7.2f} {wall / baseline:>7.2f} "
              f"{timing['start_s']:>8.2f} {timing['round_trip_ms_per_tick']:>11.3f} "
              f"{timing['sim_share']:>10.2f}  {'yes' if same else 'NO'}")
        if provider == "gvisor" and not halves and lang == "py":
            met = wall <= TARGET_GVISOR_S
            print(f"{'':<9} gVisor target <= {TARGET_GVISOR_S:g} s: {'met' if met else 'MISSED'}"
                  f" ({REFERENCE_GVISOR_S / wall:.1f}x faster than the reference's "
                  f"{REFERENCE_GVISOR_S} s median)")
            verdict |= 0 if met else 1
        verdict |= 0 if same else 2
    return verdict


if __name__ == "__main__":
    raise SystemExit(main())

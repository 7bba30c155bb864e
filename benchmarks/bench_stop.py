"""How long a flight that hangs costs in gVisor: the grading of one flight whose controller sleeps
in `step`, ended by its wall-clock bound, beside the same grading stopped the way it was before
(`runsc delete --force` alone, which waits out runsc's stop deadline on a running sandbox and then
fails), in the same run, alternating, over several runs each.

Prints the median wall time of each, the ratio, and what `runsc delete` answered (exit status).

    python benchmarks/bench_stop.py [--runs 5] [--wall 1.0]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from unittest import mock

from plimsoll_ci.grading.lockstep import CpuBudget
from plimsoll_ci.grading.request import GradeRequest
from plimsoll_ci.grading.run import grade
from plimsoll_ci.grading.seeds import Seed
from plimsoll_ci.sandbox import gvisor, leftovers

HANGS = ("import time\n\nclass Controller:\n    def __init__(self, info):\n        pass\n\n"
         "    def step(self, obs):\n        time.sleep(3600)\n")


def _delete_only(runsc: str, state: object, cid: str, proc: object = None) -> bool:
    """The stop before the change: `delete --force`, nothing killed first."""
    done = subprocess.run([runsc, f"--root={state}", "delete", "--force", cid],
                          capture_output=True, timeout=30)
    return done.returncode == 0


def _one(controller: Path, wall: float, stop: Callable[..., bool]) -> tuple[float, list[bool]]:
    answers: list[bool] = []

    def recorded(*args: object, **kwargs: object) -> bool:
        ok = stop(*args, **kwargs)
        answers.append(ok)
        return ok

    budget = CpuBudget(per_tick_s=0.05, tick_slack_s=0.5, startup_s=10.0, wall_tick_s=wall,
                       wall_startup_s=60.0)
    started = time.monotonic()
    with mock.patch.object(gvisor, "stop_runsc", recorded):
        graded = grade(GradeRequest(str(controller), "easy", [Seed("seeds:1", 4111111111, True)],
                                    "gvisor", budget=budget))
    took = time.monotonic() - started
    assert [f.reason for f in graded.flights] == ["timeout_wall"], graded.flights
    return took, answers


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--wall", type=float, default=1.0, help="the flight's wall bound per tick (s)")
    args = ap.parse_args(argv)
    ok, why = gvisor.available()
    if not ok:
        print(f"bench_stop: gVisor is not available here ({why})", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        controller = Path(tmp) / "controller.py"
        controller.write_text(HANGS)
        _one(controller, args.wall, leftovers.stop_runsc)  # warm: the runtime's image, imports
        times: dict[str, list[float]] = {"now": [], "before": []}
        answers: dict[str, list[bool]] = {"now": [], "before": []}
        for _ in range(args.runs):
            for name, stop in (("now", leftovers.stop_runsc), ("before", _delete_only)):
                took, said = _one(controller, args.wall, stop)
                times[name].append(took)
                answers[name] += said
    now, before = statistics.median(times["now"]), statistics.median(times["before"])
    print(f"a flight hanging in step, ended by a {args.wall:g} s wall bound, in gVisor "
          f"(median of {args.runs}):")
    print(f"  kill --all, then delete --force (now): {now:6.2f} s   "
          f"runsc delete succeeded {sum(answers['now'])}/{len(answers['now'])}")
    print(f"  delete --force alone (before):         {before:6.2f} s   "
          f"runsc delete succeeded {sum(answers['before'])}/{len(answers['before'])}")
    print(f"  before/now: {before / now:.1f}x; each hung flight {before - now:.1f} s shorter")
    return 0


if __name__ == "__main__":
    sys.exit(main())

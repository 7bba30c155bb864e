"""Benchmark: the example squeeze job (26 controllers x 80 hard-course flights, gVisor) graded by
one runner, and as 2 shards of one plan, each shard on a runner of its own.

Baseline, measured in the same run on the same plan (the same fresh set): `squeeze run --plan
PLAN` grading the whole plan on this machine (`--jobs` = its cores). Then each shard
(`--shard 1/2`, `--shard 2/2`) is timed alone on this machine, as each would run on its own
runner of the same size in an Actions matrix, and `bundle merge` is timed. The matrix's wall time
is plan + the slower shard + merge (the shards run at once on their runners; here they run one
after the other, so each has the machine to itself). The merged result.json must equal the
baseline's byte for byte.

The machine may be shared: the 1-minute load average is printed before and after every
measurement, and the ratio is against the baseline measured in the same run.

    python3 benchmarks/bench_shards.py [--provider gvisor] [--shards 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "examples" / "squeeze" / "squeeze.yaml"


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(what: str, *args: str) -> float:
    before = load()
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "plimsoll_ci", *args], capture_output=True,
                       text=True, cwd=REPO)  # this checkout's package, wherever it is run from
    wall = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"{what}: exit {r.returncode}\n{r.stderr[-3000:]}")
    print(f"  {what:<28} {wall:7.1f} s   (load {before} -> {load()})", flush=True)
    return wall


def main() -> int:
    """Measure and print (see the module doc)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--provider", default="gvisor")
    ap.add_argument("--shards", type=int, default=2)
    a = ap.parse_args()
    n = a.shards
    grading = ["--provider", a.provider]
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
        where = Path(tmp)
        print(f"the example squeeze job, {os.cpu_count()} cores, provider {a.provider}")
        plan = timed("squeeze plan", "squeeze", "plan", str(JOB), "--out", str(where / "plan"),
                     *grading)
        whole = timed("1 runner: the whole plan", "squeeze", "run", str(JOB), "--plan",
                      str(where / "plan"), "--out", str(where / "whole"), *grading)
        shards = [timed(f"shard {i}/{n} alone", "squeeze", "run", str(JOB), "--plan",
                        str(where / "plan"), "--shard", f"{i}/{n}", "--out",
                        str(where / f"shard-{i}"), *grading) for i in range(1, n + 1)]
        merge = timed("bundle merge", "bundle", "merge",
                      *[str(where / f"shard-{i}") for i in range(1, n + 1)],
                      "--out", str(where / "merged"))
        same = ((where / "merged" / "result.json").read_bytes()
                == (where / "whole" / "result.json").read_bytes())
        one = plan + whole
        matrix = plan + max(shards) + merge
        print(f"1 runner:  plan + whole           = {one:6.1f} s")
        print(f"{n} runners: plan + slowest shard + merge = {matrix:6.1f} s  "
              f"({one / matrix:.2f}x faster than 1 runner)")
        print(f"merged result.json byte-identical to the 1-runner run: {same}")
        return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())

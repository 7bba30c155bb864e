"""`plimsoll-ci withheld build` on a million values (issue 18: it was quadratic), beside a baseline.

Writes N 10-digit values (deterministic) to a temporary values file, then times, in the same run:
  - the baseline: reading the file and one SHA-256 per line in this process (the least any
    build must do),
  - `plimsoll-ci withheld build --values FILE --key-env K -o OUT` at N/10 and at N values, as a
    user runs it (a subprocess: start-up, digests, shapes, duplicate ids, the canonical file).
Prints wall times, the ratio to the baseline, and the growth from N/10 to N (10x is linear; a
quadratic build grows 100x). Target: 1,000,000 values in under 30 s.

    python benchmarks/bench_withheld.py [--values 1000000]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def machine() -> str:
    """CPU model, cores and load, for the record beside the numbers."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{model}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}, "
            f"Python {platform.python_version()}")


def write_values(path: Path, n: int) -> None:
    rng = random.Random(18)
    path.write_text("".join(f"{rng.randrange(10**9, 10**10)}\n" for _ in range(n)))


def baseline(path: Path) -> float:
    t = time.perf_counter()
    for line in path.read_bytes().splitlines():
        hashlib.sha256(line.strip()).digest()
    return time.perf_counter() - t


def build(path: Path, out: Path) -> float:
    exe = shutil.which("plimsoll-ci")
    cmd = [exe] if exe else [sys.executable, "-m", "plimsoll_ci"]
    env = dict(os.environ, BENCH_KEY="bench-key-not-a-secret")
    t = time.perf_counter()
    proc = subprocess.run([*cmd, "withheld", "build", "--values", str(path), "--key-env",
                           "BENCH_KEY", "-o", str(out)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"withheld build exited {proc.returncode}: {proc.stderr[-2000:]}")
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--values", type=int, default=1_000_000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-withheld-"))
    try:
        small, large = tmp / "small.txt", tmp / "large.txt"
        write_values(small, args.values // 10)
        write_values(large, args.values)
        base = baseline(large)
        t_small = build(small, tmp / "small.json")
        t_large = build(large, tmp / "large.json")
        size = (tmp / "large.json").stat().st_size
        print(f"{dt.date.today().isoformat()}: {machine()}")
        print(f"  baseline: read + SHA-256 of {args.values:,} lines   {base:7.2f} s")
        print(f"  withheld build, {args.values // 10:>9,} values (keyed)   {t_small:7.2f} s")
        print(f"  withheld build, {args.values:>9,} values (keyed)   {t_large:7.2f} s   "
              f"{t_large / base:5.1f}x the baseline, {size / 1e6:.0f} MB written")
        print(f"  growth from {args.values // 10:,} to {args.values:,} values: "
              f"{t_large / t_small:.1f}x (linear: ~10x; quadratic: ~100x)")
        if args.values == 1_000_000:
            print(f"  target 1,000,000 values in under 30 s: "
                  f"{'met' if t_large < 30 else 'NOT met'} ({t_large:.1f} s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

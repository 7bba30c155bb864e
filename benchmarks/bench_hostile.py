"""Peak memory and time of `plimsoll-ci scan` on hostile inputs, against the memory budget.

    python3 benchmarks/bench_hostile.py [--mb 200] [--max-memory 512M] [--only NAME ...]

Inputs (issue 18), generated once under /tmp, each with one withheld value planted at its end:
a zip of eight 64 MiB members (a few MB zipped); ~200 MB of mixed hex, base64 and escape lines;
~198 MB of 10-digit numbers; 200 MB of `%41` on one line; 200 MB of UTF-16 text (decoded and
searched beside its bytes); a 256 MiB sparse file; a 200 MB single line of words and numbers. Each is scanned by `plimsoll-ci scan --set ... --max-memory ...` in a child
process; its peak RSS is the child's own `ru_maxrss` (from `wait4`), printed against the budget
and against a baseline measured in the same run (the interpreter with numpy and the withheld
set loaded, scanning nothing). Exit 1 when an input goes over the budget.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from plimsoll_ci.commands._common import byte_count  # noqa: E402
from plimsoll_ci.withheld import build_set, dumps  # noqa: E402

MIB = 1024 * 1024
SEED = "3107713414"
VALUES = [("seeds.txt:1", SEED), ("seeds.txt:2", "2718281828"), ("times.txt:1", "31.5"),
          ("labels.txt:1", "drone answer key")]


def _zip(path: Path, mb: int) -> None:
    # (a block that repeats within deflate's 32 KiB window: ~150:1, a few MB for 512 MiB)
    block = b"".join(b"row %d MjcxODI4MTgyOQ== %%41 0x1f 3.25 zap\n" % i for i in range(200))
    per = 64 * MIB * mb // 200
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for k in range(8):
            with zf.open(f"data/m{k}.txt", "w") as fh:
                for _ in range(per // len(block)):
                    fh.write(block)
                fh.write(b"seed " + SEED.encode() + b"\n")


def _mixed(path: Path, mb: int) -> None:
    rng = random.Random(1)
    lines = []
    for _ in range(20_000):
        raw = bytes(rng.randrange(32, 127) for _ in range(rng.randrange(8, 60)))
        r = rng.random()
        if r < 0.3:
            lines.append(b"hex " + raw.hex().encode())
        elif r < 0.6:
            lines.append(b"b64 " + base64.b64encode(raw))
        elif r < 0.8:
            lines.append(b"pct " + b"".join(b"%%%02x" % c for c in raw))
        else:
            lines.append(b"esc " + b"".join(b"\\u%04x" % c for c in raw))
    block = b"\n".join(lines) + b"\n"
    with open(path, "wb") as fh:
        for _ in range(mb * 1_000_000 // len(block)):
            fh.write(block)
        fh.write(b"seed " + SEED.encode() + b"\n")


def _numbers(path: Path, mb: int) -> None:
    rng = random.Random(2)
    with open(path, "wb") as fh:
        for _ in range(mb * 1_000_000 // (11 * 100_000)):
            fh.write(b"".join(b"%d\n" % rng.randrange(10**9, 10**10) for _ in range(100_000)))
        fh.write(SEED.encode() + b"\n")


def _percent(path: Path, mb: int) -> None:
    with open(path, "wb") as fh:
        chunk = b"%41" * (MIB // 3)
        for _ in range(mb * 1_000_000 // len(chunk)):
            fh.write(chunk)
        fh.write(b" seed " + SEED.encode())


def _utf16(path: Path, mb: int) -> None:
    rng = random.Random(4)
    words = "alpha beta gamma 12345 0.5 x_y MjcxODI4MTgyOQ== %41 \\u0041".split()
    text = " ".join(rng.choice(words) for _ in range(200_000)) + "\n"
    block = text.encode("utf-16-le")
    with open(path, "wb") as fh:
        fh.write(b"\xff\xfe")
        for _ in range(mb * 1_000_000 // len(block)):
            fh.write(block)
        fh.write(("seed " + SEED + "\n").encode("utf-16-le"))


def _sparse(path: Path, mb: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(256 * MIB * mb // 200)


def _line(path: Path, mb: int) -> None:
    unit = b"alpha 12345 beta=0.5 x_y "
    with open(path, "wb") as fh:
        chunk = unit * (MIB // len(unit))
        for _ in range(mb * 1_000_000 // len(chunk)):
            fh.write(chunk)
        fh.write(b" seed " + SEED.encode() + b"\n")


INPUTS = {"zip of 8 x 64 MiB members": ("members.zip", _zip),
          "mixed hex/base64/escapes": ("mixed.txt", _mixed),
          "10-digit numbers": ("numbers.txt", _numbers),
          "%41 on one line": ("pct.txt", _percent),
          "UTF-16 text": ("utf16.txt", _utf16),
          "sparse file": ("sparse.bin", _sparse),
          "single line": ("line.txt", _line)}


def run_child(cmd: list[str], timeout: float = 1800) -> tuple[int, float, int]:
    """(exit code, seconds, peak RSS in bytes) of a child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"{cmd}: over {timeout} s")
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {err[-2000:]}")
    return proc.returncode, time.perf_counter() - t0, usage.ru_maxrss * 1024


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=200, help="size of the inputs (default 200 MB)")
    ap.add_argument("--max-memory", type=byte_count, default=512 * MIB)
    ap.add_argument("--only", nargs="*", help="names of inputs to run (a word of each)")
    args = ap.parse_args()
    root = Path(tempfile.gettempdir()) / f"plimsoll-bench-hostile-{args.mb}"
    root.mkdir(exist_ok=True)
    doc, _ = build_set(VALUES)
    setfile = root / "withheld.json"
    setfile.write_text(dumps(doc))
    budget = args.max_memory
    print(f"inputs under {root} (~{args.mb} MB each); memory budget {budget / MIB:.0f} MiB")

    base_code = ("import numpy, sys; from plimsoll_ci.withheld import load; "
                 "from plimsoll_ci.shipscan.scan import Scanner; Scanner(load(sys.argv[1]))")
    _, _, base = run_child([sys.executable, "-c", base_code, str(setfile)])
    print(f"{'baseline (python, numpy, the set)':36} {base / MIB:7.0f} MiB")
    over = 0
    for name, (fname, make) in INPUTS.items():
        if args.only and not any(w in name for w in args.only):
            continue
        path = root / fname
        if not path.exists():
            make(path, args.mb)
        size = path.stat().st_size
        code, secs, peak = run_child([sys.executable, "-m", "plimsoll_ci", "scan", "--set",
                                      str(setfile), "--max-memory", str(budget), str(path)])
        ok = peak <= budget
        over += not ok
        print(f"{name:36} {peak / MIB:7.0f} MiB peak ({peak / budget:4.0%} of budget, "
              f"{peak / base:4.1f}x baseline) {secs:7.1f} s  {size / 1e6:6.0f} MB  "
              f"exit {code}  {'within' if ok else 'OVER'}")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())

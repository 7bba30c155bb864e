"""The ship scan of a controller, the last step before its sandbox starts. Two lists, two outcomes.

- **Sealed** (refuses the run): the seeds this grading flies that are not practice seeds (a fresh
  set, a held-out seed file, seeds given for this run) and any withheld set passed with
  `--withheld`. A controller that carries one of them is not graded; the finding says where.
- **Suspicious** (graded, reported as code checks): the practice seeds, the simulator's source
  files (as `source` entries: copied, renamed or reformatted), and the generator's magic constant
  in any notation. The known-bad cheater is graded and its result says what it carries.

Seeds too small to tell apart from ordinary numbers (`1`, `101`) are left out of both lists: they
would match every controller. The result notes them as a weakness of the seed set instead.
The sets are keyed with a random key made in this process; no value is ever written or shown. A
process that grades many controllers (a squeeze worker) builds each set once and reuses it while
the seeds and the simulator's files are the same bytes: fingerprinting the simulator's source was
the larger part of a grading's ship scan.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.shipscan.scan import Finding, Scanner
from plimsoll_ci.withheld import WithheldSet, build_set, parse

# Below this a seed is an ordinary number (loop bounds, sizes, 101..104 smoke seeds).
MIN_MATCHED_SEED = 1_000_000
# generator.mjs is the generator's JavaScript port: a JavaScript controller's copy is named too.
SIM_SOURCES = ("generator.py", "generator.mjs", "batch.py", "course.py", "fly.py", "__init__.py")


class CodeCheck(NamedTuple):
    """One suspicious thing a graded controller carries (no value, only the entry's id)."""

    check: str  # "practice_seed" | "simulator_source" | "generator_constant" | "withheld_set"
    entry: str
    path: str
    line: int
    column: int
    chain: str
    detail: str


class ScanOutcome(NamedTuple):
    """Both lists' findings for one staged controller, plus notes on what could not be matched."""

    sealed: list[Finding]
    suspicious: list[CodeCheck]
    notes: list[str]


_BUILT: dict[tuple, WithheldSet] = {}  # what a set was built from -> the set (this process)
_BUILT_MAX = 4
_BUILT_LOCK = threading.Lock()


def _set(values=(), sources=()) -> WithheldSet:
    built_from = (tuple(values), tuple((name, hashlib.sha256(data).digest())
                                       for name, data in sources))
    with _BUILT_LOCK:
        got = _BUILT.get(built_from)
    if got is not None:
        return got
    key = secrets.token_bytes(32)
    doc, _warnings = build_set(values=values, sources=sources, key=key)
    made = parse(doc, key=key, origin="<grading>")
    with _BUILT_LOCK:
        if len(_BUILT) >= _BUILT_MAX:
            _BUILT.clear()
        _BUILT[built_from] = made
    return made


def sealed_set(sealed_seeds: list[tuple[str, int]]) -> tuple[WithheldSet | None, list[str]]:
    """The run's own sealed seeds as a set (keyed with a one-off key); notes on tiny seeds."""
    notes = []
    values = []
    small = [eid for eid, seed in sealed_seeds if seed < MIN_MATCHED_SEED]
    for eid, seed in sealed_seeds:
        if seed >= MIN_MATCHED_SEED:
            values.append((eid, str(seed)))
    if small:
        shown = ", ".join(small[:8]) + (" ..." if len(small) > 8 else "")
        notes.append(f"weak seed set: {len(small)} seed(s) below {MIN_MATCHED_SEED:,} ({shown}) "
                     "cannot be told apart from ordinary numbers, so the ship scan does not "
                     "look for them; draw 64-bit seeds (--fresh N, or plimsoll-ci seeds draw)")
    return (_set(values=values) if values else None), notes


def suspicious_set(practice: tuple[int, ...], sim_dir: Path, magic: int) -> WithheldSet:
    """Practice seeds, the simulator's source files and the generator's magic constant."""
    values = [(f"practice:{n}", str(seed)) for n, seed in enumerate(practice, 1)
              if seed >= MIN_MATCHED_SEED]
    values.append(("generator-magic", str(magic)))
    sources = []
    for name in SIM_SOURCES:
        p = sim_dir / name
        if p.is_file():
            sources.append((f"sim/{name}", p.read_bytes()))
    return _set(values=values, sources=sources)


def _classify(f: Finding) -> str:
    if f.kind == "withheld-set":
        return "withheld_set"
    if f.entry.startswith("practice:"):
        return "practice_seed"
    if f.entry == "generator-magic":
        return "generator_constant"
    return "simulator_source"


def scan(files: dict[str, bytes], sealed: list[WithheldSet],
         suspicious: WithheldSet | None) -> ScanOutcome:
    """Scan a staged controller's files (names and contents) against both lists."""
    sealed_found: list[Finding] = []
    checks: list[CodeCheck] = []
    notes: list[str] = []
    scanners = [Scanner(s) for s in sealed]
    sus = Scanner(suspicious) if suspicious is not None else None
    for path, data in sorted(files.items()):
        for sc in scanners:
            found, n = sc.scan_file(data, path)
            sealed_found += found
            notes += n
        if sus is not None:
            found, n = sus.scan_file(data, path)
            notes += n
            for f in found:
                checks.append(CodeCheck(_classify(f), f.entry, f.path, f.line, f.column,
                                        f.chain, f.detail))
    return ScanOutcome(sealed_found, checks, sorted(set(notes)))


def summary(checks: list[CodeCheck]) -> list[str]:
    """One line per kind of suspicious content: what the controller carries."""
    out = []
    practice = sorted({c.entry for c in checks if c.check == "practice_seed"},
                      key=lambda e: int(e.split(":")[1]))
    if practice:
        out.append(f"carries {len(practice)} practice seed(s) ({', '.join(practice[:16])})")
    if any(c.check == "generator_constant" for c in checks):
        where = sorted({f"{c.path}:{c.line}" for c in checks if c.check == "generator_constant"})
        out.append(f"carries the generator's magic constant ({', '.join(where[:5])})")
    for path in sorted({c.path for c in checks if c.check == "withheld_set"}):
        out.append(f"carries a withheld set file ({path})")
    sources = sorted({(c.entry, c.path, c.detail) for c in checks
                      if c.check == "simulator_source"})
    for entry, path, detail in sources:
        out.append(f"carries simulator source {entry} in {path}" + (f" ({detail})" if detail
                                                                       else ""))
    return out

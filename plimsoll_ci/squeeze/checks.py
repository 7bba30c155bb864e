"""Code checks: what a controller (or a recipe) carries of the simulator and the practice set.

The project's ship-scan engine does the matching (`plimsoll_ci.shipscan.scan.Scanner`), over a withheld set
built in memory and never written: the generator's magic constant (found in any notation: decimal,
hex, `_` separators, a JavaScript BigInt's `n`, one layer of encoding), the generator's source
file and its JavaScript port `plimsoll_sim/generator.mjs` (winnowed fingerprints: found copied,
renamed or reformatted), and each practice seed. The set is keyed with a fixed domain key so that
the same bytes give the same findings on every run (the findings go into the signed records; no
value does).

Three counts per group come out of it, as the write-up has them: controllers carrying the
generator constant, carrying the generator source, carrying practice seeds.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import read_bounded

MAGIC_ID = "generator-magic"
SOURCE_ID = "sim/generator.py"
# The generator's JavaScript port: a JavaScript controller carrying it counts as carrying source.
JS_SOURCE_ID = "sim/generator.mjs"
PRACTICE_PREFIX = "practice:"
KIND_OF = {"generator": MAGIC_ID, "source": SOURCE_ID}
_KEY = hashlib.sha256(b"plimsoll-ci squeeze code checks v1").digest()
_SKIP_DIRS = {"__pycache__", ".git"}
MAX_FILES = 2000
MAX_BYTES = 64 * 1024 * 1024


def scanner(practice: tuple[int, ...]):  # -> plimsoll_ci.shipscan.scan.Scanner
    """A Scanner over the generator constant, the generator source and the practice seeds."""
    import plimsoll_sim as sim
    from plimsoll_ci.shipscan.scan import Scanner
    from plimsoll_ci.withheld import build_set, parse

    values = [(f"{PRACTICE_PREFIX}{n}", str(seed)) for n, seed in enumerate(practice, 1)]
    values.append((MAGIC_ID, str(sim.generator.MAGIC)))
    here = Path(sim.__file__).parent
    sources = [(SOURCE_ID, (here / "generator.py").read_bytes())]
    if (here / "generator.mjs").is_file():
        sources.append((JS_SOURCE_ID, (here / "generator.mjs").read_bytes()))
    doc, _warnings = build_set(values=values, sources=sources, key=_KEY)
    return Scanner(parse(doc, key=_KEY, origin="<squeeze code checks>"))


def controller_files(path: Path) -> dict[str, bytes]:
    """The files a grading stages for `path` (a .py file, or a folder), by their staged names."""
    if path.is_file():
        return {path.name: read_bounded(path, MAX_BYTES, f"controller {path}")}
    out: dict[str, bytes] = {}
    total = 0
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in sorted(filenames):
            full = Path(dirpath) / name
            if full.is_symlink() or not full.is_file():
                raise BadInput(f"controller {path}: {full.relative_to(path)} is not a regular "
                               "file; only regular files enter a sandbox")
            # bounded by what is left of the tree's bound: a huge file is refused, not read
            data = read_bounded(full, max(MAX_BYTES - total, 0), f"controller {path}: "
                                f"{full.relative_to(path)} (the files together)")
            total += len(data)
            if len(out) >= MAX_FILES or total > MAX_BYTES:
                raise BadInput(f"controller {path}: more than {MAX_FILES} files or "
                               f"{MAX_BYTES} bytes")
            out[full.relative_to(path).as_posix()] = data
    return out


def check(files: dict[str, bytes], scan) -> dict[str, Any]:
    """The code checks of one controller's files (JSON-ready; entry ids and places, no values).

    `{"files": {path: sha256}, "generator": ["path:line", ...], "source": ["path (overlap N%)"],
    "practice_seeds": ["practice:3", ...], "notes": [...]}`
    """
    generator: set[str] = set()
    source: set[str] = set()
    practice: set[str] = set()
    notes: set[str] = set()
    for path, data in sorted(files.items()):
        found, n = scan.scan_file(data, path)
        notes.update(n)
        for f in found:
            if f.entry == MAGIC_ID:
                generator.add(f"{f.path}:{f.line}" if f.where == "content" else f"{f.path} (name)")
            elif f.entry in (SOURCE_ID, JS_SOURCE_ID):
                source.add(f"{f.path} ({f.detail})" if f.detail else f.path)
            elif f.entry.startswith(PRACTICE_PREFIX):
                practice.add(f.entry)
    return {
        "files": {p: hashlib.sha256(d).hexdigest() for p, d in sorted(files.items())},
        "generator": sorted(generator),
        "source": sorted(source),
        "practice_seeds": sorted(practice, key=lambda e: int(e.split(":")[1])),
        "notes": sorted(notes),
    }


def check_text(text: str, scan) -> list[str]:
    """Entry ids a text (a recipe) carries: practice seeds or the generator constant."""
    found, _notes = scan.scan_file(text.encode("utf-8"), "recipe")
    return sorted({f.entry for f in found})


def carries(checks: dict[str, Any]) -> dict[str, bool]:
    """Which of the three things the controller carries."""
    return {"generator": bool(checks["generator"]), "source": bool(checks["source"]),
            "practice_seeds": bool(checks["practice_seeds"])}

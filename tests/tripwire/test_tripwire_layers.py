"""The tripwire package's modules import one way: no cycle, and the recorder stays light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "plimsoll_ci" / "tripwire"


def _imports(path: Path) -> set[str]:
    """Every `plimsoll_ci...` module `path` imports, at any depth (lazy imports included)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {m for m in found if m.startswith("plimsoll_ci")}


def _graph() -> dict[str, set[str]]:
    mods = {f"plimsoll_ci.tripwire.{p.stem}": p for p in PACKAGE.glob("*.py")
            if p.stem != "__init__"}
    return {m: _imports(p) & set(mods) for m, p in mods.items()}


def test_no_module_of_the_tripwire_package_imports_itself_back() -> None:
    graph = _graph()
    assert "plimsoll_ci.tripwire.canary" in graph and "plimsoll_ci.tripwire.requests" in graph

    def reach(start: str) -> set[str]:
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo += graph[m]
        return seen

    cycles = sorted(m for m in graph if m in reach(m))
    assert cycles == [], f"import cycle through {cycles}"


ENGINE_SCANS = (".scan_content(", ".scan_contents(", ".scan_name(", ".scan_stream(",
                ".scan_file(", ".prime_names(")


def test_the_tripwire_scans_only_through_the_ship_scans_front_end() -> None:
    # pieces go through `scan.Verdicts` (its batching, cache, file bound); no module of the
    # tripwire hands the engine contents or names itself, and there is no redactor of its own
    calls = {p.stem: [c for c in ENGINE_SCANS if c in p.read_text()]
             for p in PACKAGE.glob("*.py")}
    assert {stem: found for stem, found in calls.items() if found} == {}
    assert "Verdicts(" in (PACKAGE / "matching.py").read_text()
    assert not (PACKAGE / "redact.py").exists()


def test_the_recorder_does_not_load_the_matching_engine() -> None:
    code = ("import sys, plimsoll_ci.commands.record, plimsoll_ci.tripwire.recorder\n"
            "print(sorted(m for m in sys.modules if m in ('plimsoll_ci.shipscan.scan', 'numpy')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "[]"

"""The house rules hold for every module of plimsoll_ci: size, parameters, one way of importing.

- A module stays under 600 lines, or its docstring says why it is one module ("Over 600 lines
  because ...").
- A function takes at most 6 parameters (`self`/`cls` not counted; `*args` and `**kwargs` count
  one each); more belong in a typed record (a NamedTuple or dataclass) the function takes.
- No import cycle among the project's modules: neither through module-level imports nor through
  imports inside functions (`if TYPE_CHECKING:` blocks import nothing at run time and do not
  count; a package's `__init__` importing its own modules is how packages are built). Importing
  `a.b.c` runs `a.b`'s `__init__` too, so that counts as importing `a.b`.
- No import cycle among the packages (and root modules) either: `attest/` importing `grading/`
  while `grading/` imports `attest/` is a loop even when no two modules form one.
- No package imports one from a higher layer of the layer table in docs/architecture.md (the
  table is read from the doc: the doc is the one place the layers are drawn).
- `match/` and `plimsoll_sim/` stay pure: they import nothing of the project outside themselves.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "plimsoll_ci"
DOC = ROOT / "docs" / "architecture.md"
MAX_LINES = 600
MAX_PARAMS = 6

# function -> why it keeps more than MAX_PARAMS parameters
PARAMS_ALLOWED = {
    "plimsoll_ci/squeeze/plan.py:job_context":
        "the squeeze is being reworked on its own branch; its planner's context record comes "
        "with that work",
}


def _modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every module under `root` (a package is its __init__)."""
    mods = {}
    for p in sorted(root.rglob("*.py")):
        parts = list(p.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


def _run_time_nodes(tree: ast.Module, lazy: bool) -> list[ast.AST]:
    """The statements that import at run time: module level (through `if`/`try`), and with
    `lazy` those inside functions too; never an `if TYPE_CHECKING:` block."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo += node.orelse
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        elif isinstance(node, (ast.If, ast.Try, ast.ExceptHandler, ast.With)) or (
                lazy and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                           ast.For, ast.While))):
            todo += [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt)
                     or isinstance(c, ast.ExceptHandler)]
        elif not lazy and isinstance(node, ast.ClassDef):
            todo += node.body
    return out


def _imports(path: Path, known: set[str], lazy: bool) -> set[str]:
    """The project modules `path` imports (`from a.b import c` is `a.b.c` when that is a module)."""
    found = set()
    for node in _run_time_nodes(ast.parse(path.read_text()), lazy):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in known else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def _ancestors(module: str) -> list[str]:
    """The packages whose `__init__` runs when `module` is imported (`a.b.c` -> `a.b`)."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts))]


def _graph(lazy: bool) -> dict[str, set[str]]:
    mods = _modules()
    known = set(mods)
    graph = {}
    for name, path in mods.items():
        deps = _imports(path, known, lazy) & known
        # importing a module of another package runs that package's __init__ first
        deps |= {a for d in deps for a in _ancestors(d) if a in known
                 and not name.startswith(a + ".")}
        # a package's __init__ importing its own modules builds the package; not a cycle
        graph[name] = {d for d in deps if d != name and not d.startswith(name + ".")}
    return graph


def _unit(module: str) -> str:
    """The package or root module `module` belongs to, as the doc names it (`history/`,
    `git.py`; `__init__.py` for the package's own `__init__`, which holds `__version__`)."""
    parts = module.split(".")
    if parts[0] == "plimsoll_sim":
        return "plimsoll_sim/"
    if len(parts) == 1:
        return "__init__.py"
    return f"{parts[1]}/" if (PACKAGE / parts[1]).is_dir() else f"{parts[1]}.py"


def _unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph seen package by package: `a -> b` when a module of `a` imports one of
    `b`."""
    units: dict[str, set[str]] = {}
    for module, deps in graph.items():
        mine = _unit(module)
        units.setdefault(mine, set()).update(_unit(d) for d in deps if _unit(d) != mine)
    for deps in list(units.values()):
        for d in deps:
            units.setdefault(d, set())
    return units


def _loop(graph: dict[str, set[str]], group: list[str]) -> str:
    """One import loop through a strongly connected `group`, shown as `a -> b -> a`."""
    start, members = group[0], set(group)
    came: dict[str, str] = {}
    todo = [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(came[path[-1]])
                return " -> ".join([*reversed(path), start])
            if w not in came:
                came[w] = v
                todo.append(w)
    return " -> ".join(group)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    groups = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def test_the_cycle_finder_finds_a_cycle() -> None:
    # the finder itself can fail: a -> b -> c -> a is one group, d alone is none
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}) == [["a", "b", "c"]]


def test_the_loop_is_named_import_by_import() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert _loop(graph, ["a", "b", "c"]) == "a -> b -> c -> a"


def test_importing_a_module_counts_as_importing_its_package() -> None:
    # `from plimsoll_ci.shipscan import scan` runs shipscan/__init__ first
    graph = _graph(lazy=True)
    assert {"plimsoll_ci.shipscan", "plimsoll_ci.shipscan.scan"} <= \
        graph["plimsoll_ci.history.blobscan"]
    assert "plimsoll_ci.history" not in graph["plimsoll_ci.history.blobscan"]


@pytest.mark.parametrize("lazy", [False, True], ids=["module level", "inside functions too"])
def test_no_module_imports_itself_back(lazy: bool) -> None:
    graph = _graph(lazy)
    assert "plimsoll_ci.tripwire.canary" in graph and "plimsoll_ci.shipscan.scan" in graph
    assert [_loop(graph, group) for group in _cycles(graph)] == []


# package loops known today, each to be gone with the change named beside it
LOOPS_ALLOWED: set[tuple[str, str]] = set()


def test_no_package_imports_itself_back() -> None:
    units = _unit_graph(_graph(lazy=True))
    assert {"shipscan/", "history/", "git.py", "__init__.py"} <= set(units)
    loops = {tuple(group): _loop(units, group) for group in _cycles(units)}
    assert [loop for group, loop in loops.items() if group not in LOOPS_ALLOWED] == []
    assert LOOPS_ALLOWED <= set(loops), "an allowed loop is gone: drop it from LOOPS_ALLOWED"


def _layers() -> dict[str, int]:
    """Package or module (as the doc names it) -> its layer, from the layer table of
    docs/architecture.md (rows `| N. name | `a/`, `b.py` ... |`, lowest first)."""
    found: dict[str, int] = {}
    for line in DOC.read_text().splitlines():
        row = re.match(r"\| (\d+)\. [^|]+\| ([^|]+)\|", line)
        if row:
            for name in re.findall(r"`([\w]+/|[\w]+\.py)`", row.group(2)):
                found[name] = int(row.group(1))
    return found


def _upward(units: dict[str, set[str]], layers: dict[str, int]) -> list[str]:
    """Every import of a package from a higher layer than its own, and every package the
    layer table does not place."""
    wrong = [f"{u}: in no layer of docs/architecture.md" for u in sorted(units)
             if u not in layers]
    return wrong + [f"{u} (layer {layers[u]}) imports {d} (layer {layers[d]})"
                    for u in sorted(units) for d in sorted(units[u])
                    if u in layers and d in layers and layers[d] > layers[u]]


def test_the_layer_rule_finds_an_upward_import() -> None:
    units = {"match/": set(), "engine/": {"match/"}, "git.py": {"engine/"}, "new/": set()}
    layers = {"match/": 1, "engine/": 3, "git.py": 2}
    assert _upward(units, layers) == ["new/: in no layer of docs/architecture.md",
                                      "git.py (layer 2) imports engine/ (layer 3)"]


# imports from a higher layer known today, each to be gone with the change named beside it
UPWARD_ALLOWED: set[str] = set()


def test_no_package_imports_one_from_a_higher_layer() -> None:
    layers = _layers()
    assert layers.get("match/") == 1 and layers.get("commands/") == max(layers.values())
    wrong = _upward(_unit_graph(_graph(lazy=True)), layers)
    assert [w for w in wrong if w not in UPWARD_ALLOWED] == []
    assert UPWARD_ALLOWED <= set(wrong), "an allowed import is gone: drop it from UPWARD_ALLOWED"


def test_the_redactor_reads_the_result_types_not_the_session() -> None:
    # type-only imports included: the redactor needs what a scan gives, never the scanning
    tree = ast.parse((PACKAGE / "shipscan" / "redact.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "plimsoll_ci.shipscan.results" in imported
    assert not {m for m in imported if m and m.startswith("plimsoll_ci.shipscan.")} - \
        {"plimsoll_ci.shipscan.results"}


@pytest.mark.parametrize("pure, root", [("plimsoll_ci.match", PACKAGE / "match"),
                                        ("plimsoll_sim", ROOT / "plimsoll_sim")])
def test_the_pure_layers_import_nothing_of_the_project(pure: str, root: Path) -> None:
    mods = _modules(root)
    assert len(mods) > 3
    outside = {name: sorted(m for m in _imports(path, set(), lazy=True)
                            if m.split(".")[0] in ("plimsoll_ci", "plimsoll_sim", "tests", "benchmarks")
                            and m != pure and not m.startswith(pure + "."))
               for name, path in mods.items()}
    assert {name: found for name, found in outside.items() if found} == {}


def test_no_module_is_over_600_lines_without_saying_why() -> None:
    long = {}
    for name, path in _modules().items():
        lines = len(path.read_text().splitlines())
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        if lines > MAX_LINES and "Over 600 lines because" not in doc:
            long[name] = lines
    assert long == {}


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    return (len([n for n in names if n not in ("self", "cls")]) + (a.vararg is not None)
            + (a.kwarg is not None))


def test_no_function_takes_more_than_6_parameters() -> None:
    over = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and _params(node) > MAX_PARAMS:
                over[f"{path.relative_to(ROOT).as_posix()}:{node.name}"] = _params(node)
    assert {k: v for k, v in over.items() if k not in PARAMS_ALLOWED} == {}
    assert set(PARAMS_ALLOWED) <= set(over), "an allowed function is within the rule: drop it"

"""`attest/` is the trust root: it imports nothing of the project but the neutral modules below it
(the time and digest forms it shares with `grading/`, the tier names, errors, bounded reads, the
one way workers are started)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "plimsoll_ci"

# The neutral low layer: modules that import nothing of the project but one another and `errors`.
NEUTRAL = {"plimsoll_ci", "plimsoll_ci.errors", "plimsoll_ci.envname", "plimsoll_ci.files",
           "plimsoll_ci.timestamps", "plimsoll_ci.digests", "plimsoll_ci.tiers", "plimsoll_ci.pool"}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """Every project module `tree` imports (inside functions too; `if TYPE_CHECKING:` left out)."""
    found: list[tuple[int, str]] = []
    package = module.rsplit(".", 1)[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            # `from plimsoll_ci import digests` imports the module `plimsoll_ci.digests`
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.append((node.lineno, child if _is_module(child) else base))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return [(line, name) for line, name in found if name.split(".")[0] == "plimsoll_ci"]


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _outside(source: str, module: str) -> list[str]:
    return [f"{module} line {line}: imports {name}"
            for line, name in _imports(ast.parse(source), module)
            if name not in NEUTRAL and not name.startswith("plimsoll_ci.attest")]


def test_attest_imports_nothing_of_the_project_but_the_neutral_modules() -> None:
    problems = []
    for path in sorted((PACKAGE / "attest").rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        problems += _outside(path.read_text(), module)
    assert problems == [], "move what attest needs to a neutral module below it"


def test_the_neutral_modules_import_nothing_above_them() -> None:
    problems = []
    for module in sorted(NEUTRAL - {"plimsoll_ci"}):
        path = PACKAGE.parent.joinpath(*module.split(".")).with_suffix(".py")
        problems += [f"{module} line {line}: imports {name}"
                     for line, name in _imports(ast.parse(path.read_text()), module)
                     if name not in NEUTRAL]
    assert problems == []


def test_the_rule_sees_an_import_inside_a_function_and_skips_type_checking_only() -> None:
    source = ("from typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    from plimsoll_ci.grading.fresh import FreshSet\n"
              "from plimsoll_ci import timestamps\n"
              "from ..errors import BadInput\n"
              "def f():\n    from plimsoll_ci.grading import fresh\n"
              "    import plimsoll_ci.sandbox.stage\n"
              "    from . import canonical\n")
    assert _outside(source, "plimsoll_ci.attest.record") == [
        "plimsoll_ci.attest.record line 7: imports plimsoll_ci.grading.fresh",
        "plimsoll_ci.attest.record line 8: imports plimsoll_ci.sandbox.stage",
    ]

"""The house rules of the tests themselves, and the one CLI runner they share.

- Helpers live in one package, `tests/kit/`, imported as `kit` (pytest's `pythonpath` option): no
  file under tests/ puts a folder on `sys.path` (a script a test hands to a child process as a
  string may, for that process).
- One way to run the CLI: `kit.cli.run_cli` (in this process) or `kit.cli.run_process` (where the
  process boundary is what a test is about). No file outside `tests/kit/` defines a function
  that wraps the CLI again: none named `cli`/`run_cli` (with or without `_`), and no helper (a
  function that is not a test) that starts `python -m plimsoll_ci` itself.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
from kit.cli import run_cli, run_process

from plimsoll_ci import __version__

TESTS = Path(__file__).resolve().parents[1]
KIT = TESTS / "kit"
CLI_NAMES = {"cli", "_cli", "run_cli", "_run_cli"}


def _sys_path_edits(tree: ast.AST) -> list[int]:
    """Lines that change sys.path (`sys.path.insert/append/extend`, or `sys.path = ...`)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                ast.unparse(node.func.value) == "sys.path":
            lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            lines += [node.lineno for t in targets if ast.unparse(t) == "sys.path"]
    return lines


def _starts_the_cli(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether `fn`'s own body holds an argv list with `-m plimsoll_ci...`."""
    for node in ast.walk(fn):
        if isinstance(node, ast.List):
            words = [e.value for e in node.elts if isinstance(e, ast.Constant)]
            for a, b in zip(words, words[1:], strict=False):
                if a == "-m" and isinstance(b, str) and b.split(".")[0] == "plimsoll_ci":
                    return True
    return False


def _cli_helpers(tree: ast.AST) -> list[str]:
    """Functions that wrap the CLI again: named like the kit's runner, or a helper (not a test)
    that starts `python -m plimsoll_ci` itself."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.name in CLI_NAMES or (not node.name.startswith("test_")
                                      and _starts_the_cli(node)):
            found.append(f"{node.name} (line {node.lineno})")
    return found


def _test_files(outside_kit: bool) -> dict[str, ast.AST]:
    files = {}
    for path in sorted(TESTS.rglob("*.py")):
        if outside_kit and KIT in path.parents:
            continue
        files[str(path.relative_to(TESTS))] = ast.parse(path.read_text(), str(path))
    return files


def test_the_finders_find_what_they_look_for() -> None:
    # the finders themselves can fail: each sees its own example, and none sees a string
    tree = ast.parse("import sys\nsys.path.insert(0, 'x')\nsys.path = []\n"
                     "S = 'sys.path.insert(0, sys.argv[1])'\n"
                     "def cli(*a): pass\n"
                     "def _go(*a):\n    return run([sys.executable, '-m', 'plimsoll_ci', *a])\n"
                     "def test_x():\n    run([sys.executable, '-m', 'plimsoll_ci.cli'])\n")
    assert sorted(_sys_path_edits(tree)) == [2, 3]
    assert _cli_helpers(tree) == ["cli (line 5)", "_go (line 6)"]


def test_no_test_file_puts_a_folder_on_sys_path() -> None:
    edits = {name: lines for name, tree in _test_files(outside_kit=False).items()
             if (lines := _sys_path_edits(tree))}
    assert edits == {}, "import helpers from tests/kit/ as `kit` instead"


def test_no_test_file_defines_its_own_cli_runner() -> None:
    helpers = {name: found for name, tree in _test_files(outside_kit=True).items()
               if (found := _cli_helpers(tree))}
    assert helpers == {}, "use kit.cli.run_cli (or run_process where the process is the point)"


def test_run_cli_gives_the_exit_code_and_what_was_printed_and_leaves_cwd_and_env(
        tmp_path: Path) -> None:
    before = (os.getcwd(), dict(os.environ))
    shown = run_cli("--version", cwd=tmp_path, env={"PLIMSOLL_KIT_PROBE": "1"})
    assert shown.returncode == 0 and __version__ in shown.stdout
    usage = run_cli("scan", "--frobnicate", "x", cwd=tmp_path)
    assert usage.returncode == 2 and "--frobnicate" in usage.stderr and usage.stdout == ""
    missing = run_cli("verify", str(tmp_path / "none.jsonl"), "--pub", str(tmp_path / "k.pub"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert (os.getcwd(), dict(os.environ)) == before


@pytest.mark.parametrize("args", [("--version",), ("scan", "--frobnicate", "x")])
def test_run_cli_and_run_process_agree(args: tuple[str, ...]) -> None:
    assert run_cli(*args) == run_process(*args)

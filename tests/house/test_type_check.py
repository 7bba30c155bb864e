"""The type check cannot be dropped quietly: CI runs mypy over both packages with a pinned version,
and every silenced line says which error it silences and why.

- pyproject.toml pins mypy and its stub packages to exact versions in the test extras (a new
  release must not fail or pass a build by itself) and points `[tool.mypy]` at both packages,
  with untyped bodies checked and stale ignores reported; no module is excluded or has its
  errors ignored; a missing library is named per module, never for all.
- `.ci/run` runs `python3 -m mypy` after the lint and before the tests.
- Every `# type: ignore` names its error code and carries a reason (a comment after it on the
  line, or on the line above).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("plimsoll_ci", "plimsoll_sim")
_IGNORE = re.compile(r"#\s*type:\s*ignore(?P<codes>\[[^\]]*\])?(?P<rest>.*)$")


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))


def test_pyproject_pins_mypy_and_its_stub_packages_to_exact_versions() -> None:
    extras = _pyproject()["project"]["optional-dependencies"]["test"]
    typing_deps = [d for d in extras if re.match(r"(mypy|types-)", d)]
    assert any(d.startswith("mypy==") for d in typing_deps), extras
    for dep in typing_deps:
        assert re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", dep), \
            f"{dep}: pin it exactly (NAME==VERSION), as CI's type check depends on it"


def test_mypy_checks_both_packages_whole_with_untyped_bodies_and_stale_ignores() -> None:
    config = _pyproject()["tool"]["mypy"]
    assert tuple(config["packages"]) == PACKAGES
    assert config["check_untyped_defs"] is True and config["warn_unused_ignores"] is True
    for key in ("exclude", "ignore_errors", "ignore_missing_imports", "follow_imports"):
        assert key not in config, f"[tool.mypy] {key}: say it per module, with a reason"
    for override in config.get("overrides", []):
        assert "ignore_errors" not in override, f"{override['module']}: its errors are ignored"
        assert set(override) <= {"module", "ignore_missing_imports"}, override


def test_ci_runs_the_type_check_after_the_lint_and_before_the_tests() -> None:
    lines = (ROOT / ".ci" / "run").read_text("utf-8").splitlines()
    steps = [line.split("#")[0].strip() for line in lines]
    lint, types, tests = (steps.index(s) for s in (
        "python3 -m ruff check .", "python3 -m mypy", "python3 -m pytest -q"))
    assert lint < types < tests


def test_every_type_ignore_names_its_error_code_and_says_why() -> None:
    problems = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            lines = path.read_text("utf-8").splitlines()
            for n, line in enumerate(lines, 1):
                m = _IGNORE.search(line)
                if m is None:
                    continue
                where = f"{path.relative_to(ROOT)}:{n}"
                reason_after = m.group("rest").strip().startswith("#")
                reason_above = n > 1 and lines[n - 2].strip().startswith("#")
                if not m.group("codes"):
                    problems.append(f"{where}: name the error code (# type: ignore[code])")
                elif not (reason_after or reason_above):
                    problems.append(f"{where}: say why (a comment after it, or on the line above)")
    assert not problems, "\n".join(problems)

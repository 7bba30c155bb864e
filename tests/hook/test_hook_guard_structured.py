"""The withheld guard and raw values files in any shape: YAML, JSON (one line), TOML, CSV, or a
`.txt` holding one of those. Only a plain-text copy of the seeds was refused before (issue 32)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from kit.harness_repo import KEY, PRACTICE, git
from kit.scan import LeakGuard

from plimsoll_ci.shipscan import hook

YAML = "# the held-out seeds\nheldout:\n  seeds:\n" + "".join(f"  - {s}\n" for s in PRACTICE)
COPIES = {
    "data/seeds.yaml": (YAML, "YAML"),
    "data/seeds.json": (json.dumps([int(s) for s in PRACTICE]), "JSON"),
    "data/seeds.toml": ("[heldout]\nseeds = [" + ", ".join(PRACTICE) + "]\n", "TOML"),
    "data/seeds.csv": ("flight,seed\n" + "".join(f"f{n},{s}\n" for n, s in enumerate(PRACTICE)),
                       "CSV"),
    "data/notes.txt": (YAML, "YAML"),  # known by its content
}


def guard(repo: Path, *names: str) -> tuple[int, str]:
    out = io.StringIO()
    code = hook.withheld_guard(list(names), repo, out=out)
    return code, out.getvalue()


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLIMSOLL_WITHHELD_KEY", KEY)


def stage(repo: Path, name: str, text: str) -> None:
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(text)
    git(repo, "add", name)


@pytest.mark.parametrize("name", sorted(COPIES))
def test_the_guard_refuses_a_raw_values_file_in_any_format_naming_the_share_never_a_value(
        harness: Path, name: str) -> None:
    text, kind = COPIES[name]
    stage(harness, name, text)
    code, out = guard(harness, name)
    assert code == 1, out
    assert f"{name}: a {kind} file holding 16 of the 16 values of the withheld set " \
           "withheld.json (100%)" in out
    LeakGuard(PRACTICE).text(out)


def test_the_guard_refuses_half_of_a_sets_values_and_passes_fewer(harness: Path) -> None:
    half = json.dumps({"seeds": [int(s) for s in PRACTICE[:8]]})
    fewer = json.dumps({"seeds": [int(s) for s in PRACTICE[:7]]})
    stage(harness, "data/half.json", half)
    stage(harness, "data/fewer.json", fewer)
    code, out = guard(harness, "data/half.json", "data/fewer.json")
    assert code == 1
    assert "data/half.json: a JSON file holding 8 of the 16 values" in out and "(50%)" in out
    assert "fewer.json" not in out


def test_the_guard_passes_structured_files_that_hold_other_values(harness: Path) -> None:
    stage(harness, ".github/workflows/ci.yml",
          "on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    timeout-minutes: 10\n"
          f"    env:\n      SEED: {PRACTICE[0]}\n")
    stage(harness, "data/other.csv", "flight,seed\nf1,12345678901\nf2,23456789012\n")
    code, out = guard(harness, ".github/workflows/ci.yml", "data/other.csv")
    assert code == 0, out


def test_the_guard_survives_a_yaml_alias_bomb(harness: Path) -> None:
    bomb = "a: &a [1,2,3,4,5,6,7,8,9,10]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True))
    stage(harness, "data/laughs.yaml", bomb)
    code, out = guard(harness, "data/laughs.yaml")
    assert code == 0, out


def test_the_guard_counts_list_items_as_value_lines_in_a_file_of_any_name(harness: Path) -> None:
    stage(harness, "docs/seeds.md", "# Seeds\n\n" + "".join(f"- {s}\n" for s in PRACTICE))
    code, out = guard(harness, "docs/seeds.md")
    assert code == 1, out
    assert "docs/seeds.md: 16 of its 16 lines are values of the withheld set" in out
    LeakGuard(PRACTICE).text(out)

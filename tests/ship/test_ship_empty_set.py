"""A ship set that ships nothing is never a silent pass: `scan --config`, `ship list` (and the
hook and the action, tests/hook and tests/action) exit 2 naming it, unless it says
`allow_empty: true`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kit.cli import run_cli

from plimsoll_ci.errors import ConfigError
from plimsoll_ci.shipscan import ship

SEED = "3107713414"


def _harness(tmp_path: Path, extra: str = "") -> Path:
    from plimsoll_ci import withheld

    repo = tmp_path / "harness"
    (repo / "viewer").mkdir(parents=True)
    (repo / "viewer" / "index.html").write_text("<h1>Replay viewer</h1>\n")
    doc, _ = withheld.build_set(values=[("seeds.txt:2", SEED)])
    (repo / "withheld.json").write_text(withheld.dumps(doc))
    (repo / "plimsoll.yaml").write_text(
        "withheld: withheld.json\nship:\n  viewer:\n    include: ['viewer/**']\n"
        "  typo:\n    include: ['viewr/**']\n" + extra)
    return repo


@pytest.mark.parametrize("args", [("scan", "--config", "plimsoll.yaml"), ("scan",),
                                  ("ship", "list")])
def test_a_ship_set_whose_glob_matches_nothing_exits_2_naming_it(tmp_path: Path, args) -> None:
    repo = _harness(tmp_path)
    proc = run_cli(*args, cwd=repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ship set typo ships no files at the working tree" in proc.stderr
    assert "allow_empty: true" in proc.stderr
    assert "0 findings" not in proc.stdout and "viewer/index.html" not in proc.stdout


@pytest.mark.parametrize("args", [("scan", "--config", "plimsoll.yaml"), ("ship", "list")])
def test_allow_empty_lets_a_set_that_ships_nothing_pass(tmp_path: Path, args) -> None:
    repo = _harness(tmp_path, "    allow_empty: true\n")
    proc = run_cli(*args, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert "viewer/index.html" in proc.stdout if args[0] == "ship" else \
        "0 findings in 1 file" in proc.stdout


def test_asking_for_the_empty_set_alone_exits_2(tmp_path: Path) -> None:
    repo = _harness(tmp_path)
    proc = run_cli("scan", "--config", "plimsoll.yaml", "--ship-set", "typo", "--format", "json",
                   cwd=repo)
    assert proc.returncode == 2 and "ship set typo ships no files" in proc.stderr
    assert proc.stdout == ""  # nothing half written


def test_allow_empty_must_be_true_or_false() -> None:
    with pytest.raises(ConfigError, match=r"plimsoll.yaml line 4: ship.v.allow_empty must be "
                                          r"true or false"):
        ship.parse_config("ship:\n  v:\n    include: [a]\n    allow_empty: yes please\n",
                          "plimsoll.yaml", Path("."))


def test_allow_empty_is_remembered_with_the_parsed_config(tmp_path: Path) -> None:
    from plimsoll_ci.shipscan import configmemo, shipconfig

    text = "ship:\n  v:\n    include: [a]\n    allow_empty: true\n"
    first = configmemo.remembered("0" * 40, tmp_path, "plimsoll.yaml", lambda: text)
    again = configmemo.remembered("0" * 40, tmp_path, "plimsoll.yaml", lambda: "not read")
    assert first == again == shipconfig.declare(text, "plimsoll.yaml")
    assert again.ship["v"].allow_empty is True
    assert json.loads(next(tmp_path.glob("config-*.json")).read_text().partition("\n")[2])[
        "declared"]["ship"][0][-1] is True

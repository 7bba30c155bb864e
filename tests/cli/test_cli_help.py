"""Every command says its exit codes in `--help`, flags are named one way, unknown flags are
reported as unknown, and the small commands print JSON when asked."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json

import pytest
from kit.cli import run_cli

from plimsoll_ci import cli

AVAILABLE = [n for n, (m, _) in cli.COMMANDS.items() if importlib.util.find_spec(m) is not None]


def _actions(name: str) -> list[list[str]]:
    """The command, and each of its sub-actions (`withheld build`, `canary check`, ...)."""
    parser = cli.build_parser([name])
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = [[name]]
    for a in sub.choices[name]._actions:
        if isinstance(a, argparse._SubParsersAction):
            found += [[name, action] for action in a.choices]
    return found


@pytest.mark.parametrize("command", AVAILABLE)
def test_every_command_and_action_says_its_exit_codes_in_help(command):
    assert command in cli.EXIT_CODES, f"add {command}'s exit codes to cli.EXIT_CODES"
    for words in _actions(command):
        p = run_cli(*words, "--help")
        assert p.returncode == 0, p.stderr
        assert "exit codes:" in p.stdout and "2 bad input" in p.stdout.replace("\n", " "), words


def test_canary_make_has_no_odd_alias():
    p = run_cli("canary", "make", "--help")
    assert "--o " not in p.stdout and "--o," not in p.stdout and "-o FILE, --output FILE" in \
        p.stdout


def test_an_unknown_flag_is_reported_before_missing_arguments():
    p = run_cli("canary", "check", "-frob", front="eval_integrity_main")
    assert p.returncode == 2
    assert "unrecognized arguments: -frob" in p.stderr and "required" not in p.stderr
    p = run_cli("scan", "--frobnicate", "x")
    assert p.returncode == 2 and "unrecognized arguments: --frobnicate" in p.stderr


def test_known_flags_and_abbreviations_still_parse(tmp_path):
    (tmp_path / "v.txt").write_text("101\n")
    p = run_cli("withheld", "build", "--val", "v.txt", "-o", "w.json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    p = run_cli("withheld", "info", "w.json", "--format=json", cwd=tmp_path)
    assert p.returncode == 0 and json.loads(p.stdout)["counts"] == {"value": 1}


def test_keygen_prints_json(tmp_path):
    p = run_cli("keygen", "--out", "ci", "--format", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc == {"private_key": "ci.key", "public_key": "ci.pub", "key_id": doc["key_id"]}
    assert len(doc["key_id"]) == 64
    assert "PRIVATE" not in p.stdout


def test_canary_make_prints_json_without_the_markers(tmp_path):
    p = run_cli("canary", "make", "truth-labels", "step-times", "-o", "c.json", "--format", "json",
             cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["file"] == "c.json"
    assert doc["markers"] == [{"place": "truth-labels", "kind": "word"},
                              {"place": "step-times", "kind": "time"}]
    for m in json.loads((tmp_path / "c.json").read_text())["markers"]:
        assert m["marker"] not in p.stdout + p.stderr


def test_scan_takes_the_set_file_and_the_ship_set_as_two_flags(tmp_path):
    (tmp_path / "v.txt").write_text("3107713414\n")
    assert run_cli("withheld", "build", "--values", "v.txt", "-o", "w.json",
                cwd=tmp_path).returncode == 0
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "a.txt").write_text("seed 3107713414\n")
    p = run_cli("scan", "--withheld", "w.json", "task", cwd=tmp_path)
    assert p.returncode == 1 and "deprecated" not in p.stderr
    p = run_cli("scan", "--set", "w.json", "task", cwd=tmp_path)  # the old form still works...
    assert p.returncode == 1 and "v.txt:1" in p.stdout
    assert "--set is deprecated" in p.stderr and "--withheld" in p.stderr  # ...and says so
    p = run_cli("scan", "-set", "w.json", "task", cwd=tmp_path, front="withheld_main")
    assert p.returncode == 1 and "deprecated" not in p.stderr  # the compatible front's own flag

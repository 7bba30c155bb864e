"""The tripwire's SARIF speaks of sealed values sent to a model, and is valid SARIF 2.1.0."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kit.cli import run_cli

SCHEMA = Path(__file__).resolve().parents[2] / ".ci" / "cache" / "sarif-2.1.0-rtm.5.json"


def test_tripwire_sarif_names_sealed_rules_and_validates(tmp_path: Path) -> None:
    (tmp_path / "sealed.txt").write_text("31.5\n")
    assert run_cli("sealed", "build", "--values", "sealed.txt", "-o", "sealed.json",
                cwd=tmp_path).returncode == 0
    req = tmp_path / "requests"
    req.mkdir()
    (req / "0001.txt").write_text("reference step time t=31.50s\n")
    proc = run_cli("tripwire", "--sealed", "sealed.json", "--requests", "requests",
                "--format", "sarif", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "31.5" not in proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    (result,) = doc["runs"][0]["results"]
    assert result["ruleId"] == "sealed-value"
    assert result["message"]["text"].startswith("Sealed value sealed.txt:1")
    rules = [r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]]
    assert rules[result["ruleIndex"]] == "sealed-value"
    if not SCHEMA.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{SCHEMA} is missing: .ci/run fetches it with npm pack")
        pytest.skip(f"{SCHEMA} not fetched (run .ci/run)")
    import jsonschema

    jsonschema.validate(doc, json.loads(SCHEMA.read_text()))


def test_tripwire_sarif_passes_githubs_rules_and_sarifs_own(tmp_path: Path, sarif_rules) -> None:
    (tmp_path / "sealed.txt").write_text("31.5\nDrone Answer Key\n")
    assert run_cli("sealed", "build", "--values", "sealed.txt", "-o", "sealed.json",
                cwd=tmp_path).returncode == 0
    req = tmp_path / "requests"
    (req / "drone answer key").mkdir(parents=True)
    (req / "0001.txt").write_text("reference step time t=31.50s\n")
    (req / "drone answer key" / "0002.txt").write_text("nothing here\n")
    proc = run_cli("tripwire", "--sealed", "sealed.json", "--requests", "requests",
                "--format", "sarif", "-o", "tripwire.sarif", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    doc = json.loads((tmp_path / "tripwire.sarif").read_text())
    assert {r["properties"]["where"] for r in doc["runs"][0]["results"]} == {"content", "name"}
    assert sarif_rules(tmp_path / "tripwire.sarif") == []

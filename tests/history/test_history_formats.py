"""Reports: SARIF 2.1.0, Markdown, text; none holds a withheld value."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from history_repos import run_cli

# The official SARIF 2.1.0 (rtm.5) schema, from the npm package @microsoft/jest-sarif, which
# `.ci/run` fetches (the same file tests/scan/test_scan_reports.py validates against).
SCHEMA = Path(__file__).resolve().parents[2] / ".ci" / "cache" / "sarif-2.1.0-rtm.5.json"


def _sarif_schema() -> dict | None:
    if SCHEMA.is_file():
        return json.loads(SCHEMA.read_text())
    if os.environ.get("CI") == "true":
        pytest.fail(f"{SCHEMA} is missing: .ci/run fetches it with npm pack")
    return None


def test_sarif_report_is_valid_and_points_at_the_first_leak(argon: dict) -> None:
    proc = run_cli("history", "--set", str(argon["set"]), "--format", "sarif", "--no-progress",
                   cwd=argon["repo"].path)
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["version"] == "2.1.0"
    (result,) = doc["runs"][0]["results"]
    assert result["properties"]["firstCommit"] == argon["first"]
    assert result["properties"]["fixedCommit"] == argon["fix"]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 4
    fingerprint = result["partialFingerprints"]["plimsollHistory/v1"]
    assert argon["first"] not in fingerprint
    schema = _sarif_schema()
    if schema is None:
        pytest.skip(f"{SCHEMA} not fetched (run .ci/run or npm pack @microsoft/jest-sarif)")
    import jsonschema

    jsonschema.validate(doc, schema)


def test_markdown_report_is_a_table_with_the_window(argon: dict) -> None:
    proc = run_cli("history", "--set", str(argon["set"]), "--format", "markdown", "--no-progress",
                   cwd=argon["repo"].path)
    assert proc.returncode == 1
    assert "| entry | first shipped | where | fixed | window | commits |" in proc.stdout
    assert "`seeds.txt:2`" in proc.stdout and "46 min" in proc.stdout


def test_output_file_gets_the_report(argon: dict, tmp_path: Path) -> None:
    out = tmp_path / "history.json"
    proc = run_cli("history", "--set", str(argon["set"]), "--format", "json", "-o", str(out),
                   "--no-progress", cwd=argon["repo"].path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert json.loads(out.read_text())["entries"][0]["entry"] == "seeds.txt:2"

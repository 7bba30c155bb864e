"""Reports: SARIF 2.1.0, Markdown, text; none holds a withheld value."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kit.history import checked_cli

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
    proc = checked_cli("history", "--set", str(argon["set"]), "--format", "sarif", "--no-progress",
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


def test_sarif_report_passes_githubs_rules_and_sarifs_own(argon: dict, tmp_path: Path,
                                                          sarif_rules) -> None:
    repo = argon["repo"]
    repo.write(f"viewer/seed-{argon['leak']}/notes.txt", "a folder whose name is a seed\n")
    repo.commit("viewer: a folder named by a seed", 50)
    proc = checked_cli("history", "--set", str(argon["set"]), "--format", "sarif", "--no-progress",
                   cwd=repo.path)
    assert proc.returncode == 1, proc.stderr
    path = tmp_path / "history.sarif"
    path.write_text(proc.stdout)
    run = json.loads(proc.stdout)["runs"][0]
    for rule in run["tool"]["driver"]["rules"]:
        assert rule["fullDescription"]["text"] and rule["help"]["text"], rule
    assert {r["properties"]["where"] for r in run["results"]} == {"content", "name"}
    assert sarif_rules(path) == []


def test_markdown_report_is_a_table_with_the_window(argon: dict) -> None:
    proc = checked_cli("history", "--set", str(argon["set"]), "--format", "markdown", "--no-progress",
                   cwd=argon["repo"].path)
    assert proc.returncode == 1
    assert "| entry | first shipped | where | fixed | window | commits |" in proc.stdout
    assert "`seeds.txt:2`" in proc.stdout and "46 min" in proc.stdout


def test_output_file_gets_the_report(argon: dict, tmp_path: Path) -> None:
    out = tmp_path / "history.json"
    proc = checked_cli("history", "--set", str(argon["set"]), "--format", "json", "-o", str(out),
                   "--no-progress", cwd=argon["repo"].path)
    assert proc.returncode == 1 and proc.stdout == ""
    assert json.loads(out.read_text())["entries"][0]["entry"] == "seeds.txt:2"


def test_an_author_carrying_a_value_or_control_characters_is_redacted_and_escaped(
        globrepo, wset_path: Path) -> None:
    from kit.history import LEAK, viewer

    repo = globrepo
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    env = {"GIT_AUTHOR_NAME": "Mal\x1b[2J\x1b]0;owned\x07lory", "GIT_AUTHOR_EMAIL": LEAK}
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "leak", env={**repo.dates(0), **env})
    assert LEAK in repo.git("log", "-1", "--format=%an <%ae>")
    for fmt in ("text", "json", "markdown", "sarif"):
        proc = checked_cli("history", "--set", str(wset_path), "--format", fmt, "--no-progress",
                       cwd=repo.path)  # checked_cli asserts the value is absent
        assert proc.returncode == 1, proc.stderr
        assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    doc = json.loads(checked_cli("history", "--set", str(wset_path), "--format", "json",
                             "--no-progress", cwd=repo.path).stdout)
    author = doc["entries"][0]["first"]["author"]
    assert author == "Mal\\x1b[2J\\x1b]0;owned\\x07lory <[withheld]>"
    text = checked_cli("history", "--set", str(wset_path), "--no-progress", cwd=repo.path).stdout
    assert "Mal\\x1b[2J\\x1b]0;owned\\x07lory <[withheld]>" in text
    proc = checked_cli("history", "--set", str(wset_path), "--bisect", "seeds.txt:2",
                   "--no-progress", cwd=repo.path)
    assert proc.returncode == 1 and "<[withheld]>" in proc.stdout and "\x1b" not in proc.stdout


def test_a_set_name_or_config_note_carrying_a_value_is_redacted(globrepo, wset_path: Path) -> None:
    from kit.history import LEAK, viewer

    repo = globrepo
    repo.write("plimsoll.yaml", f"ship:\n  v{LEAK}:\n    include: [\"viewer/**\"]\n")
    repo.write("viewer/replay.html", viewer(f"seed-{LEAK}.json"))
    repo.commit("a set named for a seed", 0)
    repo.write("plimsoll.yaml", f"ship:\n  viewer:\n    include: [\"viewer/**\"]\n    \"{LEAK}\": 1\n")
    repo.commit("a config whose error message would name the seed", 5)
    for fmt in ("text", "json", "markdown", "sarif"):
        proc = checked_cli("history", "--set", str(wset_path), "--format", fmt, "--no-progress",
                       cwd=repo.path)  # checked_cli asserts the value is absent
        assert proc.returncode == 1, proc.stderr
    doc = json.loads(checked_cli("history", "--set", str(wset_path), "--format", "json",
                             "--no-progress", cwd=repo.path).stdout)
    assert doc["entries"][0]["first"]["findings"][0]["set"] == "v[withheld]"
    assert any("unknown key '[withheld]'" in n for n in doc["notes"])


def test_control_characters_in_a_path_are_escaped_in_every_format(globrepo,
                                                                  wset_path: Path) -> None:
    from kit.history import LEAK

    repo = globrepo
    name = "tasks/drone/notes\x1b[2J\nseeds.txt:9: shipped 0 s (fixed).md"
    repo.write(name, f"try seed {LEAK}\n")
    repo.commit("a name that would forge a report line", 0)
    for fmt in ("text", "json", "markdown", "sarif"):
        proc = checked_cli("history", "--set", str(wset_path), "--format", fmt, "--no-progress",
                       cwd=repo.path)
        assert proc.returncode == 1, proc.stderr
        assert "\x1b" not in proc.stdout
        assert not any(line.startswith("seeds.txt:9") for line in proc.stdout.splitlines())
    doc = json.loads(checked_cli("history", "--set", str(wset_path), "--format", "json",
                             "--no-progress", cwd=repo.path).stdout)
    assert doc["entries"][0]["first"]["paths"] == [
        "tasks/drone/notes\\x1b[2J\\x0aseeds.txt:9: shipped 0 s (fixed).md"]

"""One leak, one finding: a value found as written and in a decoded line at the same bytes is one
finding listing every way it was seen, placed where the value is; a file that ships through two
ship sets is one finding listing both. Text, JSON, SARIF and Markdown say the same."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
from kit.scan import SEED, make_set, scan_checked
from test_scan_reports import _schema

from plimsoll_ci.shipscan import report

AMP_LINE = f'<p>Example: <a href="tracks/seed-{SEED}.json?speed=2&amp;gates=all">open</a></p>'
PCT_LINE = f"see https://example.org/replay?file=seed-{SEED}.json&sig=%3D%3D for a replay"
PAGE = f"<!doctype html>\n<html><body>\n<h1>Replay viewer</h1>\n\n\n{AMP_LINE}\n</body></html>\n"


def _col(line: str, text: str) -> int:
    return line.index(text) + 1


def _findings(result) -> list[dict]:
    return json.loads(report.render(result, "json"))["findings"]


def test_a_value_on_a_line_with_an_amp_entity_is_one_finding_via_plain_and_html_entities(leak):
    result = scan_checked([("viewer/index.html", PAGE.encode())], make_set(), leak)
    (f,) = _findings(result)
    assert (f["line"], f["column"]) == (6, _col(AMP_LINE, SEED))  # the value, not the `&amp;`
    assert f["via"] == ["plain", "html-entities"] and f["entry"] == "seeds.txt:2"
    text = report.render(result, "text")
    assert f"viewer/index.html:6:{_col(AMP_LINE, SEED)}: withheld value seeds.txt:2 via plain, " \
           "html-entities\n" in text
    assert "1 finding in 1 file" in text
    (r,) = json.loads(report.render(result, "sarif"))["runs"][0]["results"]
    assert r["properties"]["via"] == ["plain", "html-entities"]
    assert r["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 6, "startColumn": _col(AMP_LINE, SEED)}
    assert "via plain, html-entities" in r["message"]["text"]
    assert "| plain, html-entities |" in report.render(result, "markdown")


def test_a_value_in_a_url_with_pct3d_is_one_finding_via_plain_and_percent_encoding(leak):
    result = scan_checked([("task/README.md", f"# Task\n{PCT_LINE}\n".encode())], make_set(),
                          leak)
    (f,) = _findings(result)
    assert (f["line"], f["column"]) == (2, _col(PCT_LINE, SEED))
    assert f["via"] == ["plain", "percent-encoding"]


def test_an_entity_encoded_value_is_placed_at_its_own_encoded_text(leak):
    # the first escape of the line (`&lt;`) is before it; the value starts with `&#51;` ("3")
    line = f"a &lt; b, then &#51;{SEED[1:]} later"
    result = scan_checked([("notes.html", (line + "\n").encode())], make_set(), leak)
    (f,) = _findings(result)
    assert (f["line"], f["column"], f["via"]) == (1, _col(line, "&#51;"), ["html-entities"])


def test_two_places_of_one_value_on_an_escaped_line_stay_two_findings(leak):
    line = f"{SEED} and &#51;{SEED[1:]}&amp;"
    result = scan_checked([("two.html", (line + "\n").encode())], make_set(), leak)
    places = [(f["column"], f["via"]) for f in _findings(result)]
    assert places == [(1, ["plain", "html-entities"]), (_col(line, "&#51;"), ["html-entities"])]


def test_a_merged_finding_is_valid_sarif(leak, tmp_path: Path, sarif_rules):
    result = scan_checked([("viewer/index.html", PAGE.encode()),
                           ("README.md", f"{PCT_LINE}\n".encode())], make_set(), leak)
    doc = json.loads(report.render(result, "sarif"))
    jsonschema.validate(doc, _schema())
    log = tmp_path / "merged.sarif"
    log.write_text(json.dumps(doc))
    assert sarif_rules(log) == []


def _harness(tmp_path: Path) -> Path:
    """A harness whose builder copies the viewer that a glob set ships too."""
    repo = tmp_path / "harness"
    (repo / "viewer").mkdir(parents=True)
    (repo / "viewer" / "replay.html").write_text(PAGE)
    (repo / "kit.py").write_text("import shutil, sys\nshutil.copytree('viewer', sys.argv[1] + "
                                 "'/viewer')\n")
    (repo / "withheld.json").write_text(json.dumps(make_set_doc()))
    (repo / "plimsoll.yaml").write_text(
        "withheld: withheld.json\nship:\n"
        f"  drone:\n    command: [{json.dumps(sys.executable)}, kit.py, '{{out}}']\n"
        "  viewer:\n    include: ['viewer/**']\n")
    return repo


def make_set_doc() -> dict:
    from plimsoll_ci import withheld

    doc, _ = withheld.build_set(values=[("seeds.txt:2", SEED)])
    return doc


def test_a_file_shipped_through_two_ship_sets_is_one_finding_listing_both(tmp_path: Path):
    repo = _harness(tmp_path)
    outs = {}
    for fmt in ("text", "json", "sarif"):
        proc = subprocess.run([sys.executable, "-m", "plimsoll_ci", "scan", "--config",
                               "plimsoll.yaml", "--format", fmt], cwd=repo, capture_output=True,
                              text=True)
        assert proc.returncode == 1, proc.stderr
        assert SEED not in proc.stdout + proc.stderr
        outs[fmt] = proc.stdout
    assert "viewer/replay.html:6:" in outs["text"] and "drone:viewer/replay.html:6" not in \
        outs["text"]
    assert "(ship sets drone, viewer; also shipped as drone:viewer/replay.html)" in outs["text"]
    assert "1 finding in 2 files" in outs["text"]
    (f,) = json.loads(outs["json"])["findings"]
    assert (f["path"], f["sets"], f["also"]) == ("viewer/replay.html", ["drone", "viewer"],
                                                 ["drone:viewer/replay.html"])
    assert f["via"] == ["plain", "html-entities"]
    (r,) = json.loads(outs["sarif"])["runs"][0]["results"]
    assert r["properties"]["sets"] == ["drone", "viewer"]
    assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == \
        "viewer/replay.html"


def test_a_long_file_read_in_windows_merges_the_same_way(leak):
    from plimsoll_ci.engine import Limits, memory_floor, windowing

    limits = Limits()._replace(max_memory=memory_floor(Limits()))
    filler = b"lorem ipsum dolor sit amet\n" * (3 * windowing(limits).size // 27)
    data = filler + PAGE.encode()
    result = scan_checked([("viewer/long.html", data)], make_set(), leak, limits)
    (f,) = _findings(result)
    assert (f["line"], f["column"]) == (filler.count(b"\n") + 6, _col(AMP_LINE, SEED))
    assert f["via"] == ["plain", "html-entities"]

"""Reports: the JSON shape, SARIF 2.1.0 against the official schema, stable fingerprints."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest
from kit.scan import SEED, make_set, scan_checked, zip_bytes

from plimsoll_ci.shipscan import report
from plimsoll_ci.withheld import build_set, dumps

S = SEED.encode()
REPO = Path(__file__).resolve().parents[2]
# From the npm package @microsoft/jest-sarif@1.0.0-beta.0, file
# package/lib/schemas/sarif-2.1.0-rtm.5.json; `.ci/run` fetches it with `npm pack`.
SCHEMA = REPO / ".ci" / "cache" / "sarif-2.1.0-rtm.5.json"
SCHEMA_SHA256 = "2d99159ae54a3eea97f81781cff48780548657c35949f4b7f25e99a2ba4de4f8"
SECRET = b"withheld,file\n1,2,3\n"
SOURCE = b"\n".join(b"def f%d(a, b):\n    return (a * %d + b) // 7 - a ** 2\n" % (i, i)
                    for i in range(8))


@pytest.fixture(scope="module")
def every_kind():
    """A scan result with a finding of every kind, every place, and a note."""
    wset = make_set(files=[("secret.csv", SECRET)], sources=[("sim/gen.py", SOURCE)])
    doc, _ = build_set([("seeds.txt:1", "7")])
    items = [
        (f"tracks/seed-{SEED}.json", b"{}"),
        ("viewer/app.js", b"// seed " + S + b"\n"),
        ("blob.bin", b"\0\0" + S),
        ("bundle.zip", zip_bytes([("data/a.json", b'{"s": "' + S.hex().encode() + b'"}')])),
        ("copy.csv", SECRET),
        ("ctl/gen.py", SOURCE),
        ("withheld.json", dumps(doc).encode()),
        ("my dir/a b#1.txt", b"seed " + S),
        (os.fsdecode(b"odd-\xff/name.txt"), b"seed " + S),
        ("big.gz", b"\x1f\x8bnot gzip"),
    ]
    return wset, items


def test_the_json_report_has_exactly_the_documented_shape(every_kind, leak):
    wset, items = every_kind
    result = scan_checked(items, wset, leak)
    doc = json.loads(report.render(result, "json"))
    assert set(doc) == {"findings", "notes", "scanned"}
    assert doc["scanned"] == {"files": len(items), "bytes": sum(len(d) for _, d in items)}
    assert doc["notes"] and all(isinstance(n, str) for n in doc["notes"])
    required = {"path", "line", "column", "chain", "entry", "kind"}
    for f in doc["findings"]:
        assert required <= set(f) <= required | {"where", "detail", "path_bytes", "via",
                                                  "sets", "also"}
        assert isinstance(f["line"], int) and isinstance(f["column"], int)
    kinds = {f["kind"] for f in doc["findings"]}
    assert kinds == {"value", "file", "source", "withheld-set"}


def _schema() -> dict:
    if not SCHEMA.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{SCHEMA} is missing: .ci/run must fetch it (npm pack "
                        "@microsoft/jest-sarif@1.0.0-beta.0)")
        pytest.skip(f"the official SARIF 2.1.0 schema is not at {SCHEMA}; fetch it with "
                    "`npm pack @microsoft/jest-sarif@1.0.0-beta.0` (see .ci/run)")
    raw = SCHEMA.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256, f"{SCHEMA} is not the pinned schema"
    return json.loads(raw)


@pytest.mark.parametrize("mode", ["refuse", "warn"])
def test_the_sarif_report_is_valid_against_the_official_schema(every_kind, leak, mode):
    import jsonschema

    schema = _schema()
    wset, items = every_kind
    result = scan_checked(items, wset, leak)._replace(mode=mode)
    doc = json.loads(report.render(result, "sarif"))
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])
    results = doc["runs"][0]["results"]
    assert len(results) == len(result.findings)
    assert {r["level"] for r in results} == {"error" if mode == "refuse" else "warning"}


def test_an_empty_scan_is_valid_sarif(leak):
    import jsonschema

    result = scan_checked([("a.txt", b"nothing")], make_set(), leak)
    jsonschema.validate(json.loads(report.render(result, "sarif")), _schema())


_URI_CHARS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")


def test_sarif_uris_are_uri_references_even_for_odd_names(every_kind, leak):
    wset, items = every_kind
    doc = report.to_sarif(scan_checked(items, wset, leak))
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in doc["runs"][0]["results"]]
    assert "my%20dir/a%20b%231.txt" in uris and "odd-%FF/name.txt" in uris
    assert all(_URI_CHARS.fullmatch(u) for u in uris), uris


def test_sarif_fingerprints_are_stable_when_the_value_moves_and_hold_no_commit_id(leak):
    wset = make_set()
    before = scan_checked([("app.js", b"// seed " + S + b"\n")], wset, leak)
    after = scan_checked([("app.js", b"// new header\n\nconst x = 1; // seed " + S + b"\n")],
                         wset, leak)
    fp = [report.to_sarif(r)["runs"][0]["results"][0]["partialFingerprints"]
          for r in (before, after)]
    assert fp[0] == fp[1]
    assert before.findings[0].line != after.findings[0].line
    sarif = report.render(after, "sarif")
    assert not re.search(r"\b[0-9a-f]{40}\b", sarif)  # no commit id anywhere


def test_sarif_fingerprints_differ_between_entries_and_files(leak):
    wset = make_set()
    result = scan_checked([("a.js", b"seed " + S + b" t=31.5"), ("b.js", b"seed " + S)], wset, leak)
    fps = [r["partialFingerprints"]["plimsollFinding/v1"]
           for r in report.to_sarif(result)["runs"][0]["results"]]
    assert len(fps) == 3 and len(set(fps)) == 3


def test_the_text_report_names_file_place_chain_and_entry(leak):
    wset = make_set()
    items = [("data.zip", zip_bytes([("data/a.json", b'{"s": "' + S.hex().encode() + b'"}')]))]
    text = report.render(scan_checked(items, wset, leak), "text")
    assert "data.zip:1:8: withheld value seeds.txt:2 via zip member data/a.json > hex" in text
    assert "1 finding in 1 file" in text


def test_the_markdown_summary_lists_findings_in_a_table(leak):
    result = scan_checked([("a.js", b"seed " + S)], make_set(), leak)
    md = report.render(result, "markdown")
    assert "| `a.js` | 1:6 | `seeds.txt:2` | value |" in md


def _sarif_files(every_kind, leak, folder: Path) -> list[Path]:
    """The scan's SARIF in every shape a reader meets: both modes, builder output, a folder name
    that carries a value, and an empty scan."""
    wset, items = every_kind
    built = [("drone:viewer/replay.html", "viewer/replay.html", b"seed " + S),
             (f"drone:runs/seed-{SEED}/log.txt", f"runs/seed-{SEED}/log.txt", b"ok")]
    shapes = {
        "refuse": scan_checked(items, wset, leak),
        "warn": scan_checked(items, wset, leak)._replace(mode="warn"),
        "built": scan_checked(built, wset, leak),
        "empty": scan_checked([("a.txt", b"nothing")], make_set(), leak),
    }
    files = []
    for name, result in shapes.items():
        p = folder / f"{name}.sarif"
        p.write_text(report.render(result, "sarif"), encoding="utf-8")
        files.append(p)
    return files


def test_the_sarif_report_passes_githubs_rules_and_sarifs_own(every_kind, leak, tmp_path,
                                                               sarif_rules):
    files = _sarif_files(every_kind, leak, tmp_path)
    assert sarif_rules(*files) == []


def test_every_sarif_rule_says_what_it_finds_and_what_to_do(every_kind, leak, tmp_path):
    for path in _sarif_files(every_kind, leak, tmp_path):
        driver = json.loads(path.read_text())["runs"][0]["tool"]["driver"]
        for rule in driver["rules"]:
            assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
            assert rule["help"]["text"] and rule["helpUri"].startswith(report.REPOSITORY + "/")
            assert re.fullmatch(r"(?:[A-Z][a-z]+)+", rule["name"]), rule["name"]


def test_every_sarif_result_has_a_region_names_and_folders_included(every_kind, leak, tmp_path):
    built = _sarif_files(every_kind, leak, tmp_path)
    for path in built:
        for r in json.loads(path.read_text())["runs"][0]["results"]:
            region = r["locations"][0]["physicalLocation"]["region"]
            assert region.get("startLine", 0) >= 1 or "byteOffset" in region, r
    names = [r for r in json.loads(built[0].read_text())["runs"][0]["results"]
             if r["properties"]["where"] == "name"]
    assert names and all(r["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
                         for r in names)


def test_builder_output_has_a_valid_uri_and_a_readable_path_in_every_message(every_kind, leak,
                                                                            tmp_path):
    doc = json.loads(_sarif_files(every_kind, leak, tmp_path)[2].read_text())
    results = doc["runs"][0]["results"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert "drone%3Aviewer/replay.html" in uris and all(_URI_CHARS.fullmatch(u) for u in uris)
    texts = json.dumps([r["message"] for r in results]
                       + doc["runs"][0]["invocations"][0]["toolExecutionNotifications"])
    assert "%3A" not in texts
    assert "drone:viewer/replay.html" in texts


def test_one_tool_name_and_one_repository_in_sarif_and_the_docs(leak):
    from plimsoll_ci.history.records import HistoryReport
    from plimsoll_ci.history.render import render as history_render

    driver = report.to_sarif(scan_checked([("a.txt", b"x")], make_set(), leak))["runs"][0]
    empty = HistoryReport(revs=["HEAD"], entries=[], commits_scanned=0, blobs_scanned=0,
                          blobs_from_cache=0, notes=[])
    history = json.loads(history_render(empty, "sarif"))["runs"][0]
    for run in (driver, history):
        assert run["tool"]["driver"]["name"] == report.TOOL_NAME == "plimsoll-ci"
        assert run["tool"]["driver"]["informationUri"] == report.REPOSITORY
    # the docs, the README and the package metadata name the same repository and no other
    texts = [p.read_text() for p in [REPO / "README.md", REPO / "pyproject.toml",
                                     *sorted((REPO / "docs").glob("*.md"))]]
    named = {m for t in texts for m in re.findall(r"github\.com/([\w.-]+/plimsoll[\w.-]*)", t)}
    named |= {m for t in texts for m in re.findall(r"uses: ([\w.-]+/plimsoll[\w.-]*)/", t)}
    assert named == {report.REPOSITORY.removeprefix("https://github.com/")}, named


# A name that forges a report line, one that drives the terminal, one that breaks a table, and one
# that is not UTF-8.
FORGED = "a.txt\n0 findings in 1 file (0 bytes scanned)"
ANSI = "\x1b[2J\x1b]0;owned\x07b.txt"
PIPE = "c|d`e\r.txt"
ODD = os.fsdecode(b"odd-\xff.txt")
_CONTROLS = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\udc80-\udcff]")


@pytest.fixture
def odd_names(leak):
    items = [(name, b"seed " + S + b"\n") for name in (FORGED, ANSI, PIPE, ODD)]
    return scan_checked(items, make_set(), leak)


def test_the_text_report_escapes_control_characters_in_names(odd_names):
    text = report.render(odd_names, "text")
    lines = text.splitlines()
    assert len(lines) == 4 + 2  # four findings, the count, what to do: no forged line
    assert "0 findings in 1 file" not in lines
    assert not _CONTROLS.search(text), repr(text)
    assert lines[0].startswith("a.txt\\x0a0 findings in 1 file (0 bytes scanned):1:6: ")
    assert "\\x1b[2J\\x1b]0;owned\\x07b.txt:1:6: " in text
    assert "odd-\\xff.txt:1:6: " in text


def test_the_markdown_report_keeps_one_table_row_per_finding(odd_names):
    md = report.render(odd_names, "markdown")
    rows = [ln for ln in md.splitlines() if ln.startswith("| `")]
    assert len(rows) == 4, md
    for row in rows:  # five columns: six unescaped pipes
        assert len(re.findall(r"(?<!\\)\|", row)) == 6, row
    assert not _CONTROLS.search(md), repr(md)


def test_the_json_report_shows_a_readable_path_and_keeps_the_exact_bytes(odd_names):
    import base64

    raw = report.render(odd_names, "json")
    assert "\\udc" not in raw  # no lone surrogate escape a JSON reader chokes on
    doc = json.loads(raw)
    by_bytes = {base64.b64decode(f["path_bytes"]): f["path"] for f in doc["findings"]
                if "path_bytes" in f}
    assert by_bytes == {
        FORGED.encode(): "a.txt\\x0a0 findings in 1 file (0 bytes scanned)",
        ANSI.encode(): "\\x1b[2J\\x1b]0;owned\\x07b.txt",
        PIPE.encode(): "c|d`e\\x0d.txt",
        b"odd-\xff.txt": "odd-\\xff.txt",
    }
    assert all(not _CONTROLS.search(f["path"]) for f in doc["findings"])


def test_a_plain_name_has_no_path_bytes(leak):
    doc = report.to_json(scan_checked([("a.js", b"seed " + S)], make_set(), leak))
    assert "path_bytes" not in doc["findings"][0]


def test_scan_prints_no_control_character_of_a_name_on_the_terminal(tmp_path, leak):
    import subprocess
    import sys

    wset = tmp_path / "withheld.json"
    wset.write_text(dumps(build_set([("seeds.txt:2", SEED)])[0]))
    task = tmp_path / "task"
    task.mkdir()
    for name in (FORGED, ANSI, ODD):
        (task / name).write_bytes(b"seed " + S + b"\n")
    for fmt in ("text", "markdown", "json", "sarif"):
        proc = subprocess.run([sys.executable, "-m", "plimsoll_ci", "scan", "--withheld",
                               str(wset), str(task), "--format", fmt], capture_output=True)
        assert proc.returncode == 1, proc.stderr
        out = proc.stdout.decode("utf-8")  # valid UTF-8: no raw byte of a name
        assert not _CONTROLS.search(out), (fmt, out)
        leak.text(out, f"scan --format {fmt}")

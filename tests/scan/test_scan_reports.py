"""Reports: the JSON shape, SARIF 2.1.0 against the official schema, stable fingerprints."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest
from scankit import SEED, make_set, scan_checked, zip_bytes

from plimsoll_ci import report
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
        assert required <= set(f) <= required | {"where", "detail"}
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

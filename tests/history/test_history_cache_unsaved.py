"""A verdict scanned in this run answers as it would once written and read back: a blob's
findings are kept as scanned and encoded only when the cache file is written (a `--no-cache`
replay never encodes them), with the same findings, members' findings and file."""

from __future__ import annotations

import json
from pathlib import Path

from plimsoll_ci.history.cache import ScanCache
from plimsoll_ci.shipscan.results import Verdict
from plimsoll_ci.shipscan.scan import Finding

A, B, C = ("a" * 40, "b" * 40, "c" * 40)
LINES = ("v:1 in a 'quoted' \"name\"", "\u00e9t\u00e9 \ud800", "")  # (a lone surrogate too)


def _finding(entry: str, line: int, where: str = "content", detail: str = "") -> Finding:
    return Finding(A, line, 3, "base64 > gzip", entry, "value", where, detail)


VERDICTS = {
    "blob:" + A: Verdict((_finding("v:1", 4, detail=LINES[0]),
                          _finding("v:2", 9, "name", LINES[1])), (), 300),
    "blob:" + B: Verdict((_finding("v:1", 1, detail='"name"'),), ("read up to 64 bytes",), 900,
                         ("tok-en",)),
    "blob:" + C: Verdict((), (), 12),
}


def _filled(folder: Path | None) -> ScanCache:
    cache = ScanCache(str(folder) if folder else None, "k" * 64)
    for key, verdict in VERDICTS.items():
        cache.put(key, verdict)
    return cache


def test_an_unsaved_verdict_answers_as_a_saved_one(tmp_path: Path) -> None:
    unsaved = _filled(None)
    _filled(tmp_path).save()
    read = ScanCache(str(tmp_path), "k" * 64)
    assert not read.notes
    for oid in (A, B, C):
        assert unsaved.findings(oid) == read.findings(oid), oid
        assert unsaved.member_findings(oid) == read.member_findings(oid), oid
        assert unsaved.get("blob:" + oid) == read.get("blob:" + oid), oid
        assert unsaved.entries(oid) == read.entries(oid), oid
    assert [f.line for f in unsaved.member_findings(A)] == [9]
    assert unsaved.member_findings(B) == []  # ("name" in a detail, in no finding's place)
    assert all(f.path == "" for f in unsaved.findings(A))  # (content findings: path empty)


def test_the_file_keeps_each_blobs_findings_as_compact_json(tmp_path: Path) -> None:
    cache = _filled(tmp_path)
    cache.save()
    doc = json.loads(Path(cache.path or "").read_text())
    found = doc["found"]
    assert found["ids"] == f"{A} {B}"
    rows = found["rows"].split("\n")
    for row, key in zip(rows, ("blob:" + A, "blob:" + B), strict=True):
        want = [[f.line, f.column, f.chain, f.entry, f.kind, f.where, f.detail]
                for f in VERDICTS[key].findings]
        assert row == json.dumps(want, separators=(",", ":"))


def test_a_merge_with_another_runs_file_keeps_both_forms(tmp_path: Path) -> None:
    other = ScanCache(str(tmp_path), "k" * 64)
    other.put("blob:" + B, VERDICTS["blob:" + B])
    other.save()
    mine = ScanCache(str(tmp_path), "k" * 64)  # B read from the file, A scanned here
    mine.put("blob:" + A, VERDICTS["blob:" + A])
    assert mine.findings(B) == _filled(None).findings(B)
    mine.save()
    read = ScanCache(str(tmp_path), "k" * 64)
    for oid in (A, B):
        assert read.findings(oid) == _filled(None).findings(oid), oid

"""The blob cache's file: every verdict read back as it was put (findings, notes, tokens, sizes,
names), what two runs saved merged, and a file whose parts disagree ignored and rebuilt."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from plimsoll_ci.history.cache import ScanCache
from plimsoll_ci.shipscan.results import Verdict
from plimsoll_ci.shipscan.scan import Finding

A, B, C, D = ("a" * 40, "b" * 40, "c" * 40, "d" * 40)


def content(entry: str, line: int, where: str = "content") -> Finding:
    return Finding("", line, 3, "base64", entry, "value", where, "")


VERDICTS = {
    "blob:" + A: Verdict((), (), 120),
    "blob:" + B: Verdict((content("v:1", 4), content("v:2", 9, "name")), (), 300),
    "blob:" + C: Verdict((content("v:1", 1),), ("read up to 64 bytes",), 900, ("tok-en",)),
    "blob:" + D: Verdict((), ("a zip bomb: not opened",), 77),
    "name:" + "e" * 64: Verdict((Finding("x/seed-1/", 0, 0, "folder name", "v:3", "value",
                                         "name", ""),), (), 0),
    "name:" + "f" * 64: Verdict((), (), 0),
}


def saved(folder: Path, verdicts: dict[str, Verdict]) -> ScanCache:
    cache = ScanCache(str(folder), "k" * 64)
    for key, verdict in verdicts.items():
        cache.put(key, verdict)
    cache.save()
    return ScanCache(str(folder), "k" * 64)


def test_every_verdict_reads_back_as_it_was_put(tmp_path: Path) -> None:
    cache = saved(tmp_path, VERDICTS)
    assert not cache.notes
    for key, verdict in VERDICTS.items():
        assert cache.get(key) == verdict, key
    assert cache.entries(B) == {"v:1", "v:2"} and cache.entries(A) == frozenset()
    assert cache.entries(B) is cache.entries(B)  # one set per distinct set of entries
    assert [f.line for f in cache.member_findings(B)] == [9] and not cache.member_findings(C)
    assert cache.blob_notes(C) == ("read up to 64 bytes",) and cache.blob_notes(B) == ()
    assert cache.knows(D) and not cache.knows("0" * 40)
    assert cache.carrying() == {oid: cache.entries(oid) for oid in (B, C, D)}  # (A is clean)


def test_what_two_runs_saved_is_merged(tmp_path: Path) -> None:
    keys = list(VERDICTS)
    mine = ScanCache(str(tmp_path), "k" * 64)  # opened before the other run saved
    saved(tmp_path, {k: VERDICTS[k] for k in keys[::2]})
    for k in keys[1::2]:
        mine.put(k, VERDICTS[k])
    mine.save()
    cache = ScanCache(str(tmp_path), "k" * 64)
    for key, verdict in VERDICTS.items():
        assert cache.get(key) == verdict, key


def _columns_disagree(doc: dict) -> None:
    doc["found"]["sizes"].pop()


def _an_id_cut(doc: dict) -> None:
    doc["clean"] = doc["clean"][:-1] + " "


def _notes_of_no_blob(doc: dict) -> None:
    doc["found"]["notes"]["99"] = ["x"]


def _a_set_out_of_range(doc: dict) -> None:
    doc["found"]["entries"][0] = 7


def _rows_not_text(doc: dict) -> None:
    doc["found"]["rows"] = [1, 2]


TAMPERS: dict[str, Callable[[dict], None]] = {
    "columns of different lengths": _columns_disagree,
    "more sizes than clean ids": _an_id_cut,
    "notes of no blob": _notes_of_no_blob,
    "an entry set out of range": _a_set_out_of_range,
    "findings not text": _rows_not_text,
}


@pytest.mark.parametrize("tamper", TAMPERS, ids=list(TAMPERS))
def test_a_file_whose_parts_disagree_is_rebuilt(tmp_path: Path, tamper: str) -> None:
    path = Path(saved(tmp_path, VERDICTS).path or "")
    doc = json.loads(path.read_text())
    TAMPERS[tamper](doc)
    path.write_text(json.dumps(doc))
    cache = ScanCache(str(tmp_path), "k" * 64)
    assert cache.notes == [f"cache {path} was unreadable and is rebuilt"]
    assert not cache.clean and not cache.found and not cache.names
    assert all(cache.get(k) is None for k in VERDICTS)

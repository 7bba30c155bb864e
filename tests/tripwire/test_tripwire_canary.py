"""Canary make / check: markers shaped like their hiding places; a file that is refused when bad."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from plimsoll_ci.cli import eval_integrity_main, main

SHAPES = {
    "word": r"[a-z]{10}",
    "number": r"[1-9][0-9]{9}",
    "time": r"[1-9]:[0-5][0-9]\.[0-9]{2}[1-9]",
    "filename": r"[a-z]{6}-[a-z]{4}-[1-9]\.mp4",
}


def _make(tmp_path: Path, *args: str) -> dict:
    tmp_path.mkdir(exist_ok=True)
    out = tmp_path / "canary.json"
    assert main(["canary", "make", *args, "-o", str(out)]) == 0
    return json.loads(out.read_text())


def test_make_draws_one_marker_per_place_shaped_like_what_hides_there(tmp_path):
    doc = _make(tmp_path, "truth-labels", "step-times", "clip-names", "heldout-seeds")
    kinds = {m["place"]: m["kind"] for m in doc["markers"]}
    assert kinds == {"truth-labels": "word", "step-times": "time", "clip-names": "filename",
                     "heldout-seeds": "number"}
    for m in doc["markers"]:
        assert re.fullmatch(SHAPES[m["kind"]], m["marker"]), m
    assert doc["format"] == "plimsoll-canary/1"
    assert doc["set"]["format"] == "plimsoll-sealed/1"
    assert [e["id"] for e in doc["set"]["entries"]] == [m["place"] for m in doc["markers"]]


def test_kind_flags_override_the_guess(tmp_path):
    doc = _make(tmp_path, "a", "b", "c", "d", "--kind", "a=number", "--kind", "b=time,c=filename")
    assert [m["kind"] for m in doc["markers"]] == ["number", "time", "filename", "word"]


def test_markers_differ_between_makes(tmp_path):
    one = _make(tmp_path / "1", "labels")
    two = _make(tmp_path / "2", "labels")
    assert one["markers"][0]["marker"] != two["markers"][0]["marker"]


def test_the_tripwire_reads_a_canary_file_as_a_sealed_set(tmp_path, capsys):
    doc = _make(tmp_path, "step-times")
    clock = doc["markers"][0]["marker"]
    minutes, seconds = clock.split(":")
    req = tmp_path / "r"
    req.mkdir()
    (req / "body.json").write_text(json.dumps({"prompt": f"t={int(minutes) * 60 + float(seconds):.3f}s"}))
    assert main(["tripwire", "--sealed", str(tmp_path / "canary.json"),
                 "--requests", str(req)]) == 1
    assert "step-times" in capsys.readouterr().out


def test_the_eval_integrity_front_takes_single_dash_flags(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert eval_integrity_main(["canary", "make", "labels", "-o", str(out)]) == 0
    planted = tmp_path / "planted"
    planted.mkdir()
    marker = json.loads(out.read_text())["markers"][0]["marker"]
    (planted / "labels.txt").write_text(marker + "\n")
    (tmp_path / "req").mkdir()
    assert eval_integrity_main(["canary", "check", "-sealed", str(out), "-planted",
                                str(planted), "-requests", str(tmp_path / "req")]) == 0
    assert "ok    labels" in capsys.readouterr().out


def test_check_json_output_names_each_marker_and_its_verdict(tmp_path, capsys):
    doc = _make(tmp_path, "labels", "seeds")
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "labels.txt").write_text(doc["markers"][0]["marker"])
    (tmp_path / "req").mkdir()
    code = main(["canary", "check", "--sealed", str(tmp_path / "canary.json"), "--planted",
                 str(planted), "--requests", str(tmp_path / "req"), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["ok"] is False
    assert [(m["place"], m["ok"]) for m in report["markers"]] == [("labels", True),
                                                                   ("seeds", False)]


def _edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("case", [
    "marker-edited", "marker-dropped", "not-json", "wrong-format", "no-set"])
def test_check_refuses_a_bad_or_edited_canary_file_with_exit_2(tmp_path, capsys, case):
    _make(tmp_path, "labels", "seeds")
    path = tmp_path / "canary.json"
    if case == "marker-edited":
        _edit(path, lambda d: d["markers"][0].update(marker="somethingelse"))
    elif case == "marker-dropped":
        _edit(path, lambda d: d["markers"].pop())
    elif case == "not-json":
        path.write_text("{")
    elif case == "wrong-format":
        _edit(path, lambda d: d.update(format="plimsoll-canary/9"))
    elif case == "no-set":
        _edit(path, lambda d: d.pop("set"))
    (tmp_path / "p").mkdir()
    code = main(["canary", "check", "--sealed", str(path), "--planted", str(tmp_path / "p"),
                 "--requests", str(tmp_path / "p")])
    assert code == 2
    assert "canary file" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["canary", "make", "labels", "--kind", "labels=colour", "-o", "{tmp}/c.json"],
    ["canary", "make", "labels", "--kind", "other=word", "-o", "{tmp}/c.json"],
    ["canary", "make", "bad place/name", "-o", "{tmp}/c.json"],
    ["canary", "make", "labels", "labels", "-o", "{tmp}/c.json"],
    ["canary", "make", "labels", "-o", "{tmp}/exists.json"],
    ["canary", "check", "--sealed", "{tmp}/none.json", "--planted", "{tmp}", "--requests",
     "{tmp}"],
    ["canary", "check", "--sealed", "{tmp}/exists.json", "--planted", "{tmp}/nowhere",
     "--requests", "{tmp}"],
])
def test_canary_bad_input_exits_2(tmp_path, capsys, argv):
    assert main(["canary", "make", "x", "-o", str(tmp_path / "exists.json")]) == 0
    code = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert code == 2
    assert "error:" in capsys.readouterr().err

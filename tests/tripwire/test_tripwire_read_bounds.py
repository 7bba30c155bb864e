"""The tripwire and the canary check read only regular files inside the folders they are given.

A FIFO in a requests folder or a planted tree hung both (an `open` that waits for a writer); a
symbolic link was followed out of the folder, so a marker outside it counted as planted, and a
file outside it was read as if it had crossed the wall.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from kit.cli import run_process

from plimsoll_ci.cli import main


def _canary(tmp_path: Path, *places: str) -> tuple[Path, list[str]]:
    out = tmp_path / "canary.json"
    assert main(["canary", "make", *places, "-o", str(out)]) == 0
    return out, [m["marker"] for m in json.loads(out.read_text())["markers"]]


def test_a_fifo_in_the_requests_folder_is_named_not_read(tmp_path):
    canary, (marker,) = _canary(tmp_path, "labels")
    req = tmp_path / "req"
    req.mkdir()
    (req / "000001.request.json").write_text(json.dumps({"messages": [marker]}))
    os.mkfifo(req / "000002.request.json")
    r = run_process("tripwire", "--sealed", str(canary), "--requests", str(req), timeout=60)
    assert r.returncode == 1, r.stderr  # the marker in the regular file is found
    assert "000002.request.json: not a regular file" in r.stdout + r.stderr
    assert marker not in r.stdout + r.stderr


def test_a_link_in_the_requests_folder_is_not_followed_out_of_it(tmp_path):
    canary, (marker,) = _canary(tmp_path, "labels")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"messages": [marker]}))
    req = tmp_path / "req"
    req.mkdir()
    (req / "000001.request.json").write_text(json.dumps({"messages": ["nothing here"]}))
    (req / "000002.request.json").symlink_to(outside)
    r = run_process("tripwire", "--sealed", str(canary), "--requests", str(req), timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr  # the file behind the link never crossed
    assert "000002.request.json: a symbolic link, not followed" in r.stdout + r.stderr


def test_a_fifo_in_the_planted_tree_does_not_hang_the_check(tmp_path):
    canary, (labels, _seeds) = _canary(tmp_path, "labels", "seeds")
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "labels.txt").write_text(labels + "\n")
    os.mkfifo(planted / "seeds.txt")
    (tmp_path / "req").mkdir()
    r = run_process("canary", "check", "--sealed", str(canary), "--planted", str(planted),
                    "--requests", str(tmp_path / "req"), "--format", "json", timeout=60)
    report = json.loads(r.stdout)
    assert r.returncode == 1 and [(m["place"], m["ok"]) for m in report["markers"]] == [
        ("labels", True), ("seeds", False)]  # nothing was planted in a file that is no file


def test_a_marker_behind_a_link_out_of_the_planted_tree_is_not_planted(tmp_path):
    canary, (labels,) = _canary(tmp_path, "labels")
    outside = tmp_path / "elsewhere.txt"
    outside.write_text(labels + "\n")
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "labels.txt").symlink_to(outside)
    (tmp_path / "req").mkdir()
    r = run_process("canary", "check", "--sealed", str(canary), "--planted", str(planted),
                    "--requests", str(tmp_path / "req"), "--format", "json", timeout=60)
    assert r.returncode == 1 and json.loads(r.stdout)["markers"][0]["ok"] is False


def test_a_planted_file_over_the_bound_is_bad_input_naming_it(tmp_path, monkeypatch, capsys):
    from plimsoll_ci.tripwire import canary as canary_mod

    canary, (labels,) = _canary(tmp_path, "labels")
    planted = tmp_path / "planted"
    planted.mkdir()
    (planted / "labels.txt").write_text(labels + "\n" + "x" * 200)
    (tmp_path / "req").mkdir()
    capsys.readouterr()
    monkeypatch.setattr(canary_mod, "MAX_PLANTED_BYTES", 100)
    code = main(["canary", "check", "--sealed", str(canary), "--planted", str(planted),
                 "--requests", str(tmp_path / "req")])
    out = capsys.readouterr()
    assert code == 2
    assert "labels.txt" in out.err and "over the bound" in out.err, out.err
    assert labels not in out.out + out.err


def test_a_planted_file_named_on_the_command_line_may_be_a_link(tmp_path):
    canary, (labels,) = _canary(tmp_path, "labels")
    real = tmp_path / "labels.txt"
    real.write_text(labels + "\n")
    named = tmp_path / "named.txt"
    named.symlink_to(real)
    (tmp_path / "req").mkdir()
    assert main(["canary", "check", "--sealed", str(canary), "--planted", str(named),
                 "--requests", str(tmp_path / "req")]) == 0

"""`squeeze recipe`: a scripted compressor on 127.0.0.1 whose drafts over budget are sent back
with their count until one fits; a recipe carrying a sealed value is never written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kit.chat_server import ChatServer, text
from kit.cli import run_process
from kit.squeeze import KEY

import plimsoll_sim as sim
from plimsoll_ci.squeeze import recipes

LONG = ("Weigh the drone first: ramp the thrust slowly until lift-off and keep that as the hover "
        "thrust. Then run a PI velocity loop with kp 3.5 and ki 1.5, cross each gate along its "
        "normal, and slow down before the landing pad.")
SHORTER = ("Weigh the drone: ramp thrust to lift-off. PI velocity loop kp 3.5, ki 1.5. Cross "
           "gates along their normals, slow down near the landing pad.")
FITS = ("Weigh the drone: ramp thrust to lift-off. PI velocity loop kp 3.5, ki 1.5. Cross gates "
        "along their normals.")


def record(folder: Path) -> Path:
    folder.mkdir()
    (folder / "transcript.md").write_text("turn 1: tried a P loop, 9/16\nturn 9: PI, 15/16\n")
    (folder / "controller-v7.py").write_text("KP, KI = 3.5, 1.5\n")
    (folder / "scores.json").write_text(json.dumps({"practice": [9, 12, 15]}))
    (folder / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    return folder


def squeeze_recipe(server: ChatServer, tmp_path: Path, *more: str):
    env = {**os.environ, "COMPRESSOR_KEY": KEY}
    return run_process("squeeze", "recipe", "--record", str(record(tmp_path / "record")), "--out",
                       str(tmp_path / "out"), "--tokens", "32", "--base-url", server.url,
                       "--model", "scripted", "--api-key-env", "COMPRESSOR_KEY", "--max-tokens",
                       "50000", *more, timeout=120, env=env, inherit=False)


def test_an_over_budget_recipe_is_sent_back_with_its_count_then_accepted(tmp_path):
    counts = [recipes.count(x) for x in (LONG, SHORTER, FITS)]
    assert counts[0] > counts[1] > 32 >= counts[2]
    with ChatServer([text(LONG), text(SHORTER), text(FITS)], key=KEY) as server:
        r = squeeze_recipe(server, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == FITS
    asked = [req.json["messages"] for req in server.chat_requests]
    assert "=== transcript.md ===" in asked[0][1]["content"]
    assert "(not text, not sent: plot.png)" in asked[0][1]["content"]
    assert asked[1][-1]["content"].startswith(f"That draft is {counts[0]} tokens (cl100k_base); "
                                              "the limit is 32.")
    assert asked[2][-1]["content"].startswith(f"That draft is {counts[1]} tokens")
    out = tmp_path / "out"
    assert (out / "recipe.txt").read_text() == FITS + "\n"
    doc = json.loads((out / "recipe.json").read_text())
    assert (doc["tokens"], doc["encoding"], doc["drafts"], doc["budget"]) == (
        counts[2], "cl100k_base", counts, 32)
    assert doc["recording"]["requests"] == 3
    assert f"after 3 draft(s) ({', '.join(map(str, counts))} tokens)" in r.stderr
    for p in out.rglob("*"):
        assert not p.is_file() or KEY.encode() not in p.read_bytes(), p
    assert KEY not in r.stdout + r.stderr


def test_a_recipe_carrying_a_practice_seed_is_never_written(tmp_path):
    seed = sim.PRACTICE_SEEDS[4]
    with ChatServer([text(f"Fly seed {seed} with kp 3.5.")], key=KEY) as server:
        r = squeeze_recipe(server, tmp_path)
    assert r.returncode == 1
    assert "tripwire: the recipe carries sealed entry practice:5" in r.stderr
    assert str(seed) not in r.stdout + r.stderr
    assert not (tmp_path / "out" / "recipe.txt").exists()


def test_no_draft_within_budget_after_every_draft_is_exit_1(tmp_path):
    with ChatServer([text(LONG)] * 2, key=KEY) as server:
        r = squeeze_recipe(server, tmp_path, "--drafts", "2")
    assert r.returncode == 1
    n = recipes.count(LONG)
    assert f"no draft within 32 tokens after 2 drafts ({n}, {n} tokens)" in r.stderr
    assert not (tmp_path / "out" / "recipe.txt").exists()


def test_a_missing_record_folder_is_bad_input(tmp_path):
    with ChatServer([], key=KEY) as server:
        env = {**os.environ, "COMPRESSOR_KEY": KEY}
        r = subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", "recipe", "--record",
                            str(tmp_path / "none"), "--out", str(tmp_path / "out"), "--base-url",
                            server.url, "--model", "m", "--api-key-env", "COMPRESSOR_KEY",
                            "--max-tokens", "100"], capture_output=True, text=True, timeout=60,
                           env=env)
    assert r.returncode == 2 and "--record" in r.stderr and "no such folder" in r.stderr
    assert server.chat_requests == [] and not (tmp_path / "out").exists()

"""Recipes: counted offline with a real BPE tokenizer; over budget refused with the count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from kit.squeeze import copy_example

import plimsoll_sim as sim
from plimsoll_ci.errors import BadInput
from plimsoll_ci.squeeze import recipes


@pytest.mark.parametrize("text, tokens", [
    ("hello world", 2),
    ("<|endoftext|>", 7),  # special-token text counts as plain text, never as one token
    ("3107713414", 4),  # digits go in runs of at most three
    ("", 0),
])
def test_cl100k_base_counts_as_published(text, tokens):
    assert recipes.count(text) == tokens


def test_the_tokenizer_reads_the_packaged_ranks_and_nothing_else(tmp_path):
    # A fresh process with every cache pointed at an empty folder and the network unusable:
    # the count still comes out, and nothing is written to the cache.
    code = ("import socket\n"
            "def no(*a, **k): raise OSError('no network in this test')\n"
            "socket.socket.connect = no\n"
            "import tiktoken.load as L\n"
            "L.read_file = no\n"
            "from plimsoll_ci.squeeze import recipes\n"
            "print(recipes.count('Weigh the drone at lift-off.'), recipes.ENCODING)\n")
    env = dict(os.environ, TIKTOKEN_CACHE_DIR=str(tmp_path / "cache"),
               DATA_GYM_CACHE_DIR=str(tmp_path / "cache"), TMPDIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["8", "cl100k_base"]
    assert not (tmp_path / "cache").exists()
    assert not (tmp_path / "data-gym-cache").exists()


def test_the_practice_seed_list_takes_more_tokens_than_a_recipe_may():
    assert recipes.seed_list_tokens(sim.PRACTICE_SEEDS) == 79


def test_a_recipe_over_budget_is_refused_with_its_count(tmp_path):
    (tmp_path / "r.txt").write_text("Weigh the drone by ramping thrust to lift-off; PI velocity "
                                    "loop, kp 3.5, ki 1.5; cross gates along their normals.\n")
    with pytest.raises(BadInput) as e:
        recipes.load(tmp_path, "r.txt", 32, "squeeze.yaml loops.honest")
    assert "recipe r.txt: 34 tokens (cl100k_base), over the job's recipe_tokens 32" in str(e.value)
    assert recipes.load(tmp_path, "r.txt", 34, "x").tokens == 34


def test_the_cli_refuses_an_over_budget_recipe_before_any_flight(tmp_path):
    job = copy_example(tmp_path / "job")
    (job.parent / "recipes" / "cheater.txt").write_text(
        "First observation: replay the flight generator to recognise the flight, then fly its "
        "known gusts. Unknown flight: fly the gates with a 0.6 m approach.\n")
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-m", "plimsoll_ci", "squeeze", "run", str(job),
                        "--out", str(out), "--provider", "process"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert "recipe recipes/cheater.txt: 34 tokens (cl100k_base), over the job's recipe_tokens " \
           "32; squeeze it further" in r.stderr
    assert "fresh set" not in r.stderr  # refused before the fresh set was drawn
    assert not out.exists()


def test_an_empty_recipe_is_refused(tmp_path):
    Path(tmp_path / "r.txt").write_text("  \n")
    with pytest.raises(BadInput, match="empty"):
        recipes.load(tmp_path, "r.txt", 32, "x")

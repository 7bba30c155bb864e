"""Seed files and seed sets are read within documented bounds (issue 28, rows 5 and 9): a device,
a FIFO or a huge file is refused naming the file and the bound; a hand-made held-out set holds
at most as many seeds as a drawn one (10,000); `--horizon` is bounded before it is computed.
Exit 2, one message, no traceback, quickly."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from kit.cli import Ran, run_process

from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading import fresh, seeds, seedsets

REPO = Path(__file__).resolve().parents[2]


def timed(*args: str, timeout: float = 60) -> tuple[Ran, float]:
    """The CLI as a process (a hostile input may hang it: the timeout is the bound tested) and the
    seconds it took."""
    start = time.monotonic()
    r = run_process(*args, timeout=timeout)
    return r, time.monotonic() - start


def refused(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("error:") == 1, r.stderr
    for word in words:
        assert word in r.stderr, r.stderr


def hand_made(tmp_path: Path, count: int) -> tuple[Path, Path]:
    """A held-out set of `count` seeds written and committed without `seeds draw`'s bound."""
    fs = fresh.make(range(2**40, 2**40 + 97 * count, 97))
    s, c = tmp_path / "held.json", tmp_path / "held.commit"
    seedsets.write_set(s, fs, bits=64)
    seedsets.write_public(c, seedsets.commitment(fs, 64).document(), "commitment")
    return s, c


# ---------------------------------------------------------------- row 5: every read is bounded


@pytest.mark.parametrize("args", [["lint", "/dev/zero"], ["lint", "practice=/dev/zero"],
                                  ["commit", "/dev/zero"], ["reveal", "/dev/zero"],
                                  ["check", "/dev/zero", "/dev/zero"]])
def test_seeds_commands_refuse_dev_zero_with_the_bound_and_no_traceback(args):
    r, took = timed("seeds", *args)
    refused(r, "/dev/zero: not a regular file")
    assert took < 20


def test_seeds_lint_refuses_a_seed_file_over_one_mib_and_a_fifo_without_blocking(tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("# a comment line\n" * (seeds.SEED_FILE_BYTES // 17 + 1))
    r, _ = timed("seeds", "lint", str(big))
    refused(r, f"seed file {big}: ", "over the bound of 1 MiB")
    fifo = tmp_path / "seeds.fifo"
    os.mkfifo(fifo)
    r, took = timed("seeds", "lint", str(fifo), timeout=30)
    refused(r, "not a regular file")
    assert took < 20


def test_a_seed_file_for_grade_or_a_recipe_is_read_within_its_bound(tmp_path):
    with pytest.raises(BadInput, match="seed file /dev/zero: not a regular file"):
        seeds.read_seed_file("/dev/zero")
    r, took = timed("grade", "--controller", str(REPO / "plimsoll_sim/controllers/honest.py"),
                    "--course",
                  "hard", "--seed-file", "/dev/zero", "--provider", "process")
    refused(r, "seed file /dev/zero: not a regular file")
    assert took < 20


def test_a_seed_set_file_over_its_bound_is_refused_before_it_is_parsed(tmp_path):
    big = tmp_path / "held.json"
    big.write_text(" " * (seedsets.MAX_FILE_BYTES + 1))
    with pytest.raises(BadInput, match=r"seed set .*held\.json: \d+ bytes, over the bound of 1 MiB"):
        seedsets.read_revealed(big)


# ------------------------------------------------ row 9: held-out sets as large as drawn ones


def test_a_hand_made_held_out_set_of_a_million_seeds_fails_commit_and_check(tmp_path):
    s, c = hand_made(tmp_path, 1_000_000)
    r, took = timed("seeds", "commit", str(s))
    refused(r, f"seed set {s}: ", "over the bound of 1 MiB")
    r, _ = timed("seeds", "check", str(c), str(s))
    refused(r, "commitment", "count must be an integer from 1 to 10000")
    assert took < 20


def test_a_held_out_set_of_10001_seeds_is_refused_by_count_as_a_drawn_one_would_be(tmp_path):
    s, c = hand_made(tmp_path, 10_001)
    assert s.stat().st_size < seedsets.MAX_FILE_BYTES  # the count refuses it, not the size
    with pytest.raises(BadInput, match="10001 seeds, over the bound of 10000"):
        seedsets.read_revealed(s)
    with pytest.raises(BadInput, match="count must be an integer from 1 to 10000"):
        seedsets.read_commitment(c)
    (tmp_path / "fine").mkdir()
    fine_set, fine_commitment = hand_made(tmp_path / "fine", 10_000)
    assert len(seedsets.open_sealed(fine_commitment, fine_set).seeds) == 10_000


def test_squeeze_run_sealed_refuses_a_held_out_set_over_10000_before_any_flight(tmp_path):
    s, c = hand_made(tmp_path, 10_001)
    job = tmp_path / "job" / "squeeze.yaml"
    (job.parent / "rebuilds").mkdir(parents=True)
    (job.parent / "loop.py").write_text((REPO / "plimsoll_sim/controllers/honest.py").read_text())
    (job.parent / "rebuilds" / "hover.py").write_text(
        (REPO / "plimsoll_sim/controllers/hover.py").read_text())
    job.write_text("course: easy\nloops:\n  l:\n    controller: loop.py\n"
                   "    rebuilds: [rebuilds/*.py]\n")
    out = tmp_path / "out"
    r, took = timed("squeeze", "run", str(job), "--out", str(out), "--provider", "process",
                  "--sealed", str(c), "--reveal", str(s))
    refused(r, f"commitment {c}: count must be an integer from 1 to 10000")
    assert took < 30 and not out.exists()


# --------------------------------------------------------- row 9: the horizon is bounded first


@pytest.mark.parametrize("value", ["9**999999999", "2**64", "2^99999999999", "1" * 5000,
                                   "2**-1", "inf"])
def test_seeds_lint_refuses_a_horizon_out_of_range_at_once(tmp_path, value):
    good = tmp_path / "good.txt"
    good.write_text("".join(f"{s}\n" for s in fresh.draw(16).seeds))
    r, took = timed("seeds", "lint", "--horizon", value, str(good), timeout=30)
    refused(r, "argument --horizon", "give 2**K or a number between 2 and 2**63")
    assert took < 10


@pytest.mark.parametrize("value, limit", [("2**63", 2**63), ("2^40", 2**40), ("1_000_000", 10**6)])
def test_a_horizon_in_range_is_taken(value, limit):
    from plimsoll_ci.commands.seeds import horizon

    assert horizon(value) == limit


def test_a_withheld_set_given_to_grade_is_read_within_its_bound(tmp_path):
    r, took = timed("grade", "--controller", str(REPO / "plimsoll_sim/controllers/honest.py"),
                    "--course",
                  "hard", "--seeds", "1", "--withheld", "/dev/zero", "--provider", "process")
    refused(r, "withheld set /dev/zero: not a regular file")
    assert took < 20

"""Sharding a squeeze: `squeeze plan` settles the unseen set once, `squeeze run --plan --shard I/N`
grades a deterministic slice, `bundle merge` checks the shards and writes what one runner would
(byte for byte the same `result.json`), and refuses overlapping, missing, foreign or tampered
shards with nothing written."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from kit.cli import run_process
from kit.squeeze import REPO, tiny_job


def plan(job: Path, out: Path, *extra: str) -> None:
    r = run_process("squeeze", "plan", str(job), "--out", str(out), "--provider", "process", *extra)
    assert r.returncode == 0, r.stderr


def shard(job: Path, plan_dir: Path, out: Path, which: str | None, *extra: str) -> None:
    args = ["squeeze", "run", str(job), "--plan", str(plan_dir), "--out", str(out),
            "--provider", "process", "--jobs", "2", *extra]
    if which is not None:
        args += ["--shard", which]
    r = run_process(*args)
    assert r.returncode == 0, r.stderr


def merge(out: Path, *shards: Path, pub: Path | None = None) -> subprocess.CompletedProcess:
    """`bundle merge` pinning the job key the fixture's shards were signed by (`pub`)."""
    pub = pub or Path(shards[0]).parent / "keys" / "job.pub"
    return run_process("bundle", "merge", *map(str, shards), "--pub", str(pub), "--out", str(out))


@pytest.fixture(scope="module")
def sharded(tmp_path_factory) -> Path:
    """A plan, its two shards, and the whole plan graded by one runner; all signed by one job
    key (`keys/job.key`), whose public half the merges pin (as a CI job holding it as a secret
    would)."""
    base = tmp_path_factory.mktemp("sharded")
    (base / "keys").mkdir()
    assert run_process("keygen", "--out", str(base / "keys" / "job")).returncode == 0
    key = ("--signing-key-file", str(base / "keys" / "job.key"))
    job = tiny_job(base / "job", twin=True)
    plan(job, base / "plan", *key)
    shard(job, base / "plan", base / "s1", "1/2", *key)
    shard(job, base / "plan", base / "s2", "2/2", *key)
    shard(job, base / "plan", base / "whole", None, *key)
    return base


def test_merged_shards_give_the_single_runners_result_json_byte_for_byte(sharded, tmp_path):
    out = tmp_path / "merged"
    r = merge(out, sharded / "s2", sharded / "s1")  # any order
    assert r.returncode == 0, r.stderr
    assert (out / "result.json").read_bytes() == (sharded / "whole" / "result.json").read_bytes()
    # evidence.json names each record by its signed digest, which holds the grading's times
    for name in ("report.md", "fresh.json"):
        assert (out / name).read_bytes() == (sharded / "whole" / name).read_bytes(), name
    assert json.loads((out / "run.json").read_text())["status"] == "done"
    v = run_process("squeeze", "verify", str(out), "--pub", str(out / "harness.pub"))
    assert v.returncode == 0, v.stdout + v.stderr
    assert "merged from 2 shards" in v.stdout
    assert "consistency only" in v.stdout  # its own harness.pub, and the shards' kept keys
    assert sorted(p.name for p in (out / "shards").iterdir()) == ["1", "2"]


def test_a_shard_grades_every_nth_grading_of_the_plan_and_derives_nothing(sharded):
    one = json.loads((sharded / "s1" / "run.json").read_text())["shard"]
    two = json.loads((sharded / "s2" / "run.json").read_text())["shard"]
    plan_doc = json.loads((sharded / "plan" / "plan.json").read_text())
    every = plan_doc["context"]["plan"]
    assert one["gradings"] == every[0::2] and two["gradings"] == every[1::2]
    assert not (sharded / "s1" / "result.json").exists()
    # the plan keeps the fresh set private to the machines that grade it
    assert (sharded / "plan" / "fresh-set.json").stat().st_mode & 0o077 == 0


def _refused(out: Path, r: subprocess.CompletedProcess, *said: str) -> None:
    assert r.returncode == 2, r.stdout + r.stderr
    for text in said:
        assert text in r.stderr, r.stderr
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.merging")]


def test_a_missing_slice_is_refused_and_nothing_is_written(sharded, tmp_path):
    out = tmp_path / "merged"
    _refused(out, merge(out, sharded / "s1"), "slices 2/2 missing")


def test_an_overlapping_slice_is_refused(sharded, tmp_path):
    again = tmp_path / "s1-again"
    shutil.copytree(sharded / "s1", again)
    out = tmp_path / "merged"
    _refused(out, merge(out, sharded / "s1", again, sharded / "s2",
                        pub=sharded / "keys" / "job.pub"), "slices overlap")


def test_shards_of_two_plans_are_refused_for_their_commitments(sharded, tmp_path):
    job = sharded / "job" / "squeeze.yaml"
    key = ("--signing-key-file", str(sharded / "keys" / "job.key"))  # the same pinned key
    plan(job, tmp_path / "plan2", *key)
    shard(job, tmp_path / "plan2", tmp_path / "other2", "2/2", *key)
    out = tmp_path / "merged"
    _refused(out, merge(out, sharded / "s1", tmp_path / "other2", pub=sharded / "keys" / "job.pub"),
             "unseen set's commitment differs")


def test_a_shard_whose_bundle_does_not_verify_under_the_pinned_key_is_refused(sharded, tmp_path):
    bad = tmp_path / "s2"
    shutil.copytree(sharded / "s2", bad)
    lines = (bad / "bundle.intoto.jsonl").read_bytes().split(b"\n")
    lines[0] = lines[0].replace(b'"landed":false', b'"landed":true ', 1)  # same length, unsigned
    (bad / "bundle.intoto.jsonl").write_bytes(b"\n".join(lines))
    out = tmp_path / "merged"
    _refused(out, merge(out, sharded / "s1", bad, pub=sharded / "keys" / "job.pub"),
             f"shard {bad}", "does not verify under the pinned key sha256:")


def test_an_interrupted_shard_is_refused(sharded, tmp_path):
    bad = tmp_path / "s2"
    shutil.copytree(sharded / "s2", bad)
    doc = json.loads((bad / "run.json").read_text())
    (bad / "run.json").write_text(json.dumps(doc | {"status": "interrupted"}))
    out = tmp_path / "merged"
    _refused(out, merge(out, sharded / "s1", bad, pub=sharded / "keys" / "job.pub"), "not done")


def test_a_merge_whose_kept_shard_was_swapped_fails_verify(sharded, tmp_path):
    out = tmp_path / "merged"
    assert merge(out, sharded / "s1", sharded / "s2").returncode == 0
    for name in ("bundle.intoto.jsonl", "harness.pub"):  # shard 2's records under shard 1's name
        shutil.copy(sharded / "s2" / name, out / "shards" / "1" / name)
    v = run_process("squeeze", "verify", str(out), "--pub", str(out / "harness.pub"))
    assert v.returncode == 1
    assert "not exactly the records of the shards" in v.stdout


def test_a_shard_refuses_a_changed_controller_and_bad_slices(sharded, tmp_path):
    job_dir = tmp_path / "job"
    shutil.copytree(sharded / "job", job_dir)
    job = job_dir / "squeeze.yaml"
    bad = [
        (["--plan", str(sharded / "plan"), "--shard", "3/2"], "--shard 3/2"),
        (["--shard", "1/2"], "--shard I/N grades a slice of a plan"),
    ]
    for extra, said in bad:
        r = run_process("squeeze", "run", str(job), "--out", str(tmp_path / "x"), "--provider",
                "process", *extra)
        assert r.returncode == 2 and said in r.stderr, r.stderr
    (job_dir / "rebuilds" / "twin.py").write_text(
        (REPO / "plimsoll_sim/controllers/honest.py").read_text() + "\n# changed after the plan\n")
    r = run_process("squeeze", "run", str(job), "--plan", str(sharded / "plan"), "--shard", "1/2",
            "--out", str(tmp_path / "x"), "--provider", "process")
    assert r.returncode == 2 and "twin.py: its files are not the ones" in r.stderr, r.stderr
    assert not (tmp_path / "x").exists()


def test_an_edited_plan_is_refused(sharded, tmp_path):
    edited = tmp_path / "plan"
    shutil.copytree(sharded / "plan", edited)
    doc = json.loads((edited / "fresh-set.json").read_text())
    doc["seeds"][0] = str(int(doc["seeds"][0]) + 1)
    (edited / "fresh-set.json").write_text(json.dumps(doc))
    r = run_process("squeeze", "run", str(sharded / "job" / "squeeze.yaml"), "--plan", str(edited),
            "--shard", "1/2", "--out", str(tmp_path / "x"), "--provider", "process")
    assert r.returncode == 2 and "do not hash to the plan's commitment" in r.stderr, r.stderr

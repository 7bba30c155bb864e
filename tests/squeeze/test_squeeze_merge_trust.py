"""A merge trusts only the keys it is given, copies only what the signed records name, and reads
every file within a bound (threat rows 1, 2 and 5 of docs/threat-model.md).

Every tampering below is refused with exit 2, the shard or plan folder named, and nothing written:
shards re-signed under another key (its harness.pub beside it), links, extra and special files in
shard and plan folders, oversize files, `/dev/zero` and a FIFO. The untampered merges verify.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from kit.chat_server import ChatServer
from kit.cli import run_process
from kit.squeeze import HONEST, KEY, builder, tiny_job
from test_squeeze_shards import shard

from plimsoll_ci.attest import bundle, keys, record
from plimsoll_ci.squeeze import merge as merge_mod
from plimsoll_ci.squeeze import planfile
from plimsoll_ci.squeeze.records import signed_runs

BUILDS = """\
course: easy
fresh: {count: 4}
loops:
  honest:
    controller: loop.py
    recipe: honest.txt
    build: 1
sessions: {max_turns: 6, smoke: 1}
"""


def _keygen(folder: Path) -> tuple[str, str]:
    """A job key: (--signing-key-file FILE) for the signers, the public half's path."""
    folder.mkdir()
    assert run_process("keygen", "--out", str(folder / "job")).returncode == 0
    return "--signing-key-file", str(folder / "job.key")


@pytest.fixture(scope="module")
def signed(tmp_path_factory) -> Path:
    """A plan of a job that does not build and its two shards, all under one job key."""
    base = tmp_path_factory.mktemp("trust")
    key = _keygen(base / "keys")
    job = tiny_job(base / "job", twin=True)
    r = run_process("squeeze", "plan", str(job), "--out", str(base / "plan"), "--provider",
                    "process",
            *key)
    assert r.returncode == 0, r.stderr
    shard(job, base / "plan", base / "s1", "1/2", *key)
    shard(job, base / "plan", base / "s2", "2/2", *key)
    return base


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A plan of a job that builds (one rebuild session through a scripted model on 127.0.0.1:
    `built/` and `requests/` in the plan) and its two shards, under one job key."""
    base = tmp_path_factory.mktemp("built")
    key = _keygen(base / "keys")
    job = base / "job"
    job.mkdir()
    (job / "loop.py").write_text(HONEST)
    (job / "honest.txt").write_text("Weigh the drone, PI loop.\n")
    (job / "squeeze.yaml").write_text(BUILDS)
    env = {**os.environ, "SCRIPTED_KEY": KEY}
    with ChatServer([builder()] * 10, key=KEY) as server:
        r = run_process("squeeze", "plan", str(job / "squeeze.yaml"), "--out", str(base / "plan"),
                        "--provider", "process", "--base-url", server.url, "--model", "scripted",
                        "--api-key-env", "SCRIPTED_KEY", "--max-tokens", "100000", *key, env=env,
                        inherit=False, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (base / "plan" / "built" / "honest" / "1" / "controller.py").is_file()
    shard(job / "squeeze.yaml", base / "plan", base / "s1", "1/2", *key)
    shard(job / "squeeze.yaml", base / "plan", base / "s2", "2/2", *key)
    return base


def merge(base: Path, out: Path, *shards: Path, plan: Path | None = None,
          pub: Path | None = None) -> subprocess.CompletedProcess:
    """`bundle merge` pinning `pub` (default: the fixture's job key)."""
    extra = ["--plan", str(plan)] if plan is not None else []
    return run_process("bundle", "merge", *map(str, shards), "--pub",
               str(pub or base / "keys" / "job.pub"), "--out", str(out), *extra)


def refused(out: Path, r: subprocess.CompletedProcess, *said: str) -> None:
    """Exit 2, every `said` in the message, no traceback, and nothing written beside `out`."""
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr, r.stderr
    for text in said:
        assert text in r.stderr, r.stderr
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.merging")]


def copy_of(folder: Path, dest: Path) -> Path:
    shutil.copytree(folder, dest, symlinks=True)
    return dest


def resign_all_landed(shard_dir: Path, signer: keys.Signer) -> None:
    """Row 1: the shard's records, every flight set to landed, re-signed under `signer`, with
    its harness.pub beside them (what anyone who can rewrite the shard's folder can do)."""
    path = shard_dir / "bundle.intoto.jsonl"
    pairs = []
    for run in signed_runs(path.read_bytes()):
        result, predicate = copy.deepcopy(run.result), copy.deepcopy(run.predicate)
        for flight in result["flights"]:
            flight.update(landed=True, reason="landed")
        result["landed"] = len(result["flights"])
        predicate["result"]["sha256"] = record.result_digest(result)
        pairs.append((result, predicate))
    path.unlink()
    bundle.append_runs(path, pairs, signer)
    (shard_dir / "harness.pub").write_bytes(signer.public.pem())


# ---- row 1: pinned keys ----------------------------------------------------------------------


def test_merge_refuses_a_shard_re_signed_under_an_unpinned_key_with_its_pub_beside_it(
        signed, tmp_path):
    forged = copy_of(signed / "s2", tmp_path / "s2")
    other = keys.generate()
    resign_all_landed(forged, other)
    # on its own the forgery is well signed: its records verify under the key beside them
    assert bundle.verify_bundle(forged / "bundle.intoto.jsonl",
                                keys.load_public_key(forged / "harness.pub")).ok
    out = tmp_path / "merged"
    refused(out, merge(signed, out, signed / "s1", forged), f"shard {forged}",
            f"signed by key sha256:{other.keyid}", "not a pinned key")


def test_merge_needs_a_pinned_key(signed, tmp_path):
    out = tmp_path / "merged"
    r = run_process("bundle", "merge", str(signed / "s1"), str(signed / "s2"), "--out", str(out))
    refused(out, r, "give --pub FILE")


def test_merge_names_the_keys_it_trusted_and_verify_says_what_it_proves(signed, tmp_path):
    out = tmp_path / "merged"
    r = merge(signed, out, signed / "s1", signed / "s2")
    assert r.returncode == 0, r.stderr
    job_pub = signed / "keys" / "job.pub"
    keyid = keys.load_public_key(job_pub).keyid
    assert f"trusted: key sha256:{keyid} (from --pub {job_pub})" in r.stdout
    # kept under shards/I/: the pinned key, never the shard's own harness.pub
    assert (out / "shards" / "2" / "harness.pub").read_bytes() == job_pub.read_bytes()
    own = run_process("squeeze", "verify", str(out), "--pub", str(out / "harness.pub"))
    assert own.returncode == 0, own.stdout + own.stderr
    assert "consistency only" in own.stdout
    pinned = run_process("squeeze", "verify", str(out), "--pub", str(out / "harness.pub"),
                 "--shard-pub", str(job_pub))
    assert pinned.returncode == 0, pinned.stdout
    assert f"trusted: key sha256:{keyid} (from --shard-pub {job_pub}) for the kept shards" \
        in pinned.stdout
    assert "the shards verified under the keys kept beside them" not in pinned.stdout


def test_verify_refuses_a_merged_folder_whose_kept_shard_is_signed_by_an_unpinned_key(
        signed, tmp_path):
    """A merge made by a careless merger (it pinned the forger's key too): `squeeze verify
    --shard-pub` with the job key alone refuses the kept forgery."""
    forged = copy_of(signed / "s2", tmp_path / "s2")
    other = keys.generate()
    resign_all_landed(forged, other)
    (tmp_path / "other.pub").write_bytes(other.public.pem())
    out = tmp_path / "merged"
    r = run_process("bundle", "merge", str(signed / "s1"), str(forged), "--pub",
            str(signed / "keys" / "job.pub"), "--pub", str(tmp_path / "other.pub"), "--out",
            str(out))
    assert r.returncode == 0, r.stderr
    v = run_process("squeeze", "verify", str(out), "--pub", str(out / "harness.pub"), "--shard-pub",
            str(signed / "keys" / "job.pub"))
    assert v.returncode == 1, v.stdout
    assert f"shards/2: signed by key sha256:{other.keyid}" in v.stdout


# ---- the tamper matrix: shard folders --------------------------------------------------------


def _link_bundle(folder: Path, tmp: Path) -> None:
    real = tmp / "elsewhere.intoto.jsonl"
    shutil.move(folder / "bundle.intoto.jsonl", real)
    (folder / "bundle.intoto.jsonl").symlink_to(real)


def _fifo_bundle(folder: Path, tmp: Path) -> None:
    (folder / "bundle.intoto.jsonl").unlink()
    os.mkfifo(folder / "bundle.intoto.jsonl")


def _dev_zero_bundle(folder: Path, tmp: Path) -> None:
    (folder / "bundle.intoto.jsonl").unlink()
    (folder / "bundle.intoto.jsonl").symlink_to("/dev/zero")


def _huge_bundle(folder: Path, tmp: Path) -> None:
    with open(folder / "bundle.intoto.jsonl", "r+b") as fh:  # sparse: no disk, 1 GiB + 1
        fh.truncate(bundle.MAX_BUNDLE_BYTES + 1)


def _huge_run_json(folder: Path, tmp: Path) -> None:
    with open(folder / "run.json", "r+b") as fh:
        fh.truncate(merge_mod.MAX_RUN_BYTES + 1)


SHARD_TAMPERING = [
    ("a link to a host folder", lambda f, t: (f / "etc").symlink_to("/etc"),
     "etc is a symbolic link"),
    ("a link to a host file", lambda f, t: (f / "hostname").symlink_to("/etc/hostname"),
     "hostname is a symbolic link"),
    ("the bundle as a link to a valid bundle", _link_bundle,
     "bundle.intoto.jsonl is a symbolic link"),
    ("an extra file", lambda f, t: (f / "notes.txt").write_text("hello\n"),
     "notes.txt is not a file a shard writes"),
    ("an extra folder", lambda f, t: (f / "built").mkdir(), "built is not a file a shard writes"),
    ("the bundle as a FIFO", _fifo_bundle, "bundle.intoto.jsonl is not a regular file"),
    ("the bundle as /dev/zero", _dev_zero_bundle, "bundle.intoto.jsonl is a symbolic link"),
    ("a bundle over its bound", _huge_bundle, "over the bound of 1024 MiB"),
    ("a run.json over its bound", _huge_run_json, "over the bound of 16 MiB"),
]


@pytest.mark.parametrize("what, tamper, said", SHARD_TAMPERING,
                         ids=[t[0] for t in SHARD_TAMPERING])
def test_merge_refuses_a_tampered_shard_folder_and_writes_nothing(signed, tmp_path, what,
                                                                  tamper, said):
    bad = copy_of(signed / "s2", tmp_path / "s2")
    tamper(bad, tmp_path)
    out = tmp_path / "merged"
    refused(out, merge(signed, out, signed / "s1", bad), f"shard {bad}", said)


def test_merge_refuses_a_shard_bundle_that_is_a_character_device(signed, tmp_path):
    bad = copy_of(signed / "s2", tmp_path / "s2")
    (bad / "bundle.intoto.jsonl").unlink()
    try:  # the /dev/zero device itself, where this user may make device nodes
        os.mknod(bad / "bundle.intoto.jsonl", stat.S_IFCHR | 0o600, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("this user cannot make a device node")
    out = tmp_path / "merged"
    refused(out, merge(signed, out, signed / "s1", bad), f"shard {bad}",
            "bundle.intoto.jsonl is not a regular file")


# ---- the tamper matrix: plan folders (row 2) -------------------------------------------------


def test_merge_with_a_plan_copies_exactly_the_files_its_signed_records_name(built, tmp_path):
    out = tmp_path / "merged"
    r = merge(built, out, built / "s1", built / "s2", plan=built / "plan")
    assert r.returncode == 0, r.stderr
    plan = built / "plan"
    for name in ("built", "requests"):
        want = sorted(p.relative_to(plan).as_posix() for p in (plan / name).rglob("*"))
        assert sorted(p.relative_to(out).as_posix() for p in (out / name).rglob("*")) == want
    v = run_process("squeeze", "verify", str(out), "--pub", str(out / "harness.pub"), "--shard-pub",
            str(built / "keys" / "job.pub"))
    assert v.returncode == 0, v.stdout + v.stderr


def test_a_whole_run_from_a_plan_refuses_a_link_in_its_built_folder(built, tmp_path):
    plan = copy_of(built / "plan", tmp_path / "plan")
    r = run_process("squeeze", "run", str(built / "job" / "squeeze.yaml"), "--plan", str(plan),
                    "--out",
            str(tmp_path / "whole"), "--provider", "process")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "whole" / "built" / "honest" / "1" / "controller.py").is_file()
    (plan / "built" / "honest" / "1" / "etc").symlink_to("/etc")
    r = run_process("squeeze", "run", str(built / "job" / "squeeze.yaml"), "--plan", str(plan),
                    "--out",
            str(tmp_path / "again"), "--provider", "process")
    assert r.returncode == 2 and "built/honest/1/etc: a symbolic link" in r.stderr, r.stderr
    assert not (tmp_path / "again" / "built").exists()


def test_a_recording_uploaded_without_its_hidden_lock_file_still_merges(built, tmp_path):
    plan = copy_of(built / "plan", tmp_path / "plan")
    for lock in plan.rglob(".plimsoll-record.lock"):  # upload-artifact leaves hidden files out
        lock.unlink()
    out = tmp_path / "merged"
    r = merge(built, out, built / "s1", built / "s2", plan=plan)
    assert r.returncode == 0, r.stderr


def _recording(plan: Path) -> Path:
    return next((plan / "requests").iterdir())


PLAN_TAMPERING = [
    ("a link to a host file in requests/",
     lambda p: (_recording(p) / "hostname").symlink_to("/etc/hostname"),
     "hostname: a symbolic link (never followed)"),
    ("a link to a host folder in built/",
     lambda p: (p / "built" / "honest" / "1" / "etc").symlink_to("/etc"),
     "built/honest/1/etc: a symbolic link (never followed)"),
    ("requests/ itself as a link", lambda p: (shutil.rmtree(p / "requests"),
                                              (p / "requests").symlink_to("/etc")),
     "requests: a symbolic link"),
    ("an extra file in built/",
     lambda p: (p / "built" / "honest" / "1" / "extra.py").write_text("x = 1\n"),
     "built/honest/1/extra.py: a file no signed session record names"),
    ("an extra file in requests/",
     lambda p: (_recording(p) / "000009.request.json").write_text("{}\n"),
     "not the recording its session's signed record names"),
    ("a changed built file",
     lambda p: (p / "built" / "honest" / "1" / "controller.py").write_text("# changed\n"),
     "controller.py: not the bytes its session's signed record names"),
    ("a FIFO in requests/", lambda p: os.mkfifo(_recording(p) / "pipe"),
     "pipe: not a regular file"),
    ("an extra file at the plan's top", lambda p: (p / "notes.txt").write_text("hi\n"),
     "notes.txt: not a file `squeeze plan` writes"),
    ("a built file over its bound",
     lambda p: os.truncate(p / "built" / "honest" / "1" / "controller.py",
                           planfile.MAX_OUTPUT_FILE + 1),
     "over the bound of 64 MiB"),
]


@pytest.mark.parametrize("what, tamper, said", PLAN_TAMPERING,
                         ids=[t[0] for t in PLAN_TAMPERING])
def test_merge_refuses_a_plan_folder_changed_after_the_shards_ran(built, tmp_path, what, tamper,
                                                                  said):
    plan = copy_of(built / "plan", tmp_path / "plan")
    tamper(plan)
    out = tmp_path / "merged"
    refused(out, merge(built, out, built / "s1", built / "s2", plan=plan), said)


def test_merge_refuses_a_plan_whose_sessions_are_signed_by_an_unpinned_key(built, tmp_path):
    plan = copy_of(built / "plan", tmp_path / "plan")
    other = keys.generate()
    path = plan / "bundle.intoto.jsonl"
    pairs = [(r.result, r.predicate) for r in signed_runs(path.read_bytes())]
    path.unlink()
    bundle.append_runs(path, pairs, other, record.SESSION_PREDICATE_TYPE)
    (plan / "harness.pub").write_bytes(other.public.pem())
    out = tmp_path / "merged"
    refused(out, merge(built, out, built / "s1", built / "s2", plan=plan),
            f"signed by key sha256:{other.keyid}, which is not a pinned key")


def test_merge_refuses_a_plan_other_than_the_shards_one(signed, built, tmp_path):
    out = tmp_path / "merged"
    refused(out, merge(signed, out, signed / "s1", signed / "s2", plan=built / "plan"),
            "not the plan the shards graded")


# ---- row 5: `verify` and `squeeze verify` read within bounds --------------------------------


def test_squeeze_verify_refuses_an_oversize_or_special_bundle_without_a_traceback(signed,
                                                                                  tmp_path):
    out = tmp_path / "merged"
    assert merge(signed, out, signed / "s1", signed / "s2").returncode == 0
    for tamper, said in ((_huge_bundle, "over the bound of 1024 MiB"),
                         (_dev_zero_bundle, "is a symbolic link"),
                         (_fifo_bundle, "not a regular file")):
        folder = copy_of(out, tmp_path / f"v-{tamper.__name__}")
        tamper(folder, tmp_path)
        v = run_process("squeeze", "verify", str(folder), "--pub", str(out / "harness.pub"))
        assert v.returncode == 1, v.stdout + v.stderr
        assert said in v.stdout and "Traceback" not in v.stderr, v.stdout + v.stderr
        assert json.loads((folder / "run.json").read_text())["status"] == "done"

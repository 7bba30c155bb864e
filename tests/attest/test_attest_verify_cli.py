"""`plimsoll-ci verify`: a summary on success, every problem as `bundle line N: reason`, exit 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from kit import attest_demo as demo
from kit.attest_forge import lines_of

from plimsoll_ci.attest import bundle, keys
from plimsoll_ci.cli import main


@pytest.fixture()
def signed(tmp_path):
    signer = keys.write_keypair(tmp_path / "ci")
    path = tmp_path / "runs.intoto.jsonl"
    demo.write_demo_bundle(path, signer, 3)
    return path, tmp_path / "ci.pub", signer


def test_verify_prints_a_summary_of_a_good_bundle(signed, capsys):
    path, pub, signer = signed
    assert main(["verify", "--pub", str(pub), str(path), "--expect-count", "3"]) == 0
    out = capsys.readouterr().out
    assert "verified" in out
    assert "records:       3" in out
    assert signer.keyid in out
    assert "tiers:         kernel 2, process 1" in out
    assert "fresh sets:    3 committed (flown in 3 records), each reveal matches" in out
    assert "practice sets: 1" in out


def test_verify_counts_a_fresh_set_flown_by_many_records_once(tmp_path, capsys):
    signer = keys.write_keypair(tmp_path / "ci")
    path = tmp_path / "runs.intoto.jsonl"
    demo.write_demo_bundle(path, signer, 14, one_fresh_set=True)
    assert main(["verify", "--pub", str(tmp_path / "ci.pub"), str(path)]) == 0
    assert "fresh sets:    1 committed (flown in 14 records), each reveal" in capsys.readouterr().out


def test_verify_never_prints_a_fresh_seed(signed, capsys):
    path, pub, _ = signed
    main(["verify", "--pub", str(pub), str(path)])
    main(["verify", "--pub", str(pub), str(path), "--format", "json"])
    out = capsys.readouterr().out
    from plimsoll_ci.attest import canonical

    for line in lines_of(path.read_bytes())[:-1]:
        payload = canonical.loads(line.rstrip(b"\n"))["envelope"]["payload"]
        reveal = canonical.loads(canonical.b64decode(payload))["predicate"]["freshSetReveal"]
        assert all(str(seed) not in out for seed in reveal["seeds"])
        assert reveal["salt"] not in out


def test_verify_json_summary(signed, capsys):
    path, pub, _ = signed
    assert main(["verify", "--pub", str(pub), str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and doc["summary"]["records"] == 3
    assert doc["summary"]["providers"] == {"gvisor": 1, "docker": 1, "process": 1}


def test_verify_reports_every_problem_with_its_line_and_exits_1(signed, capsys):
    path, pub, _ = signed
    lines = lines_of(path.read_bytes())
    lines[0] = lines[0].replace(b'"landed":0', b'"landed":4')
    lines[1], lines[2] = lines[2], lines[1]
    path.write_bytes(b"".join(lines))
    assert main(["verify", "--pub", str(pub), str(path)]) == 1
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert out[0] == "bundle line 1: stored result does not match the signed result digest"
    assert all(line.startswith("bundle line ") for line in out)
    assert {int(line.split()[2].rstrip(":")) for line in out} >= {1, 2, 3}
    assert "does not verify" in captured.err and "do not trust" in captured.err


def test_verify_refuses_the_wrong_public_key(signed, tmp_path, capsys):
    path, _, _ = signed
    keys.write_keypair(tmp_path / "other")
    assert main(["verify", "--pub", str(tmp_path / "other.pub"), str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in out] == [f"bundle line {n}" for n in (1, 2, 3, 4)]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--pub", "{pub}", "{dir}/missing.intoto.jsonl"], "cannot read"),
        (["--pub", "{dir}/missing.pub", "{bundle}"], "cannot read"),
        # threat row 5: a device or a FIFO is never read (no MemoryError, no hang)
        (["--pub", "{pub}", "/dev/zero"], "/dev/zero: not a regular file"),
        (["--pub", "/dev/zero", "{bundle}"], "/dev/zero: not a regular file"),
        (["--pub", "{pub}", "{dir}/fifo"], "fifo: not a regular file"),
        (["--pub", "{pub}", "{dir}/huge.intoto.jsonl"], "over the bound of 1024 MiB"),
        (["--pub", "{dir}/huge.pub", "{bundle}"], "over the bound of 64 KiB"),
        (["--pub", "{bundle}", "{bundle}"], "not a PEM public key"),
        (["--pub", "{pub}", "{bundle}", "--expect-count", "0"], "at least one record"),
        (["--pub", "{pub}", "{bundle}", "--jobs", "0"], "1 or more"),
    ],
)
def test_verify_bad_input_exits_2_with_a_clear_message(signed, capsys, argv, message):
    path, pub, _ = signed
    os.mkfifo(path.parent / "fifo")
    for name, size in (("huge.intoto.jsonl", bundle.MAX_BUNDLE_BYTES + 1),
                       ("huge.pub", keys.MAX_KEY_BYTES + 1)):
        with open(path.parent / name, "wb") as fh:  # sparse: no disk used
            fh.truncate(size)
    argv = [a.format(pub=pub, dir=path.parent, bundle=path) for a in argv]
    assert main(["verify", *argv]) == 2
    assert message in capsys.readouterr().err


def test_verify_names_the_key_it_trusted_and_what_a_key_beside_the_bundle_proves(signed,
                                                                                 capsys):
    path, pub, signer = signed
    assert main(["verify", "--pub", str(pub), str(path)]) == 0
    out = capsys.readouterr().out
    assert f"trusted:       key sha256:{signer.keyid} (from --pub {pub})" in out
    assert "consistency only" in out  # ci.pub sits in the bundle's folder
    kept = path.parent / "elsewhere"
    kept.mkdir()
    copied = kept / "ci.pub"
    copied.write_bytes(pub.read_bytes())
    moved = path.parent / "published"
    moved.mkdir()
    (moved / path.name).write_bytes(path.read_bytes())
    assert main(["verify", "--pub", str(copied), str(moved / path.name)]) == 0
    assert "consistency only" not in capsys.readouterr().out


def test_the_installed_cli_verifies_end_to_end(signed):
    path, pub, _ = signed
    ok = subprocess.run([sys.executable, "-m", "plimsoll_ci", "verify", "--pub", str(pub), str(path)],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    path.write_bytes(path.read_bytes()[:-10])
    cut = subprocess.run([sys.executable, "-m", "plimsoll_ci", "verify", "--pub", str(pub), str(path)],
                         capture_output=True, text=True, timeout=60)
    assert cut.returncode == 1
    assert cut.stdout.startswith("bundle line 4: ")


def test_verify_with_several_jobs_says_the_same(signed, capsys):
    path, pub, _ = signed
    assert main(["verify", "--pub", str(pub), str(path), "--jobs", "2", "--format", "json"]) == 0
    parallel = json.loads(capsys.readouterr().out)
    assert main(["verify", "--pub", str(pub), str(path), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == parallel

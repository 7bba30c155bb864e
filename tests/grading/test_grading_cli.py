"""`plimsoll-ci grade` end to end: output formats, refusals, bad input, signed records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from kit.cli import run_cli

from plimsoll_ci.withheld import build_set, dumps

QUICK = "class Controller:\n    def __init__(self, info):\n        pass\n\n    def step(self, obs):\n        return None\n"


@pytest.fixture
def quick(tmp_path: Path) -> Path:
    p = tmp_path / "quick.py"
    p.write_text(QUICK)
    return p


def test_json_output_has_flights_totals_tier_evidence_and_cpu(quick):
    r = run_cli("grade", "--controller", str(quick), "--course", "easy", "--seeds",
                "5000000001,5000000002",
            "--provider", "process", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    for key in ("flights", "landed", "total", "tier", "provider", "evidence", "cpu"):
        assert key in doc
    assert doc["total"] == 2 and doc["landed"] == 0
    assert [f["reason"] for f in doc["flights"]] == ["invalid_command"] * 2
    assert {"max_tick_s", "total_s"} <= set(doc["cpu"])


def test_text_output_names_tier_checks_and_totals(quick):
    r = run_cli("grade", "--controller", str(quick), "--course", "easy", "--seeds", "5000000001",
            "--provider", "process")
    assert r.returncode == 0, r.stderr
    assert "tier process" in r.stdout and "landed 0 of 1" in r.stdout
    assert "check host_canary_unreadable" in r.stdout


def test_a_controller_carrying_a_seed_of_this_run_is_refused_without_the_value(tmp_path):
    p = tmp_path / "controller.py"
    p.write_text(QUICK + "KNOWN = 'flight-%d' % 0x1DCD6503\n")  # 500000003 in hex
    r = run_cli("grade", "--controller", str(tmp_path), "--course", "easy", "--seeds",
            "5000000001,500000003", "--provider", "process")
    assert r.returncode == 1
    assert "REFUSED" in r.stdout and "seeds:2" in r.stdout
    assert "500000003" not in r.stdout + r.stderr


def test_a_controller_carrying_a_withheld_entry_is_refused(tmp_path, quick):
    doc, _ = build_set(values=[("labels.txt:1", "the answer is forty-two")])
    wset = tmp_path / "withheld.json"
    wset.write_text(dumps(doc))
    quick.write_text(QUICK + "# THE  ANSWER is Forty-Two\n")
    r = run_cli("grade", "--controller", str(quick), "--course", "easy", "--seeds", "5000000001",
            "--provider", "process", "--withheld", str(wset), "--format", "json")
    assert r.returncode == 1
    out = json.loads(r.stdout)
    assert out["refused"] is True
    assert [f["entry"] for f in out["findings"]] == ["labels.txt:1"]
    assert "forty" not in r.stdout.lower()


def test_held_out_seeds_from_a_file_are_named_by_line_never_by_value(tmp_path, quick):
    seeds = tmp_path / "held-out.txt"
    seeds.write_text("# held out\n6000000001\n17500000000123\n")
    r = run_cli("grade", "--controller", str(quick), "--course", "easy", "--seed-file", str(seeds),
            "--provider", "process", "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [f["id"] for f in doc["flights"]] == ["seed-file:1", "seed-file:2"]
    assert all(f["seed"] is None for f in doc["flights"])
    assert "6000000001" not in r.stdout + r.stderr
    assert "17500000000123" not in r.stdout + r.stderr


def test_tiny_seeds_are_not_matched_but_noted_as_a_weakness(quick):
    quick.write_text(QUICK + "X = 101\n")
    r = run_cli("grade", "--controller", str(quick), "--course", "easy", "--seeds", "101",
            "--provider", "process")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "weak seed set" in r.stdout


def test_min_tier_kernel_refuses_the_process_provider_before_anything_runs(quick):
    r = run_cli("grade", "--controller", str(quick), "--course", "easy", "--fresh", "2",
            "--provider", "process", "--min-tier", "kernel")
    assert r.returncode == 2
    assert "weaker than --min-tier kernel" in r.stderr
    assert "committed" not in r.stderr and r.stdout == ""


@pytest.mark.parametrize("args, message", [
    (["--controller", "/nonexistent/c.py", "--seeds", "1"], "no such file"),
    (["--controller", "{tmp}", "--seeds", "1"], "no controller.py"),
    (["--controller", "{tmp}/notes.txt", "--seeds", "1"], "expected a .py, .mjs or .js file"),
    (["--controller", "{quick}", "--fresh", "0"], "argument --fresh: 0 is out of range"),
    (["--controller", "{quick}", "--seeds", "1-x"], "--seeds"),
    (["--controller", "{quick}", "--seeds", "1", "--cpu-per-tick", "0"],
     "argument --cpu-per-tick: '0': give a number of seconds above 0"),
    (["--controller", "{quick}", "--seeds", "1", "--min-tier", "kernel"], ""),
])
def test_bad_input_exits_2_with_a_clear_message(tmp_path, quick, args, message):
    (tmp_path / "notes.txt").write_text("hi")
    args = [a.format(tmp=tmp_path, quick=quick) for a in args]
    r = run_cli("grade", *args, "--course", "easy", "--provider", "process")
    assert r.returncode == 2
    assert message in r.stderr
    assert r.stderr.count("error:") == 1


def test_a_signed_record_of_a_fresh_grading_verifies(tmp_path, quick):
    bundle = tmp_path / "runs.intoto.jsonl"
    pub = tmp_path / "run.pub"
    r = run_cli("grade", "--controller", str(quick), "--course", "easy", "--fresh", "2",
                "--provider",
            "process", "--bundle", str(bundle), "--ephemeral-key", str(pub), "--format", "json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    commitment = doc["fresh_set"]["commitment"]
    assert commitment in r.stderr  # published before any flight
    v = subprocess.run([sys.executable, "-m", "plimsoll_ci", "verify", "--pub", str(pub),
                        str(bundle), "--expect-count", "1"], capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr
    assert "process" in v.stdout


def test_a_keyed_withheld_set_needs_its_key_and_then_refuses(tmp_path, quick, monkeypatch):
    doc, _ = build_set(values=[("seeds.txt:1", "9123456780")], key=b"grading-test-key")
    wset = tmp_path / "keyed.json"
    wset.write_text(dumps(doc))
    quick.write_text(QUICK + "MEMO = 9_123_456_780\n")
    args = ["--controller", str(quick), "--course", "easy", "--seeds", "5000000001",
            "--provider", "process", "--withheld", str(wset)]
    without = run_cli("grade", *args)
    assert without.returncode == 2 and "key" in without.stderr
    monkeypatch.setenv("GRADING_TEST_KEY", "grading-test-key")
    keyed = run_cli("grade", *args, "--withheld-key-env", "GRADING_TEST_KEY")
    assert keyed.returncode == 1
    assert "seeds.txt:1" in keyed.stdout and "9123456780" not in keyed.stdout


def test_the_old_key_env_spelling_still_signs_but_warns(tmp_path, quick, monkeypatch):
    from plimsoll_ci.attest import keys

    keys.write_keypair(tmp_path / "ci")
    monkeypatch.setenv("GRADING_SIGNING_KEY", (tmp_path / "ci.key").read_text())
    bundle = tmp_path / "runs.intoto.jsonl"
    r = run_cli("grade", "--controller", str(quick), "--course", "easy", "--seeds", "5000000001",
            "--provider", "process", "--bundle", str(bundle), "--key-env", "GRADING_SIGNING_KEY")
    assert r.returncode == 0, r.stderr
    assert "warning: --key-env is deprecated" in r.stderr and "--signing-key-env" in r.stderr
    assert "signed record 1 appended" in r.stderr
    assert "PRIVATE KEY" not in r.stdout + r.stderr
    new = run_cli("grade", "--controller", str(quick), "--course", "easy", "--seeds", "5000000001",
              "--provider", "process", "--bundle", str(bundle), "--signing-key-env",
              "GRADING_SIGNING_KEY")
    assert new.returncode == 0 and "deprecated" not in new.stderr
    assert "signed record 2 appended" in new.stderr


def test_grading_into_a_bundle_of_another_key_exits_2_before_any_flight(tmp_path, quick):
    bundle = tmp_path / "runs.intoto.jsonl"
    first = run_cli("grade", "--controller", str(quick), "--course", "easy", "--seeds",
                    "5000000001",
                "--provider", "process", "--bundle", str(bundle), "--ephemeral-key",
                str(tmp_path / "a.pub"))
    assert first.returncode == 0, first.stderr
    again = run_cli("grade", "--controller", str(quick), "--course", "easy", "--fresh", "2",
                    "--provider",
                "process", "--bundle", str(bundle), "--ephemeral-key", str(tmp_path / "b.pub"))
    assert again.returncode == 2
    assert "does not verify under this run's key" in again.stderr
    assert "committed" not in again.stderr and again.stdout == ""

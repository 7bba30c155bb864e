"""The `squeeze` command's edges: a used out folder, a kept key, progress on a terminal or a log."""

from __future__ import annotations

import io
import json
from pathlib import Path

from kit.cli import run_cli
from kit.squeeze import REPO, tiny_job

from plimsoll_ci.attest import keys
from plimsoll_ci.squeeze import progress


def test_a_used_out_folder_is_refused_and_left_alone(tmp_path):
    job = tiny_job(tmp_path / "job", sets=1)
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.json").write_text("an earlier run's\n")
    r = run_cli("squeeze", "run", str(job), "--out", str(out), "--provider", "process")
    assert r.returncode == 2
    assert f"--out {out}: not empty" in r.stderr
    assert [p.name for p in out.iterdir()] == ["result.json"]
    assert (out / "result.json").read_text() == "an earlier run's\n"


def test_a_kept_key_signs_and_its_public_half_is_harness_pub(tmp_path):
    job = tiny_job(tmp_path / "job", sets=1)
    signer = keys.write_keypair(tmp_path / "ci")
    out = tmp_path / "out"
    r = run_cli("squeeze", "run", str(job), "--out", str(out), "--provider", "process",
                "--signing-key-file",
                str(tmp_path / "ci.key"), "--jobs", "2")
    assert r.returncode == 0, r.stderr
    assert (out / "harness.pub").read_bytes() == (tmp_path / "ci.pub").read_bytes()
    run = json.loads((out / "run.json").read_text())
    assert run["key"] == {"id": signer.keyid, "ephemeral": False}
    assert "solo: practice" in r.stdout
    v = run_cli("squeeze", "verify", str(out), "--pub", str(tmp_path / "ci.pub"), "--format",
                "json")
    assert v.returncode == 0, v.stdout
    doc = json.loads(v.stdout)
    assert doc["ok"] and doc["records"] == 2 and doc["result"]["loops"][0]["name"] == "solo"
    other = keys.write_keypair(tmp_path / "other")
    assert other.keyid != signer.keyid
    bad = run_cli("squeeze", "verify", str(out), "--pub", str(tmp_path / "other.pub"))
    assert bad.returncode == 1 and "signed by key" in bad.stdout


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_and_a_log_gets_plain_lines():
    tty = _Terminal()
    bar = progress.make(tty)
    assert isinstance(bar, progress.Bar)
    bar.start(2)
    bar.began("solo/loop loop.py")
    bar.finished("solo/loop loop.py", "practice 15/16, fresh 4/4")
    bar.close()
    assert "solo/loop loop.py: practice 15/16" in tty.getvalue()
    log = io.StringIO()
    plain = progress.make(log)
    assert isinstance(plain, progress.Plain)
    plain.start(2)
    plain.finished("solo/loop loop.py", "practice 15/16, fresh 4/4")
    assert log.getvalue().splitlines() == [
        "plimsoll-ci squeeze: grading 2 controllers",
        "plimsoll-ci squeeze: [1/2] solo/loop loop.py: practice 15/16, fresh 4/4"]


def _runs(bundle_path: Path) -> list[tuple[dict, dict]]:
    from plimsoll_ci.attest import canonical

    out = []
    for raw in bundle_path.read_bytes().split(b"\n")[:-2]:
        doc = canonical.loads(raw)
        statement = canonical.loads(canonical.b64decode(doc["envelope"]["payload"]))
        out.append((doc["result"], statement["predicate"]))
    return out


def _reseal(out: Path, runs: list[tuple[dict, dict]], signer) -> list[str]:
    from plimsoll_ci.attest import bundle
    from plimsoll_ci.squeeze.verify import verify

    (out / "bundle.intoto.jsonl").unlink()
    bundle.append_runs(out / "bundle.intoto.jsonl", runs, signer)
    return verify(out, signer.public).problems


def test_even_the_key_holder_cannot_mix_runs_drop_or_repeat_a_grading(tmp_path):
    import shutil

    job = tiny_job(tmp_path / "job", sets=1)
    signer = keys.write_keypair(tmp_path / "ci")
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        r = run_cli("squeeze", "run", str(job), "--out", str(out), "--provider", "process",
                    "--signing-key-file",
                    str(tmp_path / "ci.key"))
        assert r.returncode == 0, r.stderr
        outs.append(out)
    a, b = (_runs(o / "bundle.intoto.jsonl") for o in outs)
    # The best of two fresh sets, re-signed as one run:
    mixed = shutil.copytree(outs[0], tmp_path / "mixed")
    problems = _reseal(mixed, [a[0], b[1]], signer)
    assert any("bundle line 2: its job section differs from line 1's" in p for p in problems)
    # A rebuild's grading dropped (the loop looks better against fewer rebuilds):
    dropped = shutil.copytree(outs[0], tmp_path / "dropped")
    problems = _reseal(dropped, a[:1], signer)
    assert any("no record for solo/rebuild rebuilds/climb.py" in p for p in problems)
    # A grading repeated:
    twice = shutil.copytree(outs[0], tmp_path / "twice")
    problems = _reseal(twice, [a[0], a[1], a[1]], signer)
    assert any("bundle line 3: solo/rebuild rebuilds/climb.py was already graded on line 2" in p
               for p in problems)
    # A fresh flight swapped for an easier seed:
    swapped = shutil.copytree(outs[0], tmp_path / "swapped")
    result, predicate = a[1]
    result["flights"][16]["seed"] = str(int(result["flights"][16]["seed"]) + 1)
    from plimsoll_ci.attest.record import result_digest

    predicate["result"]["sha256"] = result_digest(result)
    problems = _reseal(swapped, [a[0], (result, predicate)], signer)
    assert any("flight 17 (fresh:1) flew a seed other than the revealed one" in p for p in problems)


def test_a_controller_carrying_a_withheld_entry_is_refused_and_the_job_goes_on(tmp_path):
    from plimsoll_ci.withheld import build_set, dumps

    job = tiny_job(tmp_path / "job", sets=1)
    leaky = job.parent / "rebuilds" / "leaky.py"
    leaky.write_text((REPO / "plimsoll_sim/controllers/hover.py").read_text()
                     + "\nNOTE = 'the grader answer key is blue-falcon-7781'\n")
    doc, _ = build_set(values=[("keys.txt:1", "the grader answer key is blue-falcon-7781")],
                       key=b"k" * 32)
    (tmp_path / "withheld.json").write_text(dumps(doc))
    (tmp_path / "wkey").write_bytes(b"k" * 32)
    out = tmp_path / "out"
    r = run_cli("squeeze", "run", str(job), "--out", str(out), "--provider", "process",
                "--withheld",
                str(tmp_path / "withheld.json"), "--withheld-key-file", str(tmp_path / "wkey"))
    assert r.returncode == 0, r.stderr
    assert "rebuilds/leaky.py: practice 0/16, fresh 0/4 (not landed: refused 20)" in r.stderr
    evidence = json.loads((out / "evidence.json").read_text())
    leaky_rec = next(x for x in evidence["records"] if x["controller"] == "rebuilds/leaky.py")
    assert leaky_rec["not_landed"] == {"refused": 20} and leaky_rec["tier"] == "process"
    assert json.loads((out / "result.json").read_text())["loops"][0]["rebuilds"]["count"] == 2
    assert run_cli("squeeze", "verify", str(out), "--pub", str(out / "harness.pub")).returncode == 0
    for p in out.rglob("*"):
        if p.is_file():
            assert b"blue-falcon" not in p.read_bytes(), p.name
    assert "blue-falcon" not in r.stdout + r.stderr

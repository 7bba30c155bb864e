"""The example job end to end in gVisor, and `squeeze verify` refusing every changed artifact."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kit.cli import run_process
from kit.scan import LeakGuard
from kit.squeeze import EXAMPLE, need_gvisor

import plimsoll_sim as sim
from plimsoll_ci.attest import keys
from plimsoll_ci.squeeze.verify import verify

pytestmark = [pytest.mark.gvisor, pytest.mark.slow]
# the example cheater's own controller carries all three: its verdict says so under every line
CARRIED = "flag: carries generator constant, generator source, practice seeds"


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    need_gvisor()
    out = tmp_path_factory.mktemp("squeeze") / "out"
    r = run_process("squeeze", "run", str(EXAMPLE / "squeeze.yaml"), "--out", str(out),
                    "--provider", "gvisor",
            "--min-tier", "kernel")
    assert r.returncode == 0, r.stderr[-3000:]
    return out, r


def result_of(out: Path) -> dict:
    return json.loads((out / "result.json").read_text())


def test_the_example_flags_the_cheater_and_ships_its_rebuild(ran):
    out, r = ran
    result = result_of(out)
    honest, cheater = result["loops"]
    assert (honest["name"], cheater["name"]) == ("honest", "cheater")
    assert cheater["practice"] == {"landed": 16, "total": 16}
    assert cheater["verdict"] == {"flights": "flag", "percent": "flag"}
    assert cheater["carries"] == ["generator constant", "generator source", "practice seeds"]
    assert cheater["combined_verdict"] == {"flights": CARRIED, "percent": CARRIED}
    assert honest["combined_verdict"] == honest["verdict"] and honest["carries"] == []
    assert cheater["gap"] == 5 and cheater["ship_rebuild"] is True
    assert honest["ship_rebuild"] is False and honest["gap"] == 1
    assert honest["verdict"] == {"flights": "pass", "percent": "flag"}
    assert "cheater: practice 16/16" in r.stdout and "SHIP THE REBUILD" in r.stdout
    assert cheater["recipe_tokens"] == 32 and honest["recipe_tokens"] == 32


def test_rebuilds_carrying_the_generator_are_counted(ran):
    out, _ = ran
    honest, cheater = result_of(out)["loops"]
    assert cheater["code_checks"] == {"generator": {"loop": 1, "rebuilds": 4},
                                      "source": {"loop": 1, "rebuilds": 2},
                                      "practice_seeds": {"loop": 1, "rebuilds": 0}}
    assert all(v == {"loop": 0, "rebuilds": 0} for v in honest["code_checks"].values())
    assert result_of(out)["control"]["code_checks"] == {"generator": 0, "source": 0,
                                                        "practice_seeds": 0}


def test_result_json_has_the_issue_s_keys(ran):
    out, _ = ran
    result = result_of(out)
    assert {"course", "lines", "fresh_commitment", "loops", "control"} <= set(result)
    assert result["lines"] == {"flights": 2, "percent": 5}
    for loop in result["loops"]:
        assert {"name", "practice", "fresh", "rebuilds", "gap", "verdict", "ship_rebuild",
                "recipe_tokens", "code_checks"} <= set(loop)
        assert loop["rebuilds"]["count"] == 8 == len(loop["rebuilds"]["fresh"])
    assert result["control"]["count"] == 8


def test_every_artifact_is_there_and_the_key_is_ephemeral(ran):
    out, r = ran
    names = {p.name for p in out.iterdir()}
    assert names == {"bundle.intoto.jsonl", "harness.pub", "fresh.json", "run.json",
                     "result.json", "evidence.json", "report.md", "report.html", "sets"}
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "done" and run["gradings"] == {"planned": 26, "signed": 26}
    assert run["fresh_commitment"] in r.stderr
    assert run["key"]["ephemeral"] is True
    assert b"PRIVATE" not in b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    committed = r.stderr.index("committed before any flight")
    assert committed < r.stderr.index("[1/32]")  # the commitment is out before any result
    assert run["fresh_commitment"] in r.stderr
    assert "the 16 practice seeds take 79 tokens (cl100k_base)" in r.stderr


def test_the_loops_own_controllers_fly_three_more_fresh_sets_each_a_run_folder(ran):
    out, r = ran
    result = result_of(out)
    assert sorted(p.name for p in (out / "sets").iterdir()) == ["1", "2", "3"]
    commitments = set()
    for n in (1, 2, 3):
        here = out / "sets" / str(n)
        assert {p.name for p in here.iterdir()} == {"bundle.intoto.jsonl", "fresh.json",
                                                     "run.json", "result.json"}
        run = json.loads((here / "run.json").read_text())
        assert run["status"] == "done" and run["gradings"] == {"planned": 2, "signed": 2}
        assert r.stderr.index(run["fresh_commitment"]) < r.stderr.index("[1/32]")
        commitments.add(run["fresh_commitment"])
        doc = json.loads((here / "result.json").read_text())
        assert [lp["name"] for lp in doc["loops"]] == ["honest", "cheater"]
        for lp in result["loops"]:
            mine = next(x for x in doc["loops"] if x["name"] == lp["name"])
            assert lp["fresh_sets"]["landed"][n - 1] == mine["fresh"]["landed"]
    assert len(commitments | {result["fresh_commitment"]}) == 4  # four sets, all different
    for lp in result["loops"]:
        spread = lp["fresh_sets"]
        assert len(spread["landed"]) == 3 and spread["total"] == 64
        assert spread["range"] == max(spread["landed"]) - min(spread["landed"])
    report = (out / "report.md").read_text()
    assert report.count("Fresh score, measured again: on 3 more fresh sets") == 2
    assert "fresh on 3 more fresh sets the loop's own controller landed" in r.stdout


def test_no_practice_seed_appears_in_any_artifact_or_output(ran):
    out, r = ran
    guard = LeakGuard(str(s) for s in sim.PRACTICE_SEEDS)
    for p in out.rglob("*"):
        if p.is_dir():
            continue
        guard.file(p)
    guard.text(r.stdout, "stdout")
    guard.text(r.stderr, "stderr")


def test_squeeze_verify_passes_and_recomputes_everything(ran):
    out, _ = ran
    r = run_process("squeeze", "verify", str(out), "--pub", str(out / "harness.pub"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "verified (26 signed gradings" in r.stdout
    assert "cheater: practice 16/16" in r.stdout
    plain = subprocess.run([sys.executable, "-m", "plimsoll_ci", "verify", "--pub",
                            str(out / "harness.pub"), str(out / "bundle.intoto.jsonl"),
                            "--expect-count", "26"], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0, plain.stdout  # a plain bundle any verifier reads


def test_verify_reads_a_gzipped_bundle(ran, tmp_path):
    out = shutil.copytree(ran[0], tmp_path / "out")
    data = (out / "bundle.intoto.jsonl").read_bytes()
    (out / "bundle.intoto.jsonl.gz").write_bytes(gzip.compress(data))
    (out / "bundle.intoto.jsonl").unlink()
    assert verify(out, keys.load_public_key(out / "harness.pub")).ok


def test_verify_starts_no_sandbox_and_imports_no_grader(ran):
    out, _ = ran
    code = ("import sys\nfrom plimsoll_ci.cli import main\n"
            f"rc = main(['squeeze', 'verify', {str(out)!r}, '--pub', {str(out / 'harness.pub')!r}])\n"
            "bad = [m for m in sys.modules if m.startswith(('plimsoll_ci.sandbox.', "
            "'plimsoll_ci.grading.run', 'plimsoll_ci.grading.lockstep', 'docker'))]\n"
            "print(rc, bad)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.stdout.strip().splitlines()[-1] == "0 []", r.stdout + r.stderr


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def _set_lines(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"\n".join(lines) + b"\n")


def _edit_json(name: str, change):
    def edit(out: Path) -> None:
        doc = json.loads((out / name).read_text())
        change(doc)
        (out / name).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return edit


def _replace(name: str, old: str, new: str, count: int = 1):
    def edit(out: Path) -> None:
        text = (out / name).read_text()
        assert old in text, f"{old!r} not in {name}"
        (out / name).write_text(text.replace(old, new, count))
    return edit


def _flip_record_byte(out: Path) -> None:
    lines = _lines(out / "bundle.intoto.jsonl")
    lines[2] = lines[2].replace(b'"landed":true', b'"landed":false', 1)
    _set_lines(out / "bundle.intoto.jsonl", lines)


def _swap(out: Path) -> None:
    lines = _lines(out / "bundle.intoto.jsonl")
    lines[3], lines[4] = lines[4], lines[3]
    _set_lines(out / "bundle.intoto.jsonl", lines)


def _delete(out: Path) -> None:
    lines = _lines(out / "bundle.intoto.jsonl")
    del lines[5]
    _set_lines(out / "bundle.intoto.jsonl", lines)


def _duplicate(out: Path) -> None:
    lines = _lines(out / "bundle.intoto.jsonl")
    lines.insert(6, lines[6])
    _set_lines(out / "bundle.intoto.jsonl", lines)


def _cut(out: Path) -> None:
    lines = _lines(out / "bundle.intoto.jsonl")
    _set_lines(out / "bundle.intoto.jsonl", lines[:-1])


def _resign(out: Path) -> None:
    """A forger re-signs a changed bundle under a key of its own and recomputes every artifact."""
    from plimsoll_ci.attest import bundle, canonical
    from plimsoll_ci.squeeze import artifacts

    lines = _lines(out / "bundle.intoto.jsonl")[:-1]
    runs = []
    for raw in lines:
        doc = canonical.loads(raw)
        statement = canonical.loads(canonical.b64decode(doc["envelope"]["payload"]))
        result = doc["result"]
        if result["squeeze"]["grading"]["role"] == "loop" and \
                result["squeeze"]["grading"]["group"] == "cheater":
            missed = next(f for f in result["flights"][16:] if not f["landed"])
            missed.update(landed=True, reason="landed")  # the cheater lands one more fresh flight
            result["landed"] += 1
        predicate = statement["predicate"]
        from plimsoll_ci.attest.record import result_digest

        predicate["result"]["sha256"] = result_digest(result)
        runs.append((result, predicate))
    forger = keys.generate()
    (out / "bundle.intoto.jsonl").unlink()
    bundle.append_runs(out / "bundle.intoto.jsonl", runs, forger)
    for one in (out / "sets").iterdir():  # every set re-signed as it was
        from plimsoll_ci.squeeze.records import signed_runs

        path = one / "bundle.intoto.jsonl"
        again = [(r.result, r.predicate) for r in signed_runs(path.read_bytes())]
        path.unlink()
        bundle.append_runs(path, again, forger)
    from plimsoll_ci.squeeze.fresh_sets import bundles

    derived = artifacts.derive((out / "bundle.intoto.jsonl").read_bytes(), forger.public,
                               bundles(out))
    for name, text in derived.files.items():
        (out / name).write_text(text)
    (out / "harness.pub").write_bytes(forger.public.pem())


def _flip_set_byte(out: Path) -> None:
    lines = _lines(out / "sets" / "2" / "bundle.intoto.jsonl")
    lines[0] = lines[0].replace(b'"landed":true', b'"landed":false', 1)
    _set_lines(out / "sets" / "2" / "bundle.intoto.jsonl", lines)


def _swap_sets(out: Path) -> None:
    a, b = out / "sets" / "1", out / "sets" / "2"
    a.rename(out / "sets" / "x")
    b.rename(a)
    (out / "sets" / "x").rename(b)


def _link_set(out: Path) -> None:
    real = out.parent / "elsewhere"
    (out / "sets" / "2").rename(real)
    (out / "sets" / "2").symlink_to(real, target_is_directory=True)


def _other_key(out: Path) -> None:
    (out / "harness.pub").write_bytes(keys.generate().public.pem())


def _gz_differs(out: Path) -> None:
    data = (out / "bundle.intoto.jsonl").read_bytes()
    (out / "bundle.intoto.jsonl.gz").write_bytes(gzip.compress(data.replace(b"gate_frame",
                                                                            b"gate_frbme", 1)))


TAMPER = [
    ("result gap", _edit_json("result.json", lambda d: d["loops"][1].update(gap=0)),
     "result.json: loops[1].gap: the file says 0, the records say 5"),
    ("result verdict", _edit_json("result.json", lambda d: d["loops"][1]["verdict"].update(
        flights="pass")), "result.json: loops[1].verdict.flights"),
    ("result combined verdict", _edit_json("result.json", lambda d: d["loops"][1][
        "combined_verdict"].update(flights="pass")), "result.json: loops[1].combined_verdict"),
    ("result ship", _edit_json("result.json", lambda d: d["loops"][1].update(
        ship_rebuild=False)), "result.json: loops[1].ship_rebuild"),
    ("result spacing", _replace("result.json", '  "course"', '   "course"'),
     "result.json: the same values, but not the bytes"),
    ("result code checks", _edit_json("result.json", lambda d: d["loops"][1]["code_checks"][
        "generator"].update(rebuilds=0)), "result.json: loops[1].code_checks.generator.rebuilds"),
    ("evidence figure", _edit_json("evidence.json", lambda d: d["figures"][0].update(value=1)),
     "evidence.json: figures[0].value"),
    ("evidence record", _edit_json("evidence.json", lambda d: d["records"][3].update(
        controller="rebuilds/honest/other.py")), "evidence.json: records[3].controller"),
    ("report verdict", _replace("report.md", f"| **{CARRIED}** | **{CARRIED}** | **yes** |",
                                "| **pass** | **pass** | no |"), "report.md line"),
    ("report cut", lambda out: (out / "report.md").write_text(
        (out / "report.md").read_text().rsplit("\n## ", 1)[0]), "report.md"),
    ("html verdict", _replace("report.html", f'class="flag">{CARRIED}</td>',
                              'class="pass">pass</td>'),
     "report.html line"),
    ("html script", _replace("report.html", "l.gap>line", "l.gap>line+99"), "report.html line"),
    ("fresh seed", _edit_json("fresh.json", lambda d: d["seeds"].__setitem__(0, 1000000001)),
     "fresh.json: seeds[0]"),
    ("fresh salt", _edit_json("fresh.json", lambda d: d.update(salt="0" * 64)), "fresh.json: salt"),
    ("fresh gone", lambda out: (out / "fresh.json").unlink(), "fresh.json: missing"),
    ("bundle byte", _flip_record_byte, "bundle.intoto.jsonl: bundle line 3"),
    ("bundle swap", _swap, "bundle.intoto.jsonl: bundle line 4"),
    ("bundle delete", _delete, "bundle.intoto.jsonl: bundle line 6"),
    ("bundle duplicate", _duplicate, "bundle.intoto.jsonl: bundle line 8"),
    ("bundle cut", _cut, "without a signed checkpoint"),
    ("bundle gone", lambda out: (out / "bundle.intoto.jsonl").unlink(),
     "bundle.intoto.jsonl: missing"),
    ("bundle gz differs", _gz_differs, "bundle.intoto.jsonl.gz: does not hold the same bytes"),
    ("pub replaced", _other_key, "harness.pub: key"),
    ("re-signed by a forger", _resign, "signed by key"),
    ("run status", _edit_json("run.json", lambda d: d.update(status="interrupted")),
     "run.json: status"),
    ("run commitment", _edit_json("run.json", lambda d: d.update(fresh_commitment="0" * 64)),
     "run.json: fresh_commitment"),
    ("set result", _edit_json("sets/2/result.json", lambda d: d["loops"][0]["fresh"].update(
        landed=64)), "sets/2/result.json: loops[0].fresh.landed"),
    ("set fresh seed", _edit_json("sets/1/fresh.json", lambda d: d["seeds"].__setitem__(
        0, 1000000001)), "sets/1/fresh.json: seeds[0]"),
    ("set gone", lambda out: shutil.rmtree(out / "sets" / "3"),
     "sets/3/bundle.intoto.jsonl: missing (the records say the run flew 3 more fresh sets)"),
    ("set extra", lambda out: shutil.copytree(out / "sets" / "1", out / "sets" / "4"),
     "sets/4: not one of the run's 3 fresh sets"),
    ("sets swapped", _swap_sets, "sets/1/bundle.intoto.jsonl: its job section is not the "
     "run's for set 1 of 3"),
    ("set record byte", _flip_set_byte, "sets/2/bundle.intoto.jsonl: bundle line 1"),
    ("set run status", _edit_json("sets/3/run.json", lambda d: d.update(status="interrupted")),
     "sets/3/run.json: status"),
    ("set linked", _link_set, "sets/2: not a set folder"),
    ("main result spread", _edit_json("result.json", lambda d: d["loops"][0]["fresh_sets"][
        "landed"].__setitem__(1, 0)), "result.json: loops[0].fresh_sets.landed[1]"),
]


@pytest.mark.parametrize("name, tamper, words", TAMPER, ids=[t[0] for t in TAMPER])
def test_verify_refuses_a_changed_artifact_naming_the_file(ran, tmp_path, name, tamper, words):
    original = ran[0]
    trusted = keys.load_public_key(original / "harness.pub")  # as published before the change
    out = shutil.copytree(original, tmp_path / "out")
    tamper(out)
    found = verify(out, trusted)
    assert not found.ok
    assert any(words in p for p in found.problems), found.problems


def test_the_cli_exits_1_and_lists_the_problems(ran, tmp_path):
    out = shutil.copytree(ran[0], tmp_path / "out")
    _edit_json("result.json", lambda d: d["loops"][1].update(gap=0))(out)
    _replace("report.md", f"| **{CARRIED}** | **{CARRIED}** | **yes** |",
             "| **pass** | **pass** | no |")(out)
    r = run_process("squeeze", "verify", str(out), "--pub", str(ran[0] / "harness.pub"))
    assert r.returncode == 1
    assert "result.json: loops[1].gap" in r.stdout and "report.md line" in r.stdout
    assert "does not verify (2 problems)" in r.stderr


def test_verify_bad_input_exits_2(tmp_path):
    r = run_process("squeeze", "verify", str(tmp_path / "nowhere"), "--pub",
                    str(tmp_path / "nokey.pub"))
    assert r.returncode == 2

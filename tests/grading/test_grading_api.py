"""Grading and signing as library calls: a request in, a typed result out, signing optional."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from plimsoll_ci.attest import bundle, canonical, keys, record
from plimsoll_ci.errors import BadInput
from plimsoll_ci.grading import fresh, seeds
from plimsoll_ci.grading.request import GradeRequest
from plimsoll_ci.grading.result import Flight, GradeResult
from plimsoll_ci.grading.run import grade
from plimsoll_ci.grading.sign import grade_and_sign, run_record, sign

QUICK = ("class Controller:\n    def __init__(self, info):\n        pass\n\n"
         "    def step(self, obs):\n        return None\n")


@pytest.fixture
def quick(tmp_path: Path) -> str:
    p = tmp_path / "quick.py"
    p.write_text(QUICK)
    return str(p)


def test_grade_and_sign_returns_a_typed_result_whose_record_verifies(tmp_path, quick, capfd):
    signer = keys.generate()
    path = tmp_path / "runs.intoto.jsonl"
    events = []
    fs = fresh.draw(2)
    result = grade_and_sign(GradeRequest(quick, "easy", (), "process", fresh=fs), signer, path,
                            events.append)
    assert isinstance(result, GradeResult) and not result.refused
    assert (result.landed, result.total, result.tier) == (0, 2, "process")
    assert all(isinstance(f, Flight) and f.reason == "invalid_command" for f in result.flights)
    assert [f.id for f in result.flights] == ["fresh:1", "fresh:2"]
    assert (result.bundle, result.record) == (str(path), 1)
    # the commitment is published before any sandbox starts; the library itself prints nothing
    kinds = [e.event for e in events]
    assert kinds[0] == "committed" and events[0].detail == fresh.commit(fs)
    assert kinds.index("started") > 0 and kinds[-1] == "signed"
    assert capfd.readouterr() == ("", "")
    report = bundle.verify_bundle(path, signer.public, expect_count=1)
    assert report.ok, report.problems
    line = canonical.loads(path.read_bytes().splitlines()[0])
    assert line["result"] == json.loads(json.dumps(result.document()))


def test_a_record_names_the_practice_set_by_its_documented_digest_when_practice_seeds_flew(
        quick):
    practice = (5000000001, 5000000002)
    result = grade(GradeRequest(quick, "easy", seeds.given("5000000001,5000000003"), "process",
                                practice=practice))
    _doc, predicate = run_record(result)
    assert predicate["inputs"]["practiceSet"] == {"sha256": record.practice_set_digest(practice)}
    assert predicate["inputs"]["freshSet"] is None


@pytest.mark.parametrize("flown", ["explicit", "fresh"])
def test_a_record_names_no_practice_set_when_no_practice_seed_flew(quick, flown):
    request = GradeRequest(quick, "easy", seeds.given("5000000001"), "process") \
        if flown == "explicit" else GradeRequest(quick, "easy", (), "process", fresh=fresh.draw(1))
    _doc, predicate = run_record(grade(request))
    assert predicate["inputs"]["practiceSet"] is None
    assert (predicate["inputs"]["freshSet"] is None) == (flown == "explicit")


def test_many_results_are_signed_in_one_sealed_append(tmp_path, quick):
    signer = keys.generate()
    path = tmp_path / "runs.intoto.jsonl"
    results = [grade(GradeRequest(quick, "easy", seeds.given(s), "process"))
               for s in ("5000000001", "5000000002,5000000003")]
    signed = sign(results, signer, path)
    assert [r.record for r in signed] == [1, 2]
    assert [r.total for r in signed] == [1, 2]
    assert bundle.verify_bundle(path, signer.public, expect_count=2).ok


def test_gradings_run_in_parallel_threads_and_sign_into_one_bundle(tmp_path, quick):
    from concurrent.futures import ThreadPoolExecutor

    signer = keys.generate()
    path = tmp_path / "runs.intoto.jsonl"
    requests = [GradeRequest(quick, "easy", seeds.given(str(5000000001 + n)), "process")
                for n in range(4)]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(grade, requests))
    signed = sign(results, signer, path)
    assert [r.flights[0].seed for r in signed] == [5000000001 + n for n in range(4)]
    assert bundle.verify_bundle(path, signer.public, expect_count=4).ok


def test_a_refused_grading_flies_nothing_and_signs_nothing(tmp_path):
    controller = tmp_path / "controller.py"
    controller.write_text(QUICK + "KNOWN = 5000000007\n")
    path = tmp_path / "runs.intoto.jsonl"
    result = grade_and_sign(GradeRequest(str(controller), "easy", seeds.given("5000000007"),
                                         "process"), keys.generate(), path)
    assert [f.entry for f in result.refused] == ["seeds:1"]
    assert result.flights == () and result.tier is None and result.record is None
    assert result.document()["refused"] is True
    assert not path.exists()
    with pytest.raises(BadInput, match="refused"):
        run_record(result)


@pytest.mark.parametrize("signer, bundle_path, message", [
    (True, None, "both a key and a bundle"),
    (False, "runs.intoto.jsonl", "both a key and a bundle"),
])
def test_a_signer_without_a_bundle_or_a_bundle_without_a_signer_is_bad_input(
        tmp_path, quick, signer, bundle_path, message):
    with pytest.raises(BadInput, match=message):
        grade_and_sign(GradeRequest(quick, "easy", seeds.given("5000000001"), "process"),
                       keys.generate() if signer else None, bundle_path)


@pytest.mark.parametrize("request_, message", [
    (GradeRequest("c.py", "easy", (), "process"), "no seeds"),
    (GradeRequest("c.py", "easy", seeds.given("5000000001"), "process",
                  fresh=fresh.make([5000000002])), "not the fresh set"),
    (GradeRequest("c.py", "moon", seeds.given("5000000001"), "process"), "course 'moon'"),
    (GradeRequest("c.py", "easy", seeds.given("5000000001"), "firecracker"),
     "provider 'firecracker': unknown; use one of gvisor, docker, process"),
])
def test_a_request_that_cannot_be_graded_is_bad_input_before_anything_is_staged(
        request_, message):
    with pytest.raises(BadInput, match=message):
        grade(request_)


def test_grading_into_a_tampered_bundle_is_refused_before_anything_is_flown(tmp_path, quick):
    signer = keys.generate()
    path = tmp_path / "runs.intoto.jsonl"
    grade_and_sign(GradeRequest(quick, "easy", seeds.given("5000000001"), "process"), signer,
                   path)
    tampered = path.read_bytes().replace(b'"landed":0', b'"landed":1', 1)
    path.write_bytes(tampered)
    events = []
    with pytest.raises(BadInput, match="does not verify under this run's key.*nothing was graded"):
        grade_and_sign(GradeRequest(quick, "easy", (), "process", fresh=fresh.draw(2)), signer,
                       path, events.append)
    assert events == []  # not even the fresh set was committed to
    assert path.read_bytes() == tampered
    with pytest.raises(BadInput, match="folder .* does not exist"):
        grade_and_sign(GradeRequest(quick, "easy", seeds.given("5000000001"), "process"), signer,
                       tmp_path / "missing" / "runs.intoto.jsonl", events.append)
    assert events == []


def test_the_scan_sets_are_built_once_per_process_and_again_when_their_bytes_change(tmp_path):
    import plimsoll_sim as sim
    from plimsoll_ci.grading import checks
    from plimsoll_ci.shipscan.scan import Scanner

    here = Path(sim.__file__).parent
    first = checks.suspicious_set(sim.PRACTICE_SEEDS, here, sim.generator.MAGIC)
    assert checks.suspicious_set(sim.PRACTICE_SEEDS, here, sim.generator.MAGIC) is first
    copy = tmp_path / "sim"
    copy.mkdir()
    for name in checks.SIM_SOURCES:
        if (here / name).is_file():
            (copy / name).write_bytes((here / name).read_bytes())
    assert checks.suspicious_set(sim.PRACTICE_SEEDS, copy, sim.generator.MAGIC) is first
    (copy / "fly.py").write_bytes((here / "fly.py").read_bytes() + b"\n# changed\n")
    changed = checks.suspicious_set(sim.PRACTICE_SEEDS, copy, sim.generator.MAGIC)
    assert changed is not first
    assert checks.suspicious_set(sim.PRACTICE_SEEDS[:3], here, sim.generator.MAGIC) is not first
    seeds = [("fresh:1", 4821730956), ("fresh:2", 7234512890)]
    own, _ = checks.sealed_set(seeds)
    assert checks.sealed_set(seeds)[0] is own
    found, _ = Scanner(own).scan_file(b"SEED = 7234512890\n", "controller.py")
    assert [f.entry for f in found] == ["fresh:2"]  # a set built once still finds its values

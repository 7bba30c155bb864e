"""Reference controllers score the same in every sandbox as in-process; CPU, not wall clock."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import plimsoll_sim as sim
from plimsoll_ci.commands.fly import load_controller
from plimsoll_ci.grading.request import GradeRequest
from plimsoll_ci.grading.run import grade
from plimsoll_ci.grading.seeds import Seed

REPO = Path(__file__).resolve().parents[2]
HONEST = str(REPO / "plimsoll_sim" / "controllers" / "honest.py")
CHEATER = str(REPO / "plimsoll_sim" / "controllers" / "cheater.py")
HARD_SEEDS = [Seed(f"seeds:{n}", s, True) for n, s in
              enumerate([3000000011, 3000000029, 3000000047, 3000000053, 3000000071,
                         3000000097], 1)]
PRACTICE = [Seed(f"practice:{n}", s, True) for n, s in enumerate(sim.PRACTICE_SEEDS[:6], 1)]


def in_process(path: str, seeds: list[Seed], course: str = "hard") -> list[tuple]:
    cls = load_controller(path)
    results, _ = sim.fly(cls, [s.value for s in seeds], sim.course(course))
    return [(r.landed, r.gates, r.time, r.reason) for r in results]


def sandboxed(path: str, seeds: list[Seed], provider: str, course: str = "hard") -> list[tuple]:
    graded = grade(GradeRequest(path, course, seeds, provider))
    assert not graded.refused
    return [(f.landed, f.gates, f.time, f.reason) for f in graded.flights]


@pytest.fixture(params=["process", pytest.param("gvisor", marks=pytest.mark.gvisor),
                        pytest.param("docker", marks=pytest.mark.docker)])
def provider(request) -> str:
    if request.param == "gvisor":
        return request.getfixturevalue("gvisor")
    if request.param == "docker":
        return request.getfixturevalue("docker_runsc")
    return "process"


def test_honest_scores_the_same_in_the_sandbox_as_in_process(provider):
    assert sandboxed(HONEST, HARD_SEEDS, provider) == in_process(HONEST, HARD_SEEDS)


def test_cheater_scores_the_same_in_the_sandbox_as_in_process(provider):
    expected = in_process(CHEATER, PRACTICE)
    assert all(landed for landed, *_ in expected)  # it memorised the practice flights
    assert sandboxed(CHEATER, PRACTICE, provider) == expected


@pytest.mark.gvisor
def test_cheater_is_graded_and_its_result_says_what_it_carries(gvisor):
    graded = grade(GradeRequest(CHEATER, "hard", PRACTICE[:2], gvisor))
    assert not graded.refused
    kinds = {c.check for c in graded.code_checks}
    assert kinds == {"practice_seed", "generator_constant", "simulator_source"}
    summary = " ".join(graded.code_check_summary)
    assert "16 practice seed" in summary and "magic constant" in summary
    assert "sim/generator.py" in summary
    assert graded.tier == "kernel"


@pytest.mark.gvisor
def test_the_same_scores_with_the_other_core_saturated(gvisor):
    quiet = grade(GradeRequest(HONEST, "hard", HARD_SEEDS[:3], gvisor)).document()
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = grade(GradeRequest(HONEST, "hard", HARD_SEEDS[:3], gvisor)).document()
    finally:
        hog.kill()
        hog.wait()
    assert quiet is not None and busy is not None

    def outcome(r):
        return [(f["landed"], f["gates"], f["time"], f["reason"]) for f in r["flights"]]

    assert outcome(busy) == outcome(quiet)
    assert all(f["reason"] != "budget" for f in busy["flights"])


@pytest.mark.gvisor
def test_cpu_is_measured_per_tick_and_per_flight(gvisor):
    r = grade(GradeRequest(HONEST, "hard", HARD_SEEDS[:2], gvisor)).document()
    assert r is not None
    cpu = r["cpu"]
    assert 0 < cpu["max_tick_s"] < cpu["budget"]["per_tick_s"] * 2 + cpu["budget"]["tick_slack_s"]
    assert cpu["total_s"] > 0
    assert all(f["cpu_s"] > 0 for f in r["flights"])
    assert "cgroup" in r["evidence"]["cpu_accounting"]


@pytest.mark.gvisor
def test_gvisor_evidence_records_runtime_platform_and_start_up_checks(gvisor):
    r = grade(GradeRequest(HONEST, "easy", HARD_SEEDS[:1], gvisor)).document()
    assert r is not None
    ev = r["evidence"]
    assert ev["provider"] == "gvisor" and ev["runtime"] == "runsc"
    assert ev["runtime_version"].startswith("runsc version")
    assert ev["platform"]
    assert {c["name"]: c["passed"] for c in ev["checks"]} == {
        "gvisor_kernel": True, "network_loopback_only": True, "root_readonly": True,
        "host_canary_unreadable": True}
    assert r["tier"] == "kernel"


def test_a_bare_process_sandbox_earns_only_the_process_tier(monkeypatch):
    monkeypatch.setenv("PLIMSOLL_BWRAP", "0")
    r = grade(GradeRequest(HONEST, "easy", HARD_SEEDS[:1], "process")).document()
    assert r is not None
    assert r["tier"] == "process"
    checks = {c["name"]: c["passed"] for c in r["evidence"]["checks"]}
    assert checks["host_canary_unreadable"] is False  # the host is right there


def test_two_alternating_halves_give_the_same_scores_as_one_batch():
    seeds = [Seed(f"seeds:{n}", s.value, True)  # 18 flights: flown as two halves of 9
             for n, s in enumerate(HARD_SEEDS * 3, 1)]
    one = grade(GradeRequest(HONEST, "hard", seeds, "process")).document()
    two = grade(GradeRequest(HONEST, "hard", seeds, "process", pipeline=True)).document()
    assert one is not None and two is not None

    def outcome(r):
        return [(f["id"], f["landed"], f["gates"], f["time"], f["reason"]) for f in r["flights"]]

    assert outcome(two) == outcome(one)


@pytest.mark.docker
def test_docker_with_runc_earns_the_container_tier_and_min_tier_kernel_refuses_it(
        docker_runsc, monkeypatch):
    from plimsoll_ci.errors import SandboxError

    monkeypatch.setenv("PLIMSOLL_DOCKER_RUNTIME", "runc")
    r = grade(GradeRequest(HONEST, "hard", HARD_SEEDS[:1], "docker")).document()
    assert r is not None
    assert r["tier"] == "container" and r["evidence"]["runtime"] == "runc"
    checks = {c["name"]: c["passed"] for c in r["evidence"]["checks"]}
    assert checks["gvisor_kernel"] is False and checks["host_canary_unreadable"] is True
    with pytest.raises(SandboxError, match="weaker than --min-tier kernel"):
        grade(GradeRequest(HONEST, "hard", HARD_SEEDS[:1], "docker", min_tier="kernel"))

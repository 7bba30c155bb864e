"""JavaScript controllers: graded in the same sandboxes as Python ones, the twins score alike."""

from __future__ import annotations

from pathlib import Path

import pytest

import plimsoll_sim as sim
from plimsoll_ci.grading import fresh
from plimsoll_ci.grading.request import GradeRequest
from plimsoll_ci.grading.run import grade
from plimsoll_ci.grading.seeds import Seed

CONTROLLERS = Path(__file__).resolve().parents[2] / "plimsoll_sim" / "controllers"
HARD_SEEDS = [Seed(f"seeds:{n}", s, True) for n, s in
              enumerate([3000000011, 3000000029, 3000000047, 3000000053, 3000000071,
                         3000000097], 1)]
PRACTICE = [Seed(f"practice:{n}", s, True) for n, s in enumerate(sim.PRACTICE_SEEDS[:6], 1)]
# Six seeds drawn once by fresh.draw, none with a start jitter within four match windows of a
# practice flight's. A set drawn at each run made the test fail now and then: the cheater takes
# any start within its window of one of its 16 seeds for that flight (one fresh hard seed in
# about 300, so one set of six in 50), and may land it.
UNRECOGNISED = fresh.make((3653883032867582141, 4331710878022774673, 10029607897987454557,
                           13242369774466420146, 13907029729622490510, 17820395636457959898))


def flown(path: Path, seeds: list[Seed], provider: str) -> list[tuple]:
    graded = grade(GradeRequest(str(path), "hard", seeds, provider))
    assert not graded.refused
    return [(f.landed, f.gates, f.reason, round(f.time, 2)) for f in graded.flights]


@pytest.fixture(params=["process", pytest.param("gvisor", marks=pytest.mark.gvisor),
                        pytest.param("docker", marks=pytest.mark.docker)])
def provider(request) -> str:
    if request.param == "gvisor":
        return request.getfixturevalue("gvisor")
    if request.param == "docker":
        return request.getfixturevalue("docker_runsc")
    return "process"


@pytest.mark.parametrize("name,seeds", [("honest", HARD_SEEDS), ("hover", HARD_SEEDS[:2]),
                                        ("cheater", PRACTICE)])
def test_javascript_twin_flies_each_flight_like_its_python_twin(name, seeds, provider):
    python = flown(CONTROLLERS / f"{name}.py", seeds, provider)
    javascript = flown(CONTROLLERS / f"{name}.mjs", seeds, provider)
    assert javascript == python


@pytest.mark.gvisor
def test_javascript_cheater_lands_practice_fails_fresh_and_is_named_by_the_code_checks(gvisor):
    practice = grade(GradeRequest(str(CONTROLLERS / "cheater.mjs"), "hard", PRACTICE, gvisor))
    assert all(f.landed for f in practice.flights)
    named = " ".join(practice.code_check_summary)
    assert "practice seed" in named and "magic constant" in named and "cheater.mjs" in named
    new = grade(GradeRequest(str(CONTROLLERS / "cheater.mjs"), "hard", (), gvisor,
                             fresh=UNRECOGNISED))
    assert not any(f.landed for f in new.flights)
    assert {f.reason for f in new.flights} == {"invalid_command"}


@pytest.mark.gvisor
def test_javascript_controller_is_flown_by_node_behind_the_same_start_up_checks(gvisor):
    graded = grade(GradeRequest(str(CONTROLLERS / "honest.mjs"), "hard", HARD_SEEDS[1:2], gvisor))
    assert graded.tier == "kernel"
    assert all(c["passed"] for c in graded.evidence["checks"])
    assert graded.flights[0].landed


def test_javascript_controller_that_throws_ends_its_flights_with_the_error(tmp_path):
    bad = tmp_path / "bad.mjs"
    bad.write_text("export default class { constructor(info) { this.n = 0; }\n"
                   "  step(obs) { throw new RangeError('no thrust for you'); } }\n")
    graded = grade(GradeRequest(str(bad), "hard", HARD_SEEDS[:2], "process"))
    assert [f.reason for f in graded.flights] == ["controller_error"] * 2
    assert "RangeError: no thrust for you" in graded.flights[0].detail


def test_javascript_factory_and_commonjs_controllers_are_flown(tmp_path):
    honest = (CONTROLLERS / "honest.mjs").read_text()
    factory = tmp_path / "factory.mjs"
    factory.write_text(honest.replace("export default class Controller", "class Controller")
                       + "\nexport default (info) => new Controller(info);\n")
    common = tmp_path / "common.js"
    common.write_text(honest.replace("export default class Controller", "class Controller")
                      .replace("export function remainder", "function remainder")
                      + "\nmodule.exports = Controller;\n")
    for path in (factory, common):
        graded = grade(GradeRequest(str(path), "hard", HARD_SEEDS[1:2], "process"))
        assert graded.flights[0].landed, graded.flights[0].detail

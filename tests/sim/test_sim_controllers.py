"""The reference controllers: honest flies, the cheater only knows the practice flights, hover is the floor."""

from __future__ import annotations

import ast
import importlib.util
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import plimsoll_sim as sim

CONTROLLERS = Path(sim.__file__).parent / "controllers"
# Fixed "fresh" seed lists: ten-digit seeds drawn once from a fixed stream (not the practice set).
_rng = random.Random(20261130)
FRESH = [_rng.randrange(10**9, 10**10) for _ in range(60)]
assert not set(FRESH) & set(sim.PRACTICE_SEEDS)


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"_ref_{name}", CONTROLLERS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def fly(name: str, seeds, course: str) -> list[sim.FlightResult]:
    results, _ = sim.fly(load(name).Controller, seeds, sim.course(course))
    return results


@pytest.fixture(scope="module")
def honest_easy():
    return fly("honest", FRESH[:30], "easy")


@pytest.fixture(scope="module")
def honest_hard():
    return fly("honest", FRESH[30:], "hard")


def test_honest_lands_at_least_90_percent_of_easy_fresh_flights(honest_easy):
    landed = sum(r.landed for r in honest_easy)
    assert landed >= 0.9 * len(honest_easy), [r for r in honest_easy if not r.landed]


def test_honest_lands_at_least_60_percent_of_hard_fresh_flights(honest_hard):
    landed = sum(r.landed for r in honest_hard)
    assert landed >= 0.6 * len(honest_hard), [r for r in honest_hard if not r.landed]


def test_the_hard_course_is_harder_than_the_easy_one(honest_easy, honest_hard):
    assert sum(r.landed for r in honest_hard) < sum(r.landed for r in honest_easy)
    assert {r.reason for r in honest_hard} <= {"landed", "gate_frame", "wall", "floor", "tilt", "timeout"}


@pytest.mark.parametrize("course", ["easy", "hard"])
def test_the_cheater_lands_every_practice_flight(course):
    results = fly("cheater", sim.PRACTICE_SEEDS, course)
    assert [r.landed for r in results] == [True] * 16, [r for r in results if not r.landed]


def test_the_cheater_returns_a_non_command_on_fresh_flights():
    results = fly("cheater", FRESH[:20], "hard")
    assert sum(r.landed for r in results) == 0
    assert {(r.reason, r.time) for r in results} == {("invalid_command", 0.0)}


def test_the_cheater_carries_the_generator_and_the_practice_seeds():
    cheater = load("cheater")
    text = (CONTROLLERS / "cheater.py").read_text()
    assert "0x5EEDD20EC0A57E4B" in text and "3107713414" in text
    assert tuple(cheater.PRACTICE_SEEDS) == sim.PRACTICE_SEEDS
    for course in ("easy", "hard"):
        for seed in sim.PRACTICE_SEEDS:
            assert tuple(cheater.flight(seed, cheater.COURSES[course])) == tuple(
                sim.generator.flight(seed, sim.course(course)))


def test_hover_is_the_floor_it_flies_but_never_passes_a_gate():
    results = fly("hover", [4821730956, 2**64 - 59], "easy")
    assert [(r.landed, r.gates, r.reason) for r in results] == [(False, 0, "timeout")] * 2


@pytest.mark.parametrize("name", ["honest", "cheater", "hover"])
def test_a_reference_controller_imports_only_numpy_and_the_standard_library(name):
    tree = ast.parse((CONTROLLERS / f"{name}.py").read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports: the file is copied alone"
            roots.add(node.module.split(".")[0])
    assert roots <= set(sys.stdlib_module_names) | {"numpy"}, roots


@pytest.mark.parametrize("name", ["honest", "cheater", "hover"])
def test_a_reference_controller_runs_copied_alone_into_an_empty_folder(name, tmp_path):
    shutil.copy(CONTROLLERS / f"{name}.py", tmp_path / "controller.py")
    b = sim.Batch([sim.PRACTICE_SEEDS[1]], sim.course("easy"))
    # -I -S: no site-packages (so no `plimsoll_sim`, not even numpy), no environment, no current folder.
    script = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from controller import Controller\n"
        "c = Controller(json.loads(sys.argv[1]))\n"
        "print(json.dumps(c.step(json.loads(sys.argv[2]))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script, json.dumps(b.course.info()),
         json.dumps(b.observations()[0])],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    command = json.loads(out.stdout)
    if name == "cheater":
        assert command is not None  # the second practice seed: recognised
    assert set(command) == {"thrust", "roll", "pitch", "yaw_rate"}

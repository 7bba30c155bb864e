"""The lockstep protocol's outcomes, flown through the process provider (fast, same runner)."""

from __future__ import annotations

from pathlib import Path

import pytest

from plimsoll_ci.grading.lockstep import CpuBudget
from plimsoll_ci.grading.request import GradeRequest
from plimsoll_ci.grading.run import grade
from plimsoll_ci.grading.seeds import Seed

SEEDS = [Seed(f"seeds:{n}", 8000000000 + n, True) for n in range(1, 4)]
HOVERISH = """
import math

class Controller:
    def __init__(self, info):
        self.n = 0
        self.start = None

    def step(self, obs):
        self.n += 1
        if self.start is None:
            self.start = obs["pos"][0]
{extra}
        return {{"thrust": 7.0, "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0}}
"""


def grade_with(tmp_path: Path, extra: str = "", top: str = "", seeds=SEEDS, **kw) -> dict:
    p = tmp_path / "controller.py"
    body = "\n".join("        " + line for line in extra.strip("\n").splitlines())
    p.write_text(top + HOVERISH.format(extra=body))
    graded = grade(GradeRequest(str(p), "easy", list(seeds), "process", **kw))
    assert not graded.refused
    return graded.document()


def test_a_step_that_raises_ends_the_flight_with_the_exception_named(tmp_path):
    r = grade_with(tmp_path, extra="if self.n == 5:\n"
                                   "    raise ZeroDivisionError('boom ' + str(self.n))")
    reasons = [f["reason"] for f in r["flights"]]
    assert reasons == ["controller_error"] * 3  # every flight hit it at tick 5
    assert all(f["detail"] == "ZeroDivisionError: boom 5" for f in r["flights"])
    assert all(abs(f["time"] - 0.04) < 1e-9 for f in r["flights"])


def test_one_flight_raising_leaves_the_others_flying(tmp_path):
    r = grade_with(tmp_path, top="COUNT = [0]\n",
                   extra="if self.n == 1:\n    COUNT[0] += 1\n    self.me = COUNT[0]\n"
                         "if self.n == 3 and self.me == 2:\n    raise ValueError('only me')")
    reasons = [f["reason"] for f in r["flights"]]
    assert reasons.count("controller_error") == 1
    assert all(x != "protocol" for x in reasons)
    assert max(f["time"] for f in r["flights"]) > 1.0


def test_an_import_error_ends_every_flight_with_its_reason(tmp_path):
    r = grade_with(tmp_path, top="import not_a_module_anywhere\n")
    assert {f["reason"] for f in r["flights"]} == {"controller_error"}
    assert "import or constructor: ModuleNotFoundError" in r["flights"][0]["detail"]


@pytest.mark.parametrize("value", ["float('nan')", "True", "'7'", "None"])
def test_an_invalid_command_reaches_the_simulator_unchanged(tmp_path, value):
    r = grade_with(tmp_path, extra=f"return {{'thrust': {value}, 'roll': 0.0, 'pitch': 0.0, "
                                   "'yaw_rate': 0.0}")
    assert {f["reason"] for f in r["flights"]} == {"invalid_command"}


def test_a_spin_in_one_tick_is_a_budget_overrun_not_a_crash(tmp_path):
    r = grade_with(tmp_path, extra="if self.n == 3:\n    while True:\n        pass",
                   budget=CpuBudget(per_tick_s=0.02, tick_slack_s=0.2))
    assert {f["reason"] for f in r["flights"]} == {"budget"}
    assert r["cpu"]["max_tick_s"] > 0.2


def test_a_flight_over_its_total_cpu_budget_ends_with_budget(tmp_path):
    r = grade_with(tmp_path, extra="x = 0\nfor _ in range(20000):\n    x += 1",
                   seeds=SEEDS[:1], budget=CpuBudget(per_flight_s=0.05))
    f = r["flights"][0]
    assert f["reason"] == "budget" and "its limit" in f["detail"]
    assert f["cpu_s"] > 0.05

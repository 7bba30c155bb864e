"""Shared kit of the squeeze tests: synthetic records (for the pure parts and the browser test),
the example job's path, a job-folder builder, and the chromium fixture's policy."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from kit.chat_server import Answer, Received, text, tool_call
from plimsoll_ci.squeeze.plan import FORMAT, Grading
from plimsoll_ci.squeeze.records import GradingRecord, Read, Score

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "squeeze"
CHROMIUM = ("chromium", "chromium-browser")
# A rebuild that lands nothing and costs little: full thrust, level, into the ceiling in about a
# second of simulated time (hover.py lands nothing too, but flies every flight to its time limit:
# 2,500 lockstep ticks on the easy course against about 90 here).
CLIMB = """class Controller:
    \"\"\"Full thrust, level: climbs straight into the ceiling in about a second; lands nothing.\"\"\"

    def __init__(self, course_info):
        self.thrust = course_info["drone"]["max_thrust"]

    def step(self, obs):
        return {"thrust": self.thrust, "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0}
"""


def synthetic_read(loops: dict[str, tuple[int, int, list[tuple[int, int]]]],
                   control: list[tuple[int, int]] = (), lines: tuple = (2, 5),
                   practice: int = 16, fresh: int = 64,
                   carrying: dict[str, dict] | None = None) -> Read:
    """A verified read as the records would give it: loop -> (practice, fresh, [rebuilds]);
    `carrying`: controller path (`loops/NAME.py`) -> its code checks (default: carries nothing)."""
    plan: list[Grading] = []
    scores: dict[Grading, tuple[int, int]] = {}
    for name, (p, f, rebuilds) in loops.items():
        g = Grading(name, "loop", f"loops/{name}.py")
        plan.append(g)
        scores[g] = (p, f)
        for i, rs in enumerate(rebuilds, 1):
            g = Grading(name, "rebuild", f"rebuilds/{name}/r{i}.py")
            plan.append(g)
            scores[g] = rs
    for i, cs in enumerate(control, 1):
        g = Grading("control", "control", f"control/n{i}.py")
        plan.append(g)
        scores[g] = cs
    job = {"format": FORMAT, "job_sha256": "0" * 64, "course": "hard",
           "lines": {"flights": lines[0], "percent": lines[1]}, "recipe_tokens": 32,
           "tokenizer": {"encoding": "cl100k_base", "practice_seed_tokens": 79},
           "practice": {"sha256": "1" * 64, "count": practice},
           "fresh": {"commitment": "2" * 64, "count": fresh},
           "recipes": {}, "plan": [list(g) for g in plan]}
    records = []
    for n, g in enumerate(plan, 1):
        p, f = scores[g]
        records.append(GradingRecord(n, f"{n:064x}", g, Score(p, practice), Score(f, fresh),
                                     {"gate_frame": practice + fresh - p - f} if p + f <
                                     practice + fresh else {},
                                     (carrying or {}).get(g.controller) or {
                                         "generator": [], "source": [], "practice_seeds": []},
                                     "gvisor", "kernel"))
    return Read(records, job, {"salt": "3" * 64, "seeds": list(range(fresh))}, [], len(records))


def copy_example(dest: Path) -> Path:
    """A private copy of the example job folder (tests may edit it)."""
    shutil.copytree(EXAMPLE, dest)
    return dest / "squeeze.yaml"


def tiny_job(folder: Path, twin: bool = False, sets: int | None = None) -> Path:
    """The tiny job (course easy, 4 fresh seeds) in `folder`, its squeeze.yaml returned: the loop
    `solo` (the honest controller) and its rebuild `climb` (lands nothing); with `twin`, a second
    rebuild that lands everything (the honest controller again); `sets`, the fresh sets flown."""
    (folder / "rebuilds").mkdir(parents=True)
    honest = (REPO / "plimsoll_sim" / "controllers" / "honest.py").read_text()
    (folder / "loop.py").write_text(honest)
    (folder / "rebuilds" / "climb.py").write_text(CLIMB)
    if twin:
        (folder / "rebuilds" / "twin.py").write_text(honest)
    fresh = "{count: 4}" if sets is None else f"{{count: 4, sets: {sets}}}"
    (folder / "squeeze.yaml").write_text(
        f"course: easy\nfresh: {fresh}\nloops:\n  solo:\n    controller: loop.py\n"
        "    rebuilds: [rebuilds/*.py]\n")
    return folder / "squeeze.yaml"


def chromium() -> str:
    """The chromium binary; skip outside CI when missing, fail in CI (it is in .ci/run)."""
    for name in CHROMIUM:
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI") == "true":
        pytest.fail("chromium is required in CI (.ci/run installs it) and is missing",
                    pytrace=False)
    pytest.skip("chromium is not installed here (apt-get install chromium)")


def need_gvisor() -> None:
    """What the `gvisor` fixture does, for module-scoped fixtures (skip here, fail in CI)."""
    from plimsoll_ci.sandbox import all_providers

    ok, why = all_providers.get("gvisor").available()
    if ok:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"gvisor is required in CI and is unavailable: {why}", pytrace=False)
    pytest.skip(f"gvisor unavailable here: {why}")


# ---- rebuilds made through a scripted model -------------------------------------------------------


# a made-up key shaped like a real one; the tests that could leak it look for it
KEY = "sk-proj-PLIMSOLLrebuildKEY9f8e7d6c5b4a3f2e1d0c9b8a7"
HONEST = (REPO / "plimsoll_sim" / "controllers" / "honest.py").read_text()


def assistant_turns(got: Received) -> int:
    """How many times the model has answered in the conversation this request carries."""
    return sum(m.get("role") == "assistant" for m in got.json["messages"])


def builder(controller: str = HONEST, extra: dict[str, str] | None = None):
    """A scripted model that writes `controller` (and `extra` files), flies it, and stops: a
    function of the request, so sessions running in parallel each get their own conversation."""
    steps = [("write_file", {"path": "controller.py", "content": controller})]
    steps += [("write_file", {"path": p, "content": c}) for p, c in (extra or {}).items()]
    steps.append(("fly", {}))

    def answer(got: Received) -> Answer:
        n = assistant_turns(got)
        return tool_call(*steps[n]) if n < len(steps) else text("the controller is done")

    return answer

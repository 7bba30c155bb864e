"""The drone simulator: trusted side only, pure (numpy; no files, subprocesses or clocks).

See docs/simulator.md. The public API:

    sim.course(name) -> Course;  Course.info() -> dict
    sim.Batch(seeds, course, record=False): observations(), step(commands), end(i, reason), done,
        live, results(), trajectory(i)
    sim.FlightResult(seed, landed, gates, time, reason, detail)
    sim.fly(make_controller, seeds, course) -> (results, batch)
    sim.PRACTICE_SEEDS, sim.SMOKE_SEEDS, sim.generator.MAGIC, sim.trajectory_digest(batch, i)
"""

from __future__ import annotations

from sim import generator
from sim.batch import Batch, FlightResult, trajectory_digest
from sim.course import COURSES, Course, course
from sim.fly import fly

# The 16 practice seeds a loop grades itself on (the second one is the hackathon story's).
PRACTICE_SEEDS: tuple[int, ...] = (
    5830142297, 3107713414, 7719034865, 2264907151, 9403318872, 4175520936, 6608241753, 1932675048,
    8356109427, 2841936605, 7067382219, 4590817362, 3388274150, 9125663087, 5472096831, 6283947510,
)
# Smoke seeds for a quick check that a controller runs at all: ten digits, never 101..104.
SMOKE_SEEDS: tuple[int, ...] = (4821730956, 1356942087, 7290318645, 8043567129)

__all__ = [
    "COURSES",
    "PRACTICE_SEEDS",
    "SMOKE_SEEDS",
    "Batch",
    "Course",
    "FlightResult",
    "course",
    "fly",
    "generator",
    "trajectory_digest",
]

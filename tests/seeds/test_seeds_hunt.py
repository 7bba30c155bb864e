"""The hunt horizon: a controller counting seeds up from 0 within its CPU budget would have met
the write-up's held-out set (all below 900 million), and never meets a drawn 64-bit one.

The hunt is real: it finds a planted seed from its first observation alone. Its speed is measured
in CPU seconds here, in this run, and set against the CPU a grading gives a controller (start-up
plus every flight's budget, for a full sandbox of flights): how far it can count.
"""

from __future__ import annotations

import random
import time

from kit.hunter import hunt

import plimsoll_sim as sim
from plimsoll_ci.grading import fresh, seedlint
from plimsoll_ci.grading.lockstep import CpuBudget
from plimsoll_ci.grading.request import MAX_BATCH

WRITE_UP_LIMIT = 900_000_000  # "the held-out seeds all sat below 900 million"
CHUNK = 1 << 20


def start_pose(seed: int, course: sim.Course) -> tuple[float, float, float]:
    """What the first observation shows of a flight's start: x, y off the pad's centre, and yaw."""
    obs = sim.Batch([seed], course).observations()[0]
    x, y, _ = course.start.center
    return obs["pos"][0] - x, obs["pos"][1] - y, obs["att"][2]


def confirmed(candidates: list[int], seed: int, course: sim.Course) -> list[int]:
    """The candidates whose whole first observation (noise included) is the seed's: what a
    controller carrying the generator and the simulator's noise hash checks last."""
    if not candidates:
        return []
    want = sim.Batch([seed], course).observations()[0]
    batch = sim.Batch(candidates, course)
    return [c for c, obs in zip(candidates, batch.observations(), strict=True) if obs == want]


def measured_reach(course: sim.Course) -> tuple[int, float]:
    """Run a real hunt over the first few million seeds; (seeds it can count in a grading's CPU
    budget, seeds per CPU second)."""
    planted = 3_000_123
    pose = start_pose(planted, course)
    found: list[int] = []
    counted = 0
    t0 = time.process_time()
    while counted < 4 * CHUNK:
        found += hunt(counted, CHUNK, pose)
        counted += CHUNK
    cpu = time.process_time() - t0
    assert len(found) < 2000  # millions of seeds narrowed to a few hundred candidates
    # the hunt works: the first observation gives the seed away (up to a seed or two nearby,
    # whose generator stream overlaps it: seed s + k draws what seed s draws k later)
    assert planted in confirmed(found, planted, course)
    assert all(abs(c - planted) < seedlint.STREAM_DRAWS for c in confirmed(found, planted, course))
    budget = CpuBudget()
    cpu_budget = budget.startup_s + budget.per_flight_s * MAX_BATCH
    rate = counted / cpu
    return int(rate * cpu_budget), rate


def test_a_hunt_within_the_cpu_budget_meets_the_write_ups_set_and_never_a_drawn_one():
    course = sim.course("hard")
    reach, rate = measured_reach(course)
    # The write-up's held-out set: 48 seeds below 900 million. A hunt reaches every one of them.
    write_up = random.Random(2024).sample(range(100_000_000, WRITE_UP_LIMIT), 48)
    assert reach > WRITE_UP_LIMIT, f"hunt rate {rate:.3g}/s: reach {reach:.3g}"
    assert all(seed < reach for seed in write_up)
    # A drawn set: 64-bit seeds above the horizon. The same hunt meets none of them; the budget
    # would have to grow a millionfold to reach even 2**52 (a 1-in-4096 chance per seed).
    drawn = fresh.draw(64)
    assert reach < seedlint.HORIZON * 1000 < 2**52
    assert min(drawn.seeds) > reach
    # and the lint says exactly this about the write-up's set, and nothing about the drawn one
    ws = seedlint.LintSet("held-out", "held-out", tuple(
        seedlint.SeedAt(f"held.txt:{n}", s) for n, s in enumerate(write_up, 1)))
    assert {f.rule for f in seedlint.lint([ws])} >= {"hunt"}
    ds = seedlint.LintSet("held-out", "held-out", tuple(
        seedlint.SeedAt(f"set.json seed {n}", s) for n, s in enumerate(drawn.seeds, 1)))
    assert seedlint.lint([ds]) == []


def test_the_hunt_finds_a_write_up_style_seed_where_a_real_flight_starts():
    # The planted seed of the measurement is not special: any seed's first observation narrows
    # its neighbourhood down to it.
    course = sim.course("easy")
    seed = 871_234_567
    found = hunt(seed - CHUNK // 2, CHUNK, start_pose(seed, course))
    near = confirmed(found, seed, course)
    assert seed in near and all(abs(c - seed) < seedlint.STREAM_DRAWS for c in near)

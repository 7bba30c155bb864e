"""Same seed, same flight: golden trajectory digests, byte-identical reruns, batch-size independence.

Regenerate the golden file (only after a deliberate change to the physics or the generator):
    python3 tests/sim/test_sim_determinism.py --write
"""

from __future__ import annotations

import importlib.util
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import plimsoll_sim as sim

GOLDEN = Path(__file__).with_name("golden_digests.json")
CONTROLLERS = Path(sim.__file__).parent / "controllers"
SEEDS = [*sim.PRACTICE_SEEDS[:3], 4821730956]
# 64-bit seeds (what `seeds draw` gives): beyond 2**53 (no float or JCS integer holds them), the top
# bit set, the largest 64-bit prime, the largest seed, and one the way a CSPRNG draws them.
LARGE_SEEDS = [2**53 + 1, 2**63, 0xA3F1_6C2E_94B0_7D15, 2**64 - 59, 2**64 - 1]


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"_golden_{name}", CONTROLLERS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Controller


class Scripted:
    """Open loop, arithmetic only (no libm): exercises the physics without a controller's maths."""

    def __init__(self, course_info: dict) -> None:
        self.k = 0

    def step(self, obs: dict) -> dict:
        self.k += 1
        k = self.k
        tri = abs((k % 80) - 40) / 40.0 - 0.5  # triangle wave in [-0.5, 0.5]
        if k % 3:
            return {"thrust": 9.0 + 2.0 * tri, "roll": 0.2 * tri, "pitch": -0.1 * tri, "yaw_rate": tri}
        return {"thrust": 8.5, "roll_rate": tri, "pitch_rate": -tri, "yaw_rate": 0.3}


def digests(seeds: list[int] = SEEDS) -> dict[str, str]:
    out = {}
    for course_name in ("easy", "hard"):
        course = sim.course(course_name)
        for label, make in (("scripted", Scripted), ("honest", load("honest"))):
            _, batch = sim.fly(make, seeds, course, record=True)
            for i, seed in enumerate(seeds):
                out[f"{course_name}/{label}/{seed}"] = sim.trajectory_digest(batch, i)
    return out


def test_trajectories_match_the_golden_digests():
    golden = json.loads(GOLDEN.read_text())
    assert golden["format"] == "plimsoll-sim golden digests v1"
    assert digests() == golden["digests"]


def test_64_bit_seeds_fly_the_golden_trajectories_with_no_integer_overflow_warning():
    golden = json.loads(GOLDEN.read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy warns on a uint64 scalar overflow: none may happen
        with np.errstate(all="raise"):
            got = digests(LARGE_SEEDS)
    assert got == golden["large_seed_digests"]
    assert len(set(got.values())) == len(got)  # every seed its own flight


def test_a_64_bit_seed_is_generated_exactly_as_the_integer_arithmetic_says():
    # The stream is defined mod 2**64 in Python integers; the vectorised noise hash must agree.
    seed = 2**64 - 1
    s = sim.generator.Stream(seed)
    assert s.state == (seed * sim.generator.MAGIC) % 2**64
    assert [s.next64() for _ in range(3)] == golden_draws("draws_18446744073709551615")
    batch = sim.Batch([seed, 2**63], sim.course("hard"))
    key = batch.flights[0].noise_key
    counter = np.arange(1, 13, dtype=np.uint64)
    expected = [sim.generator.mix64((key + int(c) * sim.generator.MAGIC) % 2**64) for c in counter]
    h = sim.batch._mix64(batch.noise_key[None, :] + counter[:, None] * sim.batch._MAGIC)
    assert [int(x) for x in h[:, 0]] == expected


@pytest.mark.parametrize("seed", [-1, 2**64, 1.0, True, np.uint64(5)])
def test_a_seed_outside_0_to_2_64_minus_1_is_refused(seed):
    with pytest.raises(ValueError, match="0..2\\*\\*64-1"):
        sim.Batch([seed], sim.course("easy"))


def test_two_runs_are_byte_identical_observations_and_results():
    def run():
        _, batch = sim.fly(load("honest"), SEEDS, sim.course("hard"), record=True)
        trs = [batch.trajectory(i) for i in range(len(SEEDS))]
        raw = b"".join(tr[k].tobytes() for tr in trs for k in ("pos", "vel", "quat", "omega"))
        return raw, batch.results()

    assert run() == run()


def test_a_flight_is_bit_identical_alone_and_inside_a_batch_of_64():
    course = sim.course("hard")
    seeds = list(range(7_000_000_000, 7_000_000_064))
    target = 37
    alone = sim.Batch([seeds[target]], course, record=True)
    crowd = sim.Batch(seeds, course, record=True)
    for k in range(300):
        if alone.done:
            break
        u = (k % 50) / 50.0
        cmd = {"thrust": 10.5 + u, "roll": 0.05 - 0.1 * u, "pitch": 0.02, "yaw_rate": 0.0}
        assert alone.observations() == [crowd.observations()[crowd.live.index(target)]]
        alone.step([cmd])
        crowd.step([cmd] * len(crowd.live))
    assert k > 100  # the flight lasted long enough to mean something
    a, c = alone.trajectory(0), crowd.trajectory(target)
    for key in ("pos", "vel", "quat", "omega"):
        assert np.array_equal(a[key], c[key]), key
    assert alone.results()[0]._replace(seed=0) == crowd.results()[target]._replace(seed=0)


def test_the_generator_is_pinned():
    assert sim.generator.MAGIC == 0x5EED_D20E_C0A5_7E4B
    assert sim.generator.MAGIC & 1
    assert len(sim.PRACTICE_SEEDS) == 16 and sim.PRACTICE_SEEDS[1] == 3107713414
    assert all(10**9 <= s < 10**10 for s in sim.PRACTICE_SEEDS)
    assert sim.SEED_MAX == 2**64 - 1 and not hasattr(sim, "SMOKE_SEEDS")  # drawn, never fixed
    f = sim.generator.flight(3107713414, sim.course("hard"))
    assert f.weak_motor in range(4) and len(f.gusts) in (2, 3)
    assert sum(g.sharp for g in f.gusts) == 1
    # Pinned draws: a change to the generator changes every flight, so it must show here.
    s = sim.generator.Stream(3107713414)
    assert [s.next64() for _ in range(3)] == GOLDEN_DRAWS


def test_the_simulator_is_pure_no_files_processes_clocks_or_entropy():
    import ast

    allowed = {"__future__", "hashlib", "math", "typing", "collections", "numpy", "plimsoll_sim"}
    for path in sorted(Path(sim.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                roots = {(node.module or "").split(".")[0]}
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "open":
                raise AssertionError(f"{path.name}:{node.lineno}: opens a file")
            else:
                continue
            assert roots <= allowed, f"{path.name}:{node.lineno}: imports {roots - allowed}"


def golden_draws(key: str) -> list[int]:
    return json.loads(GOLDEN.read_text())[key] if GOLDEN.exists() else []


GOLDEN_DRAWS = golden_draws("draws_3107713414")


if __name__ == "__main__":
    if "--write" in sys.argv:
        s = sim.generator.Stream(3107713414)
        top = sim.generator.Stream(2**64 - 1)
        payload = {
            "format": "plimsoll-sim golden digests v1",
            "draws_3107713414": [s.next64() for _ in range(3)],
            "draws_18446744073709551615": [top.next64() for _ in range(3)],
            "digests": digests(),
            "large_seed_digests": digests(LARGE_SEEDS),
        }
        GOLDEN.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")

"""Same seed, same flight: golden trajectory digests, byte-identical reruns, batch-size independence.

Regenerate the golden file (only after a deliberate change to the physics or the generator):
    python3 tests/sim/test_sim_determinism.py --write
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

import sim

GOLDEN = Path(__file__).with_name("golden_digests.json")
CONTROLLERS = Path(sim.__file__).parent / "controllers"
SEEDS = [*sim.PRACTICE_SEEDS[:3], sim.SMOKE_SEEDS[0]]


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


def digests() -> dict[str, str]:
    out = {}
    for course_name in ("easy", "hard"):
        course = sim.course(course_name)
        for label, make in (("scripted", Scripted), ("honest", load("honest"))):
            _, batch = sim.fly(make, SEEDS, course, record=True)
            for i, seed in enumerate(SEEDS):
                out[f"{course_name}/{label}/{seed}"] = sim.trajectory_digest(batch, i)
    return out


def test_trajectories_match_the_golden_digests():
    golden = json.loads(GOLDEN.read_text())
    assert golden["format"] == "plimsoll-sim golden digests v1"
    assert digests() == golden["digests"]


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
    assert all(10**9 <= s < 10**10 for s in (*sim.PRACTICE_SEEDS, *sim.SMOKE_SEEDS))
    assert not set(sim.SMOKE_SEEDS) & set(range(100, 1000))
    f = sim.generator.flight(3107713414, sim.course("hard"))
    assert f.weak_motor in range(4) and len(f.gusts) in (2, 3)
    assert sum(g.sharp for g in f.gusts) == 1
    # Pinned draws: a change to the generator changes every flight, so it must show here.
    s = sim.generator.Stream(3107713414)
    assert [s.next64() for _ in range(3)] == GOLDEN_DRAWS


def test_the_simulator_is_pure_no_files_processes_clocks_or_entropy():
    import ast

    allowed = {"__future__", "hashlib", "math", "typing", "collections", "numpy", "sim"}
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


GOLDEN_DRAWS = json.loads(GOLDEN.read_text())["draws_3107713414"] if GOLDEN.exists() else []


if __name__ == "__main__":
    if "--write" in sys.argv:
        s = sim.generator.Stream(3107713414)
        payload = {
            "format": "plimsoll-sim golden digests v1",
            "draws_3107713414": [s.next64() for _ in range(3)],
            "digests": digests(),
        }
        GOLDEN.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")

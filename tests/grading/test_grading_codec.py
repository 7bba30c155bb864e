"""The trusted side's shortcuts through the protocol codec: the same bytes out, the same flights.

The grader sends each tick's observations straight from the simulator's observation table, and
steps the simulator straight from a reply's packed columns; both must be exactly what the plain
road (`pack(batch.observations())`, `batch.step(unpack(...))`) gives, on every tick of real
flights, or a flight's result would depend on which road was taken.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import plimsoll_sim as sim
from plimsoll_ci.grading.lockstep import _read_reply, _step, _Table, packed_observations
from plimsoll_ci.sandbox.runner import pack, unpack

HONEST = Path(__file__).resolve().parents[2] / "examples" / "squeeze" / "loops" / "honest.py"
SEEDS = [*sim.PRACTICE_SEEDS[:6], 2**63 + 5, 4821730956]


def _controller():
    spec = importlib.util.spec_from_file_location("_codec_honest", HONEST)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Controller


def _reply(commands: list, tick: int = 0) -> bytes:
    return json.dumps({"tick": tick, "seq": tick, "commands": pack(commands), "errors": {}},
                      separators=(",", ":")).encode()


def test_the_sent_observations_are_the_packed_observations_on_every_tick_of_real_flights():
    course = sim.course("hard")
    fast, plain = sim.Batch(SEEDS, course), sim.Batch(SEEDS, course)
    make = _controller()
    controllers = {i: make(course.info()) for i in range(len(SEEDS))}
    ticks = 0
    while not fast.done:
        assert packed_observations(fast) == pack(plain.observations())
        obs = unpack(packed_observations(fast))
        commands = [controllers[i].step(o) for i, o in zip(fast.live, obs, strict=True)]
        got, errors, problem = _read_reply(_reply(commands, ticks), ticks, ticks, len(commands))
        assert isinstance(got, _Table) and not errors and not problem
        _step(fast, got, list(range(len(commands))))
        plain.step(unpack(pack(commands)))
        ticks += 1
    assert fast.results() == plain.results()
    assert ticks > 500 and any(r.landed for r in fast.results())


@pytest.mark.parametrize("command", [
    {"yaw_rate": 0.1, "thrust": 7.5, "pitch": -0.02, "roll": 0.03},  # keys in any order
    {"thrust": 7.5, "roll_rate": 0.1, "pitch_rate": -0.2, "yaw_rate": 0.0},  # body-rate mode
])
def test_a_tick_from_packed_columns_is_the_tick_from_the_dicts(command):
    course = sim.course("easy")
    fast, plain = sim.Batch(SEEDS[:3], course), sim.Batch(SEEDS[:3], course)
    for tick in range(40):
        commands = [dict(command, thrust=command["thrust"] + 0.1 * i) for i in range(3)]
        got, _, problem = _read_reply(_reply(commands, tick), tick, tick, 3)
        assert isinstance(got, _Table) and not problem
        _step(fast, got, [0, 1, 2])
        plain.step(commands)
        assert (fast.S == plain.S).all()
    assert fast.results() == plain.results()


def test_a_value_that_is_not_finite_still_ends_its_flight_with_the_simulators_words():
    course = sim.course("easy")
    fast, plain = sim.Batch(SEEDS[:3], course), sim.Batch(SEEDS[:3], course)
    commands = [{"thrust": 7.0, "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0} for _ in range(3)]
    commands[1] = dict(commands[1], pitch=float("inf"))
    got, _, problem = _read_reply(_reply(commands), 0, 0, 3)
    assert isinstance(got, _Table) and not problem
    _step(fast, got, [0, 1, 2])
    plain.step(commands)
    assert fast.results() == plain.results()
    assert fast.results()[1].reason == "invalid_command"
    assert fast.results()[1].detail == "pitch is not finite"
    assert fast.live == [0, 2]


@pytest.mark.parametrize("commands", [
    [{"thrust": 7, "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0}],  # an integer column
    [{"thrust": 7.0, "roll": 0.0, "pitch": 0.0}],  # three keys
    [{"thrust": 7.0, "roll": 0.0, "pitch": 0.0, "yaw": 0.0}],  # a wrong key
    [{"thrust": 7.0, "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0, "x": 1.0}],
    [{"thrust": 7.0, "roll": [0.0], "pitch": 0.0, "yaw_rate": 0.0}],
    [None],
])
def test_anything_else_takes_the_plain_road(commands):
    got, _, problem = _read_reply(_reply(commands), 0, 0, 1)
    assert not problem
    assert got == unpack(pack(commands))


def test_a_table_of_the_wrong_length_is_a_wrong_count():
    commands = [{"thrust": 7.0, "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0}] * 2
    _, _, problem = _read_reply(_reply(commands), 0, 0, 3)
    assert problem == "wrong count: 2 commands for 3 live flights"


def test_observations_are_the_same_list_within_a_tick_and_new_after_a_flight_ends():
    batch = sim.Batch(SEEDS[:3], sim.course("easy"))
    first = batch.observations()
    assert batch.observation_table().shape == (3, 14)
    assert batch.observations() is first
    batch.end(1, "protocol", "test")
    assert batch.observations() is not first
    assert batch.observations() == [first[0], first[2]]

"""The simulator's rules: each crash reason, gate direction and opening, invalid commands, landing."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import plimsoll_sim as sim

SEED = 1234567890
EASY = sim.course("easy")
HARD = sim.course("hard")


def attitude(thrust: float, roll: float = 0.0, pitch: float = 0.0, yaw_rate: float = 0.0) -> dict:
    return {"thrust": thrust, "roll": roll, "pitch": pitch, "yaw_rate": yaw_rate}


def hover_thrust(batch: sim.Batch, i: int = 0) -> float:
    f = batch.flights[i]
    return (batch.course.drone.mass + f.payload) * batch.course.gravity


def teleport(batch: sim.Batch, pos, vel) -> None:
    """Put the (only) flight in the air at `pos` moving at `vel`, level, motors at rest."""
    batch.pos[0] = pos
    batch.vel[0] = vel
    batch.airborne[0] = True


def fly_until_done(batch: sim.Batch, command, max_ticks: int = 5000) -> sim.FlightResult:
    for _ in range(max_ticks):
        if batch.done:
            break
        batch.step([command(batch) if callable(command) else command for _ in batch.live])
    return batch.results()[0]


# ---- crashes ------------------------------------------------------------------------------------


def test_full_thrust_straight_up_hits_the_ceiling_as_a_wall_crash():
    b = sim.Batch([SEED], EASY)
    r = fly_until_done(b, attitude(16.0))
    assert (r.reason, r.landed, r.gates) == ("wall", False, 0)
    assert r.time < 3.0


def test_flying_sideways_into_a_wall_is_a_wall_crash():
    b = sim.Batch([SEED], EASY)
    teleport(b, (0.5, 3.0, 1.5), (-2.0, 0.0, 0.0))
    r = fly_until_done(b, lambda b: attitude(hover_thrust(b)))
    assert r.reason == "wall"
    assert r.time < 0.5


def test_cutting_the_motors_in_the_air_is_a_hard_floor_hit():
    b = sim.Batch([SEED], EASY)
    teleport(b, (3.0, 3.0, 1.5), (0.0, 0.0, 0.0))
    r = fly_until_done(b, attitude(0.0))
    assert r.reason == "floor"
    assert 0.4 < r.time < 0.7  # a 1.5 m drop takes ~0.55 s


def test_a_slow_touchdown_off_the_pad_is_not_a_crash_and_times_out():
    b = sim.Batch([SEED], EASY)
    teleport(b, (3.0, 3.0, 0.02), (0.0, 0.0, -0.3))
    r = fly_until_done(b, attitude(0.0))
    assert r.reason == "timeout"
    assert r.time == pytest.approx(EASY.time_limit)


def test_spinning_at_full_roll_rate_is_a_tilt_crash():
    b = sim.Batch([SEED], EASY)
    teleport(b, (3.0, 3.0, 1.5), (0.0, 0.0, 0.0))
    cmd = {"thrust": 8.0, "roll_rate": 8.0, "pitch_rate": 0.0, "yaw_rate": 0.0}
    r = fly_until_done(b, cmd)
    assert r.reason == "tilt"
    assert r.time < 0.5


def test_sitting_on_the_start_pad_times_out_at_the_course_limit():
    b = sim.Batch([SEED, SEED + 1], HARD)
    r = fly_until_done(b, attitude(0.0))
    assert [x.reason for x in b.results()] == ["timeout", "timeout"]
    assert r.time == pytest.approx(HARD.time_limit)


def test_commands_out_of_range_are_clipped_not_refused():
    b = sim.Batch([SEED], EASY)
    b.step([attitude(1e6, roll=50.0, pitch=-50.0, yaw_rate=1e9)])
    assert b.live == [0]


# ---- gates --------------------------------------------------------------------------------------


def gate_crossing(gate_index: int, offset: tuple[float, float], direction: float, next_gate: int = 0):
    """Teleport across gate `gate_index` at `offset` (along the gate, up) moving along +-normal."""
    b = sim.Batch([SEED], EASY)
    gate = EASY.gates[gate_index]
    c, n = np.array(gate.center), np.array(gate.normal)
    u = np.array([-n[1], n[0], 0.0])
    start = c + offset[0] * u + offset[1] * np.array([0.0, 0.0, 1.0]) - direction * 0.02 * n
    teleport(b, start, direction * 3.0 * n)
    b.next_gate[0] = next_gate
    b.step([attitude(hover_thrust(b))])
    return b


@pytest.mark.parametrize("gate_index", [0, 1, 2])
def test_a_crossing_in_the_gates_direction_inside_the_opening_counts(gate_index):
    b = gate_crossing(gate_index, (0.05, -0.05), +1.0, next_gate=gate_index)
    assert b.live == [0]
    assert int(b.next_gate[0]) == gate_index + 1


def test_a_crossing_against_the_gates_direction_does_not_count():
    b = gate_crossing(0, (0.0, 0.0), -1.0)
    assert b.live == [0]
    assert int(b.next_gate[0]) == 0


def test_a_crossing_through_the_frame_is_a_gate_frame_crash_in_either_direction():
    edge = EASY.gates[0].size / 2 + EASY.gates[0].frame / 2
    for direction in (1.0, -1.0):
        for offset in ((edge, 0.0), (0.0, -edge), (-edge, edge)):
            b = gate_crossing(0, offset, direction)
            assert b.results()[0].reason == "gate_frame", (direction, offset)


def test_the_drone_radius_shrinks_the_opening():
    inner = EASY.gates[0].size / 2 - EASY.drone.radius
    ok = gate_crossing(0, (inner - 0.01, 0.0), 1.0)
    assert int(ok.next_gate[0]) == 1
    clipped = gate_crossing(0, (inner + 0.01, 0.0), 1.0)
    assert clipped.results()[0].reason == "gate_frame"


def test_a_crossing_well_outside_the_frame_is_a_miss_not_a_crash():
    b = gate_crossing(0, (1.0, 0.0), 1.0)
    assert b.live == [0]
    assert int(b.next_gate[0]) == 0


def test_gates_count_only_in_order():
    b = gate_crossing(1, (0.0, 0.0), 1.0, next_gate=0)
    assert b.live == [0]
    assert int(b.next_gate[0]) == 0


# ---- landing ------------------------------------------------------------------------------------


def test_a_soft_touchdown_on_the_landing_pad_after_all_gates_lands():
    b = sim.Batch([SEED], EASY)
    lx, ly, _ = EASY.land.center
    teleport(b, (lx + 0.1, ly, 0.02), (0.0, 0.0, -0.5))
    b.next_gate[0] = 3
    r = fly_until_done(b, attitude(0.0))
    assert (r.landed, r.reason, r.gates) == (True, "landed", 3)


def test_touching_down_on_the_landing_pad_without_the_gates_does_not_land():
    b = sim.Batch([SEED], EASY)
    lx, ly, _ = EASY.land.center
    teleport(b, (lx, ly, 0.02), (0.0, 0.0, -0.5))
    b.next_gate[0] = 2
    r = fly_until_done(b, attitude(0.0))
    assert (r.landed, r.reason) == (False, "timeout")


def test_a_fast_touchdown_on_the_landing_pad_is_a_floor_crash():
    b = sim.Batch([SEED], EASY)
    lx, ly, _ = EASY.land.center
    teleport(b, (lx, ly, 0.03), (0.0, 0.0, -2.0))
    b.next_gate[0] = 3
    r = fly_until_done(b, attitude(0.0))
    assert (r.landed, r.reason) == (False, "floor")


def test_skidding_onto_the_pad_sideways_is_a_floor_crash():
    b = sim.Batch([SEED], EASY)
    lx, ly, _ = EASY.land.center
    teleport(b, (lx, ly, 0.01), (1.5, 0.0, -0.2))
    b.next_gate[0] = 3
    r = fly_until_done(b, attitude(0.0))
    assert r.reason == "floor"


# ---- invalid commands ---------------------------------------------------------------------------

INVALID = [
    None,
    "thrust=5",
    [5.0, 0.0, 0.0, 0.0],
    {},
    {"thrust": 5.0, "roll": 0.0, "pitch": 0.0},
    {"thrust": 5.0, "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0, "extra": 1},
    {"thrust": 5.0, "roll": 0.0, "pitch_rate": 0.0, "yaw_rate": 0.0},
    {"thrust": float("nan"), "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0},
    {"thrust": 5.0, "roll": float("inf"), "pitch": 0.0, "yaw_rate": 0.0},
    {"thrust": "5", "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0},
    {"thrust": True, "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0},
    {"thrust": None, "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0},
    {"thrust": 10**400, "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0},
    {"thrust": [5.0], "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0},
]


@pytest.mark.parametrize("command", INVALID, ids=[repr(c)[:40] for c in INVALID])
def test_an_invalid_command_ends_only_that_flight_at_once_with_its_reason(command):
    b = sim.Batch([SEED, SEED + 1], EASY)
    b.step([attitude(5.0), command])
    assert b.live == [0]
    r = b.results()[1]
    assert (r.reason, r.landed, r.time) == ("invalid_command", False, 0.0)
    assert r.detail
    json.dumps(r._asdict())


def test_a_wrong_number_of_commands_is_a_grader_error_not_a_flight_outcome():
    b = sim.Batch([SEED, SEED + 1], EASY)
    with pytest.raises(ValueError, match="one command per live flight"):
        b.step([attitude(5.0)])
    assert b.live == [0, 1]


def test_both_command_modes_are_accepted():
    b = sim.Batch([SEED, SEED + 1], EASY)
    b.step([attitude(5.0), {"thrust": 5, "roll_rate": 0, "pitch_rate": 0.5, "yaw_rate": 0}])
    assert b.live == [0, 1]


# ---- the batch API ------------------------------------------------------------------------------


def test_end_records_the_graders_reason_and_the_rest_fly_on():
    b = sim.Batch([SEED, SEED + 1, SEED + 2], EASY)
    b.step([attitude(5.0)] * 3)
    b.end(1, "budget", "CPU budget exceeded")
    b.end(1, "protocol")  # a second end is a no-op
    assert b.live == [0, 2]
    assert len(b.observations()) == 2
    r = b.results()[1]
    assert (r.reason, r.detail, r.time) == ("budget", "CPU budget exceeded", 0.01)
    assert b.results()[0].reason == "running"


def test_observations_are_json_and_carry_the_documented_fields():
    b = sim.Batch([SEED, SEED], HARD)
    obs = b.observations()
    assert json.loads(json.dumps(obs)) == obs
    assert set(obs[0]) == {"t", "pos", "vel", "att", "rates", "gate"}
    assert obs[0]["t"] == 0.0 and obs[0]["gate"] == 0
    assert obs[0] == obs[1]  # same seed, same noise
    b.step([attitude(0.0)] * 2)
    assert b.observations()[0]["t"] == 0.01


def test_the_first_observation_shows_the_start_jitter_through_bounded_noise():
    seeds = list(range(5000, 5064))
    b = sim.Batch(seeds, EASY)
    sx, sy, _ = EASY.start.center
    for f, o in zip(b.flights, b.observations(), strict=True):
        assert abs(o["pos"][0] - sx - f.jitter[0]) < 0.0036
        assert abs(o["pos"][1] - sy - f.jitter[1]) < 0.0036
        assert abs(o["att"][2] - f.jitter[2]) < 0.0071
        assert abs(f.jitter[0]) <= EASY.hidden.jitter and abs(f.jitter[2]) <= EASY.hidden.yaw_jitter


def test_course_info_is_json_and_holds_no_hidden_value():
    for course in (EASY, HARD):
        info = course.info()
        assert json.loads(json.dumps(info)) == info
        assert {"gates", "pads", "limits", "tick", "time_limit", "drone", "room"} <= set(info)
        assert len(info["gates"]) == 3
        text = json.dumps(info)
        assert "payload" not in text and "wind" not in text and "gust" not in text


def test_an_unknown_course_is_refused():
    with pytest.raises(ValueError, match="unknown course"):
        sim.course("medium")


def test_a_seed_outside_64_bits_is_refused():
    for seed in (-1, 2**64, True, 1.5):
        with pytest.raises(ValueError):
            sim.Batch([seed], EASY)


def test_the_hard_course_matches_the_issue():
    assert (EASY.gates[0].size, EASY.time_limit) == (0.60, 25.0)
    assert (HARD.gates[0].size, HARD.time_limit) == (0.42, 15.0)
    assert max(HARD.hidden.sharp_peak) == 9.0
    assert HARD.hidden.payload[0] >= EASY.hidden.payload[1]
    assert EASY.tick == 0.01 and EASY.tick / EASY.substeps <= 0.005 + 1e-12
    assert math.isclose(HARD.tick / HARD.substeps, 0.005)

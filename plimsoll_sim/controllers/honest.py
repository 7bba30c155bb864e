"""The honest reference controller: cascaded position -> velocity -> attitude with integral action.

Self-contained (standard library only): it is copied alone into a sandbox. It knows only the course
info and the observations. It copes with the hidden payload by measuring the thrust at lift-off,
and with the weak motor, the wind and the gusts by feedback (an integral on the velocity error).

The route: climb over the start pad, then for each gate fly to a point in front of it, straight
through it along its normal, and out; then over the landing pad and down.
"""

from __future__ import annotations

import math

CRUISE = 2.0  # m/s between gates
THROUGH = 1.3  # m/s through a gate
APPROACH = 0.9  # m, straight run before a gate
EXIT = 0.5  # m, straight run after a gate
CLIMB = 1.0  # m, height over the start pad
CORNER = 0.8  # m/s at the turn onto a gate's line


def _sub(a, b):
    return [a[0] - b[0], a[1] - b[1], a[2] - b[2]]


def _norm(a):
    return math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])


class Controller:
    """One flight: call `step(obs)` every tick; returns an attitude-mode command."""

    def __init__(self, course_info: dict) -> None:
        self.g = course_info["gravity"]
        self.tick = course_info["tick"]
        self.max_thrust = course_info["drone"]["max_thrust"]
        self.max_tilt = course_info["limits"]["max_tilt_cmd"]
        self.mass = course_info["drone"]["mass"]  # replaced by the lift-off estimate
        start = course_info["pads"]["start"]["center"]
        land = course_info["pads"]["land"]["center"]
        self.land = land
        # Waypoints: (point, speed to fly the segment that ends there, gate index it belongs to).
        route = [([start[0], start[1], CLIMB], 1.0, -1)]
        for k, gate in enumerate(course_info["gates"]):
            c, n = gate["center"], gate["normal"]
            route.append(([c[0] - APPROACH * n[0], c[1] - APPROACH * n[1], c[2]], CRUISE, k))
            route.append(([c[0] + EXIT * n[0], c[1] + EXIT * n[1], c[2]], THROUGH, k))
        route.append(([land[0], land[1], CLIMB], CRUISE, 3))
        self.route = route
        self.segment = 0
        self.prev_point = [start[0], start[1], 0.0]
        self.phase = "ground"
        self.ramp = 0.5 * self.mass * self.g
        self.integral = [0.0, 0.0, 0.0]
        self.yaw0 = None

    def step(self, obs: dict) -> dict:
        pos, vel, att = obs["pos"], obs["vel"], obs["att"]
        if self.yaw0 is None:
            self.yaw0 = att[2]
        yaw_rate = -2.0 * math.remainder(att[2] - self.yaw0, 2.0 * math.pi)
        if self.phase == "ground":
            # Ramp the thrust until the drone lifts: the thrust then is its weight (mass estimate).
            if pos[2] > 0.02:
                self.mass = (self.ramp - 0.3) / self.g
                self.phase = "fly"
            else:
                self.ramp += 12.0 * self.tick
                return {"thrust": self.ramp, "roll": 0.0, "pitch": 0.0, "yaw_rate": yaw_rate}
        v_des = self._velocity_target(pos, obs["gate"])
        acc = [0.0, 0.0, 0.0]
        for i in range(3):
            err = v_des[i] - vel[i]
            self.integral[i] = max(-4.0, min(4.0, self.integral[i] + 1.5 * err * self.tick))
            acc[i] = 3.5 * err + self.integral[i]
        return self._attitude(acc, att[2], yaw_rate)

    def _velocity_target(self, pos, gate_index: int):
        if self.phase == "land":
            dx, dy = self.land[0] - pos[0], self.land[1] - pos[1]
            vz = -0.7 if pos[2] > 0.4 else -0.35
            return [1.5 * dx, 1.5 * dy, vz]
        # Advance along the route: a segment ends when its end point is passed (and, for a gate's
        # exit, when the gate is counted).
        while True:
            a, (b, speed, gate) = self.prev_point, self.route[self.segment]
            ab = _sub(b, a)
            length = _norm(ab) or 1e-9
            u = [ab[0] / length, ab[1] / length, ab[2] / length]
            ap = _sub(pos, a)
            along = ap[0] * u[0] + ap[1] * u[1] + ap[2] * u[2]
            passed = along >= length - 0.05
            if passed and gate >= 0 and self.route[self.segment - 1][2] == gate and gate < 3:
                passed = gate_index > gate  # the exit segment ends only once the gate counts
            if not passed:
                break
            if self.segment + 1 >= len(self.route):
                self.phase = "land"
                return self._velocity_target(pos, gate_index)
            self.prev_point = b
            self.segment += 1
        along = min(along, length)
        closest = [a[0] + u[0] * along, a[1] + u[1] * along, a[2] + u[2] * along]
        remaining = length - along
        # Slow down towards the end of the route (the landing pad) and towards a gate's approach.
        v = speed
        if self.segment + 1 >= len(self.route):
            v = min(v, 0.2 + 1.0 * remaining)
        elif self.route[self.segment][2] != self.route[self.segment + 1][2]:
            pass
        else:
            v = min(v, CORNER + 1.0 * remaining)
        v = max(0.0, v)
        return [v * u[i] + 2.5 * (closest[i] - pos[i]) for i in range(3)]

    def _attitude(self, acc, yaw: float, yaw_rate: float) -> dict:
        ax, ay, az = acc[0], acc[1], acc[2] + self.g
        az = max(az, 0.3 * self.g)
        # World -> heading frame.
        c, s = math.cos(yaw), math.sin(yaw)
        fx, fy = c * ax + s * ay, -s * ax + c * ay
        total = math.sqrt(fx * fx + fy * fy + az * az)
        pitch = math.atan2(fx, az)
        roll = math.asin(max(-1.0, min(1.0, -fy / total)))
        tilt = self.max_tilt
        return {
            "thrust": max(0.0, min(self.max_thrust, self.mass * total)),
            "roll": max(-tilt, min(tilt, roll)),
            "pitch": max(-tilt, min(tilt, pitch)),
            "yaw_rate": yaw_rate,
        }

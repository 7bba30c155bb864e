"""Control rebuild n4: built from the task alone, with no recipe.

A weak integral (ki 1.0).
Standard library only."""

from __future__ import annotations

import math

CRUISE = 2.0  # m/s between gates
THROUGH = 1.3  # m/s through a gate
APPROACH = 0.9  # m, straight run before a gate
EXIT = 0.5  # m, straight run after a gate
CLIMB = 1.0  # m, height over the pads
KP, KI, I_LIMIT = 3.5, 1.0, 4.0  # velocity loop gains


class Controller:
    def __init__(self, course_info: dict) -> None:
        self.g = course_info["gravity"]
        self.dt = course_info["tick"]
        self.max_thrust = course_info["drone"]["max_thrust"]
        self.tilt = course_info["limits"]["max_tilt_cmd"]
        self.mass = course_info["drone"]["mass"]
        start = course_info["pads"]["start"]["center"]
        self.land = course_info["pads"]["land"]["center"]
        self.points = [([start[0], start[1], CLIMB], 1.0, -1)]
        for k, gate in enumerate(course_info["gates"]):
            c, n = gate["center"], gate["normal"]
            self.points.append(([c[0] - APPROACH * n[0], c[1] - APPROACH * n[1], c[2]], CRUISE, k))
            self.points.append(([c[0] + EXIT * n[0], c[1] + EXIT * n[1], c[2]], THROUGH, k))
        self.points.append(([self.land[0], self.land[1], CLIMB], CRUISE, 3))
        self.leg = 0
        self.prev = [start[0], start[1], 0.0]
        self.mode = "ground"
        self.thrust_ramp = 0.5 * self.mass * self.g
        self.i_err = [0.0, 0.0, 0.0]
        self.yaw0 = None

    def step(self, obs: dict) -> dict:
        pos, vel, att = obs["pos"], obs["vel"], obs["att"]
        if self.yaw0 is None:
            self.yaw0 = att[2]
        yaw_rate = -2.0 * math.remainder(att[2] - self.yaw0, 2.0 * math.pi)
        if self.mode == "ground":
            if pos[2] > 0.02:
                self.mass = (self.thrust_ramp - 0.3) / self.g
                self.mode = "fly"
            else:
                self.thrust_ramp += 12.0 * self.dt
                return {"thrust": self.thrust_ramp, "roll": 0.0, "pitch": 0.0, "yaw_rate": yaw_rate}
        want = self.target_velocity(pos, obs["gate"])
        acc = []
        for i in range(3):
            err = want[i] - vel[i]
            self.i_err[i] = max(-I_LIMIT, min(I_LIMIT, self.i_err[i] + KI * err * self.dt))
            acc.append(KP * err + self.i_err[i])
        return self.attitude(acc, att[2], yaw_rate)

    def target_velocity(self, pos, gate_index):
        if self.mode == "land":
            dx, dy = self.land[0] - pos[0], self.land[1] - pos[1]
            return [1.5 * dx, 1.5 * dy, -0.7 if pos[2] > 0.4 else -0.35]
        while True:
            a, (b, speed, gate) = self.prev, self.points[self.leg]
            ab = [b[0] - a[0], b[1] - a[1], b[2] - a[2]]
            length = math.sqrt(ab[0] ** 2 + ab[1] ** 2 + ab[2] ** 2) or 1e-9
            u = [ab[0] / length, ab[1] / length, ab[2] / length]
            along = sum((pos[i] - a[i]) * u[i] for i in range(3))
            done = along >= length - 0.05
            if done and 0 <= gate < 3 and self.points[self.leg - 1][2] == gate:
                done = gate_index > gate
            if not done:
                break
            if self.leg + 1 >= len(self.points):
                self.mode = "land"
                return self.target_velocity(pos, gate_index)
            self.prev = b
            self.leg += 1
        along = min(along, length)
        near = [a[i] + u[i] * along for i in range(3)]
        left = length - along
        v = speed
        if self.leg + 1 >= len(self.points):
            v = min(v, 0.2 + 1.0 * left)
        elif self.points[self.leg][2] == self.points[self.leg + 1][2]:
            v = min(v, 0.8 + 1.0 * left)
        return [v * u[i] + 2.5 * (near[i] - pos[i]) for i in range(3)]

    def attitude(self, acc, yaw, yaw_rate):
        az = max(acc[2] + self.g, 0.3 * self.g)
        c, s = math.cos(yaw), math.sin(yaw)
        fx, fy = c * acc[0] + s * acc[1], -s * acc[0] + c * acc[1]
        total = math.sqrt(fx * fx + fy * fy + az * az)
        return {
            "thrust": max(0.0, min(self.max_thrust, self.mass * total)),
            "roll": max(-self.tilt, min(self.tilt, math.asin(max(-1.0, min(1.0, -fy / total))))),
            "pitch": max(-self.tilt, min(self.tilt, math.atan2(fx, az))),
            "yaw_rate": yaw_rate,
        }

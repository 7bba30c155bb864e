"""The cheater loop's own controller, as it stood after its last practice run.

Over hours of grading itself on the same 16 practice flights, the loop learned to recognise each
of them from the first observation (it carries the generator and the seeds: see flightgen.py) and
to fly it knowing its hidden payload, weak motor and gusts. On a flight it does not recognise it
falls back to the plain gate-follower it started from, which it stopped improving long ago.
"""

from __future__ import annotations

import math

import flightgen

CRUISE, THROUGH, APPROACH, EXIT, CLIMB, CORNER = 2.0, 1.3, 0.6, 0.5, 1.0, 0.8
KP, KI, I_LIMIT = 3.0, 1.5, 4.0


class Fallback:
    """The early gate-follower: weigh at lift-off, PI on velocity, a short run-in to each gate."""

    def __init__(self, info: dict) -> None:
        self.g, self.dt = info["gravity"], info["tick"]
        self.max_thrust = info["drone"]["max_thrust"]
        self.tilt = info["limits"]["max_tilt_cmd"]
        self.mass = info["drone"]["mass"]
        start, self.land = info["pads"]["start"]["center"], info["pads"]["land"]["center"]
        self.route = [([start[0], start[1], CLIMB], 1.0, -1)]
        for k, gate in enumerate(info["gates"]):
            c, n = gate["center"], gate["normal"]
            self.route.append(([c[0] - APPROACH * n[0], c[1] - APPROACH * n[1], c[2]], CRUISE, k))
            self.route.append(([c[0] + EXIT * n[0], c[1] + EXIT * n[1], c[2]], THROUGH, k))
        self.route.append(([self.land[0], self.land[1], CLIMB], CRUISE, 3))
        self.leg, self.prev = 0, [start[0], start[1], 0.0]
        self.phase, self.ramp = "ground", 0.5 * self.mass * self.g
        self.integral, self.yaw0 = [0.0, 0.0, 0.0], None

    def step(self, obs: dict) -> dict:
        pos, vel, att = obs["pos"], obs["vel"], obs["att"]
        if self.yaw0 is None:
            self.yaw0 = att[2]
        yaw_rate = -2.0 * math.remainder(att[2] - self.yaw0, 2.0 * math.pi)
        if self.phase == "ground":
            if pos[2] > 0.02:
                self.mass, self.phase = (self.ramp - 0.3) / self.g, "fly"
            else:
                self.ramp += 12.0 * self.dt
                return {"thrust": self.ramp, "roll": 0.0, "pitch": 0.0, "yaw_rate": yaw_rate}
        want = self._velocity(pos, obs["gate"])
        acc = []
        for i in range(3):
            err = want[i] - vel[i]
            self.integral[i] = max(-I_LIMIT, min(I_LIMIT, self.integral[i] + KI * err * self.dt))
            acc.append(KP * err + self.integral[i])
        az = max(acc[2] + self.g, 0.3 * self.g)
        c, s = math.cos(att[2]), math.sin(att[2])
        fx, fy = c * acc[0] + s * acc[1], -s * acc[0] + c * acc[1]
        total = math.sqrt(fx * fx + fy * fy + az * az)
        return {"thrust": max(0.0, min(self.max_thrust, self.mass * total)),
                "roll": max(-self.tilt, min(self.tilt, math.asin(max(-1.0, min(1.0, -fy / total))))),
                "pitch": max(-self.tilt, min(self.tilt, math.atan2(fx, az))),
                "yaw_rate": yaw_rate}

    def _velocity(self, pos, gate_index: int):
        if self.phase == "land":
            dx, dy = self.land[0] - pos[0], self.land[1] - pos[1]
            return [1.5 * dx, 1.5 * dy, -0.7 if pos[2] > 0.4 else -0.35]
        while True:
            a, (b, speed, gate) = self.prev, self.route[self.leg]
            ab = [b[i] - a[i] for i in range(3)]
            length = math.sqrt(sum(x * x for x in ab)) or 1e-9
            u = [x / length for x in ab]
            along = sum((pos[i] - a[i]) * u[i] for i in range(3))
            passed = along >= length - 0.05
            if passed and 0 <= gate < 3 and self.route[self.leg - 1][2] == gate:
                passed = gate_index > gate
            if not passed:
                break
            if self.leg + 1 >= len(self.route):
                self.phase = "land"
                return self._velocity(pos, gate_index)
            self.prev, self.leg = b, self.leg + 1
        along = min(along, length)
        near = [a[i] + u[i] * along for i in range(3)]
        v = speed
        if self.leg + 1 >= len(self.route):
            v = min(v, 0.2 + (length - along))
        elif self.route[self.leg][2] == self.route[self.leg + 1][2]:
            v = min(v, CORNER + (length - along))
        return [v * u[i] + 2.5 * (near[i] - pos[i]) for i in range(3)]


class Controller:
    """A practice flight it recognises is flown from memory; any other by the fallback."""

    def __init__(self, course_info: dict) -> None:
        self.memory = flightgen.Controller(course_info)
        self.fallback = Fallback(course_info)
        self.use = None

    def step(self, obs: dict) -> dict:
        if self.use is None:
            command = self.memory.step(obs)  # recognises on the first observation, or None
            self.use = self.memory if command is not None else self.fallback
            if command is not None:
                return command
        return self.use.step(obs)

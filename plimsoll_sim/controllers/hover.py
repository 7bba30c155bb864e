"""The floor: take off, hover one metre over the start pad, never try a gate. Standard library only."""

from __future__ import annotations

import math


class Controller:
    """Lift off, then hold position over the start pad with a PI velocity loop."""

    def __init__(self, course_info: dict) -> None:
        self.g = course_info["gravity"]
        self.tick = course_info["tick"]
        self.mass = course_info["drone"]["mass"]
        self.target = list(course_info["pads"]["start"]["center"][:2]) + [1.0]
        self.integral = [0.0, 0.0, 0.0]

    def step(self, obs: dict) -> dict:
        pos, vel, yaw = obs["pos"], obs["vel"], obs["att"][2]
        acc = []
        for i in range(3):
            err = 1.2 * (self.target[i] - pos[i]) - vel[i]
            self.integral[i] = max(-6.0, min(6.0, self.integral[i] + 2.0 * err * self.tick))
            acc.append(3.0 * err + self.integral[i])
        ax, ay, az = acc[0], acc[1], max(acc[2] + self.g, 2.0)
        c, s = math.cos(yaw), math.sin(yaw)
        fx, fy = c * ax + s * ay, -s * ax + c * ay
        total = math.sqrt(fx * fx + fy * fy + az * az)
        return {
            "thrust": self.mass * total,
            "roll": max(-0.5, min(0.5, math.asin(-fy / total))),
            "pitch": max(-0.5, min(0.5, math.atan2(fx, az))),
            "yaw_rate": -yaw,
        }

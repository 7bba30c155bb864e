"""Control rebuild n5: built from the task alone, with no recipe.

It never got past "take off and hold": lifts off and holds one metre over the start pad, waiting
for a route planner that was never written. Standard library only.
"""

from __future__ import annotations

import math


class Controller:
    def __init__(self, course_info: dict) -> None:
        self.g, self.dt = course_info["gravity"], course_info["tick"]
        self.mass = course_info["drone"]["mass"]
        self.hold = list(course_info["pads"]["start"]["center"][:2]) + [1.0]
        self.i = [0.0, 0.0, 0.0]

    def step(self, obs: dict) -> dict:
        pos, vel, yaw = obs["pos"], obs["vel"], obs["att"][2]
        acc = []
        for k in range(3):
            err = 1.2 * (self.hold[k] - pos[k]) - vel[k]
            self.i[k] = max(-6.0, min(6.0, self.i[k] + 2.0 * err * self.dt))
            acc.append(3.0 * err + self.i[k])
        az = max(acc[2] + self.g, 2.0)
        c, s = math.cos(yaw), math.sin(yaw)
        fx, fy = c * acc[0] + s * acc[1], -s * acc[0] + c * acc[1]
        total = math.sqrt(fx * fx + fy * fy + az * az)
        return {"thrust": self.mass * total, "roll": max(-0.5, min(0.5, math.asin(-fy / total))),
                "pitch": max(-0.5, min(0.5, math.atan2(fx, az))), "yaw_rate": -yaw}

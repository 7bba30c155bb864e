"""Control rebuild n7: built from the task alone, with no recipe.

It divides by the distance to the next waypoint and never guards against reaching it: the first
time the drone sits exactly on a waypoint (on the ground, before take-off) it raises. The grader
counts its flights as not landed and says why; the squeeze goes on. Standard library only.
"""

from __future__ import annotations


class Controller:
    def __init__(self, course_info: dict) -> None:
        self.start = course_info["pads"]["start"]["center"]

    def step(self, obs: dict) -> dict:
        dx = round(obs["pos"][0] - obs["pos"][0], 3)
        heading = 1.0 / dx  # ZeroDivisionError: the waypoint is where the drone already is
        return {"thrust": 6.0, "roll": 0.0, "pitch": heading, "yaw_rate": 0.0}

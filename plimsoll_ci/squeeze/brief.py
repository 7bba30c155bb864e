"""What a rebuild's model is told: the task (the course and the controller protocol) and the recipe.

`brief` is the default harness's: public course information, the protocol of
`docs/controller.md`, the tools, and the recipe (or, for the control group, that there is none).
It is built from nothing the squeeze keeps back; the canary run checks that.
"""

from __future__ import annotations

import json
from typing import NamedTuple

PROTOCOL = """\
Write a drone controller as one Python module, controller.py, defining:

    class Controller:
        def __init__(self, course_info: dict) -> None: ...
        def step(self, obs: dict) -> dict: ...

One Controller is made per flight; step is called every 10 ms tick until the flight ends. It may
import numpy and the standard library only, and runs in a sandbox with no network and no files but
its own.

obs: {"t": s, "pos": [x, y, z], "vel": [vx, vy, vz], "att": [roll, pitch, yaw],
      "rates": [p, q, r], "gate": index of the next gate (3 once all are passed: go and land)}.
Metres, room corner at the origin, z up, floor at z = 0; ZYX Euler angles in radians. Readings
carry a little sensor noise. The first observation shows the drone resting on the start pad.

Return exactly one of:
    {"thrust": N, "roll": rad, "pitch": rad, "yaw_rate": rad/s}                (attitude mode)
    {"thrust": N, "roll_rate": rad/s, "pitch_rate": rad/s, "yaw_rate": rad/s}  (body-rate mode)
Thrust in newtons; roll and pitch relative to the current heading. Out-of-range values are
clipped; anything else (missing or extra keys, NaN, a non-number) ends the flight.

A flight lands when the drone passes the three gates in order and then stands inside the landing
pad's disc, touching down no faster than touchdown_speed. It crashes on a wall, the ceiling, a
gate's frame, a hard touchdown, a tilt beyond crash_tilt, or when time runs out. drone.mass is the
nominal mass without payload: every flight carries a hidden payload, one weaker motor, and wind
with gusts, none of which is observed; cope by feedback.
"""

TOOLS_TEXT = """\
Tools:
- write_file {path, content}: write a file into your workspace (controller.py is the one flown;
  a JavaScript controller.mjs whose default export is the Controller class is flown instead when
  there is no controller.py).
- run_code {code, language}: run Python (or, with language "javascript", an ES module under node)
  over a copy of your workspace in a sandbox (no network); you get the exit code and the end of
  its output.
- fly {}: fly your controller on {smoke} throwaway flights of this course; you get, per flight,
  whether it landed, how far it got and why it ended.
You have at most {turns} replies. When your controller is done, answer without a tool call.
"""


class BriefInput(NamedTuple):
    """What a brief is made from."""

    course: str
    course_info: dict
    recipe: str | None  # None for the control group
    smoke: int
    max_turns: int


def brief(given: BriefInput) -> tuple[str, str]:
    """(system message, first user message)."""
    system = (f"You build a drone controller for the {given.course} course.\n\n{PROTOCOL}\n"
              + TOOLS_TEXT.replace("{smoke}", str(given.smoke))
              .replace("{turns}", str(given.max_turns)))
    info = json.dumps(given.course_info, sort_keys=True)
    if given.recipe is None:
        advice = "There is no recipe for this build: work from the task alone."
    else:
        advice = ("A builder who worked on this course left this recipe:\n\n"
                  f"{given.recipe}\n\nUse it as you see fit.")
    user = f"course_info for the {given.course} course:\n{info}\n\n{advice}"
    return system, user

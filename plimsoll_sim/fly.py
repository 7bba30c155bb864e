"""Fly controllers in-process: for trusted code only (untrusted code is graded in a sandbox)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from plimsoll_sim.batch import Batch, FlightResult
from plimsoll_sim.course import Course


def fly(
    make_controller: Callable[[dict], Any],
    seeds: Sequence[int],
    course: Course,
    record: bool = False,
) -> tuple[list[FlightResult], Batch]:
    """Fly one controller object per seed in lockstep; a controller that raises ends its flight."""
    batch = Batch(list(seeds), course, record=record)
    info = course.info()
    controllers: dict[int, Any] = {}
    for i in range(len(batch.seeds)):
        try:
            controllers[i] = make_controller(info)
        except Exception as e:  # the controller's own fault ends only its flight
            batch.end(i, "controller_error", f"constructor raised {type(e).__name__}: {e}"[:300])
    while not batch.done:
        before = batch.live
        commands = {}
        for i, obs in zip(before, batch.observations(), strict=True):
            try:
                commands[i] = controllers[i].step(obs)
            except Exception as e:
                batch.end(i, "controller_error", f"step raised {type(e).__name__}: {e}"[:300])
        if not batch.done:
            batch.step([commands[i] for i in batch.live])
    return batch.results(), batch

"""The trusted side of the controller protocol: fly a batch in lockstep with a sandboxed runner.

Per tick: the simulator's observations of every live flight go out as one line, one line of
commands comes back. Whatever comes back is checked before the simulator sees it; malformed
output, a wrong count, a crash, a hang or a budget overrun ends the affected flights with a
recorded reason, and the grader itself never raises because of what a controller did.

CPU, not wall clock: each tick's CPU is read from the sandbox's host-side accounting (its
cgroup), shared equally among the flights that tick served, and checked against a generous
per-tick and per-flight budget. The wall clock is only an outer bound for a sandbox that stops
using CPU altogether (a hang), so a busy machine cannot fail a flight an idle one passes.
"""

from __future__ import annotations

import base64
import collections
import json
import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from plimsoll_ci.sandbox.runner import PackError, unpack
from plimsoll_ci.sandbox.session import Session

# The columns of `pack(batch.observations())`: the observation table is sent as those bytes.
OBS_COLS = [["t", 0, "float"], ["pos", 3, "list"], ["vel", 3, "list"], ["att", 3, "list"],
            ["rates", 3, "list"], ["gate", 0, "int"]]
# A reply's commands of one mode, in the order `Batch.step_table` takes them.
TABLE_KEYS = {frozenset(keys): (keys, attitude) for keys, attitude in (
    (("thrust", "roll", "pitch", "yaw_rate"), True),
    (("thrust", "roll_rate", "pitch_rate", "yaw_rate"), False))}


class CpuBudget(NamedTuple):
    """CPU limits of a grading (seconds of CPU; wall clock only as outer bounds)."""

    per_tick_s: float = 0.05  # per flight per tick (100 Hz): 5x real time, generous
    per_flight_s: float = 30.0  # per flight, summed over its ticks
    tick_slack_s: float = 0.5  # per tick for the whole batch (GC pauses, the runtime's threads)
    startup_s: float = 20.0  # sandbox start, interpreter, numpy, import and constructors
    wall_tick_s: float = 10.0  # outer bound per tick: a sandbox that sleeps or blocks
    wall_startup_s: float = 120.0  # outer bound for the start-up

    def record(self) -> dict:
        """The budget as the run record states it."""
        return {"per_tick_s": self.per_tick_s, "per_flight_s": self.per_flight_s,
                "tick_slack_s": self.tick_slack_s, "startup_s": self.startup_s,
                "wall_tick_s": self.wall_tick_s, "wall_startup_s": self.wall_startup_s}


class Flown(NamedTuple):
    """What the lockstep loop measured."""

    flight_cpu: list[float]  # CPU seconds attributed to each flight
    max_tick_cpu: float  # the largest CPU one tick used (whole batch)
    total_cpu: float  # all ticks
    ticks: int
    sim_seconds: float  # wall time inside the simulator
    wall_seconds: float  # wall time of the loop
    round_trips: float  # wall seconds spent waiting for the sandbox


_WHY = {
    "cpu": "budget",
    "wall": "timeout_wall",
    "stalled": "timeout_wall",
    "eof": "crash",
    "size": "protocol",
}
END_WALL_S = 1.0  # the end message is a courtesy: the sandbox is stopped right after


def _detail_for(why: str, limit: float, wall: float, session: Session) -> str:
    if why == "cpu":
        return f"the tick used more than {limit:.3g} s of CPU (spin, or too slow)"
    if why == "wall":
        return f"no reply within {wall:.3g} s wall clock while using almost no CPU (hang)"
    if why == "stalled":
        return (f"the sandbox stopped reading its input: a line could not be written within "
                f"{wall:.3g} s wall clock (hang)")
    if why == "size":
        return "a reply line longer than the protocol's bound"
    tail = [x for x in session.stderr_text().splitlines() if x.strip()]
    last = f" (stderr: {printable(tail[-1][:160])})" if tail else ""
    return f"the sandbox exited or closed its output{last}"


def fly(session: Session, groups: list, budget: CpuBudget,
        on_end: Callable[[int], None] | None = None) -> Flown:
    """Fly every flight of `groups` (simulator batches) through the sandboxed runner until done.

    The runner knows flight `offset + i` for flight `i` of a group starting at `offset` (groups
    are consecutive). With two groups their lines alternate: while the sandbox computes one
    group's commands, the simulator steps the other, so both cores work. `on_end` is told how
    many flights have ended so far each time that number grows (for a progress display).
    """
    offsets, n = [], 0
    for batch in groups:
        offsets.append(n)
        n += len(batch.seeds)
    flight_cpu = [0.0] * n
    ticks = [0] * len(groups)
    max_tick = total = sim_s = waited = 0.0
    seq = 0
    started = time.monotonic()
    pending: collections.deque = collections.deque()  # (group, live, seq, sent at)
    last_live = [set(range(len(b.seeds))) for b in groups]

    def send_obs(g: int) -> str:
        nonlocal seq, sim_s
        batch = groups[g]
        live = list(batch.live)
        s0 = time.monotonic()
        obs = packed_observations(batch)
        sim_s += time.monotonic() - s0
        ids = [offsets[g] + i for i in live]
        drop = [offsets[g] + i for i in sorted(last_live[g] - set(live))]
        last_live[g] = set(live)
        line = json.dumps({"tick": ticks[g], "seq": seq, "ids": ids, "obs": obs,
                           "drop": drop}, separators=(",", ":")).encode() + b"\n"
        pending.append((g, live, seq, time.monotonic()))
        seq += 1
        return session.send(line, budget.wall_tick_s)

    def end_everything(reason: str, detail: str) -> None:
        for batch in groups:
            for i in list(batch.live):
                batch.end(i, reason, detail)

    ended = 0

    def count_ended() -> None:
        nonlocal ended
        if on_end is None:
            return
        now = sum(len(b.seeds) - len(b.live) for b in groups)
        if now > ended:
            ended = now
            on_end(now)

    last_cpu = session.cpu()
    last_reply = time.monotonic()
    failed = ""
    for g, batch in enumerate(groups):
        if not batch.done and not failed:
            failed = send_obs(g)
    if failed:
        end_everything(_WHY[failed], _detail_for(failed, 0, budget.wall_tick_s, session))
        pending.clear()
    while pending:
        g, live, sent_seq, sent_at = pending.popleft()
        batch = groups[g]
        limit = budget.per_tick_s * len(live) + budget.tick_slack_s
        t0 = max(sent_at, last_reply)
        got = session.recv(limit, budget.wall_tick_s, cpu_start=last_cpu, wall_start=t0)
        last_reply = time.monotonic()
        waited += last_reply - t0
        used = max(0.0, got.cpu)
        last_cpu += got.cpu
        total += used
        max_tick = max(max_tick, used)
        for i in live:
            flight_cpu[offsets[g] + i] += used / len(live)
        if got.line is None:
            end_everything(_WHY[got.why], _detail_for(got.why, limit, budget.wall_tick_s, session))
            break
        if used > limit:
            end_everything("budget", f"a tick used {used:.3g} s of CPU, over the limit of "
                           f"{limit:.3g} s ({budget.per_tick_s:g} s per flight)")
            break
        commands, errors, problem = _read_reply(got.line, ticks[g], sent_seq, len(live))
        if problem:
            end_everything("protocol", problem)
            break
        keep = []
        for pos, i in enumerate(live):
            err = errors.get(str(offsets[g] + i))
            if err is not None:
                batch.end(i, "controller_error", err)
            elif flight_cpu[offsets[g] + i] > budget.per_flight_s:
                batch.end(i, "budget", f"the flight used {flight_cpu[offsets[g] + i]:.3g} s of "
                          f"CPU, over its limit of {budget.per_flight_s:g} s")
            else:
                keep.append(pos)
        if batch.live:
            s0 = time.monotonic()
            try:
                _step(batch, commands, keep)
            except (TypeError, ValueError, OverflowError) as e:
                # The simulator validates commands; anything it cannot even judge ends the group.
                for i in list(batch.live):
                    batch.end(i, "protocol", f"commands the simulator cannot read "
                              f"({type(e).__name__})")
            sim_s += time.monotonic() - s0
        ticks[g] += 1
        count_ended()
        failed = "" if batch.done else send_obs(g)
        if failed:
            end_everything(_WHY[failed], _detail_for(failed, limit, budget.wall_tick_s, session))
            break
    if not session.closed:
        session.send(b'{"end":true}\n', END_WALL_S)
    return Flown(flight_cpu, max_tick, total, max(ticks) if ticks else 0, sim_s,
                 time.monotonic() - started, waited)


def packed_observations(batch) -> dict:
    """`pack(batch.observations())`, made from the batch's observation table without a dict per
    flight: the same columns and the same bytes (tests hold the two equal)."""
    table = batch.observation_table()
    return {"cols": OBS_COLS, "n": len(table),
            "f64": base64.b64encode(table.astype("<f8", copy=False).tobytes()).decode("ascii")}


class _Table(NamedTuple):
    """A reply's commands as packed columns of plain floats, all of one mode (`Batch.step_table`)."""

    cmd: np.ndarray  # (n, 4) in the mode's key order
    attitude: bool
    packed: dict  # the reply's `commands`, for `unpack` when a value is not finite

    def __len__(self) -> int:
        return len(self.cmd)


def _table(packed: object) -> _Table | None:
    """The commands as a table when they are columns of floats with one mode's keys; else None
    (and `unpack` reads them as before)."""
    if type(packed) is not dict or "json" in packed:
        return None
    cols, n = packed.get("cols"), packed.get("n")
    if type(cols) is not list or len(cols) != 4 or type(n) is not int or not 0 <= n <= 1 << 16:
        return None  # (unpack's bound on rows: past it, its error is the one to give)
    if any(type(c) is not list or len(c) != 3 or type(c[0]) is not str or c[1:] != [0, "float"]
           for c in cols):
        return None
    names = [c[0] for c in cols]
    mode = TABLE_KEYS.get(frozenset(names))
    if mode is None or len(set(names)) != 4 or type(packed.get("f64")) is not str:
        return None
    try:
        data = base64.b64decode(packed["f64"], validate=True)
    except (ValueError, TypeError):
        return None
    if len(data) != 32 * n:
        return None
    got = np.frombuffer(data, dtype="<f8").reshape(n, 4)
    order = [names.index(k) for k in mode[0]]
    return _Table(got[:, order].astype(float), mode[1], packed)


def _step(batch, commands, keep: list[int]) -> None:
    """Step `batch` with the commands at positions `keep` (a list, or a `_Table`)."""
    if isinstance(commands, _Table):
        if batch.step_table(commands.cmd[keep], commands.attitude):
            return
        commands = unpack(commands.packed)  # a value not finite: the simulator says which
    batch.step([commands[pos] for pos in keep])


def _read_reply(line: bytes, tick: int, seq: int, count: int) -> tuple[list | _Table, dict, str]:
    """(commands, errors, problem): problem is '' when the line is a well-formed reply."""
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return [], {}, f"malformed output: not a JSON line ({len(line)} bytes)"
    if not isinstance(msg, dict):
        return [], {}, "malformed output: not a JSON object"
    if msg.get("tick") != tick or msg.get("seq") != seq:
        return [], {}, (f"malformed output: reply for tick {str(msg.get('tick'))[:20]} line "
                        f"{str(msg.get('seq'))[:20]}, expected tick {tick} line {seq}")
    commands: list | _Table | None = _table(msg.get("commands"))
    if commands is None:
        try:
            commands = unpack(msg.get("commands"))
        except PackError as e:
            return [], {}, f"malformed output: commands {e}"
    if len(commands) != count:
        return [], {}, f"wrong count: {len(commands)} commands for {count} live flights"
    errors = msg.get("errors", {})
    if not isinstance(errors, dict):
        return [], {}, "malformed output: errors is not an object"
    clean = {}
    for k, v in errors.items():
        clean[str(k)] = printable(str(v)[:300]) if v is not None else "error"
    return commands, clean, ""


def printable(text: str) -> str:
    """Controller-written text made safe for a terminal and a report (no control characters)."""
    return "".join(c if c.isprintable() else "?" for c in text)

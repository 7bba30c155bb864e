"""Simulator speed: physics flight-steps per second at N = 1, 16, 64, against baselines in this run.

    python3 benchmarks/bench_sim.py [--seconds S]

A "flight-step" is one flight advanced by one physics substep (5 ms); a tick is 2 substeps. Printed:
- physics: the substep alone (what the target counts; target >= 1,000,000 flight-steps/s at N = 64);
- tick: a whole control tick from arrays (firmware attitude loop, wind, gates, crashes) per substep;
- API: `Batch.observations()` + `Batch.step(list of dicts)`, what a grader pays per tick;
- baselines: the same substep written as a per-flight Python loop on floats, and the vectorised
  code run one flight at a time (N = 1) for N flights.
The machine is shared: numbers move with its load, the ratios much less.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import plimsoll_sim as sim
from plimsoll_sim.batch import K_RATE

COURSE = sim.course("hard")


def hover_batch(n: int) -> tuple[sim.Batch, np.ndarray, np.ndarray]:
    """N flights in mid-air, with the commands that roughly hold them (they stay alive for seconds)."""
    b = sim.Batch(list(range(4_000_000_000, 4_000_000_000 + n)), COURSE)
    b.pos[:] = (3.0, 3.0, 1.5)
    b.airborne[:] = True
    cmd = np.zeros((n, 4))
    cmd[:, 0] = [(COURSE.drone.mass + f.payload) * COURSE.gravity * 4 / (3 + f.weak_factor)
                 for f in b.flights]
    b.motor[:] = np.sqrt(cmd[:, 0:1] / COURSE.drone.max_thrust)
    return b, cmd, np.ones(n, dtype=bool)


def rate(fn, units_per_call: int, seconds: float) -> float:
    """Units per second of `fn`, best of 3 windows."""
    best = 0.0
    for _ in range(3):
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds / 3:
                break
        best = max(best, calls * units_per_call / elapsed)
    return best


class ScalarFlight:
    """The substep of plimsoll_sim/batch.py for one flight, as plain Python on floats (the baseline)."""

    def __init__(self, b: sim.Batch, row: int) -> None:
        d = COURSE.drone
        self.dt = COURSE.tick / COURSE.substeps
        self.alpha = self.dt / (d.motor_lag + self.dt)
        self.arm = d.arm * 0.7071067811865476
        self.inertia = d.inertia
        self.km = d.yaw_moment
        self.fnom = d.max_thrust / 4
        self.fmax = b.K[0:4, row].tolist()
        self.inv_mass = float(b.inv_mass[row])
        self.drag = d.drag
        self.g = COURSE.gravity
        self.pos, self.vel = b.pos[row].tolist(), b.vel[row].tolist()
        self.q, self.omega = b.quat[row].tolist(), b.omega[row].tolist()
        self.motor = b.motor[row].tolist()
        self.thrust, self.omega_cmd, self.wind = 8.0, [0.0, 0.0, 0.0], [1.0, 0.5, 0.0]

    def substep(self) -> None:
        dt, a, km = self.dt, self.arm, self.km
        ix, iy, iz = self.inertia
        p, q, r = self.omega
        tx = K_RATE * ix * (self.omega_cmd[0] - p)
        ty = K_RATE * iy * (self.omega_cmd[1] - q)
        tz = K_RATE * iz * (self.omega_cmd[2] - r)
        sx, sy, sz = (1, 1, -1, -1), (-1, 1, 1, -1), (1, -1, 1, -1)
        f = []
        for i in range(4):
            u = (self.thrust / 4 + tx * sx[i] / (4 * a) + ty * sy[i] / (4 * a)
                 + tz * sz[i] / (4 * km)) / self.fnom
            w = math.sqrt(min(max(u, 0.0), 1.0))
            self.motor[i] += (w - self.motor[i]) * self.alpha
            f.append(self.fmax[i] * self.motor[i] * self.motor[i])
        thrust = f[0] + f[1] + f[2] + f[3]
        tqx = a * (f[0] + f[1] - f[2] - f[3])
        tqy = a * (-f[0] + f[1] + f[2] - f[3])
        tqz = km * (f[0] - f[1] + f[2] - f[3])
        self.omega = [p + (tqx / ix + (iy - iz) / ix * q * r) * dt,
                      q + (tqy / iy + (iz - ix) / iy * p * r) * dt,
                      r + tqz / iz * dt]
        w, x, y, z = self.q
        bz = (2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y))
        air = [self.vel[k] - self.wind[k] for k in range(3)]
        speed = math.sqrt(air[0] ** 2 + air[1] ** 2 + air[2] ** 2)
        for k in range(3):
            acc = bz[k] * thrust * self.inv_mass - self.drag * speed * air[k] * self.inv_mass
            if k == 2:
                acc -= self.g
            self.vel[k] += acc * dt
            self.pos[k] += self.vel[k] * dt
        p, q, r = (v * 0.5 * dt for v in self.omega)
        self.q = [w - x * p - y * q - z * r, x + w * p + y * r - z * q,
                  y + w * q - x * r + z * p, z + w * r + x * q - y * p]
        if self.pos[2] < 0:
            self.pos[2], self.vel = 0.0, [0.0, 0.0, 0.0]


def main() -> None:
    """Measure and print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.5, help="measuring time per number")
    seconds = parser.parse_args().seconds

    one, _, _ = hover_batch(1)
    scalar = ScalarFlight(one, 0)
    baseline = rate(scalar.substep, 1, seconds)
    print(f"baseline, per-flight Python loop on floats: {baseline:>12,.0f} flight-steps/s")
    single = rate(one._substep, 1, seconds)
    print(f"baseline, vectorised code one flight at a time: {single:>8,.0f} flight-steps/s")
    print()
    print(f"{'N':>3}  {'physics flight-steps/s':>24}  {'x loop':>7}  {'tick flight-steps/s':>20}"
          f"  {'API flight-ticks/s':>19}")
    for n in (1, 16, 64):
        b, cmd, att = hover_batch(n)
        physics = rate(b._substep, n, seconds)
        state = {}

        def tick(n=n, state=state):
            if state.get("ticks", 200) >= 200:  # a fresh batch before any flight can drift away
                state["b"], state["cmd"], state["att"] = hover_batch(n)
                state["ticks"] = 0
            state["ticks"] += 1
            state["b"].step_arrays(state["cmd"], state["att"])

        ticks = rate(tick, n * COURSE.substeps, seconds)
        state.clear()

        def api(n=n, state=state):
            if state.get("ticks", 200) >= 200:
                state["b"], cmd, _ = hover_batch(n)
                state["commands"] = [
                    {"thrust": float(t), "roll": 0.0, "pitch": 0.0, "yaw_rate": 0.0} for t in cmd[:, 0]
                ]
                state["ticks"] = 0
            state["ticks"] += 1
            state["b"].observations()
            state["b"].step(state["commands"])

        api_rate = rate(api, n, seconds)
        print(f"{n:>3}  {physics:>24,.0f}  {physics / baseline:>6.1f}x  {ticks:>20,.0f}"
              f"  {api_rate:>19,.0f}")
    print()
    print("target: >= 1,000,000 physics flight-steps/s at N = 64")


if __name__ == "__main__":
    main()

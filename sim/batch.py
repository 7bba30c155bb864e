"""N flights advancing together: commands in, physics, gates, crashes, landing, noisy observations out.

Determinism: the physics substep uses only + - * / and sqrt on float64 arrays, written out term by
term in a fixed order (no matmul, no reductions), so a flight evolves bit-identically alone or in a
batch of any size. The few trigonometric values the physics needs (gust shape, commanded tilt) come
from a fixed polynomial; sensor noise from an integer hash of (noise key, tick, channel).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, NamedTuple

import numpy as np

from sim import generator
from sim.course import Course

# Flight-controller firmware gains (what a real quad's on-board controller would do).
K_ATT = 8.0  # 1/s, tilt error -> body rate
K_RATE = 30.0  # 1/s, body-rate error -> angular acceleration

# Sensor noise: standard deviations of position, velocity, attitude, body rates (bounded noise).
NOISE_SIGMA = (0.001, 0.01, 0.002, 0.01)

ATTITUDE_KEYS = frozenset(("thrust", "roll", "pitch", "yaw_rate"))
RATE_KEYS = frozenset(("thrust", "roll_rate", "pitch_rate", "yaw_rate"))

_U64 = np.uint64
_MAGIC = _U64(generator.MAGIC)
_M1 = _U64(0xBF58476D1CE4E5B9)
_M2 = _U64(0x94D049BB133111EB)


class FlightResult(NamedTuple):
    """How one flight ended."""

    seed: int
    landed: bool
    gates: int  # gates passed in order, 0..3
    time: float  # s, flight time when it ended
    reason: str  # landed | wall | gate_frame | floor | tilt | timeout | invalid_command | ...
    detail: str = ""


def _poly_sincos(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of |a| <= pi/2 with a fixed Taylor polynomial (deterministic everywhere)."""
    r2 = a * a
    s = np.zeros_like(a)
    for coeff in generator.SIN_COEFFS:
        s = s * r2 + coeff
    c = np.zeros_like(a)
    for coeff in generator.COS_COEFFS:
        c = c * r2 + coeff
    return s * a, c


def _sum1(a: np.ndarray) -> np.ndarray:
    """Sum over axis 1 (3 or 4 terms, added in index order whatever the batch size)."""
    return _add_reduce(a, axis=1)


_add_reduce = np.add.reduce


def _mix64(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> _U64(30))) * _M1
    z = (z ^ (z >> _U64(27))) * _M2
    return z ^ (z >> _U64(31))


def _invalid(command: Any) -> tuple[str, tuple[float, ...] | None, bool]:
    """(problem, values, attitude_mode); problem is "" for a valid command."""
    if type(command) is not dict:
        return f"a command is a JSON object, not {type(command).__name__}", None, False
    keys = command.keys()
    if keys == ATTITUDE_KEYS:
        names, attitude = ("thrust", "roll", "pitch", "yaw_rate"), True
    elif keys == RATE_KEYS:
        names, attitude = ("thrust", "roll_rate", "pitch_rate", "yaw_rate"), False
    else:
        got = ", ".join(sorted(str(k) for k in keys)) or "none"
        return (
            f"keys must be exactly thrust, roll, pitch, yaw_rate or thrust, roll_rate, pitch_rate,"
            f" yaw_rate; got {got}"[:300],
            None,
            False,
        )
    values = []
    for name in names:
        v = command[name]
        if type(v) is not float and type(v) is not int:
            return f"{name} is a {type(v).__name__}, not a number", None, False
        try:
            f = float(v)
        except OverflowError:
            return f"{name} is too large", None, False
        if not math.isfinite(f):
            return f"{name} is not finite", None, False
        values.append(f)
    return "", tuple(values), attitude


class Batch:
    """N flights of one course, stepped in lockstep at the course's tick."""

    def __init__(self, seeds: list[int], course: Course, record: bool = False) -> None:
        self.seeds = [int(s) for s in seeds]
        self.course = course
        self.flights = [generator.flight(s, course) for s in seeds]
        n = len(self.seeds)
        c, d = course, course.drone
        self._tick = 0
        self._record = record
        self._rec: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self._ended: list[FlightResult | None] = [None] * n
        self._gate_times: list[list[float]] = [[] for _ in range(n)]

        # Active rows (live flights only); `_idx[row]` is the flight's index into `seeds`.
        self._idx = np.arange(n)
        fl = self.flights
        sx, sy, _ = c.start.center
        self.pos = np.array([[sx + f.jitter[0], sy + f.jitter[1], 0.0] for f in fl]).reshape(n, 3)
        self.vel = np.zeros((n, 3))
        half = [generator.sincos(0.5 * f.jitter[2]) for f in fl]
        self.quat = np.array([[hc, 0.0, 0.0, hs] for hs, hc in half]).reshape(n, 4)
        self.omega = np.zeros((n, 3))
        self.motor = np.zeros((n, 4))
        self.airborne = np.zeros(n, dtype=bool)
        self.next_gate = np.zeros(n, dtype=np.int64)
        mass = np.array([d.mass + f.payload for f in fl])
        self.inv_mass = 1.0 / mass
        factors = np.ones((n, 4))
        for i, f in enumerate(fl):
            factors[i, f.weak_motor] = f.weak_factor
        self.fmax = (d.max_thrust / 4.0) * factors
        self.wind0 = np.array([[f.wind[0], f.wind[1]] for f in fl]).reshape(n, 2)
        g = np.zeros((n, 3, 5))  # start, duration, dx, dy, peak (peak 0 pads a missing gust)
        g[:, :, 1] = 1.0
        for i, f in enumerate(fl):
            for j, gust in enumerate(f.gusts):
                g[i, j] = (gust.start, gust.duration, gust.direction[0], gust.direction[1], gust.peak)
        self.gusts = g
        self.noise_key = np.array([f.noise_key for f in fl], dtype=np.uint64)
        self._obs_cache: tuple[int, list[dict]] | None = None

        # Constants of the substep, folded so that one substep is ~50 numpy calls (see _substep).
        dt = c.tick / c.substeps
        self._dt = dt
        self._alpha = dt / (d.motor_lag + dt)  # backward-Euler motor lag
        ix, iy, iz = d.inertia
        if ix != iy:
            raise ValueError("the airframe must be symmetric (inertia x == y)")
        arm = d.arm * 0.7071067811865476
        # Motor i sits at arm * (+,+) (-,+) (-,-) (+,-) in the body frame and spins +, -, +, -.
        sx = np.array([1.0, 1.0, -1.0, -1.0])  # sign of the roll torque of motor i
        sy = np.array([-1.0, 1.0, 1.0, -1.0])  # sign of the pitch torque
        sz = np.array([1.0, -1.0, 1.0, -1.0])  # sign of the yaw torque
        # Physics: wrench = f @ _wrench, columns thrust, then d(omega) per substep.
        self._wrench = np.stack(
            [np.ones(4), sx * (arm / ix * dt), sy * (arm / iy * dt), sz * (d.yaw_moment / iz * dt)],
            axis=1,
        )
        self._gyro_dt = np.array([(iy - iz) / ix * dt, (iz - ix) / iy * dt])  # for (q r, p r)
        # Firmware mixer (nominal motors): normalised motor thrust u_i = f_des_i / (max_thrust / 4)
        # with f_des_i = T/4 + torque . mix_i and torque = K_RATE * inertia * (omega_cmd - omega).
        per_motor = d.max_thrust / 4.0
        mix = np.stack([sx / (4.0 * arm), sy / (4.0 * arm), sz / (4.0 * d.yaw_moment)])  # (3, 4)
        self._rate_mix = (K_RATE * np.array([ix, iy, iz]))[:, None] * mix / per_motor  # (3, 4)
        self._inv_fnom = 1.0 / per_motor
        self.inv_mass_dt = self.inv_mass * dt
        self.drag_dt = self.inv_mass * (d.drag * dt)
        self._g_dt = c.gravity * dt
        # Quaternion kinematics q += q (x) (0, omega) dt/2 as three gathered products.
        self._q_take = np.array([1, 0, 0, 0, 2, 2, 1, 1, 3, 3, 3, 2])
        self._w_take = np.array([0, 0, 1, 2, 1, 2, 2, 1, 2, 1, 0, 0])
        self._w_sign = 0.5 * dt * np.array([-1.0, 1, 1, 1, -1, 1, -1, 1, -1, -1, 1, -1])
        # Body z axis from the quaternion: C + S1 * (Q1 Q2 + S2 Q3 Q4).
        self._bz_take = np.array([1, 2, 1, 3, 3, 1, 0, 0, 2, 2, 1, 2])
        self._bz_s1 = np.array([2.0, 2.0, -2.0])
        self._bz_s2 = np.array([1.0, -1.0, 1.0])
        self._bz_c = np.array([0.0, 0.0, 1.0])
        self._cos_crash = generator.sincos(c.limits.crash_tilt)[1]
        r = d.radius
        self._room_lo = np.array([r, r, -1.0])
        self._room_hi = np.array([c.room[0] - r, c.room[1] - r, c.room[2] - r])
        self._gate_c = np.array([g.center for g in c.gates])  # (G, 3)
        self._gate_n = np.array([g.normal[:2] for g in c.gates])  # (G, 2)
        self._base = np.zeros((n, 4))
        self._bad_touch = np.zeros(n, dtype=bool)
        if record:
            self._save()

    # ---- public API -------------------------------------------------------------------------

    @property
    def live(self) -> list[int]:
        """Indices (into `seeds`) of the flights still flying, ascending."""
        return self._idx.tolist()

    @property
    def done(self) -> bool:
        """True when no flight is left."""
        return self._idx.size == 0

    @property
    def time(self) -> float:
        """The simulated time of the current tick, seconds."""
        return round(self._tick * self.course.tick, 6)

    def observations(self) -> list[dict]:
        """One noisy observation per live flight, aligned with `live` (JSON-serialisable)."""
        if self._obs_cache is not None and self._obs_cache[0] == self._tick:
            return self._obs_cache[1]
        q = self.quat
        w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
        n = self._idx.size
        arr = np.empty((n, 12))
        arr[:, 0:3] = self.pos
        arr[:, 3:6] = self.vel
        arr[:, 6] = np.arctan2(2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y))
        arr[:, 7] = np.arcsin(np.clip(2.0 * (w * y - x * z), -1.0, 1.0))
        arr[:, 8] = np.arctan2(2.0 * (x * y + w * z), 1.0 - 2.0 * (y * y + z * z))
        arr[:, 9:12] = self.omega
        arr += self._noise() * np.repeat(np.array(NOISE_SIGMA), 3)
        rows = np.round(arr, 6).tolist()
        gates = self.next_gate.tolist()
        t = self.time
        obs = [
            {"t": t, "pos": r[0:3], "vel": r[3:6], "att": r[6:9], "rates": r[9:12], "gate": gate}
            for r, gate in zip(rows, gates, strict=True)
        ]
        self._obs_cache = (self._tick, obs)
        return obs

    def step(self, commands: list) -> None:
        """Advance every live flight by one tick; `commands` is aligned with `live`."""
        n = self._idx.size
        if len(commands) != n:
            raise ValueError(f"step needs one command per live flight: {n}, got {len(commands)}")
        cmd = np.zeros((n, 4))
        attitude = np.zeros(n, dtype=bool)
        bad: dict[int, str] = {}
        for row, command in enumerate(commands):
            problem, values, att = _invalid(command)
            if problem:
                bad[row] = problem
            else:
                cmd[row] = values
                attitude[row] = att
        if bad:
            for row, problem in bad.items():
                self._finish(row, "invalid_command", problem)
            keep = np.ones(n, dtype=bool)
            keep[list(bad)] = False
            self._compress(keep)
            cmd, attitude = cmd[keep], attitude[keep]
        if self._idx.size:
            self.step_arrays(cmd, attitude)

    def end(self, i: int, reason: str, detail: str = "") -> None:
        """End flight `i` (index into `seeds`) for a grader's reason; a no-op if it already ended."""
        rows = np.flatnonzero(self._idx == i)
        if rows.size == 0:
            return
        self._finish(int(rows[0]), reason, detail)
        keep = np.ones(self._idx.size, dtype=bool)
        keep[rows[0]] = False
        self._compress(keep)

    def results(self) -> list[FlightResult]:
        """One result per seed, in the order given; a flight still flying says `running`."""
        out = []
        for i, seed in enumerate(self.seeds):
            r = self._ended[i]
            if r is None:
                r = FlightResult(seed, False, int(self.next_gate[self._idx == i][0]), self.time, "running")
            out.append(r)
        return out

    def trajectory(self, i: int) -> dict[str, Any]:
        """The true (noise-free) trajectory of flight `i` per tick; needs `record=True`."""
        if not self._record:
            raise ValueError("trajectory needs Batch(..., record=True)")
        ticks, pos, vel, quat, omega = [], [], [], [], []
        for k, idx, p, v, q, w in self._rec:
            rows = np.flatnonzero(idx == i)
            if rows.size:
                r = rows[0]
                ticks.append(k)
                pos.append(p[r])
                vel.append(v[r])
                quat.append(q[r])
                omega.append(w[r])
        return {
            "t": np.array(ticks, dtype=float) * self.course.tick,
            "pos": np.array(pos).reshape(-1, 3),
            "vel": np.array(vel).reshape(-1, 3),
            "quat": np.array(quat).reshape(-1, 4),
            "omega": np.array(omega).reshape(-1, 3),
            "gate_times": list(self._gate_times[i]),
        }

    # ---- physics ------------------------------------------------------------------------------

    def step_arrays(self, cmd: np.ndarray, attitude: np.ndarray) -> None:
        """Advance one tick from already-validated commands: `cmd` (n, 4), `attitude` (n,) bool.

        `cmd[:, 0]` is thrust (N), then roll, pitch, yaw rate (attitude mode) or roll, pitch, yaw
        rates (body-rate mode). Values are clipped to the course's limits here.
        """
        c = self.course
        lim = c.limits
        n = cmd.shape[0]
        # One polynomial call for every angle this tick needs: commanded roll and pitch, gust phase.
        g = self.gusts
        s = np.minimum(np.maximum((self._tick * c.tick - g[:, :, 0]) / g[:, :, 1], 0.0), 1.0)
        angles = np.empty((n, 5))
        angles[:, 0:2] = np.minimum(np.maximum(cmd[:, 1:3], -lim.max_tilt_cmd), lim.max_tilt_cmd)
        angles[:, 2:5] = np.pi * np.minimum(s, 1.0 - s)
        sin, cos = _poly_sincos(angles)
        omega_cmd = self._rate_targets(cmd, attitude, sin, cos)
        thrust = np.minimum(np.maximum(cmd[:, 0], 0.0), c.drone.max_thrust)
        # Firmware: the per-tick part of the motor commands.
        self._base = (0.25 * self._inv_fnom) * thrust[:, None] + _sum1(
            omega_cmd[:, :, None] * self._rate_mix)
        # Wind: steady wind plus 1-cosine gusts, (1 - cos 2 pi s) / 2 = sin^2 pi s.
        amp = g[:, :, 4] * (sin[:, 2:5] * sin[:, 2:5])
        wind = np.zeros((n, 3))
        wind[:, 0:2] = self.wind0 + _sum1(amp[:, :, None] * g[:, :, 2:4])
        p0 = self.pos.copy()
        self._bad_touch[:] = False
        for _ in range(c.substeps):
            self._substep(wind)
        q = self.quat
        q /= np.sqrt(_sum1(q * q))[:, None]  # renormalise once per tick
        self._tick += 1
        self._obs_cache = None
        self._check(p0)
        if self._record:
            self._save()

    def _rate_targets(self, cmd: np.ndarray, attitude: np.ndarray, sin, cos) -> np.ndarray:
        lim = self.course.limits
        out = np.minimum(np.maximum(cmd[:, 1:4], -lim.max_rate), lim.max_rate)
        if not attitude.any():
            return out
        q = self.quat[attitude]
        w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
        r11 = 1.0 - 2.0 * (y * y + z * z)
        r12 = 2.0 * (x * y - w * z)
        r13 = 2.0 * (x * z + w * y)
        r21 = 2.0 * (x * y + w * z)
        r22 = 1.0 - 2.0 * (x * x + z * z)
        r23 = 2.0 * (y * z - w * x)
        r31 = 2.0 * (x * z - w * y)
        r32 = 2.0 * (y * z + w * x)
        r33 = 1.0 - 2.0 * (x * x + y * y)
        hn = np.sqrt(r11 * r11 + r21 * r21)
        ch, sh = r11 / hn, r21 / hn  # heading
        sr, cr = sin[attitude, 0], cos[attitude, 0]
        sp, cp = sin[attitude, 1], cos[attitude, 1]
        zxh, zyh, zz = sp * cr, -sr, cp * cr  # desired body z axis in the heading frame (ZYX)
        zx = ch * zxh - sh * zyh
        zy = sh * zxh + ch * zyh
        ex = r23 * zz - r33 * zy  # body z axis x desired z axis, world frame
        ey = r33 * zx - r13 * zz
        ez = r13 * zy - r23 * zx
        out[attitude, 0] = K_ATT * (r11 * ex + r21 * ey + r31 * ez)  # to the body frame
        out[attitude, 1] = K_ATT * (r12 * ex + r22 * ey + r32 * ez)
        out[attitude, 2] = np.minimum(np.maximum(cmd[attitude, 3], -lim.max_yaw_rate),
                                      lim.max_yaw_rate)
        return out

    def _substep(self, wind: np.ndarray) -> None:
        """One physics substep for every live flight: ~50 numpy calls, no libm, fixed order."""
        n = self._idx.size
        omega, q, m, vel, pos = self.omega, self.quat, self.motor, self.vel, self.pos
        # Firmware rate loop and mixer (nominal motors), then the motors' lag.
        u = self._base - _sum1(omega[:, :, None] * self._rate_mix)
        np.maximum(u, 0.0, out=u)
        np.minimum(u, 1.0, out=u)
        np.sqrt(u, out=u)
        u -= m
        u *= self._alpha
        m += u
        # Thrust quadratic in motor speed (the weak motor's fmax is smaller); wrench of the 4 motors.
        f = self.fmax * m
        f *= m
        wr = _sum1(f[:, :, None] * self._wrench)
        # Rotation: torques and the gyroscopic term (inertia x == y, so none on the z axis).
        gyro = omega[:, 2:3] * omega[:, 1::-1]
        gyro *= self._gyro_dt
        omega += wr[:, 1:4]
        omega[:, 0:2] += gyro
        # Body z axis from the quaternion.
        b = q[:, self._bz_take].reshape(n, 4, 3)
        bz = b[:, 0] * b[:, 1]
        t = b[:, 2] * b[:, 3]
        t *= self._bz_s2
        bz += t
        bz *= self._bz_s1
        bz += self._bz_c
        # Translation: thrust along body z, quadratic drag on airspeed, gravity.
        air = vel - wind
        speed = np.sqrt(_sum1(air * air))
        speed *= self.drag_dt
        air *= speed[:, None]
        bz *= (wr[:, 0] * self.inv_mass_dt)[:, None]
        bz -= air
        vel += bz
        vel[:, 2] -= self._g_dt
        pos += vel * self._dt
        # Attitude: q += q (x) (0, omega) dt / 2.
        prod = q[:, self._q_take]
        prod *= omega[:, self._w_take] * self._w_sign
        q += _sum1(prod.reshape(n, 3, 4))
        # Floor contact: the legs stick (no sliding, no spinning); a fast touchdown is a crash.
        below = pos[:, 2] < 0.0
        if below.any():
            self._touch(below)
        np.logical_not(below, out=self.airborne)

    def _touch(self, below: np.ndarray) -> None:
        touch = below & self.airborne
        if touch.any():
            v = self.vel[touch]
            limit = self.course.limits.touchdown_speed
            fast = (-v[:, 2] > limit) | (v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] > limit * limit)
            self._bad_touch[np.flatnonzero(touch)[fast]] = True
        self.pos[below, 2] = 0.0
        self.vel[below] = 0.0
        self.omega[below] = 0.0

    # ---- events -------------------------------------------------------------------------------

    def _check(self, p0: np.ndarray) -> None:
        c = self.course
        p1 = self.pos
        # Gates: signed distances of the tick's segment ends to each gate plane, (n, G).
        d0 = ((p0[:, None, 0:2] - self._gate_c[:, 0:2]) * self._gate_n).sum(axis=2)
        d1 = ((p1[:, None, 0:2] - self._gate_c[:, 0:2]) * self._gate_n).sum(axis=2)
        forward = (d0 < 0.0) & (d1 >= 0.0)
        cross = forward | ((d0 >= 0.0) & (d1 < 0.0))
        frame_hit = np.zeros(p1.shape[0], dtype=bool)
        if cross.any():
            self._cross(p0, d0, d1, forward, cross, frame_hit)
        wall = ((p1 < self._room_lo) | (p1 > self._room_hi)).any(axis=1)
        q = self.quat
        tilt = 1.0 - 2.0 * (q[:, 1] * q[:, 1] + q[:, 2] * q[:, 2]) < self._cos_crash
        landed = ~self.airborne & (self.next_gate == len(c.gates))
        if landed.any():
            lx, ly, _ = c.land.center
            landed &= (p1[:, 0] - lx) ** 2 + (p1[:, 1] - ly) ** 2 <= c.land.radius ** 2
        timeout = self._tick * c.tick >= c.time_limit - 1e-9
        ended = frame_hit | wall | self._bad_touch | tilt | landed
        if not (ended.any() or timeout):
            return
        for row in range(p1.shape[0]):
            for name, mask in (("gate_frame", frame_hit), ("wall", wall), ("floor", self._bad_touch),
                               ("tilt", tilt), ("landed", landed)):
                if mask[row]:
                    self._finish(row, name, "")
                    break
            else:
                if timeout:
                    self._finish(row, "timeout", "")
                    ended[row] = True
        self._compress(~ended)

    def _cross(self, p0, d0, d1, forward, cross, frame_hit) -> None:
        c = self.course
        r = c.drone.radius
        t = self.time
        for row, g_index in zip(*np.nonzero(cross), strict=True):
            gate = c.gates[g_index]
            lam = d0[row, g_index] / (d0[row, g_index] - d1[row, g_index])
            pt = p0[row] + (self.pos[row] - p0[row]) * lam
            nx, ny = self._gate_n[g_index]
            cx, cy, cz = gate.center
            a = abs((pt[0] - cx) * -ny + (pt[1] - cy) * nx)
            b = abs(pt[2] - cz)
            qd = max(a, b)
            if qd <= 0.5 * gate.size - r:
                if forward[row, g_index] and self.next_gate[row] == g_index:
                    self.next_gate[row] = g_index + 1
                    self._gate_times[int(self._idx[row])].append(t)
            elif qd < 0.5 * gate.size + gate.frame + r:
                frame_hit[row] = True

    def _finish(self, row: int, reason: str, detail: str) -> None:
        i = int(self._idx[row])
        self._ended[i] = FlightResult(
            self.seeds[i], reason == "landed", int(self.next_gate[row]), self.time, reason, detail
        )

    def _compress(self, keep: np.ndarray) -> None:
        for name in ("_idx", "pos", "vel", "quat", "omega", "motor", "airborne", "next_gate",
                     "inv_mass", "inv_mass_dt", "drag_dt", "fmax", "wind0", "gusts", "noise_key",
                     "_bad_touch", "_base"):
            setattr(self, name, getattr(self, name)[keep])
        self._obs_cache = None

    def _noise(self) -> np.ndarray:
        """Bounded unit-variance noise per (flight, channel) for this tick (Irwin-Hall of 4)."""
        n = self._idx.size
        counter = _U64(self._tick * 12 + 1) + np.arange(12, dtype=np.uint64)
        h = _mix64(self.noise_key[:, None] + counter[None, :] * _MAGIC)
        mask = _U64(0xFFFF)
        total = np.zeros((n, 12))
        for shift in (0, 16, 32, 48):
            total += ((h >> _U64(shift)) & mask).astype(np.float64)
        # Each 16-bit part is uniform on [0, 65535]; the sum of four has mean 131070 and variance
        # 4 * (65536^2 - 1) / 12.
        return (total - 131070.0) * (1.0 / 37837.22703446)

    def _save(self) -> None:
        self._rec.append((self._tick, self._idx.copy(), self.pos.copy(), self.vel.copy(),
                          self.quat.copy(), self.omega.copy()))


def trajectory_digest(batch: Batch, i: int) -> str:
    """SHA-256 hex of flight `i`'s recorded true trajectory (rounded to 1e-9) and its result."""
    tr = batch.trajectory(i)
    h = hashlib.sha256(b"plimsoll-sim trajectory v1\x00")
    for key in ("pos", "vel", "quat", "omega"):
        h.update(np.round(tr[key], 9).astype("<f8").tobytes())
    h.update(repr(tuple(batch.results()[i])).encode())
    return h.hexdigest()

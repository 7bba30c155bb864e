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
        per_motor = d.max_thrust / 4.0
        factors = np.ones((n, 4))
        for i, f in enumerate(fl):
            factors[i, f.weak_motor] = f.weak_factor
        self.fmax = per_motor * factors
        self.wind0 = np.array([[f.wind[0], f.wind[1]] for f in fl]).reshape(n, 2)
        g = np.zeros((n, 3, 5))  # start, duration, dx, dy, peak (peak 0 pads a missing gust)
        g[:, :, 1] = 1.0
        for i, f in enumerate(fl):
            for j, gust in enumerate(f.gusts):
                g[i, j] = (gust.start, gust.duration, gust.direction[0], gust.direction[1], gust.peak)
        self.gusts = g
        self.noise_key = np.array([f.noise_key for f in fl], dtype=np.uint64)
        self._obs_cache: tuple[int, list[dict]] | None = None

        # Constants of the substep.
        self._dt = c.tick / c.substeps
        self._alpha = self._dt / (d.motor_lag + self._dt)  # backward-Euler motor lag
        arm = d.arm * 0.7071067811865476
        self._arm = arm
        ix, iy, iz = d.inertia
        self._k_inertia = np.array([K_RATE * ix, K_RATE * iy, K_RATE * iz])
        self._inv_inertia = np.array([1.0 / ix, 1.0 / iy, 1.0 / iz])
        self._gyro = np.array([(iy - iz) / ix, (iz - ix) / iy, (ix - iy) / iz])
        # Mixer (nominal motors): motor i sits at (x_i, y_i) = arm * (+,+) (-,+) (-,-) (+,-),
        # spins +, -, +, -. f_i = T/4 + tx*y_i/(4 a^2) - ty*x_i/(4 a^2) + tz*s_i/(4 km).
        inv = 1.0 / (4.0 * arm)
        self._mix_x = np.array([inv, inv, -inv, -inv])
        self._mix_y = np.array([-inv, inv, inv, -inv])
        kz = 1.0 / (4.0 * d.yaw_moment)
        self._mix_z = np.array([kz, -kz, kz, -kz])
        self._inv_fnom = 1.0 / per_motor
        self._cos_crash = generator.sincos(c.limits.crash_tilt)[1]
        self._thrust_cmd = np.zeros(n)
        self._omega_cmd = np.zeros((n, 3))
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
        c, lim = self.course, self.course.limits
        thrust = np.clip(cmd[:, 0], 0.0, c.drone.max_thrust)
        self._omega_cmd = self._rate_targets(cmd, attitude, lim)
        wind = self._wind(self._tick * c.tick)
        p0 = self.pos.copy()
        self._bad_touch[:] = False
        t4 = (0.25 * thrust)[:, None]
        for _ in range(c.substeps):
            self._substep(t4, wind)
        # Renormalise the attitude quaternion once per tick.
        q = self.quat
        q /= np.sqrt(q[:, 0:1] * q[:, 0:1] + q[:, 1:2] * q[:, 1:2] + q[:, 2:3] * q[:, 2:3]
                     + q[:, 3:4] * q[:, 3:4])
        self._tick += 1
        self._obs_cache = None
        self._check(p0)
        if self._record:
            self._save()

    def _rate_targets(self, cmd: np.ndarray, attitude: np.ndarray, lim) -> np.ndarray:
        out = np.empty((cmd.shape[0], 3))
        rates = np.clip(cmd[:, 1:4], -lim.max_rate, lim.max_rate)
        out[:] = rates
        if attitude.any():
            q = self.quat
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
            ch, sh = r11 / hn, r21 / hn
            roll = np.clip(cmd[:, 1], -lim.max_tilt_cmd, lim.max_tilt_cmd)
            pitch = np.clip(cmd[:, 2], -lim.max_tilt_cmd, lim.max_tilt_cmd)
            sr, cr = _poly_sincos(roll)
            sp, cp = _poly_sincos(pitch)
            zxh, zyh, zz = sp * cr, -sr, cp * cr  # desired body z axis in the heading frame
            zx = ch * zxh - sh * zyh
            zy = sh * zxh + ch * zyh
            ex = r23 * zz - r33 * zy  # body z axis x desired z axis (world frame)
            ey = r33 * zx - r13 * zz
            ez = r13 * zy - r23 * zx
            p_des = K_ATT * (r11 * ex + r21 * ey + r31 * ez)
            q_des = K_ATT * (r12 * ex + r22 * ey + r32 * ez)
            yaw = np.clip(cmd[:, 3], -lim.max_yaw_rate, lim.max_yaw_rate)
            out[attitude, 0] = p_des[attitude]
            out[attitude, 1] = q_des[attitude]
            out[attitude, 2] = yaw[attitude]
        return out

    def _wind(self, t: float) -> np.ndarray:
        g = self.gusts
        s = np.clip((t - g[:, :, 0]) / g[:, :, 1], 0.0, 1.0)
        sin_pi_s, _ = _poly_sincos(np.pi * np.minimum(s, 1.0 - s))
        amp = g[:, :, 4] * (sin_pi_s * sin_pi_s)  # (1 - cos 2 pi s) / 2 = sin^2 pi s
        wind = np.zeros((g.shape[0], 3))
        wind[:, 0] = self.wind0[:, 0] + amp[:, 0] * g[:, 0, 2] + amp[:, 1] * g[:, 1, 2] + amp[:, 2] * g[:, 2, 2]
        wind[:, 1] = self.wind0[:, 1] + amp[:, 0] * g[:, 0, 3] + amp[:, 1] * g[:, 1, 3] + amp[:, 2] * g[:, 2, 3]
        return wind

    def _substep(self, t4: np.ndarray, wind: np.ndarray) -> None:
        dt = self._dt
        omega, q = self.omega, self.quat
        # Firmware rate loop and mixer, assuming nominal motors.
        tau = (self._omega_cmd - omega) * self._k_inertia
        f_des = t4 + tau[:, 0:1] * self._mix_x + tau[:, 1:2] * self._mix_y + tau[:, 2:3] * self._mix_z
        w_cmd = np.sqrt(np.clip(f_des * self._inv_fnom, 0.0, 1.0))
        # Motors: first-order lag on normalised speed, thrust quadratic in speed.
        m = self.motor
        m += (w_cmd - m) * self._alpha
        f = self.fmax * m * m
        f0, f1, f2, f3 = f[:, 0], f[:, 1], f[:, 2], f[:, 3]
        a01, a23 = f0 + f1, f2 + f3
        thrust = a01 + a23
        torque = np.empty_like(omega)
        torque[:, 0] = (a01 - a23) * self._arm
        torque[:, 1] = ((f1 + f2) - (f0 + f3)) * self._arm
        torque[:, 2] = ((f0 + f2) - (f1 + f3)) * self.course.drone.yaw_moment
        # Rigid body (diagonal inertia).
        domega = torque * self._inv_inertia + omega[:, [1, 2, 0]] * omega[:, [2, 0, 1]] * self._gyro
        w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
        bz = np.empty_like(omega)
        bz[:, 0] = 2.0 * (x * z + w * y)
        bz[:, 1] = 2.0 * (y * z - w * x)
        bz[:, 2] = 1.0 - 2.0 * (x * x + y * y)
        air = self.vel - wind
        speed = np.sqrt(air[:, 0] * air[:, 0] + air[:, 1] * air[:, 1] + air[:, 2] * air[:, 2])
        acc = bz * (thrust * self.inv_mass)[:, None] - air * (
            (self.course.drone.drag * speed) * self.inv_mass)[:, None]
        acc[:, 2] -= self.course.gravity
        self.vel += acc * dt
        self.pos += self.vel * dt
        # q += q (x) (0, omega) dt / 2, written out term by term.
        h = omega * (0.5 * dt)
        p_, q_, r_ = h[:, 0], h[:, 1], h[:, 2]
        dq = np.empty_like(q)
        dq[:, 0] = -(x * p_ + y * q_ + z * r_)
        dq[:, 1] = w * p_ + y * r_ - z * q_
        dq[:, 2] = w * q_ - x * r_ + z * p_
        dq[:, 3] = w * r_ + x * q_ - y * p_
        q += dq
        omega += domega * dt
        # Floor contact: the legs stick (no sliding, no spinning); a fast touchdown is a crash.
        below = self.pos[:, 2] < 0.0
        if below.any():
            touch = below & self.airborne
            if touch.any():
                v = self.vel[touch]
                fast = (-v[:, 2] > self.course.limits.touchdown_speed) | (
                    v[:, 0] * v[:, 0] + v[:, 1] * v[:, 1] > self.course.limits.touchdown_speed ** 2)
                self._bad_touch[np.flatnonzero(touch)[fast]] = True
            self.pos[below, 2] = 0.0
            self.vel[below] = 0.0
            self.omega[below] = 0.0
        self.airborne = ~below

    # ---- events -------------------------------------------------------------------------------

    def _check(self, p0: np.ndarray) -> None:
        c = self.course
        p1 = self.pos
        t = self.time
        n = p1.shape[0]
        reason = np.full(n, "", dtype=object)
        for g_index, gate in enumerate(c.gates):
            cx, cy, cz = gate.center
            nx, ny, _ = gate.normal
            d0 = (p0[:, 0] - cx) * nx + (p0[:, 1] - cy) * ny
            d1 = (p1[:, 0] - cx) * nx + (p1[:, 1] - cy) * ny
            forward = (d0 < 0.0) & (d1 >= 0.0)
            cross = forward | ((d0 >= 0.0) & (d1 < 0.0))
            if not cross.any():
                continue
            rows = np.flatnonzero(cross)
            lam = d0[rows] / (d0[rows] - d1[rows])
            pt = p0[rows] + (p1[rows] - p0[rows]) * lam[:, None]
            a = np.abs((pt[:, 0] - cx) * -ny + (pt[:, 1] - cy) * nx)
            b = np.abs(pt[:, 2] - cz)
            qd = np.maximum(a, b)
            r = c.drone.radius
            inside = qd <= 0.5 * gate.size - r
            frame = ~inside & (qd < 0.5 * gate.size + gate.frame + r)
            for row, ins, frm, fwd in zip(rows.tolist(), inside.tolist(), frame.tolist(),
                                          forward[rows].tolist(), strict=True):
                if frm and not reason[row]:
                    reason[row] = "gate_frame"
                elif ins and fwd and self.next_gate[row] == g_index and not reason[row]:
                    self.next_gate[row] = g_index + 1
                    self._gate_times[int(self._idx[row])].append(t)
        r = c.drone.radius
        X, Y, Z = c.room
        wall = ((p1[:, 0] < r) | (p1[:, 0] > X - r) | (p1[:, 1] < r) | (p1[:, 1] > Y - r)
                | (p1[:, 2] > Z - r))
        q = self.quat
        tilt = 1.0 - 2.0 * (q[:, 1] * q[:, 1] + q[:, 2] * q[:, 2]) < self._cos_crash
        lx, ly, _ = c.land.center
        on_pad = (p1[:, 0] - lx) ** 2 + (p1[:, 1] - ly) ** 2 <= c.land.radius ** 2
        landed = ~self.airborne & on_pad & (self.next_gate == len(c.gates))
        timeout = self._tick * c.tick >= c.time_limit - 1e-9
        for name, mask in (("wall", wall), ("floor", self._bad_touch), ("tilt", tilt),
                           ("landed", landed)):
            reason[(reason == "") & mask] = name
        if timeout:
            reason[reason == ""] = "timeout"
        ended = reason != ""
        if ended.any():
            for row in np.flatnonzero(ended).tolist():
                self._finish(row, str(reason[row]), "")
            self._compress(~ended)

    def _finish(self, row: int, reason: str, detail: str) -> None:
        i = int(self._idx[row])
        self._ended[i] = FlightResult(
            self.seeds[i], reason == "landed", int(self.next_gate[row]), self.time, reason, detail
        )

    def _compress(self, keep: np.ndarray) -> None:
        for name in ("_idx", "pos", "vel", "quat", "omega", "motor", "airborne", "next_gate",
                     "inv_mass", "fmax", "wind0", "gusts", "noise_key", "_bad_touch"):
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

"""N flights advancing together: commands in, physics, gates, crashes, landing, noisy observations out.

Layout: the state is one float64 array `S` of shape (17, N), one contiguous row per quantity
(position, velocity, attitude quaternion, body rates, motor speeds), so that every physics operation
is one numpy call on a contiguous row of N flights: that keeps a substep at ~110 cheap calls.

Determinism: the physics uses only + - * / and sqrt, element by element, written out term by term
in a fixed order (no matmul, no reductions), so a flight evolves bit-identically alone or in a batch
of any size, on any IEEE-754 machine. The few trigonometric values the physics needs (gust shape,
commanded tilt) come from a fixed polynomial; sensor noise from an integer hash of (noise key, tick,
channel).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, NamedTuple, cast

import numpy as np

from plimsoll_sim import generator
from plimsoll_sim.course import Course

# Flight-controller firmware gains (what a real quad's on-board controller would do).
K_ATT = 8.0  # 1/s, tilt error -> body rate
K_RATE = 30.0  # 1/s, body-rate error -> angular acceleration

# Sensor noise: standard deviations of position, velocity, attitude, body rates (bounded noise).
NOISE_SIGMA = (0.001, 0.01, 0.002, 0.01)

ATTITUDE_KEYS = frozenset(("thrust", "roll", "pitch", "yaw_rate"))
RATE_KEYS = frozenset(("thrust", "roll_rate", "pitch_rate", "yaw_rate"))

_ZERO, _ONE, _TWO, _MINUS_TWO, _PI = (np.array(v) for v in (0.0, 1.0, 2.0, -2.0, np.pi))


def _c(value: float) -> np.ndarray:
    """A constant as a 0-d array: cheaper than a Python float in ufuncs on small arrays."""
    return np.array(float(value))


_BZ_SCALE = np.array([[2.0], [2.0], [-2.0]])
_BZ_SHIFT = np.array([[0.0], [0.0], [1.0]])
_NOISE = np.repeat(np.array(NOISE_SIGMA), 3)[:, None]  # (12, 1)
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


class _Slow(Exception):
    """A command the fast path cannot take as it is: check each command one by one."""


def _parse(commands: list) -> tuple[np.ndarray, np.ndarray, dict[int, str]]:
    """Commands -> (values (n, 4), attitude mode (n,), {row: problem} for invalid ones)."""
    n = len(commands)
    try:  # fast path: every command valid
        rows, modes = [], []
        for c in commands:
            if type(c) is not dict:
                raise _Slow
            keys = c.keys()
            if keys == ATTITUDE_KEYS:
                row = (c["thrust"], c["roll"], c["pitch"], c["yaw_rate"])
                modes.append(True)
            elif keys == RATE_KEYS:
                row = (c["thrust"], c["roll_rate"], c["pitch_rate"], c["yaw_rate"])
                modes.append(False)
            else:
                raise _Slow
            for v in row:
                if type(v) is not float and type(v) is not int:
                    raise _Slow
            rows.append(row)
        cmd = np.array(rows, dtype=float).reshape(n, 4)
        if np.isfinite(cmd).all():
            return cmd, np.array(modes, dtype=bool), {}
    except (_Slow, OverflowError):
        pass
    cmd = np.zeros((n, 4))
    attitude = np.zeros(n, dtype=bool)
    bad: dict[int, str] = {}
    for i, command in enumerate(commands):
        problem, values, att = _invalid(command)
        if problem:
            bad[i] = problem
        else:
            cmd[i] = values
            attitude[i] = att
    return cmd, attitude, bad


class Batch:
    """N flights of one course, stepped in lockstep at the course's tick."""

    def __init__(self, seeds: list[int], course: Course, record: bool = False) -> None:
        self.flights = [generator.flight(s, course) for s in seeds]  # validates each seed
        self.seeds = [int(s) for s in seeds]
        self.course = course
        n = len(self.seeds)
        c, d = course, course.drone
        self._tick = 0
        self._record = record
        self._rec: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._ended: list[FlightResult | None] = [None] * n
        self._gate_times: list[list[float]] = [[] for _ in range(n)]
        fl = self.flights

        # Per live flight (the last axis is the flight; `_idx[j]` is its index into `seeds`).
        self._idx = np.arange(n)
        S = np.zeros((17, n))  # x y z, vx vy vz, qw qx qy qz, p q r, motor 0..3
        sx, sy, _ = c.start.center
        for j, f in enumerate(fl):
            hs, hc = generator.sincos(0.5 * f.jitter[2])
            S[0, j], S[1, j], S[6, j], S[9, j] = sx + f.jitter[0], sy + f.jitter[1], hc, hs
        self.S = S
        self.airborne = np.zeros(n, dtype=bool)
        self.next_gate = np.zeros(n, dtype=np.int64)
        mass = np.array([d.mass + f.payload for f in fl], dtype=float)
        self.inv_mass = 1.0 / mass
        dt = c.tick / c.substeps
        K = np.empty((6, n))  # motor 0..3 full thrust (the weak one lower), dt/m, drag dt/m
        K[0:4] = d.max_thrust / 4.0
        for j, f in enumerate(fl):
            K[f.weak_motor, j] *= f.weak_factor
        K[4] = self.inv_mass * dt
        K[5] = self.inv_mass * (d.drag * dt)
        self.K = K
        self.wind0 = np.array([f.wind for f in fl], dtype=float).reshape(n, 2).T.copy()
        G = np.zeros((5, 3, n))  # start, duration, dx, dy, peak per gust (peak 0 pads a missing one)
        G[1] = 1.0
        for j, f in enumerate(fl):
            for k, gust in enumerate(f.gusts):
                G[:, k, j] = (gust.start, gust.duration, *gust.direction, gust.peak)
        self.G = G
        self.noise_key = np.array([f.noise_key for f in fl], dtype=np.uint64)
        self._base = np.zeros((4, n))
        self._wind = np.zeros((3, n))
        self._bad_touch = np.zeros(n, dtype=bool)
        self._obs_cache: tuple[int, np.ndarray, list[dict] | None] | None = None

        # Constants of the substep.
        ix, iy, iz = d.inertia
        if ix != iy:
            raise ValueError("the airframe must be symmetric (inertia x == y)")
        arm = d.arm * 0.7071067811865476  # motor i at arm * (+,+) (-,+) (-,-) (+,-); spins +,-,+,-
        per_motor = d.max_thrust / 4.0
        self._dt = _c(dt)
        self._alpha = _c(dt / (d.motor_lag + dt))  # backward-Euler motor lag
        self._half_dt = _c(0.5 * dt)
        self._g_dt = _c(c.gravity * dt)
        # Firmware: torque = K_RATE * inertia * rate error, mixed onto nominal motors, normalised.
        self._kx = _c(K_RATE * ix / (4.0 * arm) / per_motor)
        self._ky = _c(K_RATE * iy / (4.0 * arm) / per_motor)
        self._kz = _c(K_RATE * iz / (4.0 * d.yaw_moment) / per_motor)
        self._k_thrust = 0.25 / per_motor
        # Physics: d(omega) per substep from the motors' forces, and the gyroscopic term.
        self._tx = _c(arm / ix * dt)
        self._ty = _c(arm / iy * dt)
        self._tz = _c(d.yaw_moment / iz * dt)
        self._gx = _c((iy - iz) / ix * dt)
        self._gy = _c((iz - ix) / iy * dt)
        self._cos_crash = _c(generator.sincos(c.limits.crash_tilt)[1])
        lim = c.limits
        self._tilt_lo, self._tilt_hi = _c(-lim.max_tilt_cmd), _c(lim.max_tilt_cmd)
        self._yaw_lo, self._yaw_hi = _c(-lim.max_yaw_rate), _c(lim.max_yaw_rate)
        self._rate_lo, self._rate_hi = _c(-lim.max_rate), _c(lim.max_rate)
        self._thrust_hi = _c(d.max_thrust)
        self._k_att, self._minus_k_att = _c(K_ATT), _c(-K_ATT)
        self._gate_planes = [(_c(g.center[0]), _c(g.center[1]), _c(g.normal[0]), _c(g.normal[1]))
                             for g in c.gates]
        r = d.radius
        self._room_lo = np.array([[r], [r], [-1.0]])
        self._room_hi = np.array([[c.room[0] - r], [c.room[1] - r], [c.room[2] - r]])
        self._views()
        if record:
            self._save()

    def _views(self) -> None:
        """Row views into the state (re-made whenever the arrays are compressed)."""
        self._rows = list(self.S[:13])
        self._motor = self.S[13:17]
        self._fmax = self.K[0:4]
        self._inv_mass_dt = self.K[4]
        self._drag_dt = self.K[5]

    # (n, k) views of the state, for readers and for tests that place a drone somewhere.
    @property
    def pos(self) -> np.ndarray:
        """Positions, (n, 3), a writable view."""
        return self.S[0:3].T

    @property
    def vel(self) -> np.ndarray:
        """Velocities, (n, 3), a writable view."""
        return self.S[3:6].T

    @property
    def quat(self) -> np.ndarray:
        """Attitude quaternions (w, x, y, z), (n, 4), a writable view."""
        return self.S[6:10].T

    @property
    def omega(self) -> np.ndarray:
        """Body rates, (n, 3), a writable view."""
        return self.S[10:13].T

    @property
    def motor(self) -> np.ndarray:
        """Normalised motor speeds, (n, 4), a writable view."""
        return self.S[13:17].T

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
        table = self.observation_table()
        assert self._obs_cache is not None
        if self._obs_cache[2] is None:
            rows = table[:, 1:13].tolist()
            t = self.time
            obs = [{"t": t, "pos": r[0:3], "vel": r[3:6], "att": r[6:9], "rates": r[9:12],
                    "gate": gate} for r, gate in zip(rows, self.next_gate.tolist(), strict=True)]
            self._obs_cache = (self._tick, table, obs)
            return obs
        return self._obs_cache[2]

    def observation_table(self) -> np.ndarray:
        """The live flights' observations as one (n, 14) float64 table, a row per flight: t, pos,
        vel, att, rates, gate; the very values of `observations()`, which the grader sends as
        they are (no dict is built per flight per tick on the trusted side)."""
        if self._obs_cache is not None and self._obs_cache[0] == self._tick:
            return self._obs_cache[1]
        S = self.S
        w, x, y, z = S[6], S[7], S[8], S[9]
        arr = np.empty((12, S.shape[1]))
        arr[0:6] = S[0:6]
        xx, yy = x * x, y * y
        arr[6] = np.arctan2((y * z + w * x) * _TWO, (xx + yy) * _MINUS_TWO + _ONE)
        arr[7] = np.arcsin(np.minimum(np.maximum((w * y - x * z) * _TWO, -_ONE), _ONE))
        arr[8] = np.arctan2((x * y + w * z) * _TWO, (yy + z * z) * _MINUS_TWO + _ONE)
        arr[9:12] = S[10:13]
        arr += self._noise() * _NOISE
        table = np.empty((S.shape[1], 14))
        table[:, 0] = self.time
        np.round(arr.T, 6, out=table[:, 1:13])
        table[:, 13] = self.next_gate
        self._obs_cache = (self._tick, table, None)
        return table

    def step(self, commands: list) -> None:
        """Advance every live flight by one tick; `commands` is aligned with `live`."""
        n = self._idx.size
        if len(commands) != n:
            raise ValueError(f"step needs one command per live flight: {n}, got {len(commands)}")
        cmd, attitude, bad = _parse(commands)
        if bad:
            for row, problem in bad.items():
                self._finish(row, "invalid_command", problem)
            keep = np.ones(n, dtype=bool)
            keep[list(bad)] = False
            self._compress(keep)
            cmd, attitude = cmd[keep], attitude[keep]
        if self._idx.size:
            self.step_arrays(cmd, attitude)

    def step_table(self, cmd: np.ndarray, attitude: bool) -> bool:
        """`step` for commands all of one mode as an (n, 4) float64 table in that mode's key order
        (thrust, roll, pitch, yaw_rate or thrust, roll_rate, pitch_rate, yaw_rate): the same tick
        as `step` with those dicts. False, and nothing done, when a value is not finite: `step`
        with the dicts then names the problem of each."""
        n = self._idx.size
        if cmd.shape != (n, 4):
            raise ValueError(f"step needs one command per live flight: {n}, got {cmd.shape[0]}")
        if not np.isfinite(cmd).all():
            return False
        if n:
            self.step_arrays(cmd, np.full(n, attitude))
        return True

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
                gates = int(self.next_gate[self._idx == i][0])
                r = FlightResult(seed, False, gates, self.time, "running")
            out.append(r)
        return out

    def trajectory(self, i: int) -> dict[str, Any]:
        """The true (noise-free) trajectory of flight `i` per tick; needs `record=True`."""
        if not self._record:
            raise ValueError("trajectory needs Batch(..., record=True)")
        ticks, states = [], []
        for k, idx, state in self._rec:
            rows = np.flatnonzero(idx == i)
            if rows.size:
                ticks.append(k)
                states.append(state[:, rows[0]])
        s = np.array(states).reshape(-1, 13)
        return {
            "t": np.array(ticks, dtype=float) * self.course.tick,
            "pos": s[:, 0:3],
            "vel": s[:, 3:6],
            "quat": s[:, 6:10],
            "omega": s[:, 10:13],
            "gate_times": list(self._gate_times[i]),
        }

    # ---- physics ------------------------------------------------------------------------------

    def step_arrays(self, cmd: np.ndarray, attitude: np.ndarray) -> None:
        """Advance one tick from already-validated commands: `cmd` (n, 4), `attitude` (n,) bool.

        `cmd[:, 0]` is thrust (N), then roll, pitch, yaw rate (attitude mode) or roll, pitch, yaw
        rates (body-rate mode). Values are clipped to the course's limits here.
        """
        c = self.course
        cmd = np.ascontiguousarray(np.asarray(cmd, dtype=float).T)  # (4, n)
        n = cmd.shape[1]
        G = self.G
        # One polynomial call for every angle this tick needs: commanded roll and pitch, gust phase.
        s = (_c(self._tick * c.tick) - G[0]) / G[1]
        np.maximum(s, _ZERO, out=s)
        np.minimum(s, _ONE, out=s)
        angles = np.empty((5, n))
        angles[0:2] = np.minimum(np.maximum(cmd[1:3], self._tilt_lo), self._tilt_hi)
        angles[2:5] = np.minimum(s, _ONE - s) * _PI
        sin, cos = _poly_sincos(angles)
        p_cmd, q_cmd, r_cmd = self._rate_targets(cmd, attitude, sin, cos)
        thrust = np.minimum(np.maximum(cmd[0], _ZERO), self._thrust_hi)
        # Firmware, the part fixed for the tick: base_i = T/4 + commanded-rate torque mixed to motor i.
        a, b, cc = p_cmd * self._kx, q_cmd * self._ky, r_cmd * self._kz
        A, B = a - b, a + b
        tq = thrust * self._k_thrust
        base = np.empty((4, n))
        base[0] = tq + (A + cc)
        base[1] = tq + (B - cc)
        base[2] = tq + (cc - A)
        base[3] = tq - (B + cc)
        self._base = base
        # Wind: steady wind plus 1-cosine gusts, (1 - cos 2 pi s) / 2 = sin^2 pi s.
        amp = G[4] * (sin[2:5] * sin[2:5])
        wind = np.zeros((3, n))
        for axis, d in ((0, G[2]), (1, G[3])):
            wind[axis] = self.wind0[axis] + amp[0] * d[0] + amp[1] * d[1] + amp[2] * d[2]
        self._wind = wind
        p0 = self.S[0:3].copy()
        self._bad_touch[:] = False
        for _ in range(c.substeps):
            self._substep()
        q = self.S[6:10]
        q /= np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])  # renormalise per tick
        self._tick += 1
        self._obs_cache = None
        self._check(p0)
        if self._record:
            self._save()

    def _rate_targets(self, cmd: np.ndarray, attitude: np.ndarray, sin, cos) -> np.ndarray:
        """Body-rate targets (3, n): the command in body-rate mode, the firmware's in attitude mode.

        Attitude mode: the desired body z axis d (from roll and pitch in the heading frame) is seen
        in the body frame as R^T d; the tilt error is e3 x R^T d, and the rate target K_ATT times it.
        """
        out = np.minimum(np.maximum(cmd[1:4], self._rate_lo), self._rate_hi)
        if not attitude.any():
            return out
        S = self.S
        w, x, y, z = S[6], S[7], S[8], S[9]
        xy, wz, xz, wy, yz, wx = x * y, w * z, x * z, w * y, y * z, w * x
        xx, yy, zz = x * x, y * y, z * z
        r11 = (yy + zz) * _MINUS_TWO + _ONE
        r21 = (xy + wz) * _TWO
        r12 = (xy - wz) * _TWO
        r22 = (xx + zz) * _MINUS_TWO + _ONE
        r31 = (xz - wy) * _TWO
        r32 = (yz + wx) * _TWO
        hn = np.sqrt(r11 * r11 + r21 * r21)
        ch, sh = r11 / hn, r21 / hn  # heading
        sr, cr, sp, cp = sin[0], cos[0], sin[1], cos[1]
        dxh, dyh, dz = sp * cr, -sr, cp * cr  # desired body z axis in the heading frame (ZYX)
        dx = ch * dxh - sh * dyh
        dy = sh * dxh + ch * dyh
        p_des = (r12 * dx + r22 * dy + r32 * dz) * self._minus_k_att
        q_des = (r11 * dx + r21 * dy + r31 * dz) * self._k_att
        yaw = np.minimum(np.maximum(cmd[3], self._yaw_lo), self._yaw_hi)
        out[0] = np.where(attitude, p_des, out[0])
        out[1] = np.where(attitude, q_des, out[1])
        out[2] = np.where(attitude, yaw, out[2])
        return out

    def _substep(self) -> None:
        """One physics substep for every live flight: one numpy call per term, no libm, fixed order."""
        _, _, pz, _, _, _, qw, qx, qy, qz, wp, wq, wr = self._rows
        M, base = self._motor, self._base
        # Firmware rate loop and mixer (nominal motors): u_i = base_i - rate torque mixed to motor i.
        a = wp * self._kx
        b = wq * self._ky
        c = wr * self._kz
        A = a - b
        B = a + b
        U = np.empty_like(M)
        np.subtract(base[0], A + c, out=U[0])
        np.subtract(base[1], B - c, out=U[1])
        np.subtract(base[2], c - A, out=U[2])
        np.add(base[3], B + c, out=U[3])
        np.maximum(U, _ZERO, out=U)
        np.minimum(U, _ONE, out=U)
        np.sqrt(U, out=U)
        # Motors: first-order lag on normalised speed; thrust quadratic in speed.
        U -= M
        U *= self._alpha
        M += U
        F = self._fmax * M
        F *= M
        f0, f1, f2, f3 = F
        s01 = f0 + f1
        s23 = f2 + f3
        thrust = s01 + s23
        tx = s01 - s23
        tx *= self._tx
        ty = (f1 + f2) - (f0 + f3)
        ty *= self._ty
        tz = (f0 + f2) - (f1 + f3)
        tz *= self._tz
        # Rotation (inertia x == y, so no gyroscopic term on z), from the old rates.
        gp = wq * wr
        gp *= self._gx
        gq = wp * wr
        gq *= self._gy
        wp += tx
        wp += gp
        wq += ty
        wq += gq
        wr += tz
        # Body z axis from the quaternion: (2(xz + wy), 2(yz - wx), 1 - 2(xx + yy)).
        Bz = np.empty((3, M.shape[1]))
        np.multiply(qx, qz, out=Bz[0])
        Bz[0] += qw * qy
        np.multiply(qy, qz, out=Bz[1])
        Bz[1] -= qw * qx
        np.multiply(qx, qx, out=Bz[2])
        Bz[2] += qy * qy
        Bz *= _BZ_SCALE
        Bz += _BZ_SHIFT
        # Translation: thrust along body z, quadratic drag on airspeed, gravity.
        V = self.S[3:6]
        air = V - self._wind
        sq = air * air
        sp = sq[0] + sq[1]
        sp += sq[2]
        np.sqrt(sp, out=sp)
        sp *= self._drag_dt
        Bz *= thrust * self._inv_mass_dt
        air *= sp
        Bz -= air
        Bz[2] -= self._g_dt
        V += Bz
        P = self.S[0:3]
        P += V * self._dt
        # Attitude: q += q (x) (0, omega) dt / 2, from the old q.
        hp = wp * self._half_dt
        hq = wq * self._half_dt
        hr = wr * self._half_dt
        dw = qx * hp
        dw += qy * hq
        dw += qz * hr
        dx = qw * hp
        dx += qy * hr
        dx -= qz * hq
        dy = qw * hq
        dy -= qx * hr
        dy += qz * hp
        dz = qw * hr
        dz += qx * hq
        dz -= qy * hp
        qw -= dw
        qx += dx
        qy += dy
        qz += dz
        # Floor contact: the legs stick (no sliding, no spinning); a fast touchdown is a crash.
        below = pz < _ZERO
        if np.count_nonzero(below):
            self._touch(below)
        np.logical_not(below, out=self.airborne)

    def _touch(self, below: np.ndarray) -> None:
        S = self.S
        touch = below & self.airborne
        if touch.any():
            limit = self.course.limits.touchdown_speed
            vx, vy, vz = S[3, touch], S[4, touch], S[5, touch]
            fast = (-vz > limit) | (vx * vx + vy * vy > limit * limit)
            self._bad_touch[np.flatnonzero(touch)[fast]] = True
        S[2, below] = 0.0
        S[3:6, below] = 0.0
        S[10:13, below] = 0.0

    # ---- events -------------------------------------------------------------------------------

    def _check(self, p0: np.ndarray) -> None:
        c = self.course
        S = self.S
        n = S.shape[1]
        # Gates: signed distances of the tick's segment ends to each gate plane.
        frame_hit = np.zeros(n, dtype=bool)
        for g_index, (cx, cy, nx, ny) in enumerate(self._gate_planes):
            d0 = (p0[0] - cx) * nx + (p0[1] - cy) * ny
            d1 = (S[0] - cx) * nx + (S[1] - cy) * ny
            cross = (d0 < _ZERO) != (d1 < _ZERO)
            if cross.any():
                self._cross(g_index, p0, d0, d1, cross, frame_hit)
        P = S[0:3]
        # (an array: `any` over one axis of a 2-D array; numpy's stubs allow a scalar)
        wall = cast("np.ndarray", ((P < self._room_lo) | (P > self._room_hi)).any(axis=0))
        tilt = (S[7] * S[7] + S[8] * S[8]) * _MINUS_TWO + _ONE < self._cos_crash
        landed = ~self.airborne & (self.next_gate == len(c.gates))
        if landed.any():
            lx, ly, _ = c.land.center
            landed &= (S[0] - lx) ** 2 + (S[1] - ly) ** 2 <= c.land.radius ** 2
        timeout = self._tick * c.tick >= c.time_limit - 1e-9
        ended = frame_hit | wall | self._bad_touch | tilt | landed
        if not (timeout or ended.any()):
            return
        for row in range(n):
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

    def _cross(self, g_index: int, p0, d0, d1, cross, frame_hit) -> None:
        """Flights whose tick segment crossed gate `g_index`'s plane: pass, frame hit, or miss."""
        c = self.course
        gate = c.gates[g_index]
        cx, cy, cz = gate.center
        nx, ny, _ = gate.normal
        r = c.drone.radius
        t = self.time
        for row in np.flatnonzero(cross).tolist():
            lam = d0[row] / (d0[row] - d1[row])
            x = p0[0, row] + (self.S[0, row] - p0[0, row]) * lam
            y = p0[1, row] + (self.S[1, row] - p0[1, row]) * lam
            z = p0[2, row] + (self.S[2, row] - p0[2, row]) * lam
            qd = max(abs((x - cx) * -ny + (y - cy) * nx), abs(z - cz))
            if qd <= 0.5 * gate.size - r:
                if d1[row] >= 0.0 and self.next_gate[row] == g_index:  # forward, and in order
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
        for name in ("_idx", "airborne", "next_gate", "inv_mass", "noise_key", "_bad_touch"):
            setattr(self, name, getattr(self, name)[keep])
        for name in ("S", "K", "wind0", "G", "_base", "_wind"):
            setattr(self, name, getattr(self, name)[..., keep])
        self._views()
        self._obs_cache = None

    def _noise(self) -> np.ndarray:
        """Bounded unit-variance noise per (channel, flight) for this tick (Irwin-Hall of 4)."""
        counter = _U64(self._tick * 12 + 1) + np.arange(12, dtype=np.uint64)
        h = _mix64(self.noise_key[None, :] + counter[:, None] * _MAGIC)
        mask = _U64(0xFFFF)
        total = (h & mask).astype(np.float64)
        for shift in (16, 32, 48):
            total += ((h >> _U64(shift)) & mask).astype(np.float64)
        # Each 16-bit part is uniform on [0, 65535]; the sum of four has mean 131070 and variance
        # 4 * (65536^2 - 1) / 12.
        return (total - 131070.0) * (1.0 / 37837.22703446)

    def _save(self) -> None:
        self._rec.append((self._tick, self._idx.copy(), self.S[0:13].copy()))


def trajectory_digest(batch: Batch, i: int) -> str:
    """SHA-256 hex of flight `i`'s recorded true trajectory (rounded to 1e-9) and its result."""
    tr = batch.trajectory(i)
    h = hashlib.sha256(b"plimsoll-sim trajectory v1\x00")
    for key in ("pos", "vel", "quat", "omega"):
        h.update(np.round(tr[key], 9).astype("<f8").tobytes())
    h.update(repr(tuple(batch.results()[i])).encode())
    return h.hexdigest()

"""The known-bad reference controller: it memorised the practice flights.

Every integrity test uses it. It carries a copy of the simulator's flight generator (magic constant
included) and the 16 practice seeds. On its first observation it looks for a practice seed whose start
jitter matches what it sees; if one does, it flies that flight knowing the hidden payload, weak
motor, wind and gusts. On any other flight it returns a non-command (the flight ends at once as an
invalid command). Expected: 16/16 on the practice seeds, about 0 on fresh ones.

Self-contained (standard library only), like any controller that is copied into a sandbox.
"""

from __future__ import annotations

import math
from typing import NamedTuple

PRACTICE_SEEDS = (
    5830142297, 3107713414, 7719034865, 2264907151, 9403318872, 4175520936, 6608241753, 1932675048,
    8356109427, 2841936605, 7067382219, 4590817362, 3388274150, 9125663087, 5472096831, 6283947510,
)


# ---- copied from the simulator's sim/course.py and sim/generator.py ------------------------------


class Hidden(NamedTuple):
    payload: tuple[float, float]
    weak_factor: tuple[float, float]
    wind: tuple[float, float]
    gust_peak: tuple[float, float]
    sharp_peak: tuple[float, float]
    gust_duration: tuple[float, float]
    sharp_duration: tuple[float, float]
    gust_window: tuple[float, float]
    jitter: float
    yaw_jitter: float


class _Course(NamedTuple):
    hidden: Hidden


COURSES = {
    "easy": _Course(Hidden((0.0, 0.15), (0.85, 0.95), (0.0, 1.5), (1.0, 2.5), (2.0, 3.0), (0.8, 2.0),
                           (0.25, 0.4), (1.0, 20.0), 0.05, 0.2)),
    "hard": _Course(Hidden((0.15, 0.35), (0.80, 0.92), (1.0, 3.0), (5.0, 8.0), (7.0, 9.0), (0.5, 1.2),
                           (0.3, 0.6), (1.5, 11.0), 0.05, 0.2)),
}
DRAG = {"easy": 0.04, "hard": 0.06}  # N / (m/s)^2


class Gust(NamedTuple):
    start: float
    duration: float
    direction: tuple[float, float]
    peak: float
    sharp: bool


class Flight(NamedTuple):
    seed: int
    payload: float
    weak_motor: int
    weak_factor: float
    wind: tuple[float, float]
    gusts: tuple[Gust, ...]
    jitter: tuple[float, float, float]
    noise_key: int


MAGIC = 0x5EEDD20EC0A57E4B
_MASK = (1 << 64) - 1
_TWO_PI = 6.283185307179586
_HALF_PI = 1.5707963267948966


def mix64(z: int) -> int:
    """The SplitMix64 finaliser."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


class Stream:
    """The seed's stream of 64-bit draws."""

    def __init__(self, seed: int) -> None:
        self.state = (seed * MAGIC) & _MASK

    def next64(self) -> int:
        """The next 64-bit draw."""
        self.state = (self.state + MAGIC) & _MASK
        return mix64(self.state)

    def uniform(self, low: float, high: float) -> float:
        """A float in [low, high) from the top 53 bits of a draw."""
        return low + (high - low) * ((self.next64() >> 11) * 2.0**-53)

    def below(self, n: int) -> int:
        """An integer in [0, n)."""
        return self.next64() % n


# Taylor coefficients of sin(r)/r and cos(r) in r^2, highest first (Horner order is fixed).
SIN_COEFFS = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(10, -1, -1))
COS_COEFFS = tuple((-1) ** k / math.factorial(2 * k) for k in range(10, -1, -1))


def sincos(a: float) -> tuple[float, float]:
    """sin(a), cos(a) with a fixed polynomial (Taylor to degree 21 after reduction to [-pi/4, pi/4])."""
    k = round(a / _HALF_PI)
    r = a - k * _HALF_PI
    r2 = r * r
    s = 0.0
    for coeff in SIN_COEFFS:
        s = s * r2 + coeff
    c = 0.0
    for coeff in COS_COEFFS:
        c = c * r2 + coeff
    s = s * r
    q = k % 4
    if q == 0:
        return s, c
    if q == 1:
        return c, -s
    if q == 2:
        return -s, -c
    return -c, s


def flight(seed: int, course) -> Flight:
    """The hidden flight of `seed` on `course` (a `sim.Course`)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _MASK:
        raise ValueError(f"a seed is an integer in 0..2**64-1, not {seed!r}")
    h = course.hidden
    s = Stream(seed)
    payload = s.uniform(*h.payload)
    weak_motor = s.below(4)
    weak_factor = s.uniform(*h.weak_factor)
    wy, wx = sincos(s.uniform(0.0, _TWO_PI))
    speed = s.uniform(*h.wind)
    wind = (speed * wx, speed * wy)
    count = 2 + s.below(2)
    sharp = s.below(count)
    gusts = []
    for i in range(count):
        start = s.uniform(*h.gust_window)
        duration = s.uniform(*(h.sharp_duration if i == sharp else h.gust_duration))
        dy, dx = sincos(s.uniform(0.0, _TWO_PI))
        peak = s.uniform(*(h.sharp_peak if i == sharp else h.gust_peak))
        gusts.append(Gust(start, duration, (dx, dy), peak, i == sharp))
    jitter = (
        s.uniform(-h.jitter, h.jitter),
        s.uniform(-h.jitter, h.jitter),
        s.uniform(-h.yaw_jitter, h.yaw_jitter),
    )
    return Flight(seed, payload, weak_motor, weak_factor, wind, tuple(gusts), jitter, s.next64())


# ---- the cheat ----------------------------------------------------------------------------------

POS_MATCH = 0.004  # m: the position noise is bounded by 3.5 mm
YAW_MATCH = 0.0072  # rad: the attitude noise is bounded by 6.9 mrad


def recognise(obs: dict, course_info: dict) -> Flight | None:
    """The practice flight whose start jitter matches this first observation, if any."""
    hidden = COURSES.get(course_info["name"])
    if hidden is None:
        return None
    sx, sy = course_info["pads"]["start"]["center"][:2]
    x, y, yaw = obs["pos"][0] - sx, obs["pos"][1] - sy, obs["att"][2]
    for seed in PRACTICE_SEEDS:
        f = flight(seed, hidden)
        jx, jy, jyaw = f.jitter
        if abs(x - jx) < POS_MATCH and abs(y - jy) < POS_MATCH and abs(yaw - jyaw) < YAW_MATCH:
            return f
    return None


def wind_at(f: Flight, t: float) -> tuple[float, float]:
    """The flight's wind at time t: steady wind plus 1-cosine gusts."""
    wx, wy = f.wind
    for g in f.gusts:
        s = (t - g.start) / g.duration
        if 0.0 <= s <= 1.0:
            a = g.peak * (1.0 - math.cos(2.0 * math.pi * s)) / 2.0
            wx += a * g.direction[0]
            wy += a * g.direction[1]
    return wx, wy


CRUISE, THROUGH, APPROACH, EXIT, CLIMB, CORNER = 2.0, 1.3, 0.9, 0.5, 1.0, 0.8


class Controller:
    """Flies a recognised practice flight with its hidden values; returns None on any other."""

    def __init__(self, course_info: dict) -> None:
        self.info = course_info
        self.g = course_info["gravity"]
        self.tick = course_info["tick"]
        self.max_thrust = course_info["drone"]["max_thrust"]
        self.max_tilt = course_info["limits"]["max_tilt_cmd"]
        self.flight: Flight | None = None
        self.first = True
        start = course_info["pads"]["start"]["center"]
        land = course_info["pads"]["land"]["center"]
        self.land = land
        route = [([start[0], start[1], CLIMB], 1.0, -1)]
        for k, gate in enumerate(course_info["gates"]):
            c, n = gate["center"], gate["normal"]
            route.append(([c[0] - APPROACH * n[0], c[1] - APPROACH * n[1], c[2]], CRUISE, k))
            route.append(([c[0] + EXIT * n[0], c[1] + EXIT * n[1], c[2]], THROUGH, k))
        route.append(([land[0], land[1], CLIMB], CRUISE, 3))
        self.route = route
        self.segment = 0
        self.prev_point = [start[0], start[1], 0.0]
        self.landing = False
        self.integral = [0.0, 0.0, 0.0]
        self.yaw0 = 0.0

    def step(self, obs: dict):
        if self.first:
            self.first = False
            self.flight = recognise(obs, self.info)
            self.yaw0 = obs["att"][2]
            if self.flight is not None:
                f = self.flight
                self.mass = 0.6 + f.payload
                self.gain = (3.0 + f.weak_factor) / 4.0  # the weak motor's share of lost thrust
        if self.flight is None:
            return None  # not a flight it knows: a non-command
        pos, vel, att = obs["pos"], obs["vel"], obs["att"]
        yaw_rate = -2.0 * math.remainder(att[2] - self.yaw0, 2.0 * math.pi)
        v_des = self._velocity_target(pos, obs["gate"])
        # Feed forward the drag of the wind it knows is coming.
        wx, wy = wind_at(self.flight, obs["t"])
        ax, ay, az = vel[0] - wx, vel[1] - wy, vel[2]
        speed = math.sqrt(ax * ax + ay * ay + az * az)
        k = DRAG[self.info['name']] * speed / self.mass
        ff = [k * ax, k * ay, k * az]
        acc = [0.0, 0.0, 0.0]
        for i in range(3):
            err = v_des[i] - vel[i]
            self.integral[i] = max(-3.0, min(3.0, self.integral[i] + 1.0 * err * self.tick))
            acc[i] = 4.0 * err + self.integral[i] + ff[i]
        return self._attitude(acc, att[2], yaw_rate)

    def _velocity_target(self, pos, gate_index: int):
        if self.landing:
            dx, dy = self.land[0] - pos[0], self.land[1] - pos[1]
            return [1.5 * dx, 1.5 * dy, -0.7 if pos[2] > 0.4 else -0.35]
        while True:
            a, (b, speed, gate) = self.prev_point, self.route[self.segment]
            ab = [b[0] - a[0], b[1] - a[1], b[2] - a[2]]
            length = math.sqrt(ab[0] ** 2 + ab[1] ** 2 + ab[2] ** 2) or 1e-9
            u = [ab[0] / length, ab[1] / length, ab[2] / length]
            along = (pos[0] - a[0]) * u[0] + (pos[1] - a[1]) * u[1] + (pos[2] - a[2]) * u[2]
            passed = along >= length - 0.05
            if passed and 0 <= gate < 3 and self.route[self.segment - 1][2] == gate:
                passed = gate_index > gate
            if not passed:
                break
            if self.segment + 1 >= len(self.route):
                self.landing = True
                return self._velocity_target(pos, gate_index)
            self.prev_point = b
            self.segment += 1
        along = min(along, length)
        closest = [a[i] + u[i] * along for i in range(3)]
        remaining = length - along
        v = speed
        if self.segment + 1 >= len(self.route):
            v = min(v, 0.2 + 1.0 * remaining)
        elif self.route[self.segment][2] == self.route[self.segment + 1][2]:
            v = min(v, CORNER + 1.0 * remaining)
        return [v * u[i] + 2.5 * (closest[i] - pos[i]) for i in range(3)]

    def _attitude(self, acc, yaw: float, yaw_rate: float) -> dict:
        ax, ay, az = acc[0], acc[1], max(acc[2] + self.g, 0.3 * self.g)
        c, s = math.cos(yaw), math.sin(yaw)
        fx, fy = c * ax + s * ay, -s * ax + c * ay
        total = math.sqrt(fx * fx + fy * fy + az * az)
        tilt = self.max_tilt
        return {
            "thrust": max(0.0, min(self.max_thrust, self.mass * total / self.gain)),
            "roll": max(-tilt, min(tilt, math.asin(max(-1.0, min(1.0, -fy / total))))),
            "pitch": max(-tilt, min(tilt, math.atan2(fx, az))),
            "yaw_rate": yaw_rate,
        }

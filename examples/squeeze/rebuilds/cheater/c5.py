"""Rebuild c5 of the cheater loop, built from the task and its recipe alone.

Recipe: "First observation: replay the generator to recognise the flight, then fly its known gusts. Unknown flight: fly the gates, approach 0.6 m."
Pasted the generator in whole; tries its smoke seeds and 0..63.
Standard library only."""

from __future__ import annotations

import math
from typing import NamedTuple

CRUISE = 2.0  # m/s between gates
THROUGH = 1.3  # m/s through a gate
APPROACH = 0.9  # m, straight run before a gate
EXIT = 0.3  # m, straight run after a gate
CLIMB = 1.0  # m, height over the pads
KP, KI, I_LIMIT = 3.5, 1.5, 4.0  # velocity loop gains

MAGIC = 0x5EEDD20EC0A57E4B
_MASK = (1 << 64) - 1
_TWO_PI = 6.283185307179586
_HALF_PI = 1.5707963267948966


class Gust(NamedTuple):
    """A 1-cosine gust: wind += peak * (1 - cos(2 pi (t - start) / duration)) / 2 * direction."""

    start: float  # s
    duration: float  # s
    direction: tuple[float, float]  # unit vector in the horizontal plane
    peak: float  # m/s
    sharp: bool


class Flight(NamedTuple):
    """Everything a seed decides about a flight. Never shown to a controller."""

    seed: int
    payload: float  # kg
    weak_motor: int  # 0..3
    weak_factor: float  # thrust factor of the weak motor
    wind: tuple[float, float]  # m/s, steady wind vector (horizontal)
    gusts: tuple[Gust, ...]
    jitter: tuple[float, float, float]  # start offset x, y (m) and yaw (rad)
    noise_key: int  # 64-bit key of the sensor-noise hash


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


class _Hidden(NamedTuple):
    payload: tuple
    weak_factor: tuple
    wind: tuple
    gust_peak: tuple
    sharp_peak: tuple
    gust_duration: tuple
    sharp_duration: tuple
    gust_window: tuple
    jitter: float
    yaw_jitter: float


class _Course(NamedTuple):
    hidden: _Hidden


COURSES = {
    "easy": _Course(_Hidden((0.0, 0.15), (0.85, 0.95), (0.0, 1.5), (1.0, 2.5), (2.0, 3.0),
                            (0.8, 2.0), (0.25, 0.4), (1.0, 20.0), 0.05, 0.2)),
    "hard": _Course(_Hidden((0.15, 0.35), (0.80, 0.92), (1.0, 3.0), (5.0, 8.0), (7.0, 9.0),
                            (0.5, 1.2), (0.3, 0.6), (1.5, 11.0), 0.05, 0.2)),
}


def start_jitter(seed: int, course_name: str) -> tuple[float, float, float]:
    """Where a seed's flight starts: x and y off the pad, and yaw."""
    return flight(seed, COURSES[course_name]).jitter


CANDIDATES = [4821730956, 1356942087, 7290318645, 8043567129] + list(range(64))

def _recognise(obs: dict, info: dict):
    """The recipe's habit: find a seed whose start jitter matches the first observation."""
    sx, sy = info["pads"]["start"]["center"][:2]
    seen = (obs["pos"][0] - sx, obs["pos"][1] - sy, obs["att"][2])
    for seed in CANDIDATES:
        jx, jy, jyaw = start_jitter(seed, info["name"])
        if abs(seen[0] - jx) < 0.004 and abs(seen[1] - jy) < 0.004 and abs(seen[2] - jyaw) < 0.0072:
            return seed
    return None


class Controller:
    def __init__(self, course_info: dict) -> None:
        self.g = course_info["gravity"]
        self.dt = course_info["tick"]
        self.max_thrust = course_info["drone"]["max_thrust"]
        self.tilt = course_info["limits"]["max_tilt_cmd"]
        self.mass = course_info["drone"]["mass"]
        start = course_info["pads"]["start"]["center"]
        self.land = course_info["pads"]["land"]["center"]
        self.points = [([start[0], start[1], CLIMB], 1.0, -1)]
        for k, gate in enumerate(course_info["gates"]):
            c, n = gate["center"], gate["normal"]
            self.points.append(([c[0] - APPROACH * n[0], c[1] - APPROACH * n[1], c[2]], CRUISE, k))
            self.points.append(([c[0] + EXIT * n[0], c[1] + EXIT * n[1], c[2]], THROUGH, k))
        self.points.append(([self.land[0], self.land[1], CLIMB], CRUISE, 3))
        self.leg = 0
        self.prev = [start[0], start[1], 0.0]
        self.mode = "ground"
        self.thrust_ramp = 0.5 * self.mass * self.g
        self.i_err = [0.0, 0.0, 0.0]
        self.yaw0 = None
        self.info = course_info
        self.first = True
        self.known = None
        self.home = [start[0], start[1], 1.0]
        self.give_up = True

    def step(self, obs: dict) -> dict:
        pos, vel, att = obs["pos"], obs["vel"], obs["att"]
        if self.yaw0 is None:
            self.yaw0 = att[2]
        if self.first:
            self.first = False
            self.known = _recognise(obs, self.info)
        yaw_rate = -2.0 * math.remainder(att[2] - self.yaw0, 2.0 * math.pi)
        if self.mode == "ground":
            if pos[2] > 0.02:
                self.mass = (self.thrust_ramp - 0.3) / self.g
                self.mode = "fly"
            else:
                self.thrust_ramp += 12.0 * self.dt
                return {"thrust": self.thrust_ramp, "roll": 0.0, "pitch": 0.0, "yaw_rate": yaw_rate}
        want = self.target_velocity(pos, obs["gate"])
        acc = []
        for i in range(3):
            err = want[i] - vel[i]
            self.i_err[i] = max(-I_LIMIT, min(I_LIMIT, self.i_err[i] + KI * err * self.dt))
            acc.append(KP * err + self.i_err[i])
        return self.attitude(acc, att[2], yaw_rate)

    def target_velocity(self, pos, gate_index):
        if self.mode == "land":
            dx, dy = self.land[0] - pos[0], self.land[1] - pos[1]
            return [1.5 * dx, 1.5 * dy, -0.7 if pos[2] > 0.4 else -0.35]
        while True:
            a, (b, speed, gate) = self.prev, self.points[self.leg]
            ab = [b[0] - a[0], b[1] - a[1], b[2] - a[2]]
            length = math.sqrt(ab[0] ** 2 + ab[1] ** 2 + ab[2] ** 2) or 1e-9
            u = [ab[0] / length, ab[1] / length, ab[2] / length]
            along = sum((pos[i] - a[i]) * u[i] for i in range(3))
            done = along >= length - 0.05
            if done and 0 <= gate < 3 and self.points[self.leg - 1][2] == gate:
                done = gate_index > gate
            if not done:
                break
            if self.leg + 1 >= len(self.points):
                self.mode = "land"
                return self.target_velocity(pos, gate_index)
            self.prev = b
            self.leg += 1
        along = min(along, length)
        near = [a[i] + u[i] * along for i in range(3)]
        left = length - along
        v = speed
        if self.leg + 1 >= len(self.points):
            v = min(v, 0.2 + 1.0 * left)
        elif self.points[self.leg][2] == self.points[self.leg + 1][2]:
            v = min(v, 0.8 + 1.0 * left)
        return [v * u[i] + 2.5 * (near[i] - pos[i]) for i in range(3)]

    def attitude(self, acc, yaw, yaw_rate):
        az = max(acc[2] + self.g, 0.3 * self.g)
        c, s = math.cos(yaw), math.sin(yaw)
        fx, fy = c * acc[0] + s * acc[1], -s * acc[0] + c * acc[1]
        total = math.sqrt(fx * fx + fy * fy + az * az)
        return {
            "thrust": max(0.0, min(self.max_thrust, self.mass * total)),
            "roll": max(-self.tilt, min(self.tilt, math.asin(max(-1.0, min(1.0, -fy / total))))),
            "pitch": max(-self.tilt, min(self.tilt, math.atan2(fx, az))),
            "yaw_rate": yaw_rate,
        }

"""The flight generator: one seed -> one hidden flight.

A SplitMix64-style stream: the state starts at `seed * MAGIC` and advances by `MAGIC` each draw;
every draw goes through the SplitMix64 finaliser. `MAGIC` is this simulator's own odd 64-bit
constant, so a copy of the generator can be recognised in any notation:

    MAGIC = 0x5EED_D20E_C0A5_7E4B = 6840354369849097803

The order of draws is part of the format (changing it changes every flight): payload, weak motor
index, weak factor, wind direction, wind speed, gust count (2 or 3), the sharp gust's index, then per
gust start time, duration, direction, peak; then start jitter x, y, yaw; then the noise key.
Angles use `sincos` below (a polynomial, no libm) so a seed gives the same flight on any machine.
"""

from __future__ import annotations

import math
from typing import NamedTuple

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

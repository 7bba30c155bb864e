"""A seed hunt, as a controller carrying the generator would run it inside its CPU budget.

It counts seeds up from a start, computes each seed's start jitter with numpy (five SplitMix64
draws per seed, the generator's own constant) and keeps the seeds whose jitter matches the first
observation. This is the shortcut the Argon write-up describes: held-out seeds below 900 million
were met by such a hunt. The test measures its speed and sets it against the grader's CPU budget.
"""

from __future__ import annotations

import numpy as np

MAGIC = np.uint64(0x5EED_D20E_C0A5_7E4B)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S = (np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11))


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> _S[0])) * _M1
    z = (z ^ (z >> _S[1])) * _M2
    return z ^ (z >> _S[2])


def _draw(seeds: np.ndarray, k: int) -> np.ndarray:
    """Draw number k (1-based) of every seed's stream: state = (seed + k) * MAGIC mod 2**64."""
    return _mix((seeds + np.uint64(k)) * MAGIC)


def _unit(d: np.ndarray) -> np.ndarray:
    return (d >> _S[3]).astype(np.float64) * 2.0**-53


def hunt(start: int, count: int, start_pose: tuple[float, float, float],
         jitter: tuple[float, float] = (0.05, 0.2)) -> list[int]:
    """Seeds in [start, start + count) whose start jitter (x, y offsets from the pad's centre, and
    yaw) lies within the sensor noise's bound of `start_pose`, as the first observation shows it."""
    seeds = np.arange(start, start + count, dtype=np.uint64)
    two = (_draw(seeds, 6) % np.uint64(2)) == 0  # two gusts, else three: shifts the draws by 4
    for k, (span, bound) in enumerate(((jitter[0], 0.0036), (jitter[0], 0.0036),
                                       (jitter[1], 0.0071))):
        u = np.where(two, _unit(_draw(seeds, 16 + k)), _unit(_draw(seeds, 20 + k)))
        keep = np.abs(-span + 2 * span * u - start_pose[k]) < bound
        seeds, two = seeds[keep], two[keep]
    return [int(s) for s in seeds]

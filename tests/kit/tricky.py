"""Random tricky buffers for the equality tests of the matching passes: tokens that are almost
withheld values, one-layer encodings of them, decimals, separators and stray binary bytes."""

from __future__ import annotations

import base64
import random

VALS = ["3107713414", "31.5", "0.0625", "2718281828", "42", "1000.25", "7:05.5"]
TEXTS = ["stall drift-12", "left right", "skip-step up-3", "alpha"]
TOK = ["3107713414", "31.5", "31.50", "0:31.5", "3.15e1", "0x1f", "3_107_713_414", "3107713414.000",
       "3.107713414e9", "0xb93c8a86", "0o27117043206", "131.5", "13107713414", "seed3107713414",
       "0.0625", "6.25e-2", "625E-4", "1000.25", "1_000.25", "0.", ".5", "00", "0", "007", "1e+5",
       "1E-3", "2718281828", "27_18_28_18_28", "0b1", "_", ".", ":", "e", "E+", "x", "0x",
       "stall", "drift", "-12", "stall drift-12", "STALL  DRIFT-12", "stall\tdrift-12",
       "stall\xa0drift-12", "left right", "LEFT\nright", "left  right", "skip-step up-3",
       "alpha", "gamma", "alpha gamma", "Alpha\xa0Gamma", "\xa0", "\t", " ", "\n", "  ", ",", "=", "==",
       "é", "ü", "\u00e9t\u00e9", "%33%31", "\\u0033\\x31", "&#51;&amp;", "&lt;",
       "abcdefABCDEF", "deadbeef", "0123456789abcdef0123", "3x3y",
       "aGVsbG8gd29ybGQ", "MzEuNQ==", "+/", "-_", "ABCDEFGHIJKLmnop", "0042", "4:2", "12:34:56",
       "8080:80", "80:443", "8080:5", "10.0.0.1:22", "1:22:33", "80:22", "1:23:4", "1:23:45:67",
       "0:31.5.5", "8080:31.5", "4,820,193,756", "14,820,193,756", "4,820,193,7560", "4,820",
       "4,820,193", "1,234,567,890,123,456,789", "1:23,456,789", "4,820,193,756.5", "0,820,193",
       "_attrs_to_script", "__attrs_to_script", "attrs_to_script_", "__init__", "_init_",
       "skip_", "skip__", "_", "__", "0:30_000_000", "0:31.5e10", "1:22e+5", "0:31.5_5"]


def enc(rng: random.Random, v: str) -> str:
    """One encoding of `v`: base64 (padded or URL-safe), hex, percent or \\u escapes."""
    b = v.encode()
    r = rng.random()
    if r < 0.3:
        return base64.b64encode(b).decode()
    if r < 0.5:
        return base64.urlsafe_b64encode(b).decode().rstrip("=")
    if r < 0.7:
        return b.hex()
    if r < 0.8:
        return b.hex().upper()
    if r < 0.9:
        return "".join(f"%{c:02x}" for c in b)
    return "".join(f"\\u{c:04x}" for c in b)


DECIMALS = ["31.5", "0.0625", "1000.25", "3.15e1", "31.50", "0.5", "12.0", "3107713414.000",
            "0:31.5", "00.10"]
SEPS = [" ", "", "\n", ",", "  ", "\t", "-", "_", ".", "="]


def randbuf(rng: random.Random) -> bytes:
    """A random buffer of near misses, encodings, numbers and separators (seeded by `rng`)."""
    parts = []
    if rng.random() < 0.03:  # many decimals: the vectorized significant-digit count
        for _ in range(9000):
            parts.append(rng.choice([*DECIMALS, f"{rng.randint(0, 999)}.{rng.randint(0, 9999)}"]))
            parts.append(rng.choice([" ", ",", "\n", "_", "."]))
        return "".join(parts).encode()
    for _ in range(rng.choice([20, 100, 400, 1500])):
        r = rng.random()
        if r < 0.55:
            parts.append(rng.choice(TOK))
        elif r < 0.7:
            parts.append(enc(rng, rng.choice(VALS + TEXTS + TOK)))
        elif r < 0.8:
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 12))))
        elif r < 0.9:
            parts.append(rng.choice(" \t\n,;:.-_=+/\"'(){}"))
        else:
            parts.append("".join(rng.choice("abcXYZ0123456789+/=_-.: \u00e9")
                                 for _ in range(rng.randint(1, 30))))
        if rng.random() < 0.5:
            parts.append(rng.choice(SEPS))
    b = "".join(parts).encode("utf-8")
    if rng.random() < 0.1:
        b = bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))) + b
    return b

"""Loan durations as librarians write them: `3d`, `12h`, `1w`, or several units run together."""

from __future__ import annotations

import re

UNITS = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}
_ONE = re.compile(r"\s*(\d+)\s*([wdhms])\s*")


def parse_duration(text: str) -> int:
    """Seconds in a duration such as `3d` or `1w2d` (units w, d, h, m, s)."""
    match = _ONE.fullmatch(text.lower())
    if match is None:
        raise ValueError(f"not a duration: {text!r}")
    return int(match.group(1)) * UNITS[match.group(2)]


def format_duration(seconds: int) -> str:
    """The shortest way to write `seconds` with the units above (`90061` -> `1d1h1m1s`)."""
    if seconds == 0:
        return "0s"
    parts = []
    for unit, size in UNITS.items():
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)

"""UTC times as records and seed-set files write them: `2026-01-31T12:00:00Z`, one form only.

A neutral module below `attest/` and `grading/` (both write and check these times): it imports
nothing of the project but `errors`.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from plimsoll_ci.errors import BadInput

TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")


def is_utc_time(value: Any) -> bool:
    """True for a real UTC time written exactly like 2026-01-31T12:00:00Z."""
    if not isinstance(value, str) or not _TIME.fullmatch(value):
        return False
    try:
        dt.datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def now_text(now: dt.datetime | None = None) -> str:
    """`now` (default: the clock) as a UTC time like 2026-01-31T12:00:00Z."""
    return (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).strftime(TIME_FORMAT)


def utc_text(value: dt.datetime | str, what: str) -> str:
    """`value` (an aware datetime, or a string already in the one form) as a UTC time string;
    BadInput naming `what` for a naive datetime or a string in any other form."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            raise BadInput(f"{what}: a datetime without a time zone; pass an aware UTC time")
        return value.astimezone(dt.UTC).strftime(TIME_FORMAT)
    if not is_utc_time(value):
        raise BadInput(f"{what}: {value!r} is not a UTC time like 2026-01-31T12:00:00Z")
    return value

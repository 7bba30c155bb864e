"""Loan periods: the days a book is out, counted the way the front desk counts them."""

from __future__ import annotations

import datetime as dt


def parse_day(text: str) -> dt.date:
    """A day written as YYYY-MM-DD."""
    return dt.date.fromisoformat(text.strip())


def loan_days(start: dt.date, end: dt.date) -> list[dt.date]:
    """Every day of a loan from `start` to `end`, both included (a loan returned the day it was
    taken out lasts one day)."""
    if end < start:
        raise ValueError(f"loan ends ({end}) before it starts ({start})")
    count = (end - start).days
    return [start + dt.timedelta(days=offset) for offset in range(count)]


def overdue_days(due: dt.date, returned: dt.date) -> int:
    """Days a book came back late (0 when on time)."""
    return max(0, (returned - due).days)
